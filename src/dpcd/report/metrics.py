"""The numbers the MLflow parent runs get: an experiment's, and the summary's.

Plain dicts of metric name -> value, computed from the tables the report
writes; :mod:`dpcd.tracking` logs them.
"""

import numpy as np


def nonprivate_inputs(runs):
    """Every non-private input of a sweep's runs (column ``nonprivate_inputs``),
    sorted, with ``hyperparameter_selection``: selecting hyperparameters on the
    private data is itself not private, unless every run is the release of a
    private search (``role`` released: its selection is inside its ε)."""
    private = "role" in runs and len(runs) and runs["role"].eq("released").all()
    names = set() if private else {"hyperparameter_selection"}
    for value in runs["nonprivate_inputs"].dropna().unique():
        names.update(filter(None, value.split(",")))
    return sorted(names)


def experiment_metrics(table, w_star):
    """An experiment's parent-run metrics from its selection table
    (:func:`dpcd.report.tables.summary_table`) and non-private solution.

    ``best_rel_error.<solver>``: the solver's lowest mean relative error over
    its cells; ``test_<metric>.<solver>.eps<epsilon>``: the largest passes
    budget's median test metric (validation experiments); ``w_star_nnz`` and
    ``w_star_alpha_5``: the sparsity of ``w_star`` (DP-GCD Figure 2, Table 3).
    """
    from dpcd.report.figures import quasi_sparsity_alpha  # seaborn: not for nonprivate_inputs

    best = table.loc[table.groupby("solver")["rel_error_mean"].idxmin()]
    metrics = {f"best_rel_error.{row.solver}": row.rel_error_mean for row in best.itertuples()}
    if "test_metric_median" in table:
        last = table.sort_values("passes").groupby(["solver", "epsilon"]).last().reset_index()
        for row in last.itertuples():
            metrics[f"test_{row.metric}.{row.solver}.eps{row.epsilon:g}"] = row.test_metric_median
    metrics["w_star_nnz"] = int(np.count_nonzero(w_star))
    metrics["w_star_alpha_5"] = quasi_sparsity_alpha(w_star, 5)
    return metrics


def summary_metrics(table, published, overhead, ingests):
    """The summary run's metrics.

    Parameters
    ----------
    table : pandas.DataFrame
        The summary table (:func:`dpcd.report.summary.compare`).
    published : pandas.DataFrame or None
        The published cells it was compared with.
    overhead : pandas.DataFrame
        :func:`dpcd.report.summary.solve_overhead` of the solve jobs.
    ingests : list of dict
        The aggregate jobs' MLflow ingestions (``seconds`` each).
    """
    metrics = {}
    if published is not None:
        metrics["cells_off_by_2x"] = int(table["differs"].fillna(False).sum())
        metrics["cells_compared"] = int(table["paper_rel_error_mean"].notna().sum())
    if "fresh_rel_error_mean" in table:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (table["fresh_rel_error_mean"] / table["rel_error_mean"]).replace(
                [np.inf, -np.inf], np.nan).dropna()
        if len(ratio):
            metrics["fresh_over_selected_rel_error_median"] = float(ratio.median())
    if not overhead.empty:
        metrics["kernel_share_of_solve_time"] = float(overhead.attrs["kernel_share"])
    if ingests:
        metrics["mlflow_ingest_seconds"] = sum(i["seconds"] for i in ingests)
    return metrics
