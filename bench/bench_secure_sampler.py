"""Benchmark: draws per second of the exact samplers, against OpenDP and numpy.

Run: ``python bench/bench_secure_sampler.py`` (prints one table; no assertions).

For the discrete Gaussian and the discrete Laplace at small scales (1, 3 or
5) and at the solvers' scales (the secure grid has 1000 steps per
sensitivity, so ``z·1001`` for noise multipliers ``z`` from 0.5 to 200), the
rate of

* ``exact``: :func:`dpcd.privacy.exact.fill_discrete_gaussian` /
  ``fill_discrete_laplace`` (ChaCha20 keystream, exact decisions);
* ``opendp``: OpenDP's exact samplers (``make_gaussian`` / ``make_laplace``
  on integer vectors, one vector per call; a test dependency);
* ``numpy``: numpy's float ``normal`` / ``laplace`` (the fast path's kind of
  noise, not exact), for scale.

A second table times short fills in a numba loop, as a kernel draws per
step (vector lengths 1, 8 and 105: one coordinate, California, Adult), at
scale 1001, against numba's own ``np.random.normal`` / ``laplace`` in the
same loop.

Rates are draws per second of process CPU time (``time.process_time``), so
they estimate one core's throughput on a shared machine; the wall-clock
rates are printed beside them. Medians of ``REPEATS`` timings, interleaved so
that load hits all three alike; the last columns are exact / opendp and
exact / numpy.
"""
import statistics
import time

import numpy as np
from numba import njit

from dpcd.privacy import exact, keystream

REPEATS = 3
DRAWS = 2_000_000
OPENDP_DRAWS = 20_000
SCALES = (1.0, 3.0, 5.0, 500.5, 1001.0, 10_010.0, 200_200.0, 1_000_000.0)
LENGTHS = (1, 8, 105)


@njit
def _steps_exact(gaussian, state, scale, out, steps):
    total = 0
    for _ in range(steps):
        if gaussian:
            exact.fill_discrete_gaussian(state, scale, out)
        else:
            exact.fill_discrete_laplace(state, scale, out)
        total += out[0]
    return total


@njit
def _steps_numba(gaussian, scale, out, steps):
    total = 0.0
    for _ in range(steps):
        for j in range(out.size):
            out[j] = np.random.normal(0.0, scale) if gaussian else np.random.laplace(0.0, scale)
        total += out[0]
    return total


def _opendp_sampler(law):
    """OpenDP's exact sampler of ``law``: ``draw(scale, size)`` adds its noise to zeros."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    metric = dp.l2_distance(T="i64") if law == "gaussian" else dp.l1_distance(T="i64")
    make = dp.m.make_gaussian if law == "gaussian" else dp.m.make_laplace

    def draw(scale, size):
        meas = make(dp.vector_domain(dp.atom_domain(T="i64")), metric, scale=scale)
        return meas(np.zeros(size, dtype=np.int64))

    return draw


def _rate(run, n):
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return n / (time.process_time() - cpu), n / (time.perf_counter() - wall)


def main():
    state = keystream.new_state()
    rng = np.random.default_rng()
    out = np.empty(DRAWS, dtype=np.int64)
    print(f"{'law':<9} {'scale':>10} {'exact/s':>11} {'(wall)':>11} {'opendp/s':>10} "
          f"{'numpy/s':>11} {'x opendp':>9} {'x numpy':>8}")
    for law in ("gaussian", "laplace"):
        fill = exact.fill_discrete_gaussian if law == "gaussian" else exact.fill_discrete_laplace
        float_draw = rng.normal if law == "gaussian" else rng.laplace
        opendp = _opendp_sampler(law)
        for scale in SCALES:
            fill(state, scale, out[:10])                      # compile / load the cache
            rates = {"exact": [], "wall": [], "opendp": [], "numpy": []}
            for _ in range(REPEATS):
                cpu, wall = _rate(lambda: fill(state, scale, out), DRAWS)
                rates["exact"].append(cpu)
                rates["wall"].append(wall)
                rates["opendp"].append(_rate(lambda: opendp(scale, OPENDP_DRAWS),
                                             OPENDP_DRAWS)[0])
                rates["numpy"].append(_rate(lambda: float_draw(0.0, scale, DRAWS), DRAWS)[0])
            med = {k: statistics.median(v) for k, v in rates.items()}
            print(f"{law:<9} {scale:>10.6g} {med['exact']:>11.3e} {med['wall']:>11.3e} "
                  f"{med['opendp']:>10.3e} {med['numpy']:>11.3e} "
                  f"{med['exact'] / med['opendp']:>9.0f} {med['exact'] / med['numpy']:>8.2f}")
    print(f"\n{'law':<9} {'length':>6} {'exact/s':>11} {'numba/s':>11} {'x numba':>8}")
    for gaussian in (True, False):
        for length in LENGTHS:
            ints, floats = np.empty(length, dtype=np.int64), np.empty(length)
            steps = max(1, DRAWS // length)
            _steps_exact(gaussian, state, 1001.0, ints, 1)
            _steps_numba(gaussian, 1001.0, floats, 1)
            rates = {"exact": [], "numba": []}
            for _ in range(REPEATS):
                rates["exact"].append(_rate(lambda: _steps_exact(gaussian, state, 1001.0, ints,
                                                                 steps), steps * length)[0])
                rates["numba"].append(_rate(lambda: _steps_numba(gaussian, 1001.0, floats, steps),
                                            steps * length)[0])
            med = {k: statistics.median(v) for k, v in rates.items()}
            law = "gaussian" if gaussian else "laplace"
            print(f"{law:<9} {length:>6} {med['exact']:>11.3e} {med['numba']:>11.3e} "
                  f"{med['exact'] / med['numba']:>8.2f}")


if __name__ == "__main__":
    main()
