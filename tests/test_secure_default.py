"""Secure by default: a fit with no ``bounds`` and no ``random_state`` runs the
secure mode and its ledger says so, for every solver whose spec has one
(``algorithms.names(secure=True)``: a solver that gains a secure mode is
covered here by its spec alone)."""

import numpy as np
import pytest

from dpcd import algorithms
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
from dpcd.privacy import secure


def _estimator(solver, **kwargs):
    """The regressor where the solver fits squares, else the classifier."""
    losses = algorithms.get(solver).losses
    if "squares" in losses:
        return DPCoordinateDescentRegressor(solver=solver, **kwargs)
    loss = "log_loss" if "logistic" in losses else "hinge"
    return DPCoordinateDescentClassifier(solver=solver, loss=loss, **kwargs)


def _data(solver):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    signal = X @ np.array([1.0, -1.0, 0.5, 0.0])
    if "squares" in algorithms.get(solver).losses:
        return X, signal + 0.3 * rng.standard_normal(300)
    return X, (signal > 0).astype(int)


@pytest.mark.parametrize("solver", algorithms.names(secure=True))
def test_default_fit_is_secure_and_says_so(solver):
    X, y = _data(solver)
    model = _estimator(solver, passes=2).fit(X, y)
    ledger = model.privacy_ledger_
    assert ledger.noise == "secure"
    assert ledger.to_dict()["noise_guarantee"] == secure.GUARANTEES["secure"]
    assert ledger.epsilon_achieved <= ledger.epsilon_target * (1 + 1e-9)
    assert np.all(np.isfinite(model.coef_))
    # a given random_state: the fast mode, reproducible, and its ledger says so
    fast = _estimator(solver, passes=2, random_state=0).fit(X, y).privacy_ledger_
    assert fast.noise == "fast"
    assert "for research, not for release" in fast.to_dict()["noise_guarantee"]
