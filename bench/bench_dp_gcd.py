"""Benchmark: DP-GCD ms per iteration (= per pass) vs a memory-streaming floor.

Run: ``python bench/bench_dp_gcd.py`` (prints one table; no assertions).

Shapes of the DP-GCD paper (Mangold et al. 2023, Table 1): square
(1000 x 1000 dense, least squares + L1), madelon (2600 x 500 dense, logistic
+ L1) and dorothea (800 x 88 119 sparse CSC, ~0.9 % density, binary
features, logistic + L1), random data of those shapes.  One DP-GCD iteration
reads X once (the p clipped coordinate gradients), draws p + 1 Laplace
variables and updates one coordinate.  The floor is one read of X per
iteration with the least work that uses every entry: ``X.T @ v`` as a numba
column-sum loop (dense) or a CSC loop (sparse), timed in the same run.
Target: DP-GCD <= 3x the floor.
"""
import time

import numpy as np
import scipy.sparse as sp
from numba import njit

from dpcd.privacy import calibrate_dp_gcd
from dpcd.problems import make_problem
from dpcd.algorithms.dp_cd import coordinate_clip
from dpcd.solvers import dp_gcd

ITERATIONS = 20
REPEATS = 7


@njit(cache=True, fastmath={"reassoc", "nsz"})
def _floor_dense(X, v, out, reps):
    n, p = X.shape
    for _ in range(reps):
        for j in range(p):
            acc = 0.0
            for i in range(n):
                acc += X[i, j] * v[i]
            out[j] = acc


@njit(cache=True, fastmath={"reassoc", "nsz"})
def _floor_csc(data, indices, indptr, v, out, reps):
    for _ in range(reps):
        for j in range(indptr.shape[0] - 1):
            acc = 0.0
            for k in range(indptr[j], indptr[j + 1]):
                acc += data[k] * v[indices[k]]
            out[j] = acc


def make_data(name, seed=0):
    rng = np.random.default_rng(seed)
    if name == "square":
        X = rng.standard_normal((1000, 1000))
        w = np.zeros(1000)
        w[:10] = rng.standard_normal(10)
        y = X @ w + 0.1 * rng.standard_normal(1000)
        return np.asfortranarray(X), y, make_problem("squares", "l1", 0.1)
    if name == "madelon":
        X = rng.standard_normal((2600, 500)) * rng.uniform(0.5, 2.0, 500)
        y = np.where(X[:, :5].sum(axis=1) + rng.standard_normal(2600) > 0, 1.0, -1.0)
        return np.asfortranarray(X), y, make_problem("logistic", "l1", 0.01)
    n, p = 800, 88119
    X = sp.random(n, p, density=0.009, format="csc", random_state=seed,
                  data_rvs=np.ones, dtype=np.float64)
    X.sort_indices()
    y = np.where(rng.random(n) < 0.1, 1.0, -1.0)
    return X, y, make_problem("logistic", "l1", 1e-3)


def best_of(fn):
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench(name):
    X, y, (datafit, penalty) = make_data(name)
    if sp.issparse(X):
        M = datafit.coordinate_smoothness(X.toarray())  # constants only
    else:
        M = datafit.coordinate_smoothness(X)
    M = np.maximum(M, 1e-12)  # empty random columns of the sparse shape
    n, p = X.shape
    clip = coordinate_clip(M, 1.0)
    rows = []
    for rule in ("gs_r", "gs_s"):
        cal = calibrate_dp_gcd(n, p, ITERATIONS, clip, 1.0, 1.0 / n ** 2, smoothness=M,
                               rule=rule, penalty="l1", alpha=float(penalty.params[0]))

        def run(rule=rule, cal=cal):
            return dp_gcd(X, y, datafit, penalty, smoothness=M, step=1.0, clip=clip,
                          selection_scales=cal.extra["selection_scales"],
                          noise_scales=cal.noise_scales, iterations=ITERATIONS, seed=0,
                          rule=rule, selection_noise=cal.extra["selection_noise"],
                          check_input=False)

        run()  # compile
        kernel = min(run().time for _ in range(REPEATS)) / ITERATIONS
        rows.append((rule, cal.extra["selection_noise"], kernel))
    v = np.random.default_rng(1).standard_normal(n)
    out = np.empty(p)
    if sp.issparse(X):
        _floor_csc(X.data, X.indices, X.indptr, v, out, 1)
        floor = best_of(lambda: _floor_csc(X.data, X.indices, X.indptr, v, out,
                                           ITERATIONS)) / ITERATIONS
        nbytes = X.data.nbytes + X.indices.nbytes
    else:
        _floor_dense(X, v, out, 1)
        floor = best_of(lambda: _floor_dense(X, v, out, ITERATIONS)) / ITERATIONS
        nbytes = X.nbytes
    return name, X.shape, nbytes, floor, rows


def main():
    print(f"DP-GCD, {ITERATIONS} iterations, best of {REPEATS}; floor = one numba "
          "read of X (X.T @ v) per iteration, same run")
    print(f"{'shape':10s} {'n x p':>13s} {'MB of X':>8s} {'floor ms':>9s} "
          f"{'rule':>5s} {'noise on':>9s} {'ms/iter':>8s} {'x floor':>8s}")
    for name in ("square", "madelon", "dorothea"):
        name, shape, nbytes, floor, rows = bench(name)
        for rule, placement, t in rows:
            print(f"{name:10s} {shape[0]:>6d}x{shape[1]:<6d} {nbytes / 1e6:8.2f} "
                  f"{floor * 1e3:9.3f} {rule:>5s} {placement:>9s} {t * 1e3:8.3f} "
                  f"{t / floor:8.2f}")


if __name__ == "__main__":
    main()
