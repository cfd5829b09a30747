"""Private hyperparameter search end to end: dpcd.tuning.search and
the dpcd.PrivateSearch meta-estimator on real (numba) fits."""

import math
import warnings

import numpy as np
import pytest
from dp_accounting import NeighboringRelation, dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import NotFittedError

from dpcd import PrivacyLeakWarning, PrivateSearch
from dpcd.algorithms.prepare import BOUND_SHARE
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
from dpcd.tuning import calibration, candidates, draws
from dpcd.tuning.settings import SearchSettings


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(300, 4, noise=1.0, random_state=0)
    return X / np.abs(X).max(axis=0), y / np.std(y)


@pytest.fixture(scope="module")
def classification():
    return make_classification(300, 4, random_state=0)


def test_released_ledger_matches_an_independent_repeat_and_select(regression):
    """Grid over the step only (one training event): the ledger's ε is
    dp-accounting's RepeatAndSelectDpEvent of the released candidate's own
    mechanisms (training as fitted, score as noised), and meets the target."""
    X, y = regression
    search = PrivateSearch(DPCoordinateDescentRegressor(solver="dp_cd", passes=3),
                           {"step": [0.1, 0.3, 1.0]}, epsilon=1.0, delta=1e-5, k_mean=4,
                           random_state=7)
    with pytest.warns(PrivacyLeakWarning, match="exact_smoothness"):
        search.fit(X, y)
    ledger = search.privacy_ledger_
    train, score = ledger.mechanisms
    assert (train.kind, score.kind, score.group) == ("gaussian", "laplace", "selection")
    candidate = dp_event.ComposedDpEvent([
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(train.noise_multiplier),
                                     train.count),
        dp_event.LaplaceDpEvent(score.noise_multiplier)])
    acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dp_event.RepeatAndSelectDpEvent(candidate, 4.0, 1.0))
    assert ledger.epsilon_achieved == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    assert ledger.epsilon_achieved <= 1.0
    assert ledger.delta == 1e-5
    assert "hyperparameter_selection" not in ledger.nonprivate_inputs
    record = ledger.selection
    assert "k" not in record  # the law of K, never K (tests/test_private_release.py)
    assert (record["k_distribution"], record["k_mean"], record["score_fraction"]) == \
        ("geometric", 4.0, 0.1)
    assert record["score_sensitivity"] == pytest.approx(0.5 / 300)  # B/n, B = 1/2
    assert record["score_clip_from_data"] is False
    # the released model is the candidate's: its predictions are the search's
    assert search.best_params_ in [{"step": s} for s in (0.1, 0.3, 1.0)]
    np.testing.assert_array_equal(search.predict(X), search.best_estimator_.predict(X))
    assert ledger.to_json() == type(ledger).from_json(ledger.to_json()).to_json()


def test_hyperparameter_draws_do_not_depend_on_the_data(regression):
    X, y = regression
    rng = np.random.default_rng(1)
    X2, y2 = rng.normal(size=X.shape), rng.normal(size=y.shape)
    grid = {"step": [0.1, 0.3, 1.0], "passes": [1, 2]}
    make = dict(epsilon=1.0, delta=1e-5, k_mean=3, random_state=11)
    fits = [PrivateSearch(DPCoordinateDescentRegressor(solver="dp_cd"), grid, **make)
            for _ in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fits[0].fit(X, y)
        fits[1].fit(X2, y2)
    # the draws are the data-free ones (the release keeps none of them: the
    # chosen configuration is among those the seed alone draws), and another
    # seed draws differently
    settings = SearchSettings(k_mean=3)
    configs = draws.grid_configurations(grid)
    k, drawn = draws.draw_search(configs, settings, 11, 1.0, 1e-5)
    assert k >= 1 and fits[0].best_params_ in drawn and fits[1].best_params_ in drawn
    others = {tuple(map(str, draws.draw_search(configs, settings, s, 1.0, 1e-5)))
              for s in range(20)}
    assert len(others) > 10


def test_candidates_are_independent_releases():
    """Same configuration at two indices: different streams."""
    settings = SearchSettings().checked()
    config = {"step": 0.1}
    a, b = (draws.candidate_entropy(0, settings, 1.0, 1e-5, 2, i, config) for i in (0, 1))
    assert a != b
    assert a == draws.candidate_entropy(0, settings, 1.0, 1e-5, 2, 0, config)


def test_validation_selection_with_dp_sgd(classification):
    """Validation accuracy (sensitivity 1/n_val), Gaussian score noise, DP-SGD
    under the zero record with a grid over passes (two training events)."""
    X, y = classification
    base = DPCoordinateDescentClassifier(solver="dp_sgd", neighbouring="replace_special",
                                         batch_size=10)
    search = PrivateSearch(base, {"passes": [1, 2], "step": [0.5, 1.0]}, epsilon=2.0,
                           k_mean=3, select_by="validation", score_noise="gaussian",
                           random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, y)
    assert is_classifier(search) and not is_regressor(search)
    record = search.privacy_ledger_.selection
    assert record["score_metric"] == "accuracy"
    assert record["score_sensitivity"] == pytest.approx(1 / 60)  # 20 % of 300 held out
    assert record["n_training_events"] == 2
    assert search.privacy_ledger_.epsilon_achieved <= 2.0
    assert search.privacy_ledger_.neighbouring == "replace_special"
    assert set(search.classes_) == {0, 1}
    assert search.predict_proba(X[:3]).shape == (3, 2)
    train = search.privacy_ledger_.mechanisms[0]
    assert train.sampling == "poisson"
    assert train.noise_multiplier >= search.calibration_.train_multipliers[
        ("poisson_gaussian", 10 / 240, int(math.ceil(search.best_params_["passes"] * 24)))]


def test_poisson_can_release_nothing(regression):
    """K ~ Poisson(1) is 0 for some seed: nothing is released, and predict says so."""
    from dpcd.estimators.linear import _seed_of

    settings = SearchSettings(k_mean=1.0, k_distribution="poisson")
    configs = draws.grid_configurations({"step": [0.1, 1.0]})
    seed = next(s for s in range(100)
                if draws.draw_search(configs, settings, _seed_of(s), 1.0, 1e-5)[0] == 0)
    X, y = regression
    search = PrivateSearch(DPCoordinateDescentRegressor(solver="dp_cd"), {"step": [0.1, 1.0]},
                           delta=1e-5, k_mean=1.0, k_distribution="poisson",
                           random_state=seed).fit(X, y)
    assert search.best_estimator_ is None  # K = 0 shows only as nothing released
    assert "k" not in search.privacy_ledger_.selection
    with pytest.raises(NotFittedError, match="K = 0"):
        search.predict(X)


@pytest.mark.parametrize("setting,match", [
    (dict(k_mean=0.0), "k_mean"),
    (dict(k_mean=-2.0), "k_mean"),
    (dict(k_distribution="uniform"), "k_distribution"),
    (dict(score_fraction=1.0), "score_fraction"),
    (dict(score_fraction=0.0), "score_fraction"),
    (dict(select_by="test"), "select_by"),
    (dict(param_grid={"step": [0.1]}), "param_grid"),
    (dict(estimator=DPCoordinateDescentRegressor(solver="seq_dp_scd", penalty="l2")),
     "max_batch_size"),
    (dict(estimator=DPCoordinateDescentRegressor(solver="dp_sgd",
                                                 neighbouring="add_or_remove_one"),
          select_by="validation"), "fixed n"),
])
def test_bad_settings_are_refused_by_name(regression, setting, match):
    X, y = regression
    kwargs = dict(estimator=DPCoordinateDescentRegressor(solver="dp_cd"),
                  param_grid={"step": [0.1, 1.0]}, random_state=0)
    kwargs.update(setting)
    with pytest.raises(ValueError, match=match):
        PrivateSearch(**kwargs).fit(X, y)


def test_clone_and_params():
    search = PrivateSearch(DPCoordinateDescentRegressor(solver="dp_cd"), {"step": [0.1, 1.0]},
                           k_mean=5)
    copy = clone(search)
    assert copy.get_params()["k_mean"] == 5
    assert copy.get_params()["estimator__solver"] == "dp_cd"


@pytest.mark.parametrize("solver,neighbouring,expected", [
    ("dp_cd", "replace_one", ("gaussian", 5 * 5)),
    # ceil(5 * 5 / 2) steps; clip="auto" falls back: a label count at 0.05 epsilon first
    ("primal_dp_scd", "replace_one", ("smoothness_gaussian", 20.0, 1, 0.0, 13)),
    ("dp_sgd", "add_or_remove_one", ("poisson_gaussian", 2 / 300, 750)),
    ("dp_sgd", "replace_one", ("gaussian", 750)),  # unsampled, sensitivity 2C
    ("dp_scd", "replace_special", ("poisson_gaussian", 2 / 300, 750)),
    ("dp_gcd", "replace_one", ("pure_pair", 5)),  # T = passes iterations
])
def test_training_spec_is_what_the_fit_accounts(solver, neighbouring, expected):
    est = DPCoordinateDescentClassifier(solver=solver, neighbouring=neighbouring, passes=5,
                                        batch_size=2)
    assert candidates.training_spec(est, 300, 4) == (expected, neighbouring)


@pytest.mark.parametrize("solver,neighbouring,match", [
    ("dp_scd", "replace_one", "pld"),
    ("seq_dp_scd", "replace_one", "max_batch_size"),
    ("seq_dp_scd", "replace_special", "max_batch_size"),
    ("dp_cd_p", "add_or_remove_one", "replace_one"),
])
def test_trainings_without_an_rdp_account_are_refused(solver, neighbouring, match):
    est = DPCoordinateDescentClassifier(solver=solver, neighbouring=neighbouring)
    with pytest.raises(ValueError, match=match):
        candidates.training_spec(est, 300, 4)


def test_dp_cd_p_training_spec():
    """dp_cd_p's training event: without public bounds, the feature bound
    (exponential mechanism at eps_b, as randomized response) and, step="auto",
    the constants' mean (Laplace, multiplier 1 / eps_s; a given step: the 4
    constants, multiplier 4 / eps_s each), eps_b = BOUND_SHARE x 0.1 eps
    and eps_s the rest of that smoothness share, as its fit spends them; then
    DP-CD's 5 x 5 Gaussian steps (the intercept's constant is public)."""
    est = DPCoordinateDescentClassifier(passes=5)
    (kind, z_s, count, eps_b, steps), relation = candidates.training_spec(est, 300, 4)
    assert (kind, count, steps, relation) == ("smoothness_gaussian", 1, 25, "replace_one")
    assert eps_b == pytest.approx(0.1 * BOUND_SHARE, rel=1e-12)
    # step="auto": one release, the constants' mean, at the whole eps_s
    assert z_s == pytest.approx(1 / (0.1 * (1 - BOUND_SHARE)), rel=1e-12)
    public = candidates.training_spec(clone(est).set_params(bounds=2.0, step=1.0), 300, 4)[0]
    assert public[1:4] == (pytest.approx(40), 4, 0.0)


DP_CD_P_CASES = {
    # name: (estimator, released feature bound?)
    "regressor_default": (DPCoordinateDescentRegressor(passes=2), True),
    "classifier_public_bounds": (DPCoordinateDescentClassifier(passes=2, bounds=3.0), False),
}


@pytest.mark.parametrize("case", sorted(DP_CD_P_CASES))
def test_default_solver_dp_cd_p_releases_what_dp_accounting_gives(regression,
                                                                  classification, case):
    """The estimators' default solver (dp_cd_p) as a candidate: each candidate
    releases its own smoothness constants (and, without public bounds, its own
    feature bound) with smoothness_fraction of its training budget E, its steps
    get the rest; the released epsilon equals dp-accounting's
    RepeatAndSelectDpEvent(Composed([RR(eps_b)?, p x Laplace(p / eps_s),
    Gaussian steps, Laplace score])) built here, meets the target, and the
    steps' noise is never below what dp-accounting certifies for their share."""
    est, bound = DP_CD_P_CASES[case]
    X, y = regression if is_regressor(est) else classification
    search = PrivateSearch(est, {"step": [0.3, 1.0], "clip": [0.5, 1.0]}, epsilon=1.0,
                           delta=1e-5, k_mean=3, random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing read without noise
        search.fit(X, y)
    ledger = search.privacy_ledger_
    assert search.best_estimator_.solver == "dp_cd_p"
    names = [m.name for m in ledger.mechanisms]
    assert names == ["feature_bound"] * bound + ["smoothness_means", "coordinate_gradient",
                                                 "score_loss"]
    smooth, steps, score = ledger.mechanisms[-3:]
    E, p = ledger.selection["train_epsilon"], X.shape[1]
    eps_b = 0.1 * E * BOUND_SHARE
    eps_s = 0.1 * E - (eps_b if bound else 0.0)
    assert smooth.count == p and smooth.noise_multiplier == pytest.approx(p / eps_s, rel=1e-12)
    events = [dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(p / eps_s), p),
              dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(steps.noise_multiplier),
                                           2 * (p + 1)),
              dp_event.LaplaceDpEvent(score.noise_multiplier)]
    if bound:
        events.insert(0, dp_event.RandomizedResponseDpEvent(2 / (1 + math.exp(eps_b)), 2))
    acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_event.RepeatAndSelectDpEvent(dp_event.ComposedDpEvent(events), 3.0, 1.0))
    assert ledger.epsilon_achieved == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    assert 0.9 < ledger.epsilon_achieved <= 1.0
    gauss = rdp.RdpAccountant()
    gauss.compose(events[-2])
    assert gauss.get_epsilon(1e-5) <= 0.9 * E * (1 + 1e-9)  # the steps' share, met
    assert ledger.selection["smoothness_fraction"] == pytest.approx(0.1, rel=1e-12)
    assert ledger.selection["smoothness_fraction_of"] == "train_epsilon"
    for name in ("hyperparameter_selection", "exact_smoothness", "smoothness_bounds_from_data"):
        assert name not in ledger.nonprivate_inputs
    np.testing.assert_array_equal(search.predict(X), search.best_estimator_.predict(X))


def test_dp_cd_p_grid_over_smoothness_fraction(regression):
    """Configurations with different smoothness fractions are different
    training events: the release is accounted at the per-order maximum of
    their curves, never below either alone, and meets the target."""
    X, y = regression
    search = PrivateSearch(DPCoordinateDescentRegressor(passes=2, bounds=1.0),
                           {"smoothness_fraction": [0.05, 0.3], "step": [0.3, 1.0]},
                           epsilon=1.0, delta=1e-5, k_mean=2, random_state=1).fit(X, y)
    cal = search.calibration_
    assert len(cal.train_multipliers) == 2 and search.privacy_ledger_.selection[
        "n_training_events"] == 2
    assert cal.epsilon_achieved <= 1.0
    for spec, z in cal.trainings():
        alone = calibration.selection_epsilon([(spec, z)], cal.score_spec,
                                               cal.score_multiplier, 2.0, 1.0, 1e-5)
        assert alone <= cal.epsilon_achieved * (1 + 1e-12)


def _rr_laplace(z, iterations):
    """DP-GCD's correct event, from its definition: T iterations of an
    eps'-DP report-noisy-max (as randomized response over 2 outcomes at eps',
    the worst case) and an eps'-DP Laplace entry, eps' = 1/z."""
    return dp_event.ComposedDpEvent([
        dp_event.SelfComposedDpEvent(
            dp_event.RandomizedResponseDpEvent(2 / (1 + math.exp(1 / z)), 2), iterations),
        dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(z), iterations)])


NEW_CANDIDATES = {
    # name: (estimator, grid, released training mechanisms -> training event)
    "dp_gcd": (dict(solver="dp_gcd", passes=4), {"step": [0.3, 1.0], "clip": [0.5, 1.0]},
               lambda mechs: _rr_laplace(mechs[1].noise_multiplier, 4)),
    "dp_sgd_replace_one": (
        dict(solver="dp_sgd", neighbouring="replace_one", passes=2, batch_size=20),
        {"step": [0.1, 1.0], "clip": [0.5, 1.0]},
        lambda mechs: dp_event.SelfComposedDpEvent(
            dp_event.GaussianDpEvent(mechs[0].noise_multiplier), 2 * 300 // 20)),
}


@pytest.mark.parametrize("case", sorted(NEW_CANDIDATES))
def test_new_candidates_release_what_dp_accounting_gives(regression, case):
    """DP-GCD (correct scale, RDP) and DP-SGD under replace-one (unsampled
    Gaussians of sensitivity 2C): the released epsilon equals dp-accounting's
    RepeatAndSelectDpEvent of the training event built here from the
    algorithm's definition and the noised score; the fitted attributes work."""
    X, y = regression
    params, grid, training = NEW_CANDIDATES[case]
    search = PrivateSearch(DPCoordinateDescentRegressor(**params), grid, epsilon=1.0,
                           delta=1e-5, k_mean=3, random_state=11)
    with pytest.warns(PrivacyLeakWarning):
        search.fit(X, y)
    ledger = search.privacy_ledger_
    *mechs, score = ledger.mechanisms
    assert score.group == "selection" and score.kind == "laplace"
    acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_event.RepeatAndSelectDpEvent(
        dp_event.ComposedDpEvent([training(mechs),
                                  dp_event.LaplaceDpEvent(score.noise_multiplier)]), 3.0, 1.0))
    expected = acc.get_epsilon(1e-5)
    assert ledger.epsilon_achieved == pytest.approx(expected, rel=1e-9)
    assert 0.9 < ledger.epsilon_achieved <= 1.0
    assert ledger.neighbouring == "replace_one"
    assert "hyperparameter_selection" not in ledger.nonprivate_inputs
    assert set(search.best_params_) == set(grid)
    np.testing.assert_array_equal(search.predict(X), search.best_estimator_.predict(X))
    assert search.predict(X).shape == (300,)
    if case == "dp_sgd_replace_one":  # no amplification: std z * 2C
        (train,) = mechs
        assert train.sensitivity == pytest.approx(2.0 * search.best_params_["clip"])
        assert train.sampling == "poisson" and "without amplification" in train.note
    else:
        select, grad = mechs
        assert (select.kind, grad.kind) == ("report_noisy_max", "laplace")
        assert "invalid_bound" not in ledger.caveats


def test_primal_dp_scd_hinge_candidates(classification):
    """A DP-SCD solver with the hinge loss: the score is the clipped hinge loss
    (B = 1, the zero model's), the ledger's ε meets the target."""
    X, y = classification
    est = DPCoordinateDescentClassifier(solver="primal_dp_scd", batch_size=2, alpha=0.01)
    search = PrivateSearch(est, {"passes": [1, 2], "clip": [0.1, 1.0]}, epsilon=2.0,
                           k_mean=3, random_state=3).fit(X, y)
    ledger = search.privacy_ledger_
    assert ledger.epsilon_achieved <= 2.0
    assert ledger.selection["score_clip"] == pytest.approx(math.log(2.0))
    # K = 1 always (logarithmic, mean 1): one dual DP-SCD fit under the zero record
    hinge = PrivateSearch(DPCoordinateDescentClassifier(
        solver="dp_scd", loss="hinge", batch_size=5, alpha=0.01,
        neighbouring="replace_special"), {"clip": [0.1, 1.0]},
        k_mean=1.0, k_distribution="logarithmic", epsilon=2.0, random_state=0)
    hinge.fit(X, y)
    assert hinge.best_estimator_ is not None
    assert hinge.privacy_ledger_.selection["score_clip"] == 1.0
    assert hinge.privacy_ledger_.neighbouring == "replace_special"
    assert hinge.privacy_ledger_.epsilon_achieved <= 2.0
