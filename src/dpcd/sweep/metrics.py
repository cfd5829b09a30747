"""Held-out utility of a sweep's final iterates (the metrics themselves and
their direction: :mod:`dpcd.problems.metrics`)."""

import numpy as np

from dpcd.problems.metrics import evaluate, metric_of


def holdout_metrics(problem, ws):
    """Validation and test metric of each final iterate in ``ws``.

    Returns
    -------
    dict or None
        ``{"metric", "val", "test"}`` (arrays of ``len(ws)``, NaN where the
        split is absent), or None when the problem has no held-out data.
    """
    if problem.X_val is None and problem.X_test is None:
        return None
    metric = metric_of(problem.loss)

    def values(X, y):
        if X is None:
            return np.full(len(ws), np.nan)
        return np.array([evaluate(metric, X, y, w) for w in ws])

    return {
        "metric": metric,
        "val": values(problem.X_val, problem.y_val),
        "test": values(problem.X_test, problem.y_test),
    }
