"""Compile the solver kernels once (into ``NUMBA_CACHE_DIR``), by family.

One function per kernel family, each compiling (or loading from the numba
cache) its kernels on a tiny problem: an algorithm spec names its family's as
its runtime's ``warm`` (:class:`dpcd.algorithms.Runtime`), and
:func:`dpcd.algorithms.warmup` calls each family's once; :func:`reference`
warms the reference stage's solvers.

The workflow compiles them in its warm-up jobs, one per family, with a
project-local ``NUMBA_CACHE_DIR``, one at a time (:func:`one_at_a_time`) and
before solver jobs run in parallel, so that parallel jobs never write the same
cache entry at once (numba/numba#4807); each job then loads the kernels it runs
before timing any.
"""
import contextlib
import logging
import os
import sys

import numpy as np

_log = logging.getLogger("dpcd")


@contextlib.contextmanager
def one_at_a_time():
    """Hold an exclusive lock on the numba cache directory (``NUMBA_CACHE_DIR``;
    yielded, None if unset) while compiling into it. numba numbers a
    function's cache entries by reading its index and writing it back, so two
    processes compiling two signatures of one shared helper at once can both
    take one number, and the index can name one's code for the other's
    signature (numba/numba#4807): ``dpcd warmup`` holds it, so the workflow's
    warm-up jobs, one per kernel family, compile one after another."""
    import fcntl

    from numba import config

    cache_dir = config.CACHE_DIR
    if not cache_dir:  # the default: beside each source file
        yield None
        return
    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, "warmup.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log.info("waiting for another warm-up compiling into %s", cache_dir)
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as err:  # a file system without locks (some cluster mounts)
            _log.warning("no lock on %s (%s): compiling unlocked", cache_dir, err)
        yield cache_dir


def _designs(X, fmt):
    """``X``, and its sparse copy (``fmt``: "csc" or "csr") when scipy.sparse is
    loaded: a job on sparse data has it, the warmup job loads it to compile
    both, and a job on dense data neither imports it nor loads those kernels."""
    sparse = sys.modules.get("scipy.sparse")
    return (X,) if sparse is None else (X, getattr(sparse, f"{fmt}_matrix")(X))


def _problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3))
    y = np.sign(rng.standard_normal(8))
    y[y == 0] = 1.0
    return X, y


def reference():
    """The reference stage's solvers: proximal CD for smooth losses (dense and
    sparse CSC designs), SDCA for hinge."""
    from dpcd.problems import make_problem
    from dpcd.solvers.dp_scd import scd
    from dpcd.solvers.reference import reference_solve

    X, y = _problem()
    for loss in ("squares", "logistic"):
        for penalty in ("l1", "l2"):
            for design in _designs(X, "csc"):
                reference_solve(design, y, *make_problem(loss, penalty, 0.01), max_iter=10)
    Xu = X / np.linalg.norm(X, axis=1, keepdims=True)
    scd(Xu, y, *make_problem("hinge", "l2", 0.01), passes=1, seed=0)


def dp_cd():
    """DP-CD's kernels (non-private CD's too): dense and sparse, with and without averaging."""
    from dpcd.problems import make_problem
    from dpcd.solvers.dp_cd import dp_cd

    X, y = _problem()

    for loss in ("squares", "logistic"):
        datafit, penalty = make_problem(loss, "l1", 0.01)
        M = datafit.coordinate_smoothness(X)
        for design in _designs(X, "csc"):  # dense and sparse (CSC) DP-CD
            for averaging in (False, True):
                dp_cd(design, y, datafit, penalty, smoothness=M, step=1.0, clip=1.0,
                      noise_scales=0.1, passes=2, seed=0, averaging=averaging)


def dp_sgd():
    """DP-SGD's kernels (non-private SGD's too): a run alone and a sweep's
    runs, dense and sparse."""
    from dpcd.problems import make_problem
    from dpcd.solvers.dp_sgd import dp_sgd, dp_sgd_many

    X, y = _problem()

    for loss in ("squares", "logistic"):
        datafit, penalty = make_problem(loss, "l1", 0.01)
        for design in _designs(X, "csr"):  # dense and sparse (CSR) DP-SGD
            # the independent-streams kernels: runs outer (a run alone) ...
            dp_sgd(design, y, datafit, penalty, step=0.1, clip=1.0, noise_scale=0.1,
                   passes=1, seed=0)
            # ... and runs inner (a sweep's calls of many runs on narrow data)
            dp_sgd_many(design, y, datafit, penalty, steps=[0.1] * 8, clips=1.0,
                        noise_scales=0.1, passes=1, seeds=[[0, k] for k in range(8)])
    # DP-SCD's papers compare with DP-SGD on the hinge loss
    dp_sgd(X, y, *make_problem("hinge", "l2", 0.01), step=0.1, clip=1.0, noise_scale=0.1,
           passes=1, seed=0, global_smoothness=1.0)


def dp_gcd():
    """DP-GCD's kernels, dense and sparse."""
    from dpcd.problems import make_problem
    from dpcd.solvers.dp_gcd import dp_gcd

    X, y = _problem()

    for loss in ("squares", "logistic"):
        datafit, penalty = make_problem(loss, "l1", 0.01)
        M = datafit.coordinate_smoothness(X)
        for design in _designs(X, "csc"):  # dense and sparse CSC kernels
            dp_gcd(design, y, datafit, penalty, smoothness=M, step=1.0, clip=1.0,
                   selection_scales=0.1, noise_scales=0.1, iterations=2, seed=0)


def dp_scd():
    """The DP-SCD variants' kernels (non-private SCD's too)."""
    from dpcd.problems import make_problem
    from dpcd.solvers.dp_scd import dp_scd, scd

    X, y = _problem()

    Xu = X / np.linalg.norm(X, axis=1, keepdims=True)
    for loss in ("squares", "logistic", "hinge"):
        datafit, penalty = make_problem(loss, "l2", 0.01)
        for variant, sampling in (("dual", "poisson"), ("seq", "poisson")):
            dp_scd(Xu, y, datafit, penalty, clip=1.0, noise_scale=0.1, passes=1,
                   batch_size=2, seed=0, variant=variant, sampling=sampling)
        if loss != "hinge":
            dp_scd(np.asfortranarray(Xu / np.sqrt(len(y))), y, datafit, penalty, clip=1.0,
                   noise_scale=0.1, passes=1, batch_size=2, seed=0, variant="primal",
                   sampling="none")
        scd(Xu, y, datafit, penalty, passes=1, seed=0)
