"""Benchmark: ns per standard normal, the noise stream against numba's and numpy's.

Run: ``python bench/bench_normal.py`` (prints one table; no assertions).

For vectors of the lengths DP-SGD draws per step (8 features: California,
Electricity; 90: YearPredictionMSD; 1000: the Sparse LASSO; 88 119:
dorothea), the time per normal of

* ``stream``: :func:`dpcd.solvers._normal.take_normals`, as the DP-SGD
  kernel calls it (through its ``BUFFER``-normal buffer);
* ``numba``: ``Generator.standard_normal`` in an njit loop, what the kernels
  drew before (numpy's ziggurat, as numba compiles it);
* ``numpy``: ``Generator.standard_normal(size=p, out=...)`` from Python, the
  C ziggurat in bulk (a bound for what a scalar draw in C costs, plus the
  call).

Medians over ``REPEATS`` runs, interleaved so that machine load hits all
three alike; the ratio column is numba / stream.
"""
import time

import numpy as np
from numba import njit

from dpcd.solvers._normal import BUFFER, stream_key, take_normals

REPEATS = 5
DRAWS = 4_000_000  # per timing
LENGTHS = (8, 90, 1000, 88_119)


@njit(cache=True)
def _stream(key, out, reps):
    buf = np.empty(BUFFER)
    start = -BUFFER
    p = out.shape[0]
    for t in range(reps):
        start = take_normals(key, buf, start, t * p, out)
    return out[0]


@njit(cache=True)
def _numba(rng, out, reps):
    for t in range(reps):
        for j in range(out.shape[0]):
            out[j] = rng.standard_normal()
    return out[0]


def _numpy(rng, out, reps):
    for t in range(reps):
        rng.standard_normal(out=out)
    return out[0]


def main():
    key = stream_key(np.random.SeedSequence(0))
    print(f"{'p':>7}  {'stream ns':>10}  {'numba ns':>9}  {'numpy ns':>9}  {'numba/stream':>12}")
    for p in LENGTHS:
        out = np.empty(p)
        reps = max(1, DRAWS // p)
        runs = {"stream": lambda: _stream(key, out, reps),
                "numba": lambda: _numba(np.random.default_rng(0), out, reps),
                "numpy": lambda: _numpy(np.random.default_rng(0), out, reps)}
        for run in runs.values():  # compile / load first
            run()
        times = {name: [] for name in runs}
        for _ in range(REPEATS):
            for name, run in runs.items():
                t0 = time.perf_counter()
                run()
                times[name].append((time.perf_counter() - t0) / (reps * p) * 1e9)
        med = {name: float(np.median(v)) for name, v in times.items()}
        print(f"{p:>7}  {med['stream']:>10.2f}  {med['numba']:>9.2f}  {med['numpy']:>9.2f}"
              f"  {med['numba'] / med['stream']:>12.2f}")


if __name__ == "__main__":
    main()
