"""PrivateSearch's secure mode: the score's grid and exact noise, the discrete
Laplace's Rényi bound, exact ties, the ledger, and the fast mode kept.

Each statistical test states its false-failure probability (the secure mode
cannot be seeded)."""

import mpmath
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from scipy import stats

from dpcd import PrivateSearch
from dpcd.estimators import DPCoordinateDescentRegressor
from dpcd.privacy import secure
from dpcd.tuning.scores import ScoreMechanism
from dpcd.tuning.search import keeps

M = secure.RESOLUTION


def _exact_rdp(order, shift, scale):
    """D_α between the discrete Laplace and its integer shift, by summing the
    pmfs (mpmath, 50 digits): the window [−W, shift + W] plus both geometric tails."""
    mpmath.mp.dps = 50
    a, q = mpmath.mpf(order), mpmath.exp(-1 / mpmath.mpf(scale))
    c = (1 - q) / (1 + q)
    total = mpmath.fsum(c * q ** (a * abs(k) + (1 - a) * abs(k - shift))
                        for k in range(-3, shift + 4))
    # k <= -4 and k >= shift + 4: q^{(1-a)shift - k} and q^{k - (1-a)shift}
    tail = c * q ** ((1 - a) * shift) * q ** 4 / (1 - q)
    total += tail + c * q ** (a * shift) * q ** 4 / (1 - q)
    return mpmath.log(total) / (a - 1)


@pytest.mark.parametrize("order, shift, scale", [(1.1, 1001, 500.5), (2.0, 1, 3.0),
                                                 (64.0, 5, 7.0), (1024.0, 1001, 1.0e5),
                                                 (1.5, 1001, 1.001e4)])
def test_discrete_laplace_rdp_is_the_exact_sum(order, shift, scale):
    exact = _exact_rdp(order, shift, scale)
    assert abs(secure.discrete_laplace_rdp(order, shift, scale) - exact) <= 1e-9 * abs(exact)


@pytest.mark.parametrize("z", [0.3, 2.0, 40.0])
def test_laplace_scale_is_dominated_where_the_ratio_one_is_not(z):
    """At 1.0001·z·(m + 1) steps the discrete Laplace's Rényi divergences are at
    most the continuous Laplace's (Mironov's closed form, recomputed in mpmath)
    at every order of the RDP accountant; at z·(m + 1) they are not all."""
    mpmath.mp.dps = 50
    eps = mpmath.mpf(1) / z

    def laplace(a):
        a = mpmath.mpf(a)
        return mpmath.log(a / (2 * a - 1) * mpmath.exp((a - 1) * eps)
                          + (a - 1) / (2 * a - 1) * mpmath.exp(-a * eps)) / (a - 1)

    orders = rdp.RdpAccountant()._orders
    scale = secure.laplace_scale(z, M + 1)
    assert scale == pytest.approx(1.0001 * z * (M + 1), rel=1e-15)
    assert all(_exact_rdp(a, M + 1, scale) <= laplace(a) for a in orders[::5])
    assert any(_exact_rdp(a, M + 1, z * (M + 1)) > laplace(a) for a in orders[::5])


def test_rounded_score_moves_at_most_m_plus_one_steps_between_neighbours():
    """Replace one record's loss (clipped to B) by any other: the rounded data
    part of the score moves by at most m + 1 grid steps; accuracy too."""
    rng = np.random.default_rng(0)
    for metric, n, clip in (("loss", 37, 0.7), ("accuracy", 50, None)):
        select_by = "last_objective" if metric == "loss" else "validation"
        score = ScoreMechanism(select_by, metric, "laplace", n, clip)
        grid = score.sensitivity / M
        worst = 0
        for _ in range(2000):
            if metric == "loss":
                a = rng.uniform(0, 2 * clip, n) * rng.integers(0, 2, n)
                b = a.copy()
                b[rng.integers(n)] = rng.choice([0.0, clip, 5 * clip, rng.uniform(0, clip)])
            else:
                a = rng.integers(0, 2, n).astype(float)
                b = a.copy()
                i = rng.integers(n)
                b[i] = 1.0 - b[i]
            q = secure.round_to_grid(score.value(a), grid)
            q2 = secure.round_to_grid(score.value(b), grid)
            worst = max(worst, abs(q - q2))
        assert M - 1 <= worst <= M + 1


def _selection_frequencies(values, draws, secure_mode):
    """How often each of ``values`` (exact scores, lower is better) is kept."""
    score = ScoreMechanism("last_objective", "loss", "laplace", 20, 1.0)
    z, counts = 2.0, np.zeros(len(values), dtype=int)
    rng = np.random.default_rng(1)
    for _ in range(draws):
        best, ties, kept = None, 1, None
        for i, v in enumerate(values):
            losses = np.full(20, v)
            noisy = (score.secure_noisy(losses, 0.0, z) if secure_mode
                     else score.noisy(score.value(losses), z, rng))
            better, ties = keeps(noisy, best, ties, False, uniform_ties=secure_mode)
            if better:
                best, kept = noisy, i
        counts[kept] += 1
    return counts


def test_secure_selection_has_the_fast_selection_law():
    """Three candidates whose exact scores differ by a few noise scales: the
    secure and fast selections' counts agree (two-sample chi-square, 3000
    searches each; false-failure probability 1e-6)."""
    values = [0.30, 0.35, 0.45]
    fast = _selection_frequencies(values, 3000, False)
    sec = _selection_frequencies(values, 3000, True)
    _, p, _, _ = stats.chi2_contingency(np.vstack([fast, sec]))
    assert p > 1e-6, (fast, sec)
    assert fast[0] > fast[2] and sec[0] > sec[2]  # the selection does select


def test_exact_ties_are_broken_uniformly():
    """Four equal noisy scores: the kept index is uniform (chi-square, 8000
    trials, false-failure probability 1e-6); without uniform ties the first stays."""
    counts = np.zeros(4, dtype=int)
    for _ in range(8000):
        best, ties, kept = None, 1, None
        for i in range(4):
            better, ties = keeps(0.5, best, ties, False, uniform_ties=True)
            if better:
                best, kept = 0.5, i
        counts[kept] += 1
    assert stats.chisquare(counts).pvalue > 1e-6, counts
    assert keeps(0.5, 0.5, 1, False) == (False, 1)
    assert keeps(0.4, 0.5, 3, False, uniform_ties=True) == (True, 1)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 3))
    return X, X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.standard_normal(300)


def test_default_search_is_secure_and_its_ledger_says_so(data):
    X, y = data
    n = len(y)
    search = PrivateSearch(DPCoordinateDescentRegressor(solver="dp_cd", passes=2),
                           {"step": [0.3, 1.0]}, epsilon=1.0, k_mean=2).fit(X, y)
    ledger = search.privacy_ledger_
    assert ledger.noise == "secure"
    assert ledger.to_dict()["noise_guarantee"] == secure.GUARANTEES["secure"]
    train, score = ledger.mechanisms
    assert train.kind == "discrete_gaussian"
    b = 0.5  # the regressor's default score clip: ½ r² of the zero model on a unit label
    assert score.kind == "discrete_laplace"
    assert score.sensitivity == pytest.approx(b / n * (M + 1) / M, rel=1e-14)
    z = search.calibration_.score_multiplier
    assert score.noise_scale == pytest.approx(secure.laplace_scale(z, M + 1) * b / n / M,
                                              rel=1e-14)
    assert ledger.epsilon_achieved <= 1.0
    assert search.best_estimator_.random_state is None
    assert search.best_estimator_.privacy_ledger_.noise == "secure"
    assert "random_state" not in str(ledger.to_dict())  # no seed recorded


def test_a_given_random_state_is_the_fast_reproducible_search(data):
    X, y = data
    make = dict(estimator=DPCoordinateDescentRegressor(solver="dp_cd", passes=2),
                param_grid={"step": [0.3, 1.0]}, epsilon=1.0, k_mean=2, random_state=4)
    a, b = PrivateSearch(**make).fit(X, y), PrivateSearch(**make).fit(X, y)
    assert a.privacy_ledger_.noise == "fast"
    assert [m.kind for m in a.privacy_ledger_.mechanisms] == ["gaussian", "laplace"]
    assert a.best_score_ == b.best_score_
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    fast = PrivateSearch(DPCoordinateDescentRegressor(solver="dp_cd", passes=2, noise="fast"),
                         {"step": [0.3, 1.0]}, epsilon=1.0, k_mean=2).fit(X, y)
    assert fast.privacy_ledger_.noise == "fast"


def test_secure_template_refuses_what_has_no_secure_candidate(data):
    X, y = data
    gcd = DPCoordinateDescentRegressor(solver="dp_gcd", passes=2, noise="secure")
    with pytest.raises(ValueError, match="noise='secure' in a private search"):
        PrivateSearch(gcd, {"step": [0.3, 1.0]}, epsilon=1.0, k_mean=2).fit(X, y)
    auto = PrivateSearch(DPCoordinateDescentRegressor(solver="dp_gcd", passes=2),
                         {"step": [0.3, 1.0]}, epsilon=1.0, k_mean=2).fit(X, y)
    assert auto.privacy_ledger_.noise == "fast"  # "auto": fast where no secure candidate
