"""The counter-based normal stream of the noise vectors (``dpcd.solvers._normal``).

Its values against an independent numpy derivation (libm's log, sin, cos);
its pieces against libm; its distribution by fixed-seed tests whose
tolerances are stated as false-alarm probabilities; and the guarantee the
solvers rely on: a normal depends only on (key, position).
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcd.solvers._normal import (
    _minus_2_log, _sin_cos, fill_normals, stream_key, take_normals,
)
from numba import njit


def _splitmix(key, c):
    with np.errstate(over="ignore"):
        z = np.uint64(key) + c.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _numpy_stream(key, n_pairs):
    """Normals 0 ... 2 n_pairs - 1 as documented, with numpy and libm."""
    k = np.arange(n_pairs, dtype=np.uint64) * np.uint64(3)
    h_u, h_t, h_lo = (_splitmix(key, k + np.uint64(i)) for i in range(3))
    hi = (h_u >> np.uint64(12)).astype(np.float64) * 2.0**-52
    lo = (h_lo >> np.uint64(12)).astype(np.float64) * 2.0**-52
    u = (1.0 - hi) - lo * 2.0**-52
    r = np.sqrt(-2.0 * np.log(u))
    q = (h_t >> np.uint64(62)).astype(np.float64)
    x = (((h_t << np.uint64(2)) >> np.uint64(12)).astype(np.float64) * 2.0**-52 - 0.5)
    theta = (q + x) * (math.pi / 2)
    out = np.empty(2 * n_pairs)
    out[0::2], out[1::2] = r * np.cos(theta), r * np.sin(theta)
    return out


@pytest.mark.parametrize("key", [0, 1, 2**63 + 12345, 2**64 - 1])
def test_stream_is_the_documented_box_muller(key):
    z = np.empty(20000)
    fill_normals(np.uint64(key), 0, z)
    # the angle (q + x) pi/2 rounds once in numpy; r is at most 12
    np.testing.assert_allclose(z, _numpy_stream(key, 10000), rtol=0, atol=1e-13)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=2.0**-104, max_value=1.0))
def test_minus_2_log_matches_libm(u):
    ref = -2.0 * math.log(u)
    got = _minus_2_log(u)
    assert abs(got - ref) <= 4e-16 * max(abs(ref), 1e-300) or got == ref


def test_minus_2_log_at_the_ends():
    assert _minus_2_log(1.0) == 0.0
    # the smallest u the stream makes: r = sqrt(208 ln 2) = 12.007
    assert math.isclose(_minus_2_log(2.0**-104), 208 * math.log(2.0), rel_tol=1e-15)
    for u in (0.5, math.sqrt(0.5), np.nextafter(math.sqrt(0.5), 1.0), 1.0 - 2.0**-53):
        assert math.isclose(_minus_2_log(u), -2.0 * math.log(u), rel_tol=4e-16)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=-math.pi / 4, max_value=math.pi / 4))
def test_sin_cos_match_libm(x):
    s, c = _sin_cos(x)
    assert abs(s - math.sin(x)) <= 2.3e-16 and abs(c - math.cos(x)) <= 2.3e-16


@pytest.fixture(scope="module")
def draws():
    z = np.empty(2**22)
    fill_normals(stream_key(np.random.SeedSequence(2024)), 0, z)
    return z


def test_moments_and_marginal(draws):
    """Fixed seed, 2**22 draws; each bound is a two-sided 1e-6 false alarm
    (mean, variance) or a 1e-4 KS p-value."""
    n = draws.size
    zq = stats.norm.isf(0.5e-6)
    assert abs(draws.mean()) <= zq / math.sqrt(n)
    assert abs(draws.var() - 1.0) <= zq * math.sqrt(2.0 / n)
    assert stats.kstest(draws, "norm").pvalue > 1e-4


@pytest.mark.parametrize("t", [1.0, 2.0, 3.0, 4.0, 4.5])
def test_tail_mass(draws, t):
    """P(|Z| > t) within the two-sided 1e-6 binomial interval."""
    n = draws.size
    lo, hi = stats.binom.ppf([0.5e-6, 1 - 0.5e-6], n, 2 * stats.norm.sf(t))
    assert lo <= np.sum(np.abs(draws) > t) <= hi


def test_pairs_are_polar_uniform_and_independent(draws):
    """A pair's squared radius is chi2(2), its angle uniform, the two
    independent; consecutive pairs uncorrelated."""
    a, b = draws[0::2], draws[1::2]
    r2, angle = a * a + b * b, np.arctan2(b, a)
    assert stats.kstest(r2, stats.chi2(2).cdf).pvalue > 1e-4
    assert stats.kstest(angle, stats.uniform(-math.pi, 2 * math.pi).cdf).pvalue > 1e-4
    bound = stats.norm.isf(0.5e-6) / math.sqrt(a.size)
    assert abs(np.corrcoef(a, b)[0, 1]) <= bound
    assert abs(stats.spearmanr(r2, angle)[0]) <= bound
    assert abs(np.corrcoef(draws[:-2], draws[2:])[0, 1]) <= bound


def test_keys_give_unrelated_streams():
    seeds = np.random.SeedSequence(7).spawn(2)
    z = np.empty((2, 2**18))
    for row, seed in zip(z, seeds):
        fill_normals(stream_key(seed), 0, row)
    assert abs(np.corrcoef(z)[0, 1]) <= stats.norm.isf(0.5e-6) / math.sqrt(z.shape[1])


@njit
def _take_in_pieces(key, n_buf, pieces):
    buf = np.empty(n_buf)
    out = np.empty(pieces.sum())
    start, pos = -n_buf, 0
    for m in pieces:
        start = take_normals(key, buf, start, pos, out[pos:pos + m])
        pos += m
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=30),
       st.sampled_from([2, 8, 16]))
def test_values_depend_only_on_position(pieces, n_buf):
    """Vectors of any length (odd, shorter or longer than the buffer), taken
    in any pieces through any buffer, are the same slice of the stream."""
    key = np.uint64(99)
    pieces = np.asarray(pieces, dtype=np.int64)
    expected = np.empty(pieces.sum() + 1)
    fill_normals(key, 0, expected[:(expected.size // 2) * 2])
    got = _take_in_pieces(key, n_buf, pieces)
    np.testing.assert_array_equal(got, expected[:got.size])
