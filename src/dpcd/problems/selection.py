"""The papers' selection rule on what a sweep ran: per (solver, epsilon,
passes), the best configuration by ``select_by``.

* ``last_objective`` (DP-CD App. G.1): the hyperparameters with the lowest
  training objective at the last iterate averaged over seeds;
* ``validation`` (DP-SCD App. E): the hyperparameters with the best median
  validation metric of the final iterates over seeds (lowest MSE, highest
  accuracy).

The tables (:mod:`dpcd.report.tables`) and the staged search's selects
(:func:`dpcd.sweep.staged.keep_best`) both rank by it.
"""

import numpy as np

from dpcd.problems.metrics import HIGHER_IS_BETTER

SELECT_BY = ("last_objective", "validation")

GROUP = ["solver", "epsilon", "passes"]


def final_iterates(runs):
    """Rows at the last pass of each run (float-safe: fractional passes such as 0.001)."""
    passes = runs["passes"].to_numpy(dtype=np.float64)
    return runs[np.isclose(runs["pass"].to_numpy(dtype=np.float64), passes, rtol=1e-9, atol=0.0)]


def last_checkpoints(runs):
    """Each run's row at its last checkpoint (robust to fractional passes, and
    to a table concatenated without a fresh index: the rows are taken by position)."""
    key = ["solver", "config_id", "seed_index"]
    at = runs.reset_index(drop=True).groupby(key, dropna=False)["pass"].idxmax()
    return runs.iloc[at.to_numpy()]


def best_configurations(runs, select_by="last_objective", prefix=False):
    """Return, per (solver, epsilon, passes), the best configuration's id.

    Parameters
    ----------
    runs : pandas.DataFrame
        Tidy table of the solve stage (one row per configuration, seed, pass).
    select_by : {"last_objective", "validation"}
        Selection rule (see the module docstring).
    prefix : bool, default=False
        The runs stop before their passes (the staged search's multi-fidelity
        screen): rank them at their last checkpoint.

    Returns
    -------
    pandas.DataFrame
        Columns ``solver, epsilon, passes, config_id`` and the criterion
        (``mean_objective`` or ``val_metric_median``).
    """
    if select_by not in SELECT_BY:
        raise ValueError(f"unknown select_by {select_by!r}; known: {list(SELECT_BY)}")
    if select_by == "validation":
        return _best_on_validation(runs)
    last = last_checkpoints(runs) if prefix else final_iterates(runs)
    means = (
        last.groupby(GROUP + ["config_id"], dropna=False)["objective"]
        .mean()
        .replace([np.inf, -np.inf, np.nan], np.inf)
        .rename("mean_objective")
        .reset_index()
    )
    # Ties are broken by config_id so the choice is the same on every machine.
    means = means.sort_values(GROUP + ["mean_objective", "config_id"])
    return means.groupby(GROUP, as_index=False).first()


def _best_on_validation(runs):
    if "val_metric" not in runs or runs["val_metric"].isna().all():
        raise ValueError(
            "select_by: validation needs validation metrics; the processed data has "
            "no validation split (use a variant with one, e.g. maxabs_unitnorm)"
        )
    last = last_checkpoints(runs)
    metrics = last["metric"].dropna().unique()
    if len(metrics) != 1:
        raise ValueError(f"one held-out metric per experiment expected, got {list(metrics)}")
    higher = HIGHER_IS_BETTER[metrics[0]]
    medians = (
        last.groupby(GROUP + ["config_id"], dropna=False)["val_metric"]
        .median()
        .rename("val_metric_median")
        .reset_index()
    )
    # A diverged run (NaN) is never selected; ties broken by config_id.
    criterion = -medians["val_metric_median"] if higher else medians["val_metric_median"]
    medians["_key"] = criterion.fillna(np.inf)
    medians = medians.sort_values(GROUP + ["_key", "config_id"])
    return medians.groupby(GROUP, as_index=False).first().drop(columns="_key")
