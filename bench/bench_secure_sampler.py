"""Benchmark: draws per second of the exact samplers, against OpenDP and numpy.

Run: ``python bench/bench_secure_sampler.py`` (prints the tables; no assertions),
``--validate`` for the statistical validation at 10⁷ draws per scale instead.

For the discrete Gaussian and the discrete Laplace at small scales (1, 3 or
5), at DP-CD's scales (the secure grid has 1000 steps per sensitivity, so
``z·1001`` for noise multipliers ``z`` from 0.5 to 200) and, for the
Gaussian, at the lattice releases' scales (``s ≥ 2²⁴``: 2²⁴, 2²⁸, 2³², 2³⁶, and
the integer scales of bench/bench_secure_noise.py's fits: about 2²⁴·³⁵ for
dp_sgd on Adult, 2²⁴·⁸⁴, 2²⁶·⁶³ and 2²⁷·¹⁴ for dp_scd, seq_dp_scd and
primal_dp_scd on the 50 000 x 90 shape), the rate of

* ``exact``: :func:`dpcd.privacy.exact.fill_discrete_gaussian` /
  ``fill_discrete_laplace`` (ChaCha20 keystream, exact decisions);
* ``opendp``: OpenDP's exact samplers (``make_gaussian`` / ``make_laplace``
  on integer vectors, one vector per call; a test dependency);
* ``numpy``: numpy's float ``normal`` / ``laplace`` (the fast path's kind of
  noise, not exact), for scale;
* ``one-word``: for the Gaussian, the same sampler with the one-word discrete
  Laplace proposal at every scale (``exact._fill_gaussian(..., False)``, the
  proposal below ``exact.BLOCK_SCALE``; above it, the sampler before the
  block proposal, bar the wide scales' staircase); the column ``x 1-word`` is
  exact / one-word.

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
import math
import statistics
import sys
import time

import numpy as np
from numba import njit

from dpcd.privacy import exact, keystream

REPEATS = 3
DRAWS = 2_000_000
OPENDP_DRAWS = 20_000
SCALES = (1.0, 3.0, 5.0, 500.5, 1001.0, 10_010.0, 200_200.0, 1_000_000.0)
WIDE_SCALES = (2.0 ** 24, 2.0 ** 24.35, 2.0 ** 24.84, 2.0 ** 26.63, 2.0 ** 27.14, 2.0 ** 28,
               2.0 ** 32, 2.0 ** 36)
# The one-word proposal's exact path runs for ~2e-3 of its draws at 2^32: fewer draws.
ONE_WORD_DRAWS = {2.0 ** 32: 200_000, 2.0 ** 36: 20_000}
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


def validate():
    """10⁷ draws per scale from a fresh key, against the exact law (χ², KS, two
    tail counts, and the low bits' uniformity at the wide scales) and against
    10⁵ of OpenDP's (two-sample χ²), as tests/test_secure_sampler.py does with
    fewer draws; each p-value against 10⁻⁶, so a scale's line fails falsely
    with probability at most 3·10⁻⁶ (7·10⁻⁶ at the wide ones)."""
    sys.path.insert(0, "tests")
    import test_secure_sampler as t

    draws = np.empty(10_000_000, dtype=np.int64)
    opendp = _opendp_sampler("gaussian")
    for sigma in (3.0, 1000.7, 2.0 ** 20 + 0.5, 2.0 ** 24, 2.0 ** 28, 2.0 ** 32):
        before = sum(exact.EXACT_PATH_CALLS.values())
        exact.fill_discrete_gaussian(keystream.new_state(), sigma, draws)
        fallbacks = sum(exact.EXACT_PATH_CALLS.values()) - before
        if sigma < 2.0 ** 21:
            support = t._support(sigma, 12)
            t._check_law(draws, support, t._gaussian_pmf(sigma, support),
                         tails=(3 * sigma, 4.5 * sigma))
        else:
            t._check_wide_law(draws, sigma)
        theirs = np.asarray(opendp(sigma, 100_000), dtype=np.int64)
        # two-sample χ²: up to 50 bins of about equal probability under ours
        edges = np.unique(np.quantile(draws, np.linspace(0, 1, 51)[1:-1]))
        table = np.array([np.bincount(np.searchsorted(edges, x), minlength=edges.size + 1)
                          for x in (draws, theirs)])
        from scipy import stats
        p = stats.chi2_contingency(table).pvalue
        assert p > t.P_MIN, (sigma, p)
        low = ", low bits" if sigma >= 2 ** 21 else ""
        print(f"gaussian  {sigma:>14.6g}: 1e7 draws pass (chi2, KS, tails{low}); two-sample "
              f"chi2 against 1e5 OpenDP draws p = {p:.3g}; exact-path calls {fallbacks}",
              flush=True)


def main():
    state = keystream.new_state()
    rng = np.random.default_rng()
    out = np.empty(DRAWS, dtype=np.int64)
    print(f"{'law':<9} {'scale':>10} {'exact/s':>11} {'(wall)':>11} {'opendp/s':>10} "
          f"{'numpy/s':>11} {'x opendp':>9} {'x numpy':>8} {'x 1-word':>8}")
    for law in ("gaussian", "laplace"):
        fill = exact.fill_discrete_gaussian if law == "gaussian" else exact.fill_discrete_laplace
        float_draw = rng.normal if law == "gaussian" else rng.laplace
        opendp = _opendp_sampler(law)
        for scale in SCALES + (WIDE_SCALES if law == "gaussian" else ()):
            fill(state, scale, out[:10])                      # compile / load the cache
            exact._fill_gaussian(state, scale, out[:10], False)
            n_old = ONE_WORD_DRAWS.get(scale, DRAWS)
            rates = {"exact": [], "wall": [], "opendp": [], "numpy": [], "old": []}
            for _ in range(REPEATS):
                cpu, wall = _rate(lambda: fill(state, scale, out), DRAWS)
                rates["exact"].append(cpu)
                rates["wall"].append(wall)
                if law == "gaussian":
                    rates["old"].append(_rate(lambda: exact._fill_gaussian(
                        state, scale, out[:n_old], False), n_old)[0])
                rates["opendp"].append(_rate(lambda: opendp(scale, OPENDP_DRAWS),
                                             OPENDP_DRAWS)[0])
                rates["numpy"].append(_rate(lambda: float_draw(0.0, scale, DRAWS), DRAWS)[0])
            med = {k: statistics.median(v) if v else math.nan for k, v in rates.items()}
            print(f"{law:<9} {scale:>10.6g} {med['exact']:>11.3e} {med['wall']:>11.3e} "
                  f"{med['opendp']:>10.3e} {med['numpy']:>11.3e} "
                  f"{med['exact'] / med['opendp']:>9.0f} {med['exact'] / med['numpy']:>8.2f} "
                  f"{med['exact'] / med['old']:>8.2f}")
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
    validate() if "--validate" in sys.argv else main()
