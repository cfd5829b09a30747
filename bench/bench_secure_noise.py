"""Benchmark: cost of ``noise="secure"`` per fit against the fast path.

Run: ``DPCD_DATA_MIRROR=/path/to/copies python bench/bench_secure_noise.py``
(prints a table; no assertions; ``--repeats`` and ``--only SOLVER`` to shorten).

Cases (each solver's only if its spec has a secure mode, so a solver that
gains one is timed here without a change):

* California (regressor, 20 640 x 8) and Adult (classifier, 32 561 x 105
  one-hot), read by the project's loaders and standardised (recipe
  ``standardize``), with the estimators' defaults (10 passes, ε = 1), for
  dp_cd and dp_cd_p; dp_cd_p is given the data's largest ``|x_ij|`` as
  public ``bounds`` (timing, not a release), and once more without (the row
  ``dp_cd_p*``: the private feature-bound release as well);
* Madelon (classifier, 2 000 x 500) with dp_gcd (10 iterations, L1, GS-r);
* Adult with dp_sgd at batch size 1, 10 passes;
* 50 000 x 90 dense unit-norm rows (bench/bench_dp_scd.py's shape, ridge)
  with dp_scd, seq_dp_scd and primal_dp_scd at batch size 1 000 (primal: 10
  of the 90 coordinates), 10 passes;
* California with ``PrivateSearch`` over dp_cd (4 configurations, K of mean
  3): default (secure) against ``random_state=k`` (fast).

For each, fast (``random_state=k``) and secure fits alternate, ``--repeats``
times each, after two warm-up fits of each mode (numba compilation, the
calibration caches): the timings are medians of whole ``fit`` calls, in the
same run, so machine load hits both alike; the ratios are of the wall-clock
medians and of the CPU-time medians (on a shared machine, the latter leaves
out the waits for a core).  dp_cd reads its smoothness
constants off the data (its ``PrivacyLeakWarning`` is silenced here).
"""
import argparse
import os
import statistics
import tempfile
import time
import warnings

# numba's default cache, beside the sources, checks only a kernel's own file:
# a secure kernel cached before a change to the samplers it calls keeps the old
# samplers (numba/numba#1833). A NUMBA_CACHE_DIR makes dpcd name the cache for
# its sources (dpcd/__init__.py), so the code timed is the code as it is.
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(tempfile.gettempdir(), "dpcd-bench-numba"))

import numpy as np  # noqa: E402

from dpcd import DefaultsWarning, PrivacyLeakWarning, PrivateSearch, algorithms  # noqa: E402
from dpcd.data.loaders import load_raw  # noqa: E402
from dpcd.data.preprocess import apply_recipe  # noqa: E402
from dpcd.data.registry import get_entry  # noqa: E402
from dpcd.estimators import (DPCoordinateDescentClassifier,  # noqa: E402
                             DPCoordinateDescentRegressor)

REPEATS = 15


def load(mirror, name):
    raw = load_raw(get_entry(name), os.path.join(mirror, name))
    parts, _ = apply_recipe(raw, "standardize", name, seed=0)
    return parts["train"]


def timed(make, X, y):
    """Wall-clock and CPU seconds of one fit, and the model."""
    t0, c0 = time.perf_counter(), time.process_time()
    model = make().fit(X, y)
    return time.perf_counter() - t0, time.process_time() - c0, model


def dp_scd_shape(seed=0):
    """bench/bench_dp_scd.py's 50 000 x 90 shape: unit-norm rows, a linear target."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((50_000, 90))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, X @ rng.standard_normal(90) + 0.1 * rng.standard_normal(50_000)


def cases(mirror):
    """(label, data, make(noise kwargs) -> estimator) per timed row."""
    secure_solvers = algorithms.names(secure=True)
    cal, adult, madelon = (load(mirror, "california"), load(mirror, "adult"),
                           load(mirror, "madelon"))
    adult, madelon = (adult[0], adult[1] > 0), (madelon[0], madelon[1] > 0)
    rows = []
    for name, data, cls in (("california", cal, DPCoordinateDescentRegressor),
                            ("adult", adult, DPCoordinateDescentClassifier)):
        bounds = float(np.abs(data[0]).max())
        rows += [(name, "dp_cd", data, lambda kw, cls=cls: cls(solver="dp_cd", **kw)),
                 (name, "dp_cd_p", data,
                  lambda kw, cls=cls, b=bounds: cls(solver="dp_cd_p", bounds=b, **kw)),
                 (name, "dp_cd_p*", data, lambda kw, cls=cls: cls(solver="dp_cd_p", **kw))]
    rows.append(("madelon", "dp_gcd", madelon, lambda kw: DPCoordinateDescentClassifier(
        solver="dp_gcd", penalty="l1", alpha=1e-3, **kw)))
    rows.append(("adult", "dp_sgd", adult, lambda kw: DPCoordinateDescentClassifier(
        solver="dp_sgd", batch_size=1, passes=10, **kw)))
    shape = dp_scd_shape()
    for solver in ("dp_scd", "seq_dp_scd", "primal_dp_scd"):
        rows.append(("50000x90", solver, shape, lambda kw, s=solver: DPCoordinateDescentRegressor(
            solver=s, batch_size=10 if s == "primal_dp_scd" else 1000, passes=10, **kw)))
    rows.append(("california", "search", cal, lambda kw: PrivateSearch(
        DPCoordinateDescentRegressor(solver="dp_cd", passes=5),
        {"step": [0.3, 1.0], "clip": [0.5, 1.0]}, k_mean=3, **kw)))
    return [r for r in rows if r[1].rstrip("*") in secure_solvers or r[1] == "search"]


def main(mirror, repeats, only):
    print(f"{'dataset':<11} {'solver':<13} {'n x p':>12} {'fast ms':>9} {'secure ms':>10} "
          f"{'ratio':>6} {'cpu ratio':>9}")
    for name, solver, (X, y), make in cases(mirror):
        if only and solver.rstrip("*") not in only:
            continue
        # the default is secure; a random_state is the fast mode
        for _ in range(2):  # warm-up: compilation, calibration caches
            timed(lambda: make({"random_state": 0}), X, y)
            timed(lambda: make({}), X, y)
        times = {"fast": [], "secure": [], "fast cpu": [], "secure cpu": []}
        for k in range(repeats):
            t, c, _ = timed(lambda: make({"random_state": k}), X, y)
            times["fast"].append(t)
            times["fast cpu"].append(c)
            t, c, model = timed(lambda: make({}), X, y)
            times["secure"].append(t)
            times["secure cpu"].append(c)
        assert model.privacy_ledger_.noise == "secure", (solver, model.privacy_ledger_.noise)
        med = {mode: statistics.median(v) for mode, v in times.items()}
        # the CPU-time ratio: on a shared machine, waiting for a core is not the fit's cost
        print(f"{name:<11} {solver:<13} {X.shape[0]:>6}x{X.shape[1]:<5} {med['fast'] * 1e3:>9.1f} "
              f"{med['secure'] * 1e3:>10.1f} {med['secure'] / med['fast']:>6.2f} "
              f"{med['secure cpu'] / med['fast cpu']:>9.2f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Reads California, Adult and Madelon from $DPCD_DATA_MIRROR (required).")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--only", nargs="*", help="solvers to time (default: all)")
    args = parser.parse_args()
    mirror = os.environ.get("DPCD_DATA_MIRROR")
    if not mirror:
        parser.error("set DPCD_DATA_MIRROR=/path/to/copies (the directory holding "
                     "california/, adult/ and madelon/)")
    with warnings.catch_warnings():  # dp_cd's exact smoothness (see above)
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", DefaultsWarning)
        main(mirror, args.repeats, args.only)
