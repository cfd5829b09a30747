"""The estimators' derived defaults (dpcd.algorithms.defaults), the secure
feature-bound release, the pooled smoothness constants and the defaults'
warnings (dpcd.estimators.checks).

The statistical tests use fixed seeds (or a fixed key) and state their
false-failure probability: the chance, over seeds, that a correct
implementation fails them.
"""
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy import stats
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

from dpcd import DefaultsWarning, PrivacyLeakWarning
from dpcd.algorithms.prepare import BOUND_SHARE, gaussian_bound
from dpcd.estimators import DPCoordinateDescentRegressor
from dpcd.privacy import bounds, keystream
from dpcd.privacy.smoothness import estimate_mean_smoothness, pooled_smoothness

SOLVERS = ("dp_cd", "dp_cd_p", "dp_gcd", "dp_sgd", "dp_scd", "seq_dp_scd", "primal_dp_scd")


def _regression(n, p, seed=0):
    """Standardised features (clipped to +-3) and target, half to train."""
    X, y = make_regression(2 * n, p, noise=10, random_state=seed)
    mean, std = X[:n].mean(axis=0), X[:n].std(axis=0)
    X = np.clip((X - mean) / std, -3, 3)
    y = (y - y[:n].mean()) / y[:n].std()
    return X[:n], y[:n], X[n:], y[n:]


def _fit(X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", DefaultsWarning)
        return DPCoordinateDescentRegressor(**kwargs).fit(X, y)


def test_secure_feature_bound_has_the_exponential_mechanism_law():
    """Draws from a fixed key against :func:`bounds.bound_probabilities`, by a
    chi-square test at level 1e-3 (bins of expected count < 5 pooled): a
    correct sampler fails it for 0.1 % of keys."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    epsilon, draws = 0.3, 300
    state = keystream.state_from_key(bytes(range(32)))
    got = np.array([bounds.secure_feature_bound(X, epsilon, state=state)[0]
                    for _ in range(draws)])
    probs = bounds.bound_probabilities(np.abs(X).max(axis=1), epsilon)
    index = np.searchsorted(bounds.FACTOR * bounds.GRID, got)
    assert np.allclose(bounds.FACTOR * bounds.GRID[index], got)
    observed = np.bincount(index, minlength=probs.size)
    expected = probs * draws
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    assert stats.chisquare(obs[keep], exp[keep]).pvalue > 1e-3


def test_secure_feature_bound_ledger_is_the_fast_one_marked_secure():
    X = np.random.default_rng(1).standard_normal((50, 3))
    _, fast = bounds.private_feature_bound(X, 0.2, np.random.default_rng(0))
    b, secure = bounds.secure_feature_bound(X, 0.2)
    assert b in bounds.FACTOR * bounds.GRID
    assert secure.noise == "secure" and fast.noise == "fast"
    assert secure.epsilon_achieved == fast.epsilon_achieved == 0.2
    assert secure.mechanisms[0].noise_multiplier == fast.mechanisms[0].noise_multiplier


def test_default_secure_dp_cd_p_releases_its_bound_securely_within_epsilon():
    """No ``bounds``, no ``random_state``: every release secure, the bound
    takes BOUND_SHARE of the smoothness share and the constants the rest, and
    the three budget lines (bound, constants, steps) add up to epsilon."""
    X, y, _, _ = _regression(200, 3)
    ledger = _fit(X, y, epsilon=2.0).privacy_ledger_
    assert ledger.noise == "secure"
    assert [m.name for m in ledger.mechanisms] == [
        "feature_bound", "smoothness_means", "coordinate_gradient"]
    assert ledger.mechanisms[1].count == 1  # step="auto": the constants' mean only
    bound, smooth, _ = (line.epsilon_achieved for line in ledger.budget)
    assert bound == pytest.approx(0.2 * BOUND_SHARE, rel=1e-12)
    assert smooth == pytest.approx(0.2 * (1 - BOUND_SHARE), rel=1e-12)
    assert sum(line.epsilon_achieved for line in ledger.budget) <= 2.0 + 1e-9


def test_mean_smoothness_moves_by_at_most_its_sensitivity_on_neighbours():
    """The released mean of the clipped constants, without noise (epsilon so
    large that the Laplace noise is below 1e-12), moves by at most the
    ledger's sensitivity b̄/n when one record is replaced (worst case: a zero
    record against one clipped at every bound), and its ledger line is the
    pure epsilon of dp-accounting's Laplace event of its multiplier."""
    from dp_accounting import pld

    from dpcd.problems import make_problem

    datafit, _ = make_problem("squares", "l2", 1e-3)
    rng = np.random.default_rng(0)
    n, p, eps = 50, 4, 1e14
    bound = np.array([1.0, 2.0, 3.0, 0.5])
    X = rng.standard_normal((n, p))
    mean, ledger = estimate_mean_smoothness(datafit, X, eps, rng, bound)
    (mech,) = ledger.mechanisms
    b_bar = datafit.per_sample_smoothness(bound[None, :])[0].mean()
    (sensitivity,) = mech.sensitivity
    assert mech.count == 1 and sensitivity == pytest.approx(b_bar / n, rel=1e-12)
    zero, big = X.copy(), X.copy()  # one record at zero, or clipped at every bound
    zero[0], big[0] = 0.0, 10.0
    pairs = [(zero, big)] + [(X, np.vstack([X[:k], 5 * rng.standard_normal((1, p)), X[k + 1:]]))
                             for k in range(3)]
    for A, B in pairs:
        a = estimate_mean_smoothness(datafit, A, eps, np.random.default_rng(1), bound)[0]
        b = estimate_mean_smoothness(datafit, B, eps, np.random.default_rng(1), bound)[0]
        assert abs(a - b) <= sensitivity * (1 + 1e-9)
    assert abs(estimate_mean_smoothness(datafit, big, eps, np.random.default_rng(1), bound)[0]
               - estimate_mean_smoothness(datafit, zero, eps, np.random.default_rng(1),
                                          bound)[0]) >= 0.999 * sensitivity
    _, ledger = estimate_mean_smoothness(datafit, X, 0.5, rng, bound)
    laplace = pld.PLDAccountant()
    laplace.compose(dp_event.LaplaceDpEvent(ledger.mechanisms[0].noise_multiplier))
    assert ledger.epsilon_achieved == 0.5
    assert laplace.get_epsilon(1e-12) == pytest.approx(0.5, rel=1e-2)


@pytest.mark.parametrize("p", [1, 3, 10, 100])
def test_gaussian_bound_is_three_on_standard_gaussian_features(p):
    """The rescaled bound from the exact median of 20 000 rows' maxima is 3
    within 3 % for standard Gaussian features of any number (the sample
    median's standard deviation is under 1 %: a correct rule fails with
    probability below 1e-6)."""
    X = np.random.default_rng(p).standard_normal((20000, p))
    released = bounds.FACTOR * np.median(np.abs(X).max(axis=1))
    assert gaussian_bound(released, p) == pytest.approx(3.0, rel=0.03)


def test_gaussian_bound_never_tighter_than_the_release_at_few_features():
    """Up to 4 features, where one entry decides a row's maximum, the rescaled
    bound is at least the released one (so at most as much clipping)."""
    for p in range(1, 5):
        assert gaussian_bound(1.0, p) >= 1.0, p


def test_pooled_smoothness_rarely_gives_a_step_too_large():
    """Twenty equal constants M = 2 released with Laplace noise of scale 0.5:
    the pooled values are below M in about 2 % of releases (two standard
    errors) and never below M / 2 (where steps 1 / M_j diverge). Over 400
    releases a correct rule exceeds 10 % below M with probability < 1e-9."""
    rng = np.random.default_rng(0)
    low, diverging = 0, 0
    for _ in range(400):
        released = np.clip(2.0 + rng.laplace(0.0, 0.5, 20), 0.18, 18.0)
        pooled = pooled_smoothness(released, 0.5, 18.0, floor=0.01)
        low += pooled[0] < 2.0
        diverging += pooled[0] < 1.0
    assert diverging == 0 and low < 40


def test_pooled_smoothness_keeps_constants_that_differ():
    """Spread far beyond the noise is kept (the imbalance DP-CD exploits)."""
    released = np.array([0.5, 50.0, 5.0, 0.5, 50.0, 5.0])
    pooled = pooled_smoothness(released, 0.01, 100.0, floor=0.001)
    assert np.allclose(pooled, released, atol=0.05)


@pytest.mark.parametrize("solver", SOLVERS)
def test_defaults_fall_back_to_the_intercept_at_small_n_epsilon(solver):
    """n epsilon = 30: the noise rule keeps each prediction within about 0.1
    of the intercept, so the median test R^2 of 3 seeds is above -0.1 (the
    mean predictor's 0 less 0.1); a correct rule's seeds each fall below with
    probability well under 1 %, so the median fails with probability below
    1e-3."""
    X, y, X_test, y_test = _regression(300, 20)
    scores = [_fit(X, y, solver=solver, epsilon=0.1, random_state=seed).score(X_test, y_test)
              for seed in range(3)]
    assert np.median(scores) > -0.1, scores


@pytest.mark.parametrize("solver", ("dp_cd", "dp_cd_p", "dp_gcd", "dp_sgd", "dp_scd"))
def test_defaults_near_nonprivate_at_large_n_epsilon(solver):
    """n epsilon = 20 000 (2 000 rows, epsilon = 10): median R^2 of 3 seeds at
    least 0.9 of ridge's (measured 0.97 to 0.99 of it). seq_dp_scd and
    primal_dp_scd are not held to it: their sensitivities grow with the batch
    or do not fall with n (docs/defaults.md). A seed falls below 0.9 with
    probability under 1 %: false failure below 1e-3."""
    X, y, X_test, y_test = _regression(2000, 5)
    ridge = Ridge(alpha=1e-3 * len(y)).fit(X, y).score(X_test, y_test)
    scores = [_fit(X, y, solver=solver, epsilon=10.0, random_state=seed).score(X_test, y_test)
              for seed in range(3)]
    assert np.median(scores) >= 0.9 * ridge, (scores, ridge)


def test_private_bound_within_002_of_the_public_bound():
    """dp_cd_p's default without ``bounds`` against ``bounds=3.0`` (the data's
    true bound) at n epsilon = 20 000: medians of 3 seeds within 0.02 (measured
    within 0.003); false failure below 1e-3."""
    X, y, X_test, y_test = _regression(2000, 5)

    def median(**kwargs):
        return np.median([_fit(X, y, epsilon=10.0, random_state=seed, **kwargs)
                          .score(X_test, y_test) for seed in range(3)])

    assert abs(median() - median(bounds=3.0)) <= 0.02


def _defaults_warnings(X, y, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPCoordinateDescentRegressor(random_state=0, **kwargs).fit(X, y)
    return [str(w.message) for w in caught if issubclass(w.category, DefaultsWarning)]


def test_no_warning_on_standardised_data_at_large_n_epsilon():
    X, y, _, _ = _regression(400, 5)
    for solver in ("dp_cd", "dp_cd_p", "dp_gcd", "dp_sgd", "dp_scd"):
        assert _defaults_warnings(X, y, solver=solver, epsilon=10.0) == [], solver


def test_warns_when_n_epsilon_is_too_small_for_the_passes():
    X, y, _, _ = _regression(200, 5)
    auto = _defaults_warnings(X, y, epsilon=0.05)
    assert any("passes" in m and "clip='auto'" in m for m in auto), auto
    given = _defaults_warnings(X, y, solver="dp_cd", epsilon=0.05, clip=1.0)
    assert any("lower `clip` or `passes`" in m for m in given), given


@pytest.mark.parametrize("solver", ("dp_cd", "dp_cd_p", "dp_sgd"))
def test_warns_on_features_far_from_standardised(solver):
    X, y, _, _ = _regression(400, 5)
    messages = _defaults_warnings(100.0 * X, y, solver=solver, epsilon=10.0)
    assert any("features do not look standardised" in m for m in messages), messages


def test_warns_on_a_target_far_from_standardised():
    X, y, _, _ = _regression(400, 5)
    messages = _defaults_warnings(X, y + 50.0, solver="dp_cd", epsilon=10.0)
    assert any("standardised target" in m for m in messages), messages


def test_given_hyperparameters_are_used_as_given():
    """Only ``"auto"`` is derived: given values reach the run unchanged."""
    X, y, _, _ = _regression(200, 3)
    model = _fit(X, y, solver="dp_sgd", step=0.5, clip=2.0, passes=3, batch_size=7,
                 random_state=0)
    assert model.n_iter_ == 3
    assert model.privacy_ledger_.mechanisms[0].sensitivity in (2.0, 4.0)


def test_primal_default_stays_at_the_mean_where_it_cannot_carry_signal():
    """Primal DP-SCD at n epsilon = 2 000: its reach over its noise
    (primal_reach) is below 0.1 whatever the threshold, so the default's
    prediction noise is at most tau reach^2 and each seed's test R^2 is
    within 1e-3 of the mean predictor's (the noise's chance correlation with
    the target costs at most twice its size, 2 tau reach^2 < 1e-3: no seed
    can fail)."""
    from dpcd import algorithms
    from dpcd.algorithms import Budget
    from dpcd.algorithms.dp_scd import calibrate, primal_reach
    from dpcd.algorithms.problem import Probe
    from dpcd.problems import make_problem

    X, y, X_test, y_test = _regression(2000, 5)
    _, penalty = make_problem("squares", "l2", 1e-3)
    probe = Probe(2000, 6, penalty)
    for clip, passes in ((1.0, 1), (0.01, 10)):
        config = {"clip": clip, "batch_size": 1, "passes": passes}
        s = float(calibrate(probe, config, Budget(1.0, 1 / 2000 ** 2, "rdp", "replace_one",
                                                  "fast"), "primal").noise_scales)
        assert primal_reach(probe, config, s) < 0.1
    assert algorithms.get("primal_dp_scd").preparation.prediction_noise is not None
    trivial = 1.0 - np.mean((y_test - y.mean()) ** 2) / np.var(y_test)
    for seed in range(3):
        score = _fit(X, y, solver="primal_dp_scd", epsilon=1.0,
                     random_state=seed).score(X_test, y_test)
        assert abs(score - trivial) < 1e-3, (seed, score, trivial)


def test_seq_noise_rule_bounds_its_prediction_noise():
    """seqDP-SCD's noise rule (prediction_noise: every step's noise on v kept,
    a random walk) is what its default's predictions carry: on a target
    independent of the features (no signal to learn) the test predictions'
    standard deviation is about tau = 0.1 (measured 0.05 to 0.11 over 8
    seeds at n = 1 000 and at n = 10 000 with 30 passes), so the dual
    dynamics remove little of the noise and a larger threshold buys reach
    with noise. The median of 3 seeds is below 1.5 tau: one seed's squared
    deviation is about tau^2 chi^2_21 / 21, above (1.5 tau)^2 with probability
    under 1e-3, so the median fails with probability below 1e-5."""
    X, y, X_test, _ = _regression(1000, 20)
    noise = np.random.default_rng(0).standard_normal(len(y))
    noise = (noise - noise.mean()) / noise.std()
    stds = [np.std(_fit(X, noise, solver="seq_dp_scd", epsilon=1.0,
                        random_state=seed).predict(X_test)) for seed in range(3)]
    assert np.median(stds) < 0.15, stds


# ------------------------------------------------------------ the majority fallback
def _unbalanced(n=2000, p=5, positive=0.7, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)), (rng.random(n) < positive).astype(int)


def test_label_count_moves_by_at_most_its_sensitivity_on_neighbours():
    """The released statistic, the count of positive labels, on every
    replace-one neighbour of random label vectors (each record's label
    replaced by either label): it moves by at most 1, the sensitivity the
    ledger states, and by exactly 1 for some neighbour."""
    from dpcd.privacy import labels

    rng = np.random.default_rng(0)
    for n in (2, 7, 30):
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        moves = []
        for i in range(n):
            for label in (-1.0, 1.0):
                neighbour = y.copy()
                neighbour[i] = label
                moves.append(labels.count_sensitivity(y, neighbour))
        assert max(moves) == 1 == labels.count_ledger(n, 0.1).mechanisms[0].sensitivity


def test_label_count_release_has_the_laplace_law():
    """Fast mode, a fixed generator: 2 000 releases' noise times epsilon
    against the standard Laplace law by Kolmogorov-Smirnov at level 1e-3 (a
    correct release fails for 0.1 % of seeds); secure mode: an integer count
    (the exact discrete Laplace of dpcd.privacy.secure), on the grid 1/m,
    at a scale whose Renyi divergences are the continuous Laplace's at most,
    a discrete-Laplace ledger line."""
    from dpcd.privacy import labels

    y = np.array([1.0] * 30 + [-1.0] * 20)
    rng = np.random.default_rng(1)
    epsilon = 0.5
    noise = np.array([labels.release_positive_count(y, epsilon, "fast", rng)[0] - 30
                      for _ in range(2000)])
    assert stats.kstest(noise * epsilon, stats.laplace.cdf).pvalue > 1e-3
    from dpcd.privacy import secure

    m = secure.RESOLUTION
    count, ledger = labels.release_positive_count(y, epsilon, "secure")
    assert count * m == round(count * m)
    (mech,), (line,) = ledger.mechanisms, ledger.budget
    assert (mech.kind, ledger.noise, line.accountant) == ("discrete_laplace", "secure", "pure")
    assert mech.noise_scale == secure.laplace_scale(1 / epsilon, m) / m >= 1 / epsilon
    assert line.epsilon_achieved == epsilon and mech.noise_multiplier == 1 / epsilon


@pytest.mark.parametrize("random_state", [0, None])
def test_primal_classifier_default_predicts_the_released_majority(random_state):
    """Primal DP-SCD's default falls back (its reach is below 1): the
    classifier spends LABEL_SHARE of epsilon on the count of its labels and
    predicts the majority class (70 % of 2 000 labels: the count's noise,
    Laplace of scale 20, would have to exceed 400 to flip it, probability
    e^-20). The ledger's lines add up to epsilon; a given clip makes no
    label release (its fit is the run's alone, as before)."""
    from dpcd.algorithms.defaults import LABEL_SHARE
    from dpcd.estimators import DPCoordinateDescentClassifier

    X, y = _unbalanced()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DefaultsWarning)
        model = DPCoordinateDescentClassifier(solver="primal_dp_scd",
                                              random_state=random_state).fit(X, y)
    assert np.all(model.predict(X) == 1)
    ledger = model.privacy_ledger_
    assert ledger.noise == ("fast" if random_state == 0 else "secure")
    groups = [line.group for line in ledger.budget]
    assert groups[:2] == ["labels", "optimisation"]
    assert ledger.budget[0].epsilon_achieved == pytest.approx(LABEL_SHARE)
    assert sum(line.epsilon_target for line in ledger.budget) == pytest.approx(1.0)
    assert ledger.epsilon_achieved <= 1.0 + 1e-9
    if random_state == 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DefaultsWarning)
            given = DPCoordinateDescentClassifier(solver="primal_dp_scd", clip=0.01,
                                                  random_state=0).fit(X, y)
        assert [line.group for line in given.privacy_ledger_.budget] == ["optimisation"]


def test_private_search_accounts_a_candidate_that_counts_its_labels():
    """A primal classifier candidate left at clip="auto" is accounted with
    its label count: the calibrated ledger has the labels line, read as the
    Laplace release of the smoothness_gaussian event, and a search over it
    trains candidates that meet that accounting (check_trained)."""
    from dpcd.estimators import DPCoordinateDescentClassifier, PrivateSearch
    from dpcd.tuning.candidates import calibrated_ledger, candidate_spec

    X, y = _unbalanced()
    template = DPCoordinateDescentClassifier(solver="primal_dp_scd")
    ledger = calibrated_ledger(template, 2000, 5, 0.5, 1e-6)
    assert [m.group for m in ledger.mechanisms][0] == "labels"
    spec, _ = candidate_spec(ledger, 2000)
    assert spec[:4] == ("smoothness_gaussian", pytest.approx(1 / (0.05 * 0.5)), 1, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = PrivateSearch(template, {"passes": [1, 2]}, epsilon=1.0, k_mean=2,
                               random_state=0).fit(X, y)
    assert search.privacy_ledger_.epsilon_achieved <= 1.0 + 1e-9
    # the default (no random_state) search is secure: its candidates' secure
    # label count is accounted as the same Laplace event
    secure_ledger = calibrated_ledger(template, 2000, 5, 0.5, 1e-6, noise="secure")
    assert candidate_spec(secure_ledger, 2000)[0][:4] == spec[:4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = PrivateSearch(template, {"passes": [1, 2]}, epsilon=1.0, k_mean=2).fit(X, y)
    assert default.privacy_ledger_.noise == "secure"
    assert default.privacy_ledger_.epsilon_achieved <= 1.0 + 1e-9
