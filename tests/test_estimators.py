"""Tests of the scikit-learn estimators (dpcd.estimators).

With a huge ε the noise is negligible and the estimators must solve the same
problem as scikit-learn and the non-private reference; with any ε their
ledger must account for the whole fit.
"""
import importlib

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.linear_model import Lasso, LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpcd.estimators import (
    EXPECTED_FAILED_CHECKS,
    DPCoordinateDescentClassifier,
    DPCoordinateDescentRegressor,
)
from dpcd.problems import make_problem, objective
from dpcd.solvers import reference_solve

# Huge ε: noise multipliers around 1e-2 (the calibration refuses ε so large
# that a multiplier < 1e-3 suffices); with n = 1000 the noise is negligible.
BIG_EPS = 1e6
SOLVERS = ("dp_cd", "dp_cd_p", "dp_gcd", "dp_sgd")
# DP-SGD with batch 1 and step 1/beta is too noisy to fit anything at any ε;
# larger batches and a smaller step make it an honest baseline.
SGD = {"batch_size": 10, "step": 0.3, "clip": 10.0}


def _large_eps(cls, solver):
    kwargs = {"solver": solver, "epsilon": 1e5, "clip": 100.0}
    if solver == "dp_sgd":
        kwargs.update(SGD)
    if solver == "dp_gcd":
        # one coordinate per iteration; the PLD composition (in "auto") takes
        # minutes to calibrate at epsilon = 1e5, RDP milliseconds
        kwargs.update(passes=100, accountant="rdp")
    return cls(**kwargs)


# ------------------------------------------------------------ check_estimator
# Large-ε configurations must pass every check that applies; the defaults
# (ε = 1) may only fail the checks listed, with the reason, in
# dpcd.estimators.EXPECTED_FAILED_CHECKS.
CHECKED = [_large_eps(cls, solver)
           for cls in (DPCoordinateDescentRegressor, DPCoordinateDescentClassifier)
           for solver in SOLVERS]
CHECKED += [DPCoordinateDescentRegressor(), DPCoordinateDescentClassifier()]


def _expected_failed(estimator):
    if estimator.epsilon >= 1e5:
        return {}
    return EXPECTED_FAILED_CHECKS[type(estimator).__name__]


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ------------------------------------------------------------------ data
@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 6))
    w = np.array([1.0, -2.0, 0.0, 0.0, 0.5, 0.0])
    y = X @ w + 0.3 * rng.standard_normal(1000)
    return X, y


@pytest.fixture(scope="module")
def classification():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((1000, 6))
    w = np.array([1.0, -2.0, 0.0, 0.0, 0.5, 0.0])
    y = np.where(X @ w + 0.5 * rng.standard_normal(1000) > 0, 1.0, -1.0)
    return X, y


def _rel_gap(X, y, w, loss, penalty, alpha):
    datafit, pen = make_problem(loss, penalty, alpha)
    best = reference_solve(X, y, datafit, pen).w
    f_best = objective(X, y, best, datafit, pen)
    return (objective(X, y, w, datafit, pen) - f_best) / f_best


# ------------------------------------------- huge ε: same problem as sklearn
@pytest.mark.parametrize("solver", ["dp_cd", "dp_cd_p"])
def test_regressor_matches_lasso(regression, solver):
    X, y = regression
    lam = 0.1
    model = DPCoordinateDescentRegressor(solver=solver, epsilon=BIG_EPS, penalty="l1",
                                         alpha=lam, passes=50, clip=100.0,
                                         fit_intercept=False, random_state=0)
    model.fit(X, y)
    # alpha on scikit-learn's scale: Lasso's alpha; dpcd.problems' squares
    # (1/n)||Xw - y||^2 takes 2 lam
    lasso = Lasso(alpha=lam, fit_intercept=False, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(model.coef_, lasso.coef_, atol=5e-3)
    assert model.intercept_ == 0.0
    assert _rel_gap(X, y, model.coef_, "squares", "l1", 2 * lam) < 1e-4


@pytest.mark.parametrize("solver", ["dp_cd", "dp_cd_p"])
def test_classifier_matches_logistic_regression(classification, solver):
    X, y = classification
    lam = 0.01
    n = X.shape[0]
    model = DPCoordinateDescentClassifier(solver=solver, epsilon=BIG_EPS, alpha=lam,
                                          passes=50, clip=5.0, fit_intercept=False,
                                          random_state=0)
    model.fit(X, y)
    # mean logistic + (lam/2)||w||^2 is sklearn's C = 1 / (n lam)
    logreg = LogisticRegression(C=1 / (n * lam), fit_intercept=False, tol=1e-12,
                                max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(model.coef_, logreg.coef_, atol=5e-3)
    np.testing.assert_allclose(model.predict_proba(X), logreg.predict_proba(X),
                               atol=5e-3)
    assert _rel_gap(X, y, model.coef_[0], "logistic", "l2", lam) < 1e-4


def test_dp_sgd_near_reference(regression, classification):
    # constant-step SGD stalls at a noise floor of its own (sampling variance)
    sgd = {"solver": "dp_sgd", "epsilon": BIG_EPS, "passes": 20, "batch_size": 100,
           "step": 0.2, "clip": 10.0, "random_state": 0}
    X, y = regression
    model = DPCoordinateDescentRegressor(penalty="l1", alpha=0.05, fit_intercept=False,
                                         **sgd).fit(X, y)
    assert _rel_gap(X, y, model.coef_, "squares", "l1", 0.1) < 1e-2
    X, y = classification
    model = DPCoordinateDescentClassifier(alpha=0.01, fit_intercept=False,
                                          **sgd).fit(X, y)
    assert _rel_gap(X, y, model.coef_[0], "logistic", "l2", 0.01) < 1e-2


@pytest.mark.parametrize("cls, loss, penalty", [
    (DPCoordinateDescentRegressor, "squares", "l2"),
    (DPCoordinateDescentClassifier, "logistic", "l2"),
])
def test_intercept_is_a_constant_feature(regression, cls, loss, penalty):
    X, y = regression
    if loss == "logistic":
        y = np.where(y > 1.0, 1.0, -1.0)  # unbalanced: needs an intercept
    else:
        y = y + 3.0
    lam = 0.01
    # clipping thresholds that do not bind at the optimum, noise kept small
    clip = 20.0 if loss == "squares" else 10.0  # relative: 40 and 10 rms
    model = cls(epsilon=BIG_EPS, penalty=penalty, alpha=lam, passes=80, clip=clip,
                fit_intercept=True, random_state=0).fit(X, y)
    X1 = np.hstack([X, np.ones((X.shape[0], 1))])
    datafit, pen = make_problem(loss, penalty, lam * cls._alpha_scale)
    best = reference_solve(X1, y, datafit, pen).w
    np.testing.assert_allclose(np.ravel(model.coef_), best[:-1], atol=5e-3)
    np.testing.assert_allclose(np.ravel(model.intercept_)[0], best[-1], atol=5e-3)
    assert abs(best[-1]) > 0.5
    # the constant feature costs no extra non-private input
    assert "intercept" not in " ".join(model.privacy_ledger_.nonprivate_inputs)


# ------------------------------------------------------------------ privacy
@pytest.mark.parametrize("solver, nonprivate", [
    ("dp_cd", {"exact_smoothness"}),
    ("dp_cd_p", set()),
    ("dp_sgd", {"global_smoothness"}),
])
@pytest.mark.parametrize("epsilon", [0.5, 3.0])
def test_ledger_within_budget(regression, solver, nonprivate, epsilon):
    X, y = regression
    model = DPCoordinateDescentRegressor(solver=solver, epsilon=epsilon, passes=5,
                                         random_state=0).fit(X, y)
    ledger = model.privacy_ledger_
    assert ledger.epsilon_achieved <= epsilon * (1 + 1e-9)
    assert ledger.epsilon_target == pytest.approx(epsilon)
    assert ledger.delta == pytest.approx(1 / X.shape[0] ** 2)  # delta=None
    assert set(ledger.nonprivate_inputs) == nonprivate
    assert model.history_.shape == (6,)
    assert model.n_iter_ == 5


def test_dp_cd_p_ledger_has_two_lines(classification):
    X, y = classification
    epsilon, fraction = 2.0, 0.25
    model = DPCoordinateDescentClassifier(solver="dp_cd_p", epsilon=epsilon,
                                          smoothness_fraction=fraction, delta=1e-6,
                                          bounds=5.0, random_state=0).fit(X, y)
    ledger = model.privacy_ledger_
    assert ledger.algorithm == "dp_cd_p"  # its run's label, not DP-CD's
    lines = {b.group: b for b in ledger.budget}
    assert set(lines) == {"smoothness", "optimisation"}
    assert lines["smoothness"].epsilon_achieved == pytest.approx(fraction * epsilon)
    eps_cd = (1 - fraction) * epsilon
    assert lines["optimisation"].epsilon_target == pytest.approx(eps_cd)
    assert lines["optimisation"].epsilon_achieved <= eps_cd
    assert sum(b.epsilon_target for b in ledger.budget) == pytest.approx(epsilon)
    assert ledger.epsilon_achieved <= epsilon * (1 + 1e-9)
    assert ledger.delta == pytest.approx(1e-6)
    assert ledger.nonprivate_inputs == ()  # public bounds, labels +-1


def test_public_bounds_are_not_a_nonprivate_input(regression):
    X, y = regression
    model = DPCoordinateDescentRegressor(solver="dp_cd_p", bounds=5.0,
                                         random_state=0).fit(X, y)
    assert model.privacy_ledger_.nonprivate_inputs == ()
    per_feature = DPCoordinateDescentRegressor(
        solver="dp_cd_p", bounds=np.full(X.shape[1], 5.0), random_state=0
    ).fit(X, y)
    np.testing.assert_array_equal(model.coef_, per_feature.coef_)


# ------------------------------------------------------------ determinism
@pytest.mark.parametrize("solver", SOLVERS)
def test_random_state_determinism(classification, solver):
    X, y = classification
    est = DPCoordinateDescentClassifier(solver=solver, passes=3)
    a = clone(est).set_params(random_state=7).fit(X, y)
    b = clone(est).set_params(random_state=7).fit(X, y)
    c = clone(est).set_params(random_state=8).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.history_, b.history_)
    assert not np.array_equal(a.coef_, c.coef_)
    # None draws fresh entropy
    d = clone(est).fit(X, y)
    e = clone(est).fit(X, y)
    assert not np.array_equal(d.coef_, e.coef_)


def test_random_state_instances(regression):
    X, y = regression
    est = DPCoordinateDescentRegressor(passes=2)
    a = clone(est).set_params(random_state=np.random.RandomState(3)).fit(X, y)
    b = clone(est).set_params(random_state=np.random.RandomState(3)).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    g = clone(est).set_params(random_state=np.random.default_rng(3)).fit(X, y)
    assert g.coef_.shape == (X.shape[1],)


# ------------------------------------------------------------ bad input
@pytest.mark.parametrize("params, match", [
    ({"epsilon": 0.0}, "epsilon must be a finite number > 0"),
    ({"epsilon": -1.0}, "epsilon must be a finite number > 0"),
    ({"delta": 0.0}, r"delta must be in \(0, 1\)"),
    ({"delta": 1.0}, r"delta must be in \(0, 1\)"),
    ({"solver": "sgd"}, "solver must be one of dp_cd, dp_cd_p, dp_gcd, dp_sgd"),
    ({"penalty": "l0"}, "unknown penalty 'l0'"),
    ({"alpha": -1.0}, "alpha must be a finite number >= 0"),
    ({"passes": 0}, "passes must be an integer >= 1"),
    ({"passes": 2.5}, "passes must be an integer >= 1"),
    ({"step": 0.0}, "step must be a finite number > 0"),
    ({"clip": -1.0}, "clip must be a finite number > 0"),
    ({"accountant": "moments"}, "accountant must be one of"),
    ({"solver": "dp_sgd", "batch_size": 10_000}, "batch_size must be <= n_samples"),
    ({"solver": "dp_cd_p", "smoothness_fraction": 1.0},
     r"smoothness_fraction must be in \(0, 1\)"),
    ({"solver": "dp_cd_p", "bounds": [1.0, 2.0]}, "bounds must be"),
    ({"solver": "dp_cd_p", "bounds": -1.0}, "bounds must be"),
    ({"random_state": "seed"}, "random_state must be"),
])
def test_bad_parameters(regression, params, match):
    X, y = regression
    with pytest.raises(ValueError, match=match):
        DPCoordinateDescentRegressor(**params).fit(X, y)


def test_bad_data(regression):
    X, y = regression
    with pytest.raises(ValueError, match="minimum of 2 is required"):
        DPCoordinateDescentRegressor().fit(X[:1], y[:1])
    Xnan = X.copy()
    Xnan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPCoordinateDescentRegressor().fit(Xnan, y)
    clf = DPCoordinateDescentClassifier()
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        clf.fit(X, np.arange(X.shape[0]) % 3)
    with pytest.raises(ValueError, match="needs samples of 2 classes, got 1 class"):
        clf.fit(X, np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="Unknown label type"):
        clf.fit(X, y)  # continuous targets


# ------------------------------------------------------------ classifier API
def test_string_labels(classification):
    X, y = classification
    labels = np.where(y > 0, "spam", "ham")
    model = DPCoordinateDescentClassifier(epsilon=BIG_EPS, passes=20, clip=5.0,
                                          random_state=0).fit(X, labels)
    assert list(model.classes_) == ["ham", "spam"]
    pred = model.predict(X)
    assert set(pred) <= {"ham", "spam"}
    assert model.score(X, labels) > 0.85
    # "spam" (classes_[1]) is the positive class: same model as with +/-1 labels
    numeric = DPCoordinateDescentClassifier(epsilon=BIG_EPS, passes=20, clip=5.0,
                                            random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.coef_, numeric.coef_)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(proba[:, 1] > 0.5, pred == "spam")
    np.testing.assert_allclose(np.exp(model.predict_log_proba(X)), proba, rtol=1e-12)
    assert np.all(proba > 0)
    assert model.coef_.shape == (1, X.shape[1]) and model.intercept_.shape == (1,)


def test_sparse_input_matches_dense(regression):
    # sparse X stays sparse (tests/test_solvers_sparse.py): same draws, same
    # iterates up to the summation order
    X, y = regression
    Xs = X.copy()
    Xs[np.abs(Xs) < 0.5] = 0.0
    dense = DPCoordinateDescentRegressor(random_state=0).fit(Xs, y)
    sparse = DPCoordinateDescentRegressor(random_state=0).fit(sp.csr_matrix(Xs), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(sparse.predict(sp.csc_matrix(Xs)), dense.predict(Xs),
                               rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ DP-GCD
@pytest.mark.parametrize("rule", ["gs_r", "gs_s", "gs_q"])
def test_dp_gcd_regressor_matches_lasso(regression, rule):
    X, y = regression
    model = DPCoordinateDescentRegressor(solver="dp_gcd", rule=rule, epsilon=BIG_EPS,
                                         accountant="rdp", penalty="l1", alpha=0.05,
                                         passes=200, clip=100.0, fit_intercept=False,
                                         random_state=0).fit(X, y)
    lasso = Lasso(alpha=0.05, fit_intercept=False, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(model.coef_, lasso.coef_, atol=5e-3)
    assert rule in model.privacy_ledger_.mechanisms[0].note
    assert model.n_updates_ == 200


def test_dp_gcd_sparse_input_stays_sparse(classification, monkeypatch):
    X, y = classification
    Xs = X.copy()
    Xs[np.abs(Xs) < 1.0] = 0.0
    kw = dict(solver="dp_gcd", penalty="l1", alpha=0.01, passes=20, fit_intercept=True,
              random_state=0)
    dense = DPCoordinateDescentClassifier(**kw).fit(Xs, y)
    seen = []
    mod = importlib.import_module("dpcd.solvers.dp_gcd")  # the module, not the function
    real = mod.as_design
    monkeypatch.setattr(mod, "as_design", lambda X: seen.append(sp.issparse(X)) or real(X))
    sparse = DPCoordinateDescentClassifier(**kw).fit(sp.csr_matrix(Xs), y)
    assert seen == [True]
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("params, match", [
    ({"rule": "gs_x"}, "rule must be one of"),
    ({"penalty": "elastic_net"}, "penalty must be 'l1', 'l2' or 'none'"),
    ({"rule": "smooth", "penalty": "l1"}, "needs penalty"),
])
def test_dp_gcd_bad_parameters(regression, params, match):
    X, y = regression
    with pytest.raises(ValueError, match=match):
        DPCoordinateDescentRegressor(solver="dp_gcd", **params).fit(X, y)
