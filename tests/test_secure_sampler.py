"""The exact samplers against their exact pmfs, OpenDP, and their exact path.

Each statistical test draws from a fixed key (``state_from_key``), so it is
deterministic; its false-failure probability is the chance that a random key
fails it when the sampler is exact. Every p-value threshold is 1e-6, and a
test that makes ``j`` comparisons fails falsely with probability at most
``j``·1e-6 (union bound). The comparisons:

* χ²: counts in bins of about equal exact probability (expected ≥ 5 each,
  far more in practice), against the χ² law with ``bins − 1`` degrees of freedom;
* Kolmogorov-Smirnov: the largest gap between the empirical and the exact CDF
  over the support, against the Dvoretzky-Kiefer-Wolfowitz-Massart bound
  ``P(gap > ε) ≤ 2 exp(−2nε²)``, which holds for discrete laws too;
* tail counts: the draws beyond two far thresholds, against their binomial
  law (two-sided exact test).
"""

import math

import numpy as np
import pytest
from numba import njit
from scipy import stats

from dpcd.privacy import exact, keystream

P_MIN = 1e-6
N_DRAWS = 2_000_000     # 10⁷ per scale: bench/bench_secure_sampler.py --validate


def _state(seed, guard=0):
    return keystream.state_from_key(np.random.default_rng(seed).bytes(32), guard=guard)


def _laplace_pmf(t, k):
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * np.exp(-np.abs(k) / t)


def _gaussian_pmf(sigma, k):
    w = np.exp(-(k.astype(np.float64) ** 2) / (2 * sigma * sigma))
    return w / w.sum()      # k covers all but < 1e-30 of the mass


def _support(scale, width):
    half = int(math.ceil(width * scale)) + 10
    return np.arange(-half, half + 1)


def _check_law(draws, support, pmf, tails):
    """χ², KS (DKW bound) and tail-count tests of ``draws`` against ``pmf`` on ``support``."""
    n = draws.size
    lo = support[0]
    assert draws.min() >= lo and draws.max() <= support[-1]
    counts = np.bincount(draws - lo, minlength=support.size).astype(np.float64)
    # chi-square on bins of ~equal probability, expected count >= 5
    cdf = np.cumsum(pmf)
    n_bins = int(min(1000, n * cdf[-1] / 50))
    edges = np.unique(np.searchsorted(cdf, np.linspace(0, cdf[-1], n_bins + 1)[1:-1]))
    observed = np.add.reduceat(counts, np.concatenate([[0], edges + 1]))
    expected = n * np.add.reduceat(pmf, np.concatenate([[0], edges + 1]))
    expected *= n / expected.sum()
    assert expected.min() >= 5
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    p_chi2 = stats.chi2.sf(chi2, observed.size - 1)
    assert p_chi2 > P_MIN, (chi2, observed.size)
    # KS: sup |F_n − F| over the support, against DKW-Massart
    gap = np.abs(np.cumsum(counts) / n - cdf / cdf[-1]).max()
    assert 2 * math.exp(-2 * n * gap * gap) > P_MIN, gap
    # tails: P(|X| >= a) for each threshold, two-sided binomial test
    for a in tails:
        p_tail = float(pmf[np.abs(support) >= a].sum() / cdf[-1])
        seen = int((np.abs(draws) >= a).sum())
        assert stats.binomtest(seen, n, p_tail).pvalue > P_MIN, (a, seen, n * p_tail)


@pytest.mark.parametrize("t, seed", [(1.0, 1), (5.0, 2), (1000.7, 3), (100000.3, 4)])
def test_discrete_laplace_law(t, seed):
    """3 comparisons: false failure <= 3e-6."""
    draws = np.empty(N_DRAWS, dtype=np.int64)
    exact.fill_discrete_laplace(_state(seed), t, draws)
    support = _support(t, 40)
    _check_law(draws, support, _laplace_pmf(t, support), tails=(6 * t, 11 * t))


@pytest.mark.parametrize("sigma, seed", [(1.0, 5), (3.0, 6), (1000.7, 7), (100000.3, 8)])
def test_discrete_gaussian_law(sigma, seed):
    """3 comparisons: false failure <= 3e-6."""
    draws = np.empty(N_DRAWS, dtype=np.int64)
    exact.fill_discrete_gaussian(_state(seed), sigma, draws)
    support = _support(sigma, 12)
    _check_law(draws, support, _gaussian_pmf(sigma, support), tails=(3 * sigma, 4.5 * sigma))


@pytest.mark.parametrize("sigma, seed", [(2.5, 18), (100.5, 19)])
def test_block_proposal_law(sigma, seed):
    """The block proposal (blocks of L ≥ t ln 2, H geometric of ratio 1/2, the
    factors e^{−low/t} and (2e^{−L/t})^H in the acceptance, −0 rejected), forced
    at small scales, where L is 2 and 70: 2·10⁶ draws, false failure <= 3e-6."""
    draws = np.empty(2_000_000, dtype=np.int64)
    exact._fill_gaussian(_state(seed), sigma, draws, True)
    support = _support(sigma, 12)
    _check_law(draws, support, _gaussian_pmf(sigma, support), tails=(3 * sigma, 4.5 * sigma))


@pytest.mark.parametrize("short, bound", [(False, 2.0 ** -45), (True, 2.0 ** -31)])
def test_exp_neg_error_bound(short, bound):
    """The block proposal's polynomials e^{−x} (degree 12, Horner, for the 53-bit
    decisions; degree 8, Estrin, for a batch's first decision on a short prefix),
    against the correctly rounded value (decimal, 30 digits), within their proven
    relative 2⁻⁴⁵ and 2⁻³¹ on [0, 60]."""
    import decimal
    x = np.concatenate([np.linspace(0.0, 60.0, 2001), np.random.default_rng(23).uniform(0, 60, 500),
                        # the ends of the reduced range, |r| = ln 2 / 2
                        (np.arange(1, 87) + 0.5) * math.log(2.0)])
    got = _exp_neg_many(x, short)
    ctx = decimal.Context(prec=30)
    for xi, yi in zip(x, got):
        want = ctx.exp(-decimal.Decimal(float(xi)))
        assert abs(decimal.Decimal(float(yi)) / want - 1) < decimal.Decimal(bound), xi


@njit
def _exp_neg_many(x, short):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = exact._exp_neg_short(x[i]) if short else exact._exp_neg(x[i])
    return out


@pytest.mark.parametrize("sigma, seed", [(2.0 ** 24 + 0.3, 20), (2.0 ** 32 * 1.0001, 21),
                                         (2.0 ** 39.9, 24)])
def test_discrete_gaussian_law_wide(sigma, seed):
    """The solvers' scales (the lattice's s ≥ 2²⁴), 2·10⁶ draws: χ² on 1000 bins
    of equal probability, KS and two tail counts against the CDF
    Φ((k + 1/2)/σ) (the discrete one's within 1/σ² of it, by Euler-Maclaurin:
    nothing at this sample size), and χ² of the draws mod 2¹² and of their bits
    12 to 22 (the block proposal's low part), each uniform within
    e^{−2π²σ²/2⁴⁶}: 6 comparisons, false failure <= 6e-6."""
    draws = np.empty(2_000_000, dtype=np.int64)
    exact.fill_discrete_gaussian(_state(seed), sigma, draws)
    _check_wide_law(draws, sigma)


def _check_wide_law(draws, sigma):
    """χ², KS and tail tests against Φ((k + 1/2)/σ), and the low bits' uniformity."""
    n = draws.size
    x = np.sort(draws)
    # χ²: 1000 bins of equal probability (edges at quantiles of the continuous law)
    edges = np.floor(stats.norm.ppf(np.linspace(0, 1, 1001)[1:-1]) * sigma).astype(np.int64)
    probs = np.diff(np.concatenate([[0.0], stats.norm.cdf((edges + 0.5) / sigma), [1.0]]))
    observed = np.diff(np.concatenate([[0], np.searchsorted(x, edges, side="right"), [n]]))
    assert stats.chisquare(observed, probs * n).pvalue > P_MIN
    # KS at the draws (DKW), the CDF at k + 1/2
    cdf = stats.norm.cdf((x + 0.5) / sigma)
    gap = max(np.abs(np.arange(1, n + 1) / n - cdf).max(), np.abs(np.arange(n) / n - cdf).max())
    assert 2 * math.exp(-2 * n * gap * gap) > P_MIN, gap
    for a in (3 * sigma, 4.5 * sigma):
        p_tail = 2 * stats.norm.sf((math.ceil(a) - 0.5) / sigma)
        seen = int((np.abs(draws) >= math.ceil(a)).sum())
        assert stats.binomtest(seen, n, p_tail).pvalue > P_MIN, (a, seen, n * p_tail)
    for low in (draws % 4096, (draws >> 12) % 2048):
        assert stats.chisquare(np.bincount(low, minlength=low.max() + 1)).pvalue > P_MIN


@njit
def _single_draws(sampler, state, scale, out):
    for i in range(out.size):
        out[i] = sampler(state, scale)


@pytest.mark.parametrize("sampler, pmf, scale, width", [
    (exact.discrete_laplace, _laplace_pmf, 7.5, 40),
    (exact.discrete_gaussian, _gaussian_pmf, 2.5, 12),
])
def test_single_draws_law(sampler, pmf, scale, width):
    """The one-draw functions (kernels' path), 10⁶ draws: false failure <= 3e-6."""
    draws = np.empty(1_000_000, dtype=np.int64)
    _single_draws(sampler, _state(9), scale, draws)
    support = _support(scale, width)
    _check_law(draws, support, pmf(scale, support), tails=(3 * scale, 4.5 * scale))


def test_single_draws_law_wide():
    """The one-draw function's block proposal at σ = 2²⁴ + 0.3, 10⁶ draws, as
    in the wide fills' test: false failure <= 6e-6."""
    draws = np.empty(1_000_000, dtype=np.int64)
    _single_draws(exact.discrete_gaussian, _state(22), 2.0 ** 24 + 0.3, draws)
    _check_wide_law(draws, 2.0 ** 24 + 0.3)


def _opendp_draws(kind, scale, size):
    """``size`` draws of OpenDP's own exact sampler (the measurement adds its
    noise to zeros), from OpenDP's secure source: an outside reference."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    gaussian = kind == "discrete_gaussian"
    metric = dp.l2_distance(T="i64") if gaussian else dp.l1_distance(T="i64")
    make = dp.m.make_gaussian if gaussian else dp.m.make_laplace
    meas = make(dp.vector_domain(dp.atom_domain(T="i64")), metric, scale=scale)
    return np.asarray(meas(np.zeros(size, dtype=np.int64)), dtype=np.int64)


@pytest.mark.parametrize("kind, fill, scale", [
    ("discrete_laplace", exact.fill_discrete_laplace, 5.0),
    ("discrete_gaussian", exact.fill_discrete_gaussian, 3.0),
])
def test_same_law_as_opendp(kind, fill, scale):
    """Two-sample χ² against OpenDP's exact sampler (whose draws are not seeded):
    false failure 1e-6."""
    theirs = _opendp_draws(kind, scale, 20_000)
    ours = np.empty(1_000_000, dtype=np.int64)
    fill(_state(10), scale, ours)
    # bins: single integers while OpenDP's expected count is >= 20, tails pooled
    cut = int(np.quantile(np.abs(ours), 0.995))
    table = np.array([np.bincount(np.clip(x, -cut, cut) + cut, minlength=2 * cut + 1)
                      for x in (ours, theirs)])
    p = stats.chi2_contingency(table).pvalue
    assert p > P_MIN, p


@njit
def _uniform_draws(state, k, n):
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = exact.uniform_below(state, k)
    return out


def test_uniform_below():
    """χ² on 10 and on 3·2⁶¹ + 1 values (the rejection matters): false failure 2e-6."""
    state = _state(11)
    draws = _uniform_draws(state, 10, 200_000)
    assert stats.chisquare(np.bincount(draws, minlength=10)).pvalue > P_MIN
    big = 3 * 2 ** 61 + 1
    draws = _uniform_draws(state, big, 100_000)
    assert draws.min() >= 0 and draws.max() < big
    # thirds of the range: equally likely
    thirds = np.bincount([int(d) * 3 // big for d in draws], minlength=3)
    assert stats.chisquare(thirds).pvalue > P_MIN
    with pytest.raises(ValueError):
        exact.uniform_below(state, 0)


def test_bernoulli():
    """Binomial tests at p = 0.3 and at p = 1/2 + 2⁻⁶⁰ (the bits past the first word):
    false failure 2e-6. p = 0 and 1 are certain."""
    state = _state(12)
    for p in (0.3, 0.5 + 2.0 ** -60):
        hits = sum(exact.bernoulli(state, p) for _ in range(200_000))
        assert stats.binomtest(hits, 200_000, p).pvalue > P_MIN
    assert not any(exact.bernoulli(state, 0.0) for _ in range(1000))
    assert all(exact.bernoulli(state, 1.0) for _ in range(1000))
    with pytest.raises(ValueError):
        exact.bernoulli(state, 1.5)


@pytest.mark.parametrize("p", [0.3, 1e-3, 1 - 2.0 ** -20])
def test_geometric(p):
    """χ² against (1 − p)^k p: false failure 1e-6 each."""
    state = _state(13)
    draws = np.array([exact.geometric(state, p) for _ in range(200_000)])
    k = np.arange(draws.max() + 2)
    pmf = p * (1 - p) ** k
    pmf[-1] = (1 - p) ** k[-1]          # the tail beyond the largest draw
    cdf = np.cumsum(pmf)
    edges = np.unique(np.searchsorted(cdf, np.linspace(0, 1, 41)[1:-1]))
    starts = np.concatenate([[0], edges + 1])
    observed = np.add.reduceat(np.bincount(draws, minlength=k.size), starts)
    expected = draws.size * np.add.reduceat(pmf, starts)
    keep = expected >= 5
    if not keep.all():   # pool the bins with small expectations into the last kept one
        observed = np.append(observed[keep], observed[~keep].sum())
        expected = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue > P_MIN


def test_exact_path_agrees_draw_for_draw():
    """With the guard bands widened by 2⁶⁰ every decision goes through the exact
    (decimal) path; it decides the same predicates on the same bits, so the draws
    equal the fast path's (unless a prefix is undecided by the floats, where
    only the fast path's block proposal reads its next word, or only the exact
    path reads more bits: never, for this key)."""
    before = dict(exact.EXACT_PATH_CALLS)
    for fill, scale in ((exact.fill_discrete_laplace, 3.5),
                        (exact.fill_discrete_gaussian, 1.5),
                        (exact.fill_discrete_gaussian, 2000.25),
                        (exact.fill_discrete_gaussian, 2.0 ** 30 + 0.5)):
        fast, slow = np.empty(300, dtype=np.int64), np.empty(300, dtype=np.int64)
        fill(_state(14), scale, fast)
        fill(_state(14, guard=60), scale, slow)
        np.testing.assert_array_equal(fast, slow)
    for sampler, scale in ((exact.geometric, 0.01), (exact.discrete_laplace, 3.5),
                           (exact.discrete_gaussian, 1.5),
                           (exact.discrete_gaussian, 2.0 ** 26 + 0.5)):  # the one-draw paths
        state, slow_state = _state(15), _state(15, guard=60)
        fast = [sampler(state, scale) for _ in range(300)]
        assert [sampler(slow_state, scale) for _ in range(300)] == fast
    assert exact.EXACT_PATH_CALLS["laplace"] >= before.get("laplace", 0) + 4 * 300
    assert exact.EXACT_PATH_CALLS["accept"] >= before.get("accept", 0) + 5 * 300
    assert exact.EXACT_PATH_CALLS["geometric"] >= before.get("geometric", 0) + 300


def test_exact_path_reads_more_bits_when_the_prefix_straddles():
    """A 53-bit prefix whose interval contains the acceptance threshold e^{−1/8}
    (y = 1, σ = 1, t = 2): the exact path reads words until U is on one side,
    and answers U < e^{−1/8} for the bits it read (read back from a copy of the
    stream, compared with e^{−1/8} to 80 digits)."""
    import decimal
    from fractions import Fraction
    theta = Fraction(decimal.Context(prec=80).exp(decimal.Decimal(-1) / 8))
    prefix = int(theta * 2 ** 53)
    answers = set()
    for seed in range(20):
        state = _state(100 + seed)
        replay = state.copy()
        below = exact._exact_accept(state, prefix, 1, 1.0, 2.0)
        num, n_bits = prefix, 53
        while not np.array_equal(replay, state):
            num = (num << 64) | int(keystream.next_u64(replay))
            n_bits += 64
        assert n_bits > 53
        low, high = Fraction(num, 2 ** n_bits), Fraction(num + 1, 2 ** n_bits)
        assert (high <= theta) if below else (low >= theta)
        answers.add(below)
    assert answers == {True, False}


@pytest.mark.parametrize("sigma", [2.0 ** 24 + 0.3, 2.0 ** 39.9])
def test_block_settle_reads_on_when_the_prefix_straddles(sigma):
    """The block proposal's short prefix of U (39 − e bits: 23 at σ = 2²⁴ + 0.3,
    7 at σ = 2³⁹·⁹, the shortest, where one word still carries the whole proposal)
    straddles its acceptance threshold θ = exp(−γ*): U's expansion goes on with
    the next word's top bits, and the answer is U < θ for the bits read (read
    back from a copy of the stream, θ to 80 digits), decided in the kernel
    (no exact-path call); both answers occur over 40 keys (each with
    probability within 0.4 to 0.6: false failure below 2·0.6⁴⁰ < 10⁻⁸)."""
    import decimal
    from fractions import Fraction
    t, _, inv_sigma, sigma_over_t = exact._gaussian_constants(sigma)
    steps, _, e, _, gap = exact._block_constants(t, inv_sigma)
    bits, h = 39 - e, 1
    ctx = decimal.Context(prec=80)
    s, tt = decimal.Decimal(sigma), decimal.Decimal(t)
    for low in range(12345, steps, steps // 4096):   # θ near the middle of its prefix's interval
        m = steps * h + low
        gamma = ((m - s * s / tt) ** 2 / (2 * s * s) + decimal.Decimal(low) / tt
                 + h * (decimal.Decimal(int(steps)) / tt - ctx.ln(2)))
        theta = Fraction(ctx.exp(-gamma))
        prefix = int(theta * 2 ** bits)
        if 0.4 < theta * 2 ** bits - prefix < 0.6:
            break
    before = exact.EXACT_PATH_CALLS["accept"]
    answers = set()
    for seed in range(40):
        state = _state(200 + seed)
        replay = state.copy()
        below = exact._block_settle(state, prefix, bits, m, h, low, sigma, t, inv_sigma,
                                    sigma_over_t, steps, gap, 1.0)
        word = int(keystream.next_u64(replay))
        num, n_bits = (prefix << (53 - bits)) | (word >> (11 + bits)), 53
        while not np.array_equal(replay, state):
            num = (num << 64) | int(keystream.next_u64(replay))
            n_bits += 64
        lo, hi = Fraction(num, 2 ** n_bits), Fraction(num + 1, 2 ** n_bits)
        assert (hi <= theta) if below else (lo >= theta)
        answers.add(bool(below))
    assert answers == {True, False}
    assert exact.EXACT_PATH_CALLS["accept"] == before


def test_samplers_refuse_their_callers_fastmath():
    """Every compiled function of the sampler and the keystream says
    ``fastmath=False`` itself: otherwise numba compiles one first called from a
    ``fastmath`` kernel (the DP-SCD kernels) with that kernel's flags, and the
    floats' error bounds no longer hold (a fastmath-compiled block proposal
    failed the law test at σ = 2^39.9)."""
    from numba.core.registry import CPUDispatcher
    for module in (exact, keystream):
        for name, fn in vars(module).items():
            if isinstance(fn, CPUDispatcher) and fn.__module__ == module.__name__:
                assert fn.targetoptions.get("fastmath") is False, (module.__name__, name)


@pytest.mark.parametrize("sampler, bad", [
    (exact.discrete_laplace, 0.0), (exact.discrete_laplace, np.nan),
    (exact.discrete_laplace, 2.0 ** 41), (exact.discrete_gaussian, 2.0 ** -11),
    (exact.discrete_gaussian, np.inf), (exact.geometric, 0.0), (exact.geometric, 1.5),
    (exact.geometric, 2.0 ** -41),
])
def test_parameters_out_of_range_are_refused(sampler, bad):
    with pytest.raises(ValueError):
        sampler(_state(16), bad)


def test_extreme_scales():
    """At the smallest scales every draw is 0 (P(k ≠ 0) < 2e^{−1024}); at the
    largest, |draws| stay within 45 scales (P(|k| ≥ 45t) < e^{−44} per draw),
    are distinct (false failure below 10⁻⁸), and the exact path carries the
    checks the floats cannot make."""
    state = _state(17)
    out = np.empty(100, dtype=np.int64)
    for fill in (exact.fill_discrete_laplace, exact.fill_discrete_gaussian):
        fill(state, exact.MIN_SCALE, out)
        assert not out.any()
        fill(state, exact.MAX_SCALE, out)
        assert np.abs(out).max() < 45 * exact.MAX_SCALE and np.unique(out).size == out.size
    assert exact.geometric(state, exact.MIN_P) >= 0
    assert exact.geometric(state, 1 - 2.0 ** -52) == 0      # false failure 2⁻⁵²
