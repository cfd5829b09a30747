"""Benchmark: cost of ``noise="secure"`` per fit against the fast path.

Run: ``DPCD_DATA_MIRROR=/path/to/copies python bench/bench_secure_noise.py``
(prints a table; no assertions).

Data: California (regressor, 20 640 x 8) and Adult (classifier, 32 561 x 105
one-hot), read by the project's loaders and standardised (recipe
``standardize``), fitted with the estimators' defaults (10 passes, ε = 1)
with dp_cd and with dp_cd_p; Madelon (classifier, 2 000 x 500, standardised)
with dp_gcd (10 iterations, L1 penalty, the GS-r rule).  dp_cd reads its smoothness constants off the
data (its ``PrivacyLeakWarning`` is silenced here); dp_cd_p is given the
data's largest ``|x_ij|`` as its public ``bounds``: a secure fit refuses to
release a bound privately (that release has no exact sampler), and a bound
read off the data does for timing, not for a release.  For each, fast
(``random_state=k``) and secure fits alternate, ``REPEATS`` times each, after
one warm-up fit of each mode (numba compilation, the calibration caches): the
timings are medians of whole ``fit`` calls, in the same run, so machine load
hits both alike.  The secure fit's extra work for DP-CD is drawing
``passes·p`` exact discrete Gaussians (:mod:`dpcd.privacy.exact`; and ``p``
discrete Laplaces for dp_cd_p), timed alone in the last column; for DP-GCD
``p + 1`` discrete Laplaces per iteration, drawn in the kernel.  The secure
calibration's PLD of the discrete Gaussian is computed in the warm-up (it
depends only on the number of updates, ε and δ, and is cached).
"""
import argparse
import os
import statistics
import time

import warnings

import numpy as np

from dpcd import PrivacyLeakWarning
from dpcd.data.loaders import load_raw
from dpcd.data.preprocess import apply_recipe
from dpcd.data.registry import get_entry
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
from dpcd.privacy import secure

REPEATS = 15


def load(mirror, name):
    raw = load_raw(get_entry(name), os.path.join(mirror, name))
    parts, _ = apply_recipe(raw, "standardize", name, seed=0)
    return parts["train"]


def timed(make, X, y):
    t0 = time.perf_counter()
    model = make().fit(X, y)
    return time.perf_counter() - t0, model


def main(mirror):
    cases = [("california", DPCoordinateDescentRegressor, ("dp_cd", "dp_cd_p"), {}),
             ("adult", DPCoordinateDescentClassifier, ("dp_cd", "dp_cd_p"), {}),
             ("madelon", DPCoordinateDescentClassifier, ("dp_gcd",),
              {"penalty": "l1", "alpha": 1e-3})]
    print(f"{'dataset':<11} {'solver':<8} {'n x p':>12} {'fast ms':>9} {'secure ms':>10} "
          f"{'ratio':>6} {'draws':>6} {'draw ms':>8}")
    for name, cls, solvers, extra in cases:
        X, y = load(mirror, name)
        if cls is DPCoordinateDescentClassifier:
            y = y > 0
        bounds = float(np.abs(X).max())
        for solver in solvers:
            def fast(k, solver=solver):
                return cls(solver=solver, bounds=bounds, random_state=k, **extra)

            def safe(solver=solver):
                return cls(solver=solver, bounds=bounds, noise="secure", **extra)

            for _ in range(2):  # warm-up: compilation, calibration caches
                timed(lambda: fast(0), X, y)
                timed(safe, X, y)
            times = {"fast": [], "secure": []}
            for k in range(REPEATS):
                times["fast"].append(timed(lambda: fast(k), X, y)[0])
                times["secure"].append(timed(safe, X, y)[0])
            _, model = timed(safe, X, y)
            draws = model.n_updates_ * (X.shape[1] + 2 if solver == "dp_gcd" else 1)
            t0 = time.perf_counter()
            (secure.discrete_laplace if solver == "dp_gcd" else secure.discrete_gaussian)(
                1e4, draws)
            draw_ms = (time.perf_counter() - t0) * 1e3
            fast_ms = statistics.median(times["fast"]) * 1e3
            sec_ms = statistics.median(times["secure"]) * 1e3
            print(f"{name:<11} {solver:<8} {X.shape[0]:>6}x{X.shape[1]:<5} {fast_ms:>9.1f} "
                  f"{sec_ms:>10.1f} {sec_ms / fast_ms:>6.2f} {draws:>6} {draw_ms:>8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Reads California, Adult and Madelon from $DPCD_DATA_MIRROR (required).")
    parser.parse_args()
    mirror = os.environ.get("DPCD_DATA_MIRROR")
    if not mirror:
        parser.error("set DPCD_DATA_MIRROR=/path/to/copies (the directory holding "
                     "california/, adult/ and madelon/)")
    with warnings.catch_warnings():  # dp_cd's exact smoothness (see above)
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        main(mirror)
