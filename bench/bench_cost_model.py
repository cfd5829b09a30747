"""Benchmark: each solver's cost per (record x feature) step, for the planner's estimate.

Run: ``python bench/bench_cost_model.py`` (prints one table and the
each solver's ``step_cost_ns`` for its algorithm spec in ``src/dpcd/algorithms/``;
no assertions).

A pass of every solver here reads the data once (DP-CD: p coordinate updates
of O(n) each; DP-GCD: one iteration = p coordinate gradients; DP-SGD and
DP-SCD: one epoch of n records), so its cost is about ``c x n x p`` with a
solver's own ``c`` (noise draws, clipping, the loss's exp). This times each
solver of the three paper configs through the sweep's own code
(:func:`dpcd.sweep.runner.run_configurations`, one configuration, one seed, after
a warm-up that compiles the kernels) on random dense data of one shape, for
every loss the paper configs pair it with, and keeps the slowest loss; the
smallest batch size of a grid is taken (the most steps per pass). The table
is the planner's ``ns per entry-pass``; a job's estimate is that times the
entries (n x p, or the non-zeros of a sparse dataset) times its passes,
configurations and seeds.
"""
import time

import numpy as np
import scipy.sparse as sp
import yaml

from dpcd.problems import make_problem
from dpcd.sweep.grid import configurations
from dpcd.streams import run_seed
from dpcd.sweep.problem import SweepProblem, smoothness_constants
from dpcd.sweep.runner import run_configurations
from dpcd.sweep.smoothness import private_smoothness_estimates

# Dense: a tall shape (the kernels' per-entry cost, not their per-call
# overhead). Sparse: dorothea's shape and non-zeros (the only sparse dataset;
# its noise draws are per feature, not per non-zero, so its cost per non-zero
# holds for that shape, not for every sparse one).
DENSE = {"n": 20000, "p": 50, "passes": 2, "axis": 4}
SPARSE = {"n": 800, "p": 88119, "nnz": 727760, "passes": 1, "axis": 2}
REPEATS = 3
CONFIGS = ("dpcd_icml22", "dpgcd_aistats23", "dpscd_aaai21")
SPARSE_DATASETS = ("dorothea",)


def small_grid(grid, axis):
    """The grid's first ``axis`` values on every axis, its smallest batch size
    (the most steps per pass): a block of configurations as the sweep runs them."""
    out = {}
    for key, value in grid.items():
        if isinstance(value, dict):
            start, stop, num = value["geomspace"]
            value = [float(v) for v in np.geomspace(start, stop, int(num))]
        if key == "batch_size":
            value = [min(value)]
        out[key] = value[:axis] if isinstance(value, list) else value
    return out


def cases():
    """(solver, adapter, grid, problem spec, privacy) per solver and loss."""
    seen = {}
    for name in CONFIGS:
        config = yaml.safe_load(open(f"config/paper/{name}.yaml"))
        for exp in config["experiments"].values():
            for entry, grid in exp["solvers"].items():
                grid = dict(grid or {})
                adapter = grid.pop("solver", entry)
                grid.pop("passes", None)
                sparse = exp["dataset"] in SPARSE_DATASETS
                key = (adapter, exp["problem"]["loss"], exp["problem"]["penalty"], sparse)
                seen.setdefault(key, (adapter, grid, exp, sparse))
    return seen.values()


def problem_of(spec, sparse, rng):
    """Random data of the shape, rows of unit norm (as DP-SCD requires)."""
    if sparse:
        n, p = SPARSE["n"], SPARSE["p"]
        extra = sp.csr_matrix((np.ones(p), (np.arange(p) % n, np.arange(p))), shape=(n, p))
        density = (SPARSE["nnz"] - p) / (n * p)  # one non-zero per column, then random
        X = sp.random(n, p, density=density, format="csr", random_state=0) + extra
        X.data[:] = 1.0
        X = sp.diags(1.0 / np.maximum(np.sqrt(X.multiply(X).sum(axis=1)).A1, 1e-12)) @ X
        X = sp.csc_matrix(X)
        X.sort_indices()
        y = np.where(X @ rng.standard_normal(p) > 0, 1.0, -1.0)
    else:
        n, p = DENSE["n"], DENSE["p"]
        X = rng.standard_normal((n, p))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        y = X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n)
    if spec["loss"] != "squares":
        y = np.where(y > 0, 1.0, -1.0)
    alpha = 0.01
    datafit, penalty = make_problem(spec["loss"], spec["penalty"], alpha)
    c = smoothness_constants(X, spec["loss"])
    return SweepProblem(
        X=X, y=y, datafit=datafit, penalty=penalty,
        smoothness=np.asarray(c["smoothness"]), global_smoothness=c["global_smoothness"],
        max_abs=c["max_abs"], loss=spec["loss"], alpha=alpha,
        X_val=X[:200], y_val=y[:200], X_test=X[:200], y_test=y[:200],
    )


def main():
    rng = np.random.default_rng(0)
    costs = {"dense": {}, "sparse": {}}
    print(f"dense {DENSE}, sparse {SPARSE}; one seed, best of {REPEATS}")
    print(f"{'solver':<12} {'loss':<9} {'penalty':<8} {'data':<7} {'configs':>7} "
          f"{'s':>8} {'ns/entry-pass':>14}")
    for adapter, grid, exp, sparse in cases():
        shape = SPARSE if sparse else DENSE
        grid = small_grid(grid, shape["axis"])
        problem = problem_of(exp["problem"], sparse, rng)
        privacy = dict(exp["privacy"], epsilon=1.0)
        passes = shape["passes"]
        spec = {"experiment": "bench", "solver": adapter, "grid": grid, "passes": [passes],
                "privacy": privacy, "seeds": 1, "base_seed": 0, "chunks": 1,
                "dataset": "bench", "variant": "raw", "problem": exp["problem"]}
        configs = configurations(adapter, grid, [passes], [1.0])
        private = None
        if adapter == "dp_cd_p":
            private = private_smoothness_estimates(
                problem.X, exp["problem"]["loss"], grid["smoothness_fraction"], [1.0],
                [run_seed(0, 0)], "bench")
        seeds = [run_seed(0, 0)]
        run = lambda: run_configurations(spec, configs, seeds, problem, 1.0, private)
        run()  # compile
        best = np.inf
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t0)
        entries = problem.X.nnz if sparse else shape["n"] * shape["p"]
        ns = best * 1e9 / (entries * passes * len(configs))
        kind = "sparse" if sparse else "dense"
        costs[kind][adapter] = max(costs[kind].get(adapter, 0.0), ns)
        print(f"{adapter:<12} {exp['problem']['loss']:<9} {exp['problem']['penalty']:<8} "
              f"{kind:<7} {len(configs):>7} {best:8.3f} {ns:14.1f}")
    print("\nstep_cost_ns of each algorithm spec, by kind of data = {")
    for kind in costs:
        print(f'    "{kind}": {{')
        for adapter in sorted(costs[kind]):
            print(f'        "{adapter}": {costs[kind][adapter]:.3g},')
        print("    },")
    print("}")


if __name__ == "__main__":
    main()
