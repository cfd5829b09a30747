"""Held-out utility of a run's final iterate (DP-SCD App. E, "Performance metrics"),
and which direction is better.

Regression (squares) is measured by the mean squared error of ``X w``;
classification (logistic, hinge) by the accuracy of ``sign(X w)`` on labels in
{-1, +1} (a score of exactly 0 counts as +1). The validation value selects
hyperparameters (``select_by: validation``); the test value is reported.
"""

import numpy as np

# Loss -> metric of its task (a loss not listed has no held-out metric).
METRIC_OF_LOSS = {"squares": "mse", "logistic": "accuracy", "hinge": "accuracy"}
# Metric -> whether a higher value is better (selection, tables and reports read it)
HIGHER_IS_BETTER = {"mse": False, "accuracy": True}


def metric_of(loss):
    """Name of the held-out metric of ``loss`` (``mse`` or ``accuracy``)."""
    try:
        return METRIC_OF_LOSS[loss]
    except KeyError:
        raise ValueError(
            f"no held-out metric for loss {loss!r}; known: {sorted(METRIC_OF_LOSS)}"
        ) from None


def evaluate(metric, X, y, w):
    """Value of ``metric`` for the linear model ``w`` on ``(X, y)``.

    Parameters
    ----------
    metric : {"mse", "accuracy"}
    X : ndarray or sparse matrix, shape (n_samples, n_features)
    y : ndarray, shape (n_samples,)
    w : ndarray, shape (n_features,)

    Returns
    -------
    float
        NaN when ``w`` is not finite (a diverged run has no utility).
    """
    w = np.asarray(w, dtype=np.float64)
    if not np.all(np.isfinite(w)):
        return float("nan")
    score = np.asarray(X @ w).ravel()
    if metric == "mse":
        return float(np.mean((score - y) ** 2))
    if metric == "accuracy":
        return float(np.mean(np.where(score >= 0, 1.0, -1.0) == y))
    raise ValueError(f"unknown metric {metric!r}; known: {sorted(HIGHER_IS_BETTER)}")
