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


def test_stats_count_calls_and_computed_entries(cache_dir):
    """What a solve job's ledger reports: every call, and only the entries it
    computed (a job reading another's entry computes none)."""
    before = dict(cache.STATS)
    spin = lambda: sum(range(200_000)) and [1.0]  # noqa: E731 (some CPU to count)
    cache.cached("k", {"a": 1}, spin)
    cache._memory.clear()
    cache.cached("k", {"a": 1}, spin)
    delta = {key: cache.STATS[key] - before[key] for key in before}
    assert delta["calls"] == 2 and delta["computed"] == 1
    assert 0 < delta["cpu_seconds"] and 0 < delta["seconds"]


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
        monkeypatch.setattr(cache, "_dp_accounting_version", lambda: "0.0.0")
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


def _slow(spec, eps, delta, kind, rel):
    """dp_accounting's own calibration (Brent over a wide bracket, no memo, no probe)."""
    import dp_accounting

    return dp_accounting.calibrate_dp_mechanism(
        lambda: accounting.new_accountant(kind, accounting.accountant_relation(spec, rel, kind)),
        lambda z: accounting.make_event(spec, z), eps, delta,
        bracket_interval=dp_accounting.ExplicitBracketInterval(0.3, 4.0), tol=1e-6)


@pytest.mark.parametrize("q, steps, winner", [
    (0.002, 100_000, "rdp"),  # PLD's discretisation loses over 100 000 steps
    (0.01, 200, "pld"),  # PLD wins by a little (answer above the probe)
    (2e-4, 20_000, "pld"),  # PLD wins by more than the probe (0.69 x z_RDP)
])
def test_fast_auto_equals_the_slow_path(q, steps, winner, monkeypatch):
    """'auto' (RDP, then PLD from a probe below the RDP answer, when PLD can
    win) gives dp_accounting's own calibration of the tighter accountant."""
    monkeypatch.delenv(cache.ENV, raising=False)
    spec, eps, delta, rel = ("poisson_gaussian", q, steps), 1.0, 1e-6, "add_or_remove_one"
    slow = min((_slow(spec, eps, delta, kind, rel), kind) for kind in ("rdp", "pld"))
    accounting._tightest.cache_clear()
    z, achieved, used = accounting.calibrate_multiplier(spec, eps, delta, "auto", rel)
    assert used == slow[1] == winner
    assert z == pytest.approx(slow[0], rel=accounting.PLD_Z_TOLERANCE)
    assert achieved <= eps
    # re-checked at a 10x finer PLD discretisation, the target still holds
    monkeypatch.setattr(accounting, "PLD_DISCRETIZATION", accounting.PLD_DISCRETIZATION / 10)
    assert accounting.epsilon_of(spec, z, delta, "pld", rel) <= eps * 1.001


def _pld_evaluations(monkeypatch):
    """The z of every PLD evaluation that reaches dp_accounting (an
    evaluation makes its accountant, then its event; a Poisson-sampled
    Gaussian's goes through its own composition)."""
    seen, kind = [], []
    new_accountant, make_event = accounting.new_accountant, accounting.make_event
    poisson = accounting._poisson_pld_epsilon

    def poisson_pld(spec, z, *args):
        seen.append(z)
        return poisson(spec, z, *args)

    def accountant(k, rel, *interval):
        kind.append(k)
        return new_accountant(k, rel, *interval)

    def event(spec, z):
        if kind.pop() == "pld":
            seen.append(z)
        return make_event(spec, z)

    monkeypatch.setattr(accounting, "new_accountant", accountant)
    monkeypatch.setattr(accounting, "make_event", event)
    monkeypatch.setattr(accounting, "_poisson_pld_epsilon", poisson_pld)
    return seen


def test_a_calibration_evaluates_each_z_once(monkeypatch):
    """Evaluations are memoised: the bracket's ends, Brent's and the final
    check are the same z, and each PLD evaluation can take seconds."""
    monkeypatch.delenv(cache.ENV, raising=False)
    spec = ("poisson_gaussian", 0.01, 200)
    for fn in (accounting._tightest, accounting._calibrate, accounting._epsilon):
        fn.cache_clear()
    seen = _pld_evaluations(monkeypatch)
    z, achieved, used = accounting.calibrate_multiplier(spec, 1.0, 1e-6, "auto", "add_or_remove_one")
    assert len(seen) == len(set(seen)) > 3
    assert z in seen
    # a change of discretisation is a new evaluation, not a stale memo
    monkeypatch.setattr(accounting, "PLD_DISCRETIZATION", accounting.PLD_DISCRETIZATION / 2)
    accounting.epsilon_of(spec, z, 1e-6, "pld", "add_or_remove_one")
    assert seen.count(z) == 2


def test_pld_search_stays_below_the_probe_when_pld_wins_by_more(monkeypatch):
    """When PLD meets the target at PLD_PROBE x z_RDP, it is never evaluated
    above it (where dp_accounting's sparse composition of millions of steps
    takes seconds), not even at z_RDP."""
    monkeypatch.delenv(cache.ENV, raising=False)
    spec, eps, delta, rel = ("poisson_gaussian", 2e-4, 20_000), 1.0, 1e-6, "add_or_remove_one"
    for fn in (accounting._tightest, accounting._calibrate, accounting._epsilon):
        fn.cache_clear()
    z_rdp = accounting._calibrate(spec, eps, delta, "rdp", rel)[0]  # cached from here on
    seen = _pld_evaluations(monkeypatch)
    z, _, used = accounting._tightest(spec, eps, delta, ("rdp", "pld"), rel)
    assert used == "pld" and z < accounting.PLD_PROBE * z_rdp
    assert seen and max(seen) == pytest.approx(accounting.PLD_PROBE * z_rdp)
    assert accounting.epsilon_of(spec, z, delta, "pld", rel) <= eps


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


def test_selection_calibration_cached_equals_computed(cache_dir, monkeypatch):
    """Private selection's calibration (issue 29) is computed once per cache:
    read back from disk (as another selection seed's job reads it) it is the
    calibration computed without a cache, field for field, specs as tuples,
    and its total is dp-accounting's for those multipliers."""
    from dpcd.tuning import calibration

    specs = [("gaussian", 30), ("gaussian", 90)]
    args = (1.0, 1e-5, 5.0, 1.0, 0.1, "laplace", "replace_one")
    monkeypatch.delenv(cache.ENV)
    plain = calibration.calibrate_selection(specs, *args)
    monkeypatch.setenv(cache.ENV, str(cache_dir))
    first = calibration.calibrate_selection(specs, *args)
    cache._memory.clear()
    computed = cache.STATS["computed"]
    second = calibration.calibrate_selection(specs, *args)
    assert cache.STATS["computed"] == computed  # read from disk, nothing recomputed
    assert plain == first == second
    assert set(second.train_multipliers) == {tuple(s) for s in specs}
    assert len(_entries(cache_dir, "calibrate_selection")) == 1
    total = calibration.selection_epsilon(second.trainings(), second.score_spec,
                                        second.score_multiplier, 5.0, 1.0, 1e-5, "replace_one")
    assert total == second.epsilon_achieved <= 1.0
    # another target is another entry
    calibration.calibrate_selection(specs, 2.0, *args[1:])
    assert len(_entries(cache_dir, "calibrate_selection")) == 2
