"""PrivateSearch's secure mode: the score's grid and exact noise, the discrete
Laplace's Rényi bound, exact ties, the ledger, and the fast mode kept.

Each statistical test states its false-failure probability (the secure mode
cannot be seeded)."""

import math

import mpmath
import numpy as np
import pytest
from dp_accounting import NeighboringRelation, dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from scipy import stats

from dpcd import PrivateSearch
from dpcd.estimators import DPCoordinateDescentRegressor
from dpcd.privacy import keystream, secure
from dpcd.tuning import candidates, draws
from dpcd.tuning.calibration import calibrate_candidates
from dpcd.tuning.scores import ScoreMechanism
from dpcd.tuning.search import keeps

M = secure.RESOLUTION


def _exact_rdp(order, shift, scale):
    """D_α between the discrete Laplace and its integer shift, by summing the
    pmfs (mpmath, 20 digits): the window [−W, shift + W] plus both geometric tails."""
    mpmath.mp.dps = 20
    a, q = mpmath.mpf(order), mpmath.exp(-1 / mpmath.mpf(scale))
    c = (1 - q) / (1 + q)
    total = mpmath.fsum(c * q ** (a * abs(k) + (1 - a) * abs(k - shift))
                        for k in range(-3, shift + 4))
    # k <= -4 and k >= shift + 4: q^{(1-a)shift - k} and q^{k - (1-a)shift}
    tail = c * q ** ((1 - a) * shift) * q ** 4 / (1 - q)
    total += tail + c * q ** (a * shift) * q ** 4 / (1 - q)
    return mpmath.log(total) / (a - 1)


def _summed_rdp(order, shift, scale):
    """:func:`_exact_rdp` in float64 (log-sum-exp of the same terms; relative
    error near 1e-14, far below the 1e-7 gaps the tests resolve)."""
    a, x = float(order), 1.0 / float(scale)
    k = np.arange(-3, shift + 4, dtype=float)
    log_c = np.log(-np.expm1(-x)) - np.log1p(np.exp(-x))
    terms = log_c - x * (a * np.abs(k) + (1 - a) * np.abs(k - shift))
    log_tail = log_c - 4 * x - np.log(-np.expm1(-x))
    terms = np.append(terms, [log_tail - (1 - a) * shift * x, log_tail - a * shift * x])
    return float(np.logaddexp.reduce(terms)) / (a - 1)


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
    at every order of the RDP accountant (exact sums of the pmfs, in float64);
    at z·(m + 1) they are not all."""
    mpmath.mp.dps = 20
    eps = mpmath.mpf(1) / z

    def laplace(a):
        a = mpmath.mpf(a)
        return mpmath.log(a / (2 * a - 1) * mpmath.exp((a - 1) * eps)
                          + (a - 1) / (2 * a - 1) * mpmath.exp(-a * eps)) / (a - 1)

    orders = rdp.RdpAccountant()._orders
    scale = secure.laplace_scale(z, M + 1)
    assert scale == pytest.approx(1.0001 * z * (M + 1), rel=1e-15)
    assert all(_summed_rdp(a, M + 1, scale) <= laplace(a) for a in orders)
    assert any(_summed_rdp(a, M + 1, z * (M + 1)) > laplace(a) for a in orders)
    a = orders[len(orders) // 2]  # the float64 sum is the 20-digit one
    assert _summed_rdp(a, M + 1, scale) == pytest.approx(float(_exact_rdp(a, M + 1, scale)),
                                                          rel=1e-12)


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
    secure and fast selections' counts agree (two-sample chi-square, 1500
    searches each; false-failure probability 1e-6)."""
    values = [0.30, 0.35, 0.45]
    fast = _selection_frequencies(values, 1500, False)
    sec = _selection_frequencies(values, 1500, True)
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
    """seqDP-SCD charges a tail to delta outside its event: no candidate."""
    X, y = data
    seq = DPCoordinateDescentRegressor(solver="seq_dp_scd", passes=1, noise="secure")
    with pytest.raises(ValueError, match="cannot be a private-search candidate"):
        PrivateSearch(seq, {"step": [0.3, 1.0]}, epsilon=1.0, k_mean=2).fit(X, y)


# ------------------------------------------------------------------ K, drawn exactly
LAWS = {"geometric": (3.0, 1.0), "poisson": (3.0, math.inf), "logarithmic": (3.0, 0.0),
        "negative_binomial_0.5": (3.0, 0.5), "negative_binomial_2.5": (3.0, 2.5)}


@pytest.mark.parametrize("law", LAWS)
def test_exact_k_has_its_law(law):
    """20 000 draws of each law of K by the exact samplers (a fixed key: with
    a uniform keystream the chi-square test fails with probability 1e-6 per
    law), against dp_accounting's pmf; bins with at least 20 expected, the
    rest pooled."""
    mean, shape = LAWS[law]
    state = keystream.state_from_key(bytes(range(32)), nonce=law.encode()[:8].ljust(8, b"."))
    ks = draws.draw_k_exact(mean, shape, size=20_000, state=state)
    support = np.arange(0 if shape == math.inf else 1, ks.max() + 1)
    expected = 20_000 * draws.k_pmf(support, mean, shape)
    cut = int(np.argmax(expected < 20)) or len(expected)
    observed = np.bincount(ks - support[0], minlength=len(support))
    obs = np.append(observed[:cut], observed[cut:].sum())
    exp = np.append(expected[:cut], 20_000 - expected[:cut].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-6, (obs, exp)
    assert ks.min() >= support[0]


def test_exact_k_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="gamma"):
        draws.exact_k_parameters(1e15, 1.0)  # gamma = 1e-15 < 2**-40


# ------------------------------------------------------------------ candidates of every solver
def test_secure_gcd_candidate_is_randomized_response_pairs():
    """Secure DP-GCD: T pairs of eps'-DP releases, both read as randomized
    response; its epsilon recomputed with dp_accounting is the ledger's."""
    est = DPCoordinateDescentRegressor(solver="dp_gcd", passes=2)
    ledger = candidates.calibrated_ledger(est, 300, 3, 0.5, 1e-5, noise="secure")
    (kind, steps), z = candidates.candidate_spec(ledger, 300)
    assert kind == "pure_rr_pair" and steps == ledger.mechanisms[0].count
    rr = dp_event.RandomizedResponseDpEvent(2 / (1 + math.exp(1 / z)), 2)
    acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_event.SelfComposedDpEvent(rr, 2 * steps))
    assert acc.get_epsilon(1e-5) == pytest.approx(ledger.budget[0].epsilon_achieved, rel=1e-9)
    assert candidates.lattice_slack(ledger) == 0.0
    assert candidates.secure_refusal(est, 300, 3, 0.5, 1e-5) is None


@pytest.fixture(scope="module")
def sgd_ledger():
    est = DPCoordinateDescentRegressor(solver="dp_sgd", passes=2,
                                       neighbouring="add_or_remove_one")
    return est, candidates.calibrated_ledger(est, 300, 3, 0.5, 1e-5, noise="secure")


def test_lattice_candidate_is_its_continuous_event_and_its_slack(sgd_ledger):
    est, ledger = sgd_ledger
    continuous, closeness = ledger.budget
    (kind, q, steps), z = candidates.candidate_spec(ledger, 300)
    assert kind == "poisson_gaussian" and closeness.group == candidates.LATTICE_GROUP
    event = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(
        q, dp_event.GaussianDpEvent(z)), steps)
    assert repr(event) == continuous.dp_event
    assert candidates.lattice_slack(ledger) == closeness.epsilon_achieved / 2 > 0
    assert candidates.secure_refusal(est, 300, 3, 0.5, 1e-5) is None


def test_lattice_search_calibration_against_dp_accounting():
    """The rounded continuous search over primal DP-SCD's lattice candidates
    recomputed by dp_accounting's RDP accountant (RepeatAndSelectDpEvent) at
    its delta; the secure search's epsilon adds 2 k0 a, its delta the cut of K
    and the draws' tails."""
    est = DPCoordinateDescentRegressor(solver="primal_dp_scd", passes=2)
    epsilon, delta, mean = 1.0, 1e-5, 3.0

    def ledger_of(step, eps):
        return candidates.calibrated_ledger(est.set_params(step=step), 300, 3, eps, delta,
                                            noise="secure")

    cal, specs, _ = calibrate_candidates(ledger_of, [0.1, 0.3], 300, epsilon, delta, mean,
                                         1.0, 0.1, "laplace")
    lat = cal.lattice
    (spec, z), = cal.train_multipliers.items()
    assert spec[0] == "gaussian"
    train = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), spec[1])
    acc = rdp.RdpAccountant()
    acc.compose(dp_event.RepeatAndSelectDpEvent(dp_event.ComposedDpEvent(
        [train, dp_event.LaplaceDpEvent(cal.score_multiplier)]), mean, 1.0))
    assert acc.get_epsilon(lat["rdp_delta"]) == pytest.approx(lat["rdp_epsilon"], rel=1e-9)
    a = max(candidates.lattice_slack(ledger_of(s, cal.train_epsilon)) for s in (0.1, 0.3))
    assert lat["slack"] == a > 0
    k0, gamma = lat["k_max"], 1 / mean
    assert (1 - gamma) ** k0 <= lat["k_tail"] < (1 - gamma) ** (k0 - 1)
    assert cal.epsilon_achieved == pytest.approx(lat["rdp_epsilon"] + 2 * k0 * a, rel=1e-12)
    assert cal.epsilon_achieved <= epsilon
    spent = math.exp(k0 * a) * lat["rdp_delta"] + (1 + math.exp(lat["rdp_epsilon"] + k0 * a)) * (
        lat["k_tail"] + math.exp(lat["log_draw_tails"]))
    assert spent == pytest.approx(lat["delta_spent"], rel=1e-12) and spent <= delta


def test_slack_composes_over_repetitions_only_with_k():
    """The closeness lemma of the lattice search on exact laws: candidates
    within e^{+-a} of their rounded twins pointwise, the best of a geometric K
    of them. The searches' laws are *not* within e^{+-a} (the best of k
    moves by up to k a), and for every (eps_R, k0) the secure search meets
    (eps_R + 2 k0 a, e^{k0 a} delta_R + (1 + e^{eps_R + k0 a}) P(K > k0))
    whenever the rounded one meets (eps_R, delta_R), both directions."""
    v, a, gamma = np.arange(80), 0.01, 0.1

    def gauss(mu):
        p = np.exp(-(v - mu) ** 2 / 32.0)
        return p / p.sum()

    def tilted(p, sign):  # within e^{+-a} of p, pointwise
        q = p * np.exp(sign * a / 2 * np.where(v >= 44, 1.0, -1.0))
        return q / q.sum()

    def search(p):  # the best (largest) of K ~ geometric(gamma) draws of p
        F = np.cumsum(p)
        return np.diff(np.concatenate([[0.0], gamma * F / (1 - (1 - gamma) * F)]))

    def hockey(P, Q, eps):
        return np.maximum(P - np.exp(eps) * Q, 0).sum()

    R, R2 = gauss(40), gauss(41)
    D, D2 = tilted(R, 1), tilted(R2, -1)
    assert np.abs(np.log(D / R)).max() <= a
    SR, SR2, SD, SD2 = map(search, (R, R2, D, D2))
    seen = SR > 1e-300
    assert np.abs(np.log(SD[seen] / SR[seen])).max() > 10 * a
    for eps_r in np.linspace(0.0, 1.0, 11):
        for P, Q, PR, QR in ((SD, SD2, SR, SR2), (SD2, SD, SR2, SR)):
            delta_r = hockey(PR, QR, eps_r)
            for k0 in (1, 5, 20, 60):
                tail = (1 - gamma) ** k0
                bound = math.exp(k0 * a) * delta_r + (1 + math.exp(eps_r + k0 * a)) * tail
                assert hockey(P, Q, eps_r + 2 * k0 * a) <= bound


def test_secure_search_over_lattice_candidates(data):
    """A default search over dp_sgd candidates is secure, its candidates'
    fitted ledgers are the accounted event, and its ledger is the whole
    release, with the lattice's closeness line."""
    X, y = data
    est = DPCoordinateDescentRegressor(solver="dp_sgd", passes=1)
    search = PrivateSearch(est, {"step": [0.3, 1.0]}, epsilon=1.0, k_mean=1.5,
                           k_distribution="logarithmic").fit(X, y)  # K >= 1
    ledger = search.privacy_ledger_
    assert ledger.noise == "secure" and ledger.epsilon_achieved <= 1.0
    assert [b.group for b in ledger.budget] == ["selection", "lattice_rounding"]
    assert sum(b.delta for b in ledger.budget) <= ledger.delta * (1 + 1e-12)


def test_a_fitted_secure_gcd_is_its_candidate_event(data):
    """(The search's calibration over DP-GCD's randomized responses takes a
    minute; the fitted ledger is read by the rule the search checks.)"""
    X, y = data
    fit = DPCoordinateDescentRegressor(solver="dp_gcd", passes=1, accountant="rdp").fit(X, y)
    assert fit.privacy_ledger_.noise == "secure"
    (kind, _), z = candidates.candidate_spec(fit.privacy_ledger_, len(y))
    assert kind == "pure_rr_pair" and z == fit.privacy_ledger_.mechanisms[1].noise_multiplier
