"""The estimators as a practitioner meets them (issue 31).

Compiled kernels are loaded from numba's cache by every later process.
"""
import os
import subprocess
import sys

# Fits of every estimator on the default path (DP-CD, exact or private
# smoothness), classifier and regressor, dense and sparse X, with and without
# an intercept: the kernels a practitioner's first fit loads.
_FITS = """
import warnings
import numpy as np, scipy.sparse as sp
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 4))
Xs = sp.csr_matrix(np.where(rng.random((60, 4)) < 0.5, X, 0.0))
Xs[0, :] = 1.0  # no empty column
y = (X[:, 0] > 0).astype(int)
for solver in ("dp_cd", "dp_cd_p"):
    for design in (X, Xs):
        for intercept in (False, True):
            kw = dict(solver=solver, fit_intercept=intercept, passes=2, random_state=0)
            DPCoordinateDescentClassifier(**kw).fit(design, y)
            DPCoordinateDescentRegressor(**kw).fit(design, X[:, 1])
"""


def test_estimator_fits_compile_nothing_after_warmup(tmp_path):
    """After ``dpcd warmup --families dp_cd`` (the documented step after
    installing), a fresh process's first fits write nothing to numba's cache:
    every kernel they call is loaded, none compiled (fails when a kernel the
    estimators reach is not ``cache=True`` or is called with argument types
    the warm-up did not compile)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-m", "dpcd.cli", "warmup", "--families", "dp_cd",
                    "--out", str(tmp_path / "warm.json")], env=env, check=True,
                   capture_output=True)

    def cache_files():
        return {(p.name, p.stat().st_mtime_ns) for p in (tmp_path / "cache").rglob("*")}

    compiled = cache_files()
    assert any(name.endswith(".nbi") for name, _ in compiled)
    subprocess.run([sys.executable, "-c", _FITS], env=env, check=True, capture_output=True)
    assert cache_files() == compiled


# ------------------------------------------------- private bound (no public one)
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dpcd.privacy.bounds import GRID, bound_probabilities, private_feature_bound  # noqa: E402


@pytest.mark.parametrize("relation", ["replace_one", "add_or_remove_one"])
def test_private_bound_is_epsilon_dp_on_neighbours(relation):
    """Every output's probability moves by at most e^eps between neighbouring
    datasets (the definition, checked exactly over the whole grid), for
    extreme replacements (a record moved to the grid's ends) and random ones."""
    rng = np.random.default_rng(0)
    eps = 0.7
    for _ in range(40):
        n = int(rng.integers(2, 60))
        rows = np.exp(rng.normal(0, 3, n))
        if relation == "replace_one":
            other = rows.copy()
            other[rng.integers(n)] = rng.choice([1e-9, 1e9, np.exp(rng.normal(0, 3))])
        else:
            other = rows[np.arange(n) != rng.integers(n)]
        for q in (0.5, 0.95):
            p = bound_probabilities(rows, eps, q, relation)
            p2 = bound_probabilities(other, eps, q, relation)
            assert np.all(np.log(p) - np.log(p2) <= eps + 1e-9)
            assert np.all(np.log(p2) - np.log(p) <= eps + 1e-9)


def test_private_bound_near_twice_the_median_and_ledger():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5000, 3))
    b, ledger = private_feature_bound(X, 10.0, rng)
    truth = np.quantile(np.abs(X).max(axis=1), 0.5)
    assert b / 2 in GRID and abs(np.log(b / 2 / truth)) < 0.3
    assert ledger.epsilon_achieved == 10.0 and ledger.delta == 0.0
    assert ledger.budget[0].group == "bounds" and not ledger.nonprivate_inputs


# ---------------------------------------------------------- private by default
import warnings  # noqa: E402

import scipy.sparse as sp  # noqa: E402
from sklearn.linear_model import ElasticNet, Ridge  # noqa: E402

from dpcd import PrivacyLeakWarning  # noqa: E402
from dpcd.estimators import (  # noqa: E402
    SCD_SOLVERS,
    SOLVERS,
    DPCoordinateDescentClassifier,
    DPCoordinateDescentRegressor,
)


def _data(seed=0, n=400, p=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X @ np.linspace(1.0, -1.0, p) + 0.3 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("sparse", [False, True])
def test_default_fit_is_private_and_silent(sparse):
    """Default arguments: no PrivacyLeakWarning, no non-private input, and a
    ledger whose lines (bound, smoothness, optimisation) add up to epsilon."""
    X, y = _data(n=2000)
    design = sp.csr_matrix(np.where(np.abs(X) > 0.3, X, 0.0)) if sparse else X
    labels = (y > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        reg = DPCoordinateDescentRegressor(random_state=0).fit(design, y)
        clf = DPCoordinateDescentClassifier(random_state=0).fit(design, labels)
        bool_clf = DPCoordinateDescentClassifier(random_state=0).fit(design, labels > 0)
    for model in (reg, clf, bool_clf):
        ledger = model.privacy_ledger_
        assert ledger.nonprivate_inputs == ()
        assert [b.group for b in ledger.budget] == ["bounds", "smoothness", "optimisation"]
        assert sum(b.epsilon_target for b in ledger.budget) == pytest.approx(1.0)
        assert ledger.epsilon_achieved <= 1.0 + 1e-9
    assert list(bool_clf.classes_) == [False, True]
    assert clf.score(design, labels) > 0.8 and reg.score(design, y) > 0.8


@pytest.mark.parametrize("kwargs, names", [
    ({"solver": "dp_cd"}, ["exact_smoothness"]),
    ({"solver": "dp_gcd"}, ["exact_smoothness"]),
    ({"solver": "dp_sgd", "batch_size": 10}, ["global_smoothness"]),
])
def test_exact_constants_warn_naming_each(kwargs, names):
    X, y = _data()
    labels = np.where(y > 0, "yes", "no")  # no public convention: label_set too
    with pytest.warns(PrivacyLeakWarning) as record:
        model = DPCoordinateDescentClassifier(random_state=0, **kwargs).fit(X, labels)
    (message,) = [str(w.message) for w in record if w.category is PrivacyLeakWarning]
    for name in names + ["label_set"]:
        assert name in message
    assert set(model.privacy_ledger_.nonprivate_inputs) == {*names, "label_set"}
    with warnings.catch_warnings():  # stated classes are public
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPCoordinateDescentClassifier(classes=["no", "yes"], random_state=0).fit(X, labels)


@pytest.mark.parametrize("solver", SOLVERS)
def test_all_zero_columns_accepted_without_naming_them(solver):
    X, y = _data()
    X[:, [1, 3]] = 0.0
    kw = {"solver": solver, "random_state": 0}
    if solver in SCD_SOLVERS:
        kw.update(batch_size=4)
    for est, target in ((DPCoordinateDescentRegressor, y),
                        (DPCoordinateDescentClassifier, (y > 0).astype(int))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            model = est(**kw).fit(X, target)
        assert np.all(np.isfinite(model.coef_))
    # a public bound gives the empty columns their constant (dp_cd_p)
    if solver == "dp_cd_p":
        model = DPCoordinateDescentRegressor(bounds=4.0, **kw).fit(X, y)
        assert model.privacy_ledger_.nonprivate_inputs == ()


def test_alpha_on_scikit_learns_scale():
    """At a huge epsilon (noise negligible, thresholds not binding) the
    regressor's alpha is Lasso's and ElasticNet's, and Ridge(alpha=a) is
    alpha = a / n_samples; the classifier's is LogisticRegression's 1/(n C)
    (tests/test_estimators.py)."""
    X, y = _data(n=1000)
    n = X.shape[0]
    # (the intercept is a penalised constant feature, sklearn's is not: left out)
    common = dict(epsilon=1e6, passes=60, clip=20.0, random_state=0, bounds=6.0,
                  fit_intercept=False)
    for penalty, alpha, ref in (
        ("l2", 0.05, Ridge(alpha=0.05 * n, fit_intercept=False)),
        ("elastic_net", 0.05, ElasticNet(alpha=0.05, l1_ratio=0.5, tol=1e-12,
                                         fit_intercept=False)),
    ):
        model = DPCoordinateDescentRegressor(penalty=penalty, alpha=alpha, **common)
        model.fit(X, y)
        ref.fit(X, y)
        np.testing.assert_allclose(model.coef_, ref.coef_, atol=5e-3)
