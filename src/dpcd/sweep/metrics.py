"""Held-out utility and support of a sweep's final iterates (the metrics
themselves and their direction: :mod:`dpcd.problems.metrics`)."""

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


def seed_holdout(problem_of, finals):
    """:func:`holdout_metrics` of each seed's final iterate on that seed's
    problem (``problem_of``: :class:`dpcd.sweep.problem.SeedProblems`)."""
    if not problem_of.per_seed:
        return holdout_metrics(problem_of.problem, finals)
    parts = [holdout_metrics(problem_of(k), [w]) for k, w in enumerate(finals)]
    return {"metric": parts[0]["metric"],
            **{name: np.concatenate([part[name] for part in parts]) for name in ("val", "test")}}


def support_counts(w, w_star):
    """Coordinates of ``w`` correctly / incorrectly non-zero w.r.t. ``w_star``
    (DP-GCD Table 3): ``(|supp w ∩ supp w*|, |supp w minus supp w*|)``."""
    nonzero, true = np.asarray(w) != 0, np.asarray(w_star) != 0
    return int(np.sum(nonzero & true)), int(np.sum(nonzero & ~true))


def final_metrics(problem_of, finals, w_star=None):
    """What the tables report of one configuration's final iterates (one per
    seed): :func:`seed_holdout`, and :func:`support_counts` per seed as an
    array of shape (n_seeds, 2), None without ``w_star``."""
    counts = None
    if w_star is not None:
        counts = np.asarray([support_counts(w, w_star) for w in finals],
                            dtype=np.float64).reshape(-1, 2)
    return seed_holdout(problem_of, finals), counts
