"""DP-SCD's Poisson batches are what the accounting assumes: each record
independently with probability q = L/N at each iteration.

The batches are drawn by :mod:`dpcd.solvers._poisson` (geometric gaps between
selected trials); :func:`poisson_batches` replays them from a seed, and the
first test ties that replay to what the dual and seqDP-SCD kernels draw.  The
others check the replay's law at fixed seeds: per-record inclusion counts
(binomial), batch sizes (binomial), the trial sequence's independence (pairs
of adjacent trials, of the same record at consecutive iterations, across the
iteration boundary), the gaps (geometric), and determinism.  Each statistical
bound is two-sided at 1e-4 (the seeds are fixed: a failure is a wrong law,
not bad luck, unless the bound is too tight, which 1e-4 per check is not).
"""
import math

import numpy as np
import pytest
from scipy import stats

from dpcd.problems import make_problem
from dpcd.solvers import dp_scd
from dpcd.solvers._poisson import poisson_batches
from dpcd.solvers.dp_scd import scd_iterations

ALPHA = 1e-4  # two-sided level of each check


def _trials(n, records):
    """The Bernoulli trials laid end to end: ``x[t n + i] = 1`` iff record i is in batch t."""
    x = np.zeros(len(records) * n, dtype=np.int8)
    for t, r in enumerate(records):
        x[t * n + r] = 1
    return x


def _chi2_ok(observed, expected, ddof=0):
    p = stats.chisquare(observed, expected, ddof=ddof).pvalue
    return p > ALPHA, p


@pytest.mark.parametrize("variant", ["dual", "seq"])
def test_kernels_draw_these_batches(variant):
    rng = np.random.default_rng(0)
    n, p, L = 300, 4, 30
    X = rng.standard_normal((n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
    datafit, penalty = make_problem("logistic", "l2", 1e-2)
    kw = dict(clip=0.5, noise_scale=0.3, batch_size=L, seed=21, variant=variant,
              sampling="poisson", return_dual=True)
    res = dp_scd(X, y, datafit, penalty, passes=3, **kw)
    T = scd_iterations(n, p, L, 3, variant)
    sizes, records = poisson_batches(21, n, L, T)
    np.testing.assert_array_equal(res.extra["batch_sizes"], sizes)
    # one iteration: the noisy dual variables are exactly the batch's
    res = dp_scd(X, y, datafit, penalty, passes=L / n, **kw)
    assert res.extra["n_iter"] == 1
    np.testing.assert_array_equal(np.flatnonzero(res.extra["alpha"]),
                                  poisson_batches(21, n, L, 1)[1][0])


@pytest.mark.parametrize("n,L,T", [(200, 20, 20_000), (1000, 3, 4000), (50, 49, 8000)])
def test_each_record_is_included_binomially(n, L, T):
    q = L / n
    sizes, records = poisson_batches(5, n, L, T)
    counts = np.bincount(np.concatenate(records), minlength=n)
    # every count within its binomial quantiles, Bonferroni over the records
    lo = stats.binom.ppf(ALPHA / (2 * n), T, q)
    hi = stats.binom.isf(ALPHA / (2 * n), T, q)
    assert counts.min() >= lo and counts.max() <= hi, (counts.min(), counts.max(), lo, hi)
    # and together: sum of squared standardised counts ~ chi2(n)
    chi = np.sum((counts - T * q) ** 2) / (T * q * (1 - q))
    assert stats.chi2.ppf(ALPHA / 2, n) < chi < stats.chi2.isf(ALPHA / 2, n)


@pytest.mark.parametrize("n,L", [(200, 20), (1000, 3), (50, 49)])
def test_batch_sizes_are_binomial(n, L):
    T = 20_000
    sizes, _ = poisson_batches(6, n, L, T)
    dist = stats.binom(n, L / n)
    # bins with at least 5 expected, tails merged into the end bins
    lo, hi = int(dist.ppf(1e-3)), int(dist.isf(1e-3))
    edges = np.arange(lo, hi + 1)
    observed = np.array([np.sum(sizes <= lo)] + [np.sum(sizes == k) for k in edges[1:-1]]
                        + [np.sum(sizes >= hi)])
    expected = T * np.concatenate([[dist.cdf(lo)], dist.pmf(edges[1:-1]), [dist.sf(hi - 1)]])
    assert abs(expected.sum() - T) < 1e-6 * T
    ok, p = _chi2_ok(observed, expected)
    assert ok, p


@pytest.mark.parametrize("n,L", [(200, 20), (40, 20)])
def test_trials_are_independent(n, L):
    """Non-overlapping pairs of trials at lag 1 (neighbouring records; the last
    record of an iteration and the first of the next) and at lag n (a record
    at two consecutive iterations) fall in the four cells with probabilities
    q², q(1−q), (1−q)q, (1−q)²."""
    q = L / n
    T = 20_000
    _, records = poisson_batches(7, n, L, T)
    x = _trials(n, records)
    probs = np.array([(1 - q) ** 2, (1 - q) * q, q * (1 - q), q * q])
    for lag in (1, n):
        # pairs (k, k + lag) with k in disjoint blocks of 2 lag: independent pairs
        k = np.arange(len(x) - lag)
        k = k[(k // lag) % 2 == 0]
        cells = np.bincount(2 * x[k] + x[k + lag], minlength=4)
        ok, p = _chi2_ok(cells, probs * len(k))
        assert ok, (lag, cells, p)
    # across the iteration boundary only: last record of t, first of t + 1
    ends = x[n - 1:-1:n][::2], x[n::n][::2]
    cells = np.bincount(2 * ends[0] + ends[1], minlength=4)
    ok, p = _chi2_ok(cells, probs * len(ends[0]))
    assert ok, (cells, p)


def test_gaps_are_geometric():
    n, L, T = 500, 10, 20_000
    q = L / n
    _, records = poisson_batches(8, n, L, T)
    x = _trials(n, records)
    gaps = np.diff(np.flatnonzero(x))
    kmax = int(stats.geom.isf(1e-3, q))
    observed = np.array([np.sum(gaps == k) for k in range(1, kmax)] + [np.sum(gaps >= kmax)])
    expected = len(gaps) * np.concatenate([stats.geom.pmf(np.arange(1, kmax), q),
                                           [stats.geom.sf(kmax - 1, q)]])
    ok, p = _chi2_ok(observed, expected)
    assert ok, p


def test_full_rate_takes_every_record():
    sizes, records = poisson_batches(9, 30, 30, 5)
    assert np.all(sizes == 30)
    for r in records:
        np.testing.assert_array_equal(r, np.arange(30))


def test_batches_are_sorted_distinct_and_deterministic():
    n, L, T = 300, 40, 500
    sizes, records = poisson_batches(10, n, L, T)
    for r in records:
        assert np.all(np.diff(r) > 0) and (r.size == 0 or (r[0] >= 0 and r[-1] < n))
    sizes2, records2 = poisson_batches(10, n, L, T)
    np.testing.assert_array_equal(sizes, sizes2)
    np.testing.assert_array_equal(np.concatenate(records), np.concatenate(records2))
    sizes3, _ = poisson_batches(11, n, L, T)
    assert not np.array_equal(sizes, sizes3)
    # mean batch size: L within 5 standard errors
    assert abs(sizes.mean() - L) < 5 * math.sqrt(L * (1 - L / n) / T)
