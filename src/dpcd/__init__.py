"""dpcd: differentially private coordinate descent.

Numba solvers for DP-CD (Mangold et al., ICML 2022), DP-GCD (Mangold et al.,
AISTATS 2023) and DP-SCD (Damaskinos et al., AAAI 2021), their privacy
accounting through dp-accounting, and a Snakemake workflow that tracks every
run and its privacy budget in MLflow.
"""

__version__ = "0.1.0"


def _numba_cache_for_these_sources():
    """Point a given ``NUMBA_CACHE_DIR`` at a subdirectory named for these sources.

    numba checks only the file of the function it caches, not the files of
    the functions it calls (numba/numba#1833): after an update that changes
    ``privacy/exact.py`` alone, a cached kernel of another module would keep
    the old sampler. A fingerprint of every source file of the package in the
    directory's name makes any change start a cache of its own. Runs before
    numba reads its configuration; idempotent in child processes, which
    inherit the variable.
    """
    import hashlib
    import os
    import sys
    from pathlib import Path

    base = os.environ.get("NUMBA_CACHE_DIR")
    if not base:  # numba's default, the __pycache__ beside each source
        return
    digest = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    name = "dpcd-" + digest.hexdigest()[:16]
    if os.path.basename(base).startswith("dpcd-"):
        base = os.path.dirname(base)
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(base, name)
    if "numba" in sys.modules:  # imported first by the user: its config is read
        sys.modules["numba"].config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]


_numba_cache_for_these_sources()

from dpcd.leak import DefaultsWarning, PrivacyLeakWarning  # noqa: E402

__all__ = ["DefaultsWarning", "PrivacyLeakWarning", "PrivateSearch", "__version__"]


def __getattr__(name):  # PrivateSearch pulls in sklearn and numba: imported when asked for
    if name == "PrivateSearch":
        from dpcd.estimators.private_search import PrivateSearch
        return PrivateSearch
    raise AttributeError(f"module 'dpcd' has no attribute {name!r}")
