"""Benchmark: time per pass of each solver vs problem size, and its exponent.

Run: ``python bench/bench_scaling.py`` (prints one table; no assertions).

Three sizes with ``n p`` growing 4x each step, twice: n grows at fixed p, then
p grows at fixed n. Problem: logistic + L2 on random rows of unit norm (so
every solver's private regime applies), noise at fixed scales (the kernels'
cost does not depend on them). The exponent ``b`` of ``time ~ (n p)^b`` is the
log-log least-squares slope over the three sizes; a solver whose work per pass
is O(n p) has ``b ~ 1``.

A pass: p coordinate updates (DP-CD), one iteration (DP-GCD), n expected
samples drawn (DP-SGD at batch size 1, sampling rate q = 1/n), one epoch
(DP-SCD). Times are the solvers' own timers (JIT excluded: each solver runs
once on the smallest problem first), medians over ``REPEATS`` runs with
[min, max]; the repeats are the outer loop so that drifts of machine load
hit all sizes alike. ``b`` is fitted on the medians, ``b(min)`` on the
minima (the least disturbed runs on a loaded machine).

Adding a solver: one entry in ``SOLVERS`` (name -> function building a run
``(problem, datafit, penalty, passes, seed) -> SolverResult``, ``problem``
from :func:`make_data`); solvers
whose module is not there yet are skipped with a note.
"""
import importlib
import time

import numpy as np

from dpcd.problems import make_problem

REPEATS = 7
BASE_N, BASE_P = 10_000, 8
SIZES = {"n grows (p = 8)": [(BASE_N, BASE_P), (4 * BASE_N, BASE_P),
                             (16 * BASE_N, BASE_P)],
         "p grows (n = 10000)": [(BASE_N, BASE_P), (BASE_N, 4 * BASE_P),
                                 (BASE_N, 16 * BASE_P)]}


def _dp_cd(f):
    def run(d, datafit, penalty, passes, seed):
        M = d["M"]
        return f(d["XF"], d["y"], datafit, penalty, smoothness=M, step=0.5,
                 clip=np.sqrt(M / M.sum()), noise_scales=0.01 * np.sqrt(M),
                 passes=passes, seed=seed, check_input=False)
    return run


def _dp_sgd(f):
    def run(d, datafit, penalty, passes, seed):
        return f(d["XC"], d["y"], datafit, penalty, step=1e-2, clip=1.0,
                 noise_scale=0.1, passes=passes, batch_size=1, seed=seed,
                 global_smoothness=d["beta"], check_input=False)
    return run


def _dp_gcd(f):
    def run(d, datafit, penalty, passes, seed):
        M = d["M"]
        return f(d["XF"], d["y"], datafit, penalty, smoothness=M, step=0.5,
                 clip=np.sqrt(M / M.sum()), selection_scales=1e-3,
                 noise_scales=1e-3, iterations=passes, seed=seed, check_input=False)
    return run


def _dp_scd(f):
    def run(d, datafit, penalty, passes, seed):
        return f(d["XC"], d["y"], datafit, penalty, clip=1.0, noise_scale=0.1,
                 passes=passes, batch_size=1, seed=seed, check_input=False)
    return run


# name: (module, function, run builder, passes per timed run)
SOLVERS = {
    "dp_cd": ("dpcd.solvers.dp_cd", "dp_cd", _dp_cd, 10),
    "dp_sgd b=1": ("dpcd.solvers.dp_sgd", "dp_sgd", _dp_sgd, 1),
    "dp_gcd gs_r": ("dpcd.solvers.dp_gcd", "dp_gcd", _dp_gcd, 5),
    "dp_scd dual b=1": ("dpcd.solvers.dp_scd", "dp_scd", _dp_scd, 1),
}


def load_solvers():
    runs, missing = {}, []
    for name, (module, func, build, passes) in SOLVERS.items():
        try:
            f = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name} ({exc})")
            continue
        runs[name] = (build(f), passes)
    return runs, missing


def make_data(n, p, datafit, seed=0):
    """Rows of unit norm, labels of a noisy linear model; both memory layouts.

    The smoothness constants are computed here, outside the timed calls (the
    global one is an eigenvalue problem run by multithreaded BLAS).
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ rng.standard_normal(p) + 0.3 * rng.standard_normal(n) > 0,
                 1.0, -1.0)
    XF = np.asfortranarray(X)
    return {"XF": XF, "XC": np.ascontiguousarray(X), "y": y,
            "M": datafit.coordinate_smoothness(XF),
            "beta": datafit.global_smoothness(XF)}


def exponent(sizes, times):
    """Least-squares slope of log(time) against log(n p)."""
    x = np.log([n * p for n, p in sizes])
    return np.polyfit(x, np.log(times), 1)[0]


def main():
    t_start = time.perf_counter()
    datafit, penalty = make_problem("logistic", "l2", 1e-3)
    runs, missing = load_solvers()
    base = make_data(BASE_N, BASE_P, datafit)
    for run, _ in runs.values():  # JIT
        run(base, datafit, penalty, 1, 0)
    print(f"ms per pass, median of {REPEATS} interleaved runs [min, max]; logistic + "
          "L2; exponent b: time ~ (n p)^b")
    print("wall: the solver's own timer (the run only); cpu: thread CPU time of "
          "the solver call (the run plus O(n p) setup; immune to waiting for a "
          "core on a loaded machine)")
    for sweep, sizes in SIZES.items():
        data = [make_data(n, p, datafit) for n, p in sizes]
        # repeats outermost: a change of machine load hits every size alike
        times = {(name, kind): [[] for _ in sizes] for name in runs
                 for kind in ("wall", "cpu")}
        for r in range(REPEATS):
            for k, d in enumerate(data):
                for name, (run, passes) in runs.items():
                    c0 = time.thread_time()
                    res = run(d, datafit, penalty, passes, r)
                    cpu = time.thread_time() - c0
                    times[name, "wall"][k].append(1e3 * res.time / passes)
                    times[name, "cpu"][k].append(1e3 * cpu / passes)
        cols = [f"n={n} p={p}" for n, p in sizes]
        print(f"\n{sweep}")
        print(f"  {'solver':21s}" + "".join(f"{c:>30s}" for c in cols)
              + f"{'b':>7s}{'b(min)':>8s}")
        for (name, kind), t in times.items():
            cells = "".join(f"{np.median(v):9.3f} [{min(v):8.3f},{max(v):8.3f}]"
                            for v in t)
            b = exponent(sizes, [np.median(v) for v in t])
            b_min = exponent(sizes, [min(v) for v in t])
            print(f"  {name + ' ' + kind:21s}{cells}{b:7.2f}{b_min:8.2f}")
    for m in missing:
        print(f"skipped: {m}")
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
