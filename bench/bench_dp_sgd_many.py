"""Benchmark: a sweep's DP-SGD runs of one seed alone vs together (``dp_sgd_many``).

Run: ``python bench/bench_dp_sgd_many.py [K]`` (prints one table; no assertions).

A sweep runs every configuration on the same seeds, so the runs of one seed
share their Poisson batches and their standard normals; ``dp_sgd_many`` draws
them once for all K runs (each run bit for bit the run alone, tested). Timed
here on the shapes of the DP-CD paper's three problems, batch size 1, the
quick config's grid (5 steps x 10 clipping thresholds, K = 50 runs, or the
first K of them) at 2 passes: K runs one after the other with ``dp_sgd`` and
the same K runs in one ``dp_sgd_many`` call, interleaved, best of 3: with the
kernel its switch picks ("together", "kernel"), and with each of its two
kernels forced (runs outer, runs inner): ``python bench/bench_dp_sgd_many.py 5``
shows where the switch sits. "independent" is what a sweep runs (per-run
seeds): the same K runs in one ``dp_sgd_many(seeds=...)`` call, each on its
own sampling and noise streams (nothing shared but the call); "alone" is
``dp_sgd``, which runs on those streams too. Times are wall times around the
calls (sampling, noise, updates and the objective after every pass);
"ns/run-step" divides by K x steps. Two tables: wall time, and CPU time of
this process (``process_time``), which on cores shared with other jobs does
not count the time the process waits for a core.
"""
import importlib
import sys
import time

import numpy as np

from dpcd.problems import make_problem
from dpcd.solvers import dp_sgd, dp_sgd_many

_module = importlib.import_module("dpcd.solvers.dp_sgd")

PASSES = 2
REPEATS = 3
SHAPES = (  # name, n, p, loss, penalty, alpha (the paper configs' problems)
    ("california", 20_640, 8, "squares", "l1", 0.1),
    ("electricity", 45_312, 8, "logistic", "l2", 1e-4),
    ("sparse_lasso", 1_000, 1_000, "squares", "l1", 0.744),
)


def make_data(n, p, loss, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    w = rng.standard_normal(p)
    y = X @ w + 0.1 * rng.standard_normal(n)
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
    return X, y


def _timed(times, key, fn):
    """Run ``fn`` and keep the best wall and CPU seconds under ``key``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    for clock, elapsed in (("wall", time.perf_counter() - t0), ("cpu", time.process_time() - c0)):
        times[clock][key] = min(times[clock][key], elapsed)


def main(n_runs=50):
    steps, clips = (a.ravel() for a in np.meshgrid(np.geomspace(1e-6, 1.0, 5),
                                                   np.geomspace(1e-3, 1e6, 10)))
    steps, clips = steps[:n_runs], clips[:n_runs]
    scales = 0.64 * clips  # noise multiplier of the order of Electricity's
    print(f"DP-SGD, batch size 1, {PASSES} passes, K = {len(steps)} settings of one seed; "
          f"best of {REPEATS}")
    rows = []
    for name, n, p, loss, penalty, alpha in SHAPES:
        X, y = make_data(n, p, loss)
        datafit, pen = make_problem(loss, penalty, alpha)
        # beta once, as a sweep does (an SVD of X: 0.1 s at 1000 x 1000)
        kw = dict(passes=PASSES, seed=1, check_input=False,
                  global_smoothness=datafit.global_smoothness(X))
        # JIT of both kernels before the timer (the first call of 2 runs, the second of 16)
        for k in (2, _module._INNER_MIN_RUNS):
            dp_sgd_many(X[:50], y[:50], datafit, pen, steps=steps[:k], clips=clips[:k],
                        noise_scales=scales[:k], passes=1, seed=0)
            dp_sgd_many(X[:50], y[:50], datafit, pen, steps=steps[:k], clips=clips[:k],
                        noise_scales=scales[:k], passes=1, seeds=[[0, j] for j in range(k)])
        keys = ("alone", "together", "outer", "inner", "independent")
        times = {clock: dict.fromkeys(keys, np.inf) for clock in ("wall", "cpu")}
        default = _module._takes_inner
        for _ in range(REPEATS):
            _timed(times, "alone", lambda: [
                dp_sgd(X, y, datafit, pen, step=steps[k], clip=clips[k],
                       noise_scale=scales[k], **kw) for k in range(len(steps))])
            for kernel, switch in (("together", default), ("outer", lambda k, p: False),
                                   ("inner", lambda k, p: True)):
                _module._takes_inner = switch
                _timed(times, kernel, lambda: dp_sgd_many(
                    X, y, datafit, pen, steps=steps, clips=clips, noise_scales=scales, **kw))
            _module._takes_inner = default
            _timed(times, "independent", lambda: dp_sgd_many(
                X, y, datafit, pen, steps=steps, clips=clips, noise_scales=scales,
                seeds=[[1, k] for k in range(len(steps))],
                **{k: v for k, v in kw.items() if k != "seed"}))
        rows.append((name, n, p, times, "inner" if default(len(steps), p) else "outer"))
    for clock in ("wall", "cpu"):
        print(f"\n{clock} time")
        print(f"{'problem':14s} {'alone s':>8s} {'together s':>11s} {'speed-up':>9s} "
              f"{'ns/run-step alone':>18s} {'together':>9s} {'kernel':>7s} {'runs-outer':>11s} "
              f"{'runs-inner':>11s} {'outer/inner':>12s} {'independent':>12s} "
              f"{'indep/together':>15s}")
        for name, n, p, times, chosen in rows:
            t = times[clock]
            ns = {k: v / (len(steps) * PASSES * n) * 1e9 for k, v in t.items()}
            print(f"{name:14s} {t['alone']:8.2f} {t['together']:11.2f} "
                  f"{t['alone'] / t['together']:8.1f}x {ns['alone']:18.0f} "
                  f"{ns['together']:9.0f} {chosen:>7s} {ns['outer']:11.0f} {ns['inner']:11.0f} "
                  f"{t['outer'] / t['inner']:11.1f}x {ns['independent']:12.0f} "
                  f"{t['independent'] / t['together']:14.1f}x")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
