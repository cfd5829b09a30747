"""The shared calibration cache: hit, miss, key changes, concurrent writers,
corrupt entries; and the fast 'auto' calibration against the slow path."""
import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from dpcd.privacy import accounting, cache, calibrate_dp_sgd


@pytest.fixture(autouse=True)
def _fresh_memory():
    cache._memory.clear()
    yield
    cache._memory.clear()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "calibration"
    monkeypatch.setenv(cache.ENV, str(root))
    return root


def _entries(root, kind=None):
    """Cache entries under ``root`` (of one calibration ``kind`` if given)."""
    paths = sorted(Path(root).glob("*/*.json"))
    if kind is None:
        return paths
    return [p for p in paths if json.loads(p.read_text())["key"]["kind"] == kind]


def test_no_directory_no_disk(tmp_path, monkeypatch):
    monkeypatch.delenv(cache.ENV, raising=False)
    calls = []
    assert cache.cached("k", {"a": 1}, lambda: calls.append(1) or [1.5]) == [1.5]
    assert cache.cached("k", {"a": 1}, lambda: calls.append(1) or [1.5]) == [1.5]
    assert len(calls) == 2
    assert not list(tmp_path.iterdir())


def test_miss_then_hit(cache_dir):
    calls = []

    def compute():
        calls.append(1)
        return [0.1 + 0.2, 1e-300, "rdp"]

    first = cache.cached("k", {"spec": ["gaussian", 3], "epsilon": 1.0}, compute)
    cache._memory.clear()  # read back from disk, as another process would
    second = cache.cached("k", {"epsilon": 1.0, "spec": ["gaussian", 3]}, compute)
    assert first == second == [0.1 + 0.2, 1e-300, "rdp"]  # floats round-trip exactly
    assert len(calls) == 1
    (entry,) = _entries(cache_dir)
    stored = json.loads(entry.read_text())
    assert stored["key"]["inputs"] == {"epsilon": 1.0, "spec": ["gaussian", 3]}
    assert stored["key"]["calibration_version"] == cache.CALIBRATION_VERSION


@pytest.mark.parametrize("change", ["kind", "input", "version", "dp_accounting"])
def test_any_key_change_recalibrates(cache_dir, monkeypatch, change):
    calls = []
    inputs = {"spec": ["gaussian", 3], "epsilon": 1.0, "delta": 1e-5}
    cache.cached("k", inputs, lambda: calls.append(1) or [1.0])
    kind = "k"
    if change == "kind":
        kind = "other"
    elif change == "input":
        inputs = {**inputs, "delta": 2e-5}
    elif change == "version":
        monkeypatch.setattr(cache, "CALIBRATION_VERSION", cache.CALIBRATION_VERSION + 1)
    else:
        monkeypatch.setattr(cache, "_DP_ACCOUNTING_VERSION", "0.0.0")
    cache.cached(kind, inputs, lambda: calls.append(1) or [2.0])
    assert len(calls) == 2
    assert len(_entries(cache_dir)) == 2


@pytest.mark.parametrize("garbage", ["", '{"key": 1', '{"key": {}, "value": [1]}'])
def test_corrupt_entry_is_recomputed_and_replaced(cache_dir, garbage):
    cache.cached("k", {"a": 1}, lambda: [1.0])
    (entry,) = _entries(cache_dir)
    entry.write_text(garbage)
    cache._memory.clear()  # a new process
    calls = []
    assert cache.cached("k", {"a": 1}, lambda: calls.append(1) or [1.0]) == [1.0]
    assert calls == [1]
    assert json.loads(entry.read_text())["value"] == [1.0]


def _slow_compute(marker):
    with open(marker, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    time.sleep(0.5)
    return [3.25, "computed"]


def _ask(args):
    root, marker = args
    os.environ[cache.ENV] = root
    return cache.cached("concurrent", {"x": 1}, lambda: _slow_compute(marker))


def test_concurrent_askers_compute_once(tmp_path):
    root, marker = str(tmp_path / "cache"), str(tmp_path / "marker")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_ask, [(root, marker)] * 8)
    assert results == [[3.25, "computed"]] * 8
    assert len(Path(marker).read_text().splitlines()) == 1
    assert len(_entries(root)) == 1
    assert not list(Path(root).glob("*/.tmp-*"))


def test_calibration_through_the_cache_equals_the_direct_one(cache_dir, monkeypatch):
    kwargs = dict(n=1000, batch_size=10, passes=3, clip=1.0, epsilon=1.0, delta=1e-6)
    accounting._tightest.cache_clear()
    cached = calibrate_dp_sgd(**kwargs)
    # the multiplier, and the repr of its dp_accounting event for the ledger
    assert len(_entries(cache_dir, "calibrate_multiplier")) == 1
    assert len(_entries(cache_dir, "dp_event_repr")) == 1
    # a fresh process (no lru cache) reads the entry instead of calibrating
    accounting._tightest.cache_clear()
    cache._memory.clear()
    monkeypatch.setattr(accounting, "_tightest", lambda *a: pytest.fail("recalibrated"))
    again = calibrate_dp_sgd(**kwargs)
    monkeypatch.undo()  # also unsets the cache directory
    assert cache.cache_dir() is None
    accounting._tightest.cache_clear()
    direct = calibrate_dp_sgd(**kwargs)
    assert cached.noise_multiplier == again.noise_multiplier == direct.noise_multiplier
    assert cached.epsilon_achieved == direct.epsilon_achieved


@pytest.mark.parametrize("q, steps, winner", [(0.002, 100_000, "rdp"), (0.01, 200, "pld")])
def test_fast_auto_equals_the_slow_path(q, steps, winner, monkeypatch):
    """'auto' skips the PLD search when PLD at the RDP noise already misses the
    target; the answer is the one of calibrating both (the slow path)."""
    monkeypatch.delenv(cache.ENV, raising=False)
    spec, eps, delta, rel = ("poisson_gaussian", q, steps), 1.0, 1e-6, "add_or_remove_one"
    slow = min((accounting._calibrate(spec, eps, delta, kind, rel)[0], kind)
               for kind in ("rdp", "pld"))
    accounting._tightest.cache_clear()
    z, achieved, used = accounting.calibrate_multiplier(spec, eps, delta, "auto", rel)
    assert used == slow[1] == winner
    assert z == pytest.approx(slow[0], rel=1e-2)
    assert achieved <= eps
    # re-checked at a 10x finer PLD discretisation, the target still holds
    monkeypatch.setattr(accounting, "PLD_DISCRETIZATION", accounting.PLD_DISCRETIZATION / 10)
    assert accounting.epsilon_of(spec, z, delta, "pld", rel) <= eps * 1.001


def test_stats_count_time_and_computations(cache_dir):
    before = dict(cache.STATS)
    cache.cached("k", {"s": 1}, lambda: [1.0])
    cache.cached("k", {"s": 1}, lambda: [1.0])
    assert cache.STATS["calls"] == before["calls"] + 2
    assert cache.STATS["computed"] == before["computed"] + 1
    assert cache.STATS["seconds"] > before["seconds"]


@pytest.mark.parametrize("call", [
    "calibrate_dp_sgd(n=1000, batch_size=10, passes=3, clip=1.0, epsilon=1.0, delta=1e-6)",
    "calibrate_dp_cd(n=1000, p=20, passes=3, clip=np.ones(20), epsilon=1.0, delta=1e-6)",
    "calibrate_dp_cd_p(n=1000, p=20, passes=3, clip=np.ones(20), epsilon=1.0, delta=1e-6,"
    " bounds=np.ones(20))",
    "calibrate_dp_scd(n=1000, p=20, batch_size=10, clip=0.1, epsilon=1.0, delta=1e-3,"
    " passes=2)",
    "calibrate_dp_gcd(n=1000, p=20, iterations=5, clip=np.ones(20), epsilon=1.0,"
    " delta=1e-6)",
])
def test_a_cache_hit_needs_no_dp_accounting(tmp_path, call):
    """A job whose calibrations are in the cache never imports dp_accounting
    (1.1 s with scipy.signal/stats, paid by every solve job before): a fresh
    process calibrates, a second one reads the same ledger from the disk entry."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from dpcd.privacy import *\n"
            f"c = {call}\n"
            "print(repr(c.ledger), 'dp_accounting' in sys.modules, sep='\\n')\n")
    env = {**os.environ, cache.ENV: str(tmp_path / "calibration")}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout.splitlines() for _ in range(2)]
    assert runs[0][-1] == "True"  # the miss calibrates
    assert runs[1] == runs[0][:-1] + ["False"]  # the hit: same ledger, no import
