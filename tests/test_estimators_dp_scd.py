"""The scikit-learn estimators with the DP-SCD solvers (dp_scd, seq_dp_scd, primal_dp_scd)."""
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor

# Large epsilon; C = 1 and alpha = 0.1 keep the noise of v (a random walk over
# the T iterations, divided by lambda N in theta = v / (lambda N)) small.
BIG = {"epsilon": 1e5, "clip": 1.0, "penalty": "l2", "alpha": 0.1, "batch_size": 5}
CHECKED = [cls(solver=solver, **BIG, **kw)
           for solver in ("dp_scd", "seq_dp_scd")
           for cls, kw in ((DPCoordinateDescentRegressor, {}),
                           (DPCoordinateDescentClassifier, {}),
                           (DPCoordinateDescentClassifier, {"loss": "hinge"}))]
CHECKED += [cls(solver="primal_dp_scd", **{**BIG, "batch_size": 1})
            for cls in (DPCoordinateDescentRegressor, DPCoordinateDescentClassifier)]

# Quality checks that cannot pass, with the reason.
_SEQ = ("seqDP-SCD adds Lemma 5's noise 2C sqrt(L(L+1)) z per entry: R^2 falls below "
        "0.5 in this check at epsilon = 1e5 (0.54-0.61 on its standardised data, "
        "seeds 0-2, 0.66 without noise)")

_SEQ_CLS = ("seqDP-SCD's Poisson batches are calibrated at L_max ('auto': 25 for L = 5 "
            "on 300 records) and, above PLD's epsilon limit, without amplification: "
            "at epsilon = 1e5 its noise is 7x that of the fixed-size batches it ran "
            "before (issue 30), too much for this check's training accuracy")

_PRIMAL = ("primal DP-SCD uses every record each step (q = 1, no amplification) with "
           "Lemma 4's noise 2C sqrt(L(L+1)) z: R^2 0.22-0.46 on this check's data at "
           "epsilon = 1e5 (seeds 0-2) against 0.66 without noise")


def _expected_failed(estimator):
    if not isinstance(estimator, DPCoordinateDescentRegressor):
        if estimator.solver == "seq_dp_scd":
            return {"check_classifiers_train": _SEQ_CLS}
        return {}
    return {"seq_dp_scd": {"check_regressors_train": _SEQ},
            "primal_dp_scd": {"check_regressors_train": _PRIMAL}}.get(estimator.solver, {})


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 5))
    w = np.array([1.0, -2.0, 0.0, 0.5, 0.0])
    y = X @ w + 0.1 * rng.standard_normal(500)
    return X, y, np.where(X @ w > 0, "yes", "no")


def _unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.mark.parametrize("solver", ["dp_scd", "primal_dp_scd"])
def test_large_epsilon_matches_sklearn_on_unit_rows(data, solver):
    """Rows are scaled to unit norm (1/sqrt(n) for primal), then the same objective."""
    X, y, labels = data
    n = len(y)
    primal = solver == "primal_dp_scd"
    # lambda N = 100 in the paper's units, so the noise of theta = v / (lambda N)
    # is small; alpha means the same for the primal (fitted on rows / sqrt(n))
    alpha = 0.4
    Xu = _unit(X)
    # alpha on scikit-learn's scale: Ridge(alpha=a) is alpha = a / n
    kw = dict(solver=solver, epsilon=1e5, clip=2.0 if not primal else 20.0, penalty="l2",
              alpha=alpha / 2, batch_size=1 if primal else 100, passes=10 if primal else 30,
              fit_intercept=False, random_state=0)
    if not primal:
        # the paper's zero-record relation: at epsilon = 1e5 (beyond PLD's range)
        # replace-one Poisson batches are accounted without amplification
        kw["neighbouring"] = "replace_special"
    reg = DPCoordinateDescentRegressor(**kw).fit(X, y)
    ref = Ridge(alpha=alpha * n / 2, fit_intercept=False).fit(Xu, y)
    # the large-epsilon noise is small, not zero: primal DP-SCD (q = 1,
    # Lemma 4) is much noisier than the dual, as the paper says
    if primal:
        assert np.corrcoef(reg.predict(X), ref.predict(Xu))[0, 1] > 0.9
    else:
        np.testing.assert_allclose(reg.predict(X), ref.predict(Xu), atol=0.1)
    clf = DPCoordinateDescentClassifier(**kw).fit(X, labels)
    ref = LogisticRegression(C=2 / (alpha * n), fit_intercept=False).fit(Xu, labels)
    # dual: agreement 0.948-0.978 over random_state 0-4 (0.90-0.93 under
    # replace-one, accounted without amplification at this epsilon)
    assert np.mean(clf.predict(X) == ref.predict(Xu)) > (0.8 if primal else 0.94)
    assert clf.privacy_ledger_.algorithm == solver


def test_ledger_states_relation_and_sampling(data):
    X, y, _ = data
    reg = DPCoordinateDescentRegressor(solver="dp_scd", penalty="l2", alpha=0.1,
                                       batch_size=50, passes=3, random_state=0).fit(X, y)
    led = reg.privacy_ledger_
    assert led.neighbouring == "replace_one"  # the default: Poisson batches through PLD
    mech = led.mechanisms[0]
    assert mech.sampling == "poisson" and mech.sampling_rate == pytest.approx(50 / 500)
    assert mech.count == 30 and led.epsilon_achieved <= 1.0
    assert list(led.nonprivate_inputs) == []
    paper = DPCoordinateDescentRegressor(solver="dp_scd", penalty="l2", alpha=0.1, batch_size=50,
                                         passes=3, random_state=0, neighbouring="paper").fit(X, y)
    assert paper.privacy_ledger_.neighbouring == "replace_special"  # the paper's zero record
    seq = DPCoordinateDescentRegressor(solver="seq_dp_scd", penalty="l2", alpha=0.1,
                                       batch_size=50, passes=3, random_state=0).fit(X, y)
    assert seq.privacy_ledger_.mechanisms[0].sampling == "poisson"  # at L_max "auto"
    assert seq.privacy_ledger_.neighbouring == "replace_one"
    reg = DPCoordinateDescentRegressor(solver="primal_dp_scd", penalty="l2", alpha=0.1,
                                       batch_size=2, passes=3, random_state=0).fit(X, y)
    assert reg.privacy_ledger_.mechanisms[0].sampling == "none"
    assert reg.privacy_ledger_.neighbouring == "replace_one"


def test_hinge_classifier(data):
    X, _, labels = data
    clf = DPCoordinateDescentClassifier(solver="dp_scd", loss="hinge", epsilon=1e5,
                                        clip=2.0, batch_size=100, passes=30, alpha=0.2,
                                        fit_intercept=False, random_state=0).fit(X, labels)
    assert clf.score(X, labels) > 0.95
    assert not hasattr(clf, "predict_proba")
    with pytest.raises(ValueError, match="hinge.*not smooth"):
        DPCoordinateDescentClassifier(solver="dp_cd", loss="hinge").fit(X, labels)
    with pytest.raises(ValueError, match="loss"):
        DPCoordinateDescentClassifier(solver="dp_scd", loss="squared").fit(X, labels)


@pytest.mark.parametrize("params, match", [
    ({"penalty": "l1"}, "penalty must be 'l2'"),
    ({"alpha": 0.0, "penalty": "l2"}, "alpha must be > 0"),
    ({"batch_size": 501, "penalty": "l2"}, "batch_size must be <= n_samples"),
    ({"normalize_rows": "yes", "penalty": "l2"}, "normalize_rows"),
])
def test_bad_parameters(data, params, match):
    X, y, _ = data
    with pytest.raises(ValueError, match=match):
        DPCoordinateDescentRegressor(solver="dp_scd", **params).fit(X, y)


def test_rows_above_unit_norm_refused_without_normalisation(data):
    X, y, _ = data
    with pytest.raises(ValueError, match="row [0-9]+ of X has l2 norm"):
        DPCoordinateDescentRegressor(solver="dp_scd", penalty="l2", normalize_rows=False,
                                     batch_size=10).fit(X, y)
    Xu = _unit(X)
    a = DPCoordinateDescentRegressor(solver="dp_scd", penalty="l2", normalize_rows=False,
                                     batch_size=10, fit_intercept=False,
                                     random_state=3).fit(Xu, y)
    b = DPCoordinateDescentRegressor(solver="dp_scd", penalty="l2", batch_size=10,
                                     fit_intercept=False, random_state=3).fit(X, y)
    # unit rows in, same fit either way (up to the rounding of the normalisation)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-9)
