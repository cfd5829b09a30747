"""Benchmark: DP-SGD (and DP-SCD) per configuration-pass on the YearPredictionMSD shape, vs a floor.

Run: ``python bench/bench_msd_shape.py [solver ...]`` (default ``dp_sgd``;
also ``sgd``, ``dp_scd``, ``seq_dp_scd``; prints one table; no assertions).

The DP-SCD paper's YearPredictionMSD experiment (its stand-in: 347 786
training rows x 90 dense features, unit-norm rows, ridge with L2 alpha 1e-4,
batch sizes 5 to 2 000) is most of ``config/paper/dpscd_aaai21.yaml``'s cost.
Each solver runs through the sweep's own code
(:func:`dpcd.sweep.runner.run_configurations`: one seed, ``K`` configurations of
one batch size sharing their kernel calls as in a sweep, ``PASSES`` passes,
objective after every pass) after a warm-up that compiles the kernels; the
table gives seconds per configuration-pass, best of ``REPEATS``, wall and
CPU (``process_time``: on cores shared with other jobs it does not count the
time spent waiting for a core).

The floor, timed in the same run: a plain numba loop over the rows the first
configuration's run samples (its own sampling stream, step by step), each row
one dot product with the iterate (DP-SGD's four partial sums) and one axpy
into the gradient sum, the iterate moved once per step; "floor+pf" is the
same loop prefetching the row two ahead (X, 250 MB, is far beyond the caches:
a sampled row is a memory round trip). No clipping, no noise, no prox, no
objective: what a pass over the sampled rows costs at least. "x floor" is the
solver's wall time over the plain floor's, "cpu x" the same in CPU time.
"""
import os
import sys
import time

import numpy as np
from numba import njit

import bench_cost_model
from dpcd.solvers._dp_sgd_independent import fill_gaps, stream_keys
from dpcd.solvers._prefetch import prefetch_row
from dpcd.solvers._sgd_steps import _dot_row
from dpcd.sweep.grid import configurations
from dpcd.streams import run_entropy, run_seed, stream_identity
from dpcd.sweep.runner import run_configurations

N, P = 347_786, 90
PASSES = 2
REPEATS = 3
K = 8  # configurations of one batch size per call
BATCH_SIZES = (5, 50, 500, 2000)
PROBLEM = {"loss": "squares", "penalty": "l2", "alpha": 1e-4}


@njit(cache=True, error_model="numpy")
def floor(X, y, rows, starts, w, g, ahead):
    """Steps ``t``: rows ``rows[starts[t]:starts[t + 1]]``, dot + axpy each,
    then ``w -= 1e-3 g``; prefetching the row ``ahead`` rows on (0: none)."""
    for t in range(starts.shape[0] - 1):
        for s in range(starts[t], starts[t + 1]):
            if ahead > 0 and s + ahead < rows.shape[0]:
                prefetch_row(X, rows[s + ahead])
            i = rows[s]
            d = 2.0 * (_dot_row(X, i, w) - y[i])
            for j in range(X.shape[1]):
                g[j] += d * X[i, j]
        for j in range(X.shape[1]):
            w[j] -= 1e-3 * g[j]
            g[j] = 0.0


def sampled_rows(spec, config, seed, n, batch_size, passes):
    """The rows a DP-SGD run samples, step by step (its own sampling stream)."""
    key = stream_keys(run_entropy(seed, stream_identity(spec["experiment"], config)))[0]
    lam = -np.log1p(-batch_size / n)
    n_steps = int(np.ceil(passes * n / batch_size))
    gaps = np.empty(int(passes * n * 1.1) + 1000)
    fill_gaps(key, 0, lam, gaps)
    trials = np.cumsum(gaps).astype(np.int64) - 1
    trials = trials[trials < n_steps * n]
    starts = np.searchsorted(trials, np.arange(n_steps + 1) * n)
    return trials % n, starts


def spec_of(solver, batch_size):
    grid = {"clip": [1e-2, 1e-1, 1.0, 10.0], "batch_size": [batch_size]}
    if solver in ("dp_sgd", "sgd"):
        grid["step"] = [1e-3, 1e-1]
    else:
        grid["clip"] = list(np.geomspace(1e-3, 10.0, K))
    if solver == "sgd":
        grid.pop("clip")
        grid["step"] = list(np.geomspace(1e-4, 1.0, K))
    return {"experiment": "bench", "solver": solver, "grid": grid, "passes": [PASSES],
            "privacy": {"epsilon": 1.0, "delta": 1e-3}, "seeds": 1, "base_seed": 0,
            "chunks": 1, "dataset": "bench", "variant": "raw", "problem": PROBLEM}


def best_of(fn):
    wall = cpu = np.inf
    for _ in range(REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def main(solvers):
    bench_cost_model.DENSE.update(n=N, p=P)
    problem = bench_cost_model.problem_of(PROBLEM, False, np.random.default_rng(0))
    X, y = problem.X_rows, problem.y
    seeds = [run_seed(0, 0)]
    print(f"MSD shape {N} x {P}, ridge alpha {PROBLEM['alpha']}, {K} configurations a "
          f"batch size, {PASSES} passes, one seed; best of {REPEATS}; "
          f"load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'solver':<11} {'batch':>5} {'s/config-pass':>13} {'cpu s':>7} "
          f"{'floor s/pass':>12} {'floor+pf':>8} {'x floor':>7} {'cpu x':>7}")
    for solver in solvers:
        for batch_size in BATCH_SIZES:
            spec = spec_of(solver, batch_size)
            epsilons = [1.0]  # sgd's runs ignore it
            configs = configurations(solver, spec["grid"], [PASSES], epsilons)[:K]
            rows, starts = sampled_rows(spec, configs[0], seeds[0], N, batch_size, PASSES)
            w, g = np.zeros(P), np.zeros(P)
            floor(X, y, rows[:8], starts[:2].clip(max=8), w, g, 0)  # compile
            plain, plain_cpu = (v / PASSES for v in best_of(
                lambda: floor(X, y, rows, starts, w, g, 0)))
            ahead = best_of(lambda: floor(X, y, rows, starts, w, g, 2))[0] / PASSES
            short = dict(spec, passes=[0.01])
            warm = configurations(solver, spec["grid"], [0.01], epsilons)[:K]
            run_configurations(short, warm, seeds, problem, 1.0, None)  # compile
            wall, cpu = best_of(lambda: run_configurations(spec, configs, seeds, problem,
                                                           1.0, None))
            per = len(configs) * PASSES
            print(f"{solver:<11} {batch_size:>5} {wall / per:>13.4f} {cpu / per:>7.4f} "
                  f"{plain:>12.4f} {ahead:>8.4f} {wall / per / plain:>7.2f} "
                  f"{cpu / per / plain_cpu:>7.2f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main(sys.argv[1:] or ["dp_sgd"])
