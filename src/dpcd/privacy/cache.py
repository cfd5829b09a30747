"""A persistent, content-addressed cache of noise calibrations, shared by processes.

A calibration is a pure function of its inputs (event, ε, δ, accountant,
relation, the dp_accounting version and this package's calibration code), and
the DP-SGD ones take minutes for millions of compositions.  The workflow sets
``DPCD_CALIBRATION_CACHE`` to a directory under ``results/`` that every job
shares (on a cluster: shared storage), so each distinct calibration is
computed once per workflow, whichever job asks first.  Without the variable
nothing is written and only the in-process caches apply (estimators, tests).

Entries are human-readable JSON files named by the sha256 of their key.  A
per-key ``flock`` makes concurrent askers compute once (the others wait, then
read); the file is written to a temporary name and renamed, so a reader never
sees half an entry; an unreadable entry (truncated by a crash, edited by hand)
is recomputed and replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import tempfile
import time

ENV = "DPCD_CALIBRATION_CACHE"

# Bump when a change in dpcd.privacy can change a calibration's result: every
# key carries it, so old entries are then simply never read again.
CALIBRATION_VERSION = 8


@functools.cache
def _dp_accounting_version():
    # read on the first key, not at import: importlib.metadata costs a job
    # that never calibrates tens of milliseconds of start-up
    import importlib.metadata

    return importlib.metadata.version("dp-accounting")


# Seconds spent in :func:`cached` by this process (wall, and CPU: a job
# waiting for another's computation of the same entry spends wall, not CPU),
# its calls and how many entries it computed: a solve job reports them in
# its overhead ledger.
STATS = {"seconds": 0.0, "cpu_seconds": 0.0, "calls": 0, "computed": 0}

# Entries this process has already read or computed (a sweep asks for the same
# calibration once per seed and configuration).
_memory: dict = {}


def cache_dir() -> str | None:
    """The cache directory from ``DPCD_CALIBRATION_CACHE``, or None (no disk cache)."""
    return os.environ.get(ENV) or None


def key_of(kind: str, inputs: dict) -> tuple[str, dict]:
    """The sha256 of a calibration's canonical JSON key, and the key itself."""
    key = {"kind": kind, "inputs": inputs, "calibration_version": CALIBRATION_VERSION,
           "dp_accounting": _dp_accounting_version()}
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), key


def _read(path: str, key: dict):
    try:
        with open(path) as fh:
            entry = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or "value" not in entry:
        return None
    return entry["value"]


@contextlib.contextmanager
def _locked(path: str):
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached(kind: str, inputs: dict, compute):
    """Return ``compute()``, read from / stored in the shared cache when enabled.

    Parameters
    ----------
    kind : str
        Which calibration (part of the key).
    inputs : dict
        JSON-serialisable inputs the result depends on (part of the key).
    compute : callable
        Returns a JSON-serialisable value (lists come back as lists).

    Returns
    -------
    value
        The cached or freshly computed value.
    """
    start, cpu = time.perf_counter(), time.process_time()
    try:
        return _cached(kind, inputs, compute)
    finally:
        STATS["seconds"] += time.perf_counter() - start
        STATS["cpu_seconds"] += time.process_time() - cpu
        STATS["calls"] += 1


def _cached(kind, inputs, compute):
    root = cache_dir()
    if root is None:
        STATS["computed"] += 1
        return compute()
    digest, key = key_of(kind, inputs)
    if (root, digest) in _memory:
        return _memory[root, digest]
    folder = os.path.join(root, digest[:2])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, digest + ".json")
    value = _read(path, key)
    if value is None:
        with _locked(path + ".lock"):
            # another process may have computed it while we waited for the lock
            value = _read(path, key)
            if value is None:
                value = _compute_and_store(folder, path, key, compute)
    _memory[root, digest] = value
    return value


def _compute_and_store(folder, path, key, compute):
    STATS["computed"] += 1
    value = compute()
    text = json.dumps({"key": key, "value": value}, indent=1, sort_keys=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return value
