"""Selected configurations on the seeds they were selected on, and on fresh seeds.

A cell's best-of-grid mean over its selection seeds is biased low (it is the
smallest of many noisy means); its mean over fresh seeds
(:mod:`dpcd.sweep.fresh`) is not. This module puts both side by side:
``rel_error_mean`` ("selected on") beside ``fresh_rel_error_mean`` ("fresh"),
and for experiments selected on a validation set the test metrics.
"""

import numpy as np
import pandas as pd

from dpcd.report.tables import (
    final_iterates,
    last_checkpoints,
    passes_header,
    row_keys,
    with_relation,
)

FRESH_COLUMNS = ["fresh_rel_error_mean", "fresh_rel_error_std", "fresh_n_seeds",
                 "fresh_epsilon_achieved", "fresh_status", "fresh_time_mean", "fresh_time_std"]


def fresh_table(selected, fresh_runs):
    """Each selected cell with its numbers on the fresh seeds.

    Parameters
    ----------
    selected : pandas.DataFrame
        The aggregation's table (one row per solver, epsilon, passes).
    fresh_runs : pandas.DataFrame
        Tidy table of the fresh re-runs (:func:`dpcd.sweep.fresh.run_fresh`).

    Returns
    -------
    pandas.DataFrame
        ``selected`` plus ``fresh_rel_error_mean``, ``fresh_rel_error_std``,
        ``fresh_n_seeds``, ``fresh_epsilon_achieved``, ``fresh_status``,
        ``fresh_time_mean``, ``fresh_time_std`` (each fresh run timed alone),
        ``optimism`` (fresh / selected mean relative error: how much the
        selection seeds flatter the cell) and, with held-out metrics,
        ``fresh_val_metric_median`` and ``fresh_test_metric_median``.
        Cells without fresh runs (a solver absent from ``fresh_runs``) get NaN.
    """
    key = ["solver", "config_id"]
    last = final_iterates(fresh_runs)
    stats = last.groupby(key, as_index=False).agg(
        fresh_rel_error_mean=("rel_error", "mean"),
        fresh_rel_error_std=("rel_error", "std"),
        fresh_n_seeds=("seed", "nunique"),
        fresh_epsilon_achieved=("epsilon_achieved", "max"),
        fresh_status=("status", "first"),
        fresh_time_mean=("time", "mean"),
        fresh_time_std=("time", "std"),
    )
    if "test_metric" in fresh_runs and fresh_runs["test_metric"].notna().any():
        holdout = last_checkpoints(fresh_runs).groupby(key, as_index=False).agg(
            fresh_val_metric_median=("val_metric", "median"),
            fresh_test_metric_median=("test_metric", "median"),
        )
        stats = stats.merge(holdout, on=key)
    table = with_relation(selected).assign(config_id=selected["config_id"].astype(str))
    table = table.merge(stats, on=key, how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        table["optimism"] = table["fresh_rel_error_mean"] / table["rel_error_mean"]
    return table


def chosen_curves(selected, select_by="last_objective"):
    """Per (solver, epsilon) the configuration a figure draws, chosen on the
    selection seeds as :func:`dpcd.report.figures.best_overall` does: the cell
    with the lowest selection error (passes tuned), or with
    ``select_by="validation"`` the largest passes budget."""
    if select_by == "validation":
        pick = selected.sort_values("passes").groupby(["solver", "epsilon"]).tail(1)
    else:
        ok = selected[selected["rel_error_mean"].notna()]
        pick = ok.loc[ok.groupby(["solver", "epsilon"])["rel_error_mean"].idxmin()]
    return pick[["solver", "epsilon", "config_id"]].astype({"config_id": str})


def pair_cell(selected, fresh, fmt):
    """'selected / fresh' (n/a for a missing value; empty when both are)."""
    if pd.isna(selected) and pd.isna(fresh):
        return ""
    text = lambda v: "n/a" if pd.isna(v) else format(v, fmt)  # noqa: E731
    return f"{text(selected)} / {text(fresh)}"


def pair_markdown(table, value, fresh_value, keys=("solver", "epsilon"), fmt=".4f"):
    """Rows ``keys`` (and the relation) x passes columns of 'selected on / fresh'."""
    keys = row_keys(table, keys)
    passes = sorted(table["passes"].unique())
    lines = passes_header(keys, passes)
    for key, group in table.groupby(keys, sort=True):
        rows = group.set_index("passes")
        cells = [pair_cell(rows.loc[k, value], rows.loc[k, fresh_value], fmt)
                 if k in rows.index else "" for k in passes]
        key = key if isinstance(key, tuple) else (key,)
        labels = [f"{part:g}" if isinstance(part, float) else str(part) for part in key]
        lines.append("| " + " | ".join(labels + cells) + " |")
    return "\n".join(lines)


def fresh_markdown(table, experiment, n_fresh):
    """Markdown page: both numbers per cell, then the table with every column."""
    parts = [
        f"# {experiment}: selected configurations on fresh seeds",
        "",
        "Relative error (F(w) - F*) / F* at the last iterate of each cell's "
        "selected configuration, mean over seeds: **selected on** (the seeds the "
        f"configuration was selected on) / **fresh** ({n_fresh} new seeds, never "
        "used for selection). The first is optimistic: it is the smallest of the "
        "grid's noisy means.",
        "",
        pair_markdown(table, "rel_error_mean", "fresh_rel_error_mean"),
        "",
    ]
    if "fresh_test_metric_median" in table:
        metric = table["metric"].iloc[0]
        parts += [
            f"Test {metric} of the final iterate, median over seeds (selection on "
            "the validation set): selected on / fresh.",
            "",
            pair_markdown(table, "test_metric_median", "fresh_test_metric_median", fmt=".4g"),
            "",
        ]
    parts += [
        "Each fresh run is a new private release with its own ledger (MLflow "
        "child runs tagged `dpcd.seed_set=fresh`); its hyperparameters were "
        "selected on the private data (`hyperparameter_selection` among its "
        "non-private inputs).",
        "",
        table.to_markdown(index=False, floatfmt=".4g"),
        "",
    ]
    return "\n".join(parts)


def fresh_metrics(table):
    """MLflow metrics of the parent run: per cell, the selected-on and fresh
    errors, and per solver the fresh error of its best cell (the counterpart of
    the aggregation's ``best_rel_error.<solver>``)."""
    metrics = {}
    for row in table.itertuples():
        cell = f"{row.solver}.eps{row.epsilon:g}.passes{row.passes:g}"
        if np.isfinite(row.fresh_rel_error_mean):
            metrics[f"fresh_rel_error.{cell}"] = row.fresh_rel_error_mean
    ok = table[table["rel_error_mean"].notna()]
    for row in ok.loc[ok.groupby("solver")["rel_error_mean"].idxmin()].itertuples():
        if np.isfinite(row.fresh_rel_error_mean):
            metrics[f"fresh_best_rel_error.{row.solver}"] = row.fresh_rel_error_mean
    if "fresh_test_metric_median" in table:
        for row in table.sort_values("passes").groupby(["solver", "epsilon"]).last().reset_index().itertuples():
            if np.isfinite(row.fresh_test_metric_median):
                metrics[f"fresh_test_{row.metric}.{row.solver}.eps{row.epsilon:g}"] = (
                    row.fresh_test_metric_median)
    return metrics
