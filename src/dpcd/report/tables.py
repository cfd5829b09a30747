"""Select the best configuration per solver and passes, as the papers do, and tabulate.

Selection, per (solver, epsilon, passes), by ``select_by``:

* ``last_objective`` (DP-CD App. G.1): the hyperparameters with the lowest
  training objective at the last iterate averaged over seeds;
* ``validation`` (DP-SCD App. E): the hyperparameters with the best median
  validation metric of the final iterates over seeds (lowest MSE, highest
  accuracy); the reported utility is then the median test metric.

Either selection looks at the private data without noise, so tables carry the
tag ``hyperparameter_selection`` among their non-private inputs.
"""

import numpy as np
import pandas as pd

from dpcd.algorithms import table_hyperparameters
from dpcd.problems.selection import (  # noqa: F401 (the tables' selection, read from here too)
    GROUP,
    SELECT_BY,
    best_configurations,
    final_iterates,
    last_checkpoints,
)

# The neighbouring relation of each cell's guarantee (docs/method/neighbouring.md):
# a column of every table, so that two cells "at epsilon = 1" are seen to be
# comparable only when it agrees. Tables written before it was recorded say so.
RELATION = "neighbouring"
UNRECORDED = "unrecorded"


def with_relation(table):
    """``table`` with a ``neighbouring`` column (``"unrecorded"`` when it had none)."""
    return table if RELATION in table else table.assign(**{RELATION: UNRECORDED})


def row_keys(table, keys):
    """Row labels of a markdown pivot: ``keys`` with the relation after the solver."""
    keys = list(keys)
    if RELATION in table and RELATION not in keys and "solver" in keys:
        keys.insert(keys.index("solver") + 1, RELATION)
    return keys


def summary_table(runs, select_by="last_objective"):
    """Mean and std over seeds of the best configurations' last iterates.

    Returns
    -------
    pandas.DataFrame
        One row per (solver, epsilon, passes): the selected hyperparameters,
        relative error and running time (mean, std), seeds, status and
        ``n_configs`` (configurations tuned for the cell: the tuning cost).
        With held-out metrics: ``metric`` and the median over seeds of the
        validation and test metrics (``val_metric_median``,
        ``test_metric_median``) with the test metric's quartiles.
    """
    runs = with_relation(runs)
    best = best_configurations(runs, select_by)
    last = final_iterates(runs).merge(best[GROUP + ["config_id"]], on=GROUP + ["config_id"])
    for name in ("nnz_correct", "nnz_incorrect"):  # tables written before Table 3
        if name not in last:
            last = last.assign(**{name: np.nan})
    aggregated = last.groupby(GROUP + ["config_id"], as_index=False).agg(
        rel_error_mean=("rel_error", "mean"),
        rel_error_std=("rel_error", "std"),
        time_mean=("time", "mean"),
        time_std=("time", "std"),
        epsilon_achieved=("epsilon_achieved", "max"),
        neighbouring=(RELATION, "first"),
        delta=("delta", "first"),
        n_seeds=("seed", "nunique"),
        status=("status", "first"),
        # Final iterate's support against w* (DP-GCD Table 3), mean over seeds.
        nnz_correct=("nnz_correct", "mean"),
        nnz_incorrect=("nnz_incorrect", "mean"),
    )
    hyperparameters = [name for name in table_hyperparameters() if name in last]
    hyper = last.groupby("config_id")[hyperparameters].first().reset_index()
    table = aggregated.merge(hyper, on="config_id")
    counts = runs.groupby(GROUP)["config_id"].nunique().rename("n_configs").reset_index()
    table = table.merge(counts, on=GROUP)
    holdout = []
    if "val_metric" in runs and runs["val_metric"].notna().any():
        chosen = last_checkpoints(runs).merge(best[GROUP + ["config_id"]], on=GROUP + ["config_id"])
        stats = chosen.groupby(GROUP + ["config_id"], as_index=False).agg(
            metric=("metric", "first"),
            val_metric_median=("val_metric", "median"),
            test_metric_median=("test_metric", "median"),
            test_metric_q25=("test_metric", lambda v: v.quantile(0.25)),
            test_metric_q75=("test_metric", lambda v: v.quantile(0.75)),
        )
        table = table.merge(stats, on=GROUP + ["config_id"])
        holdout = ["metric", "val_metric_median", "test_metric_median",
                   "test_metric_q25", "test_metric_q75"]
    columns = GROUP + hyperparameters + [
        "rel_error_mean", "rel_error_std", *holdout, "time_mean", "time_std",
        "epsilon_achieved", RELATION, "delta", "n_seeds", "n_configs", "status", "config_id",
        "nnz_correct", "nnz_incorrect",
    ]
    table = table[columns].dropna(axis="columns", how="all")
    return table.sort_values(GROUP).reset_index(drop=True)


def _cell(mean, std):
    return f"{mean:.4f} ± {0.0 if pd.isna(std) else std:.0e}"


def passes_header(keys, passes):
    """The two header lines of a markdown table: ``keys``, then one column per passes budget."""
    return [
        "| " + " | ".join(keys) + " | " + " | ".join(f"{k:g} passes" for k in passes) + " |",
        "|" + "---|" * (len(passes) + len(keys)),
    ]


def pivot_markdown(table, value, std, star, keys=("solver", "epsilon"), paper=False):
    """Rows ``keys`` x passes columns of 'mean ± std'.

    ``star`` marks each row's lowest value; ``paper`` appends the
    ``paper_<value>`` cell in parentheses where one is given.
    """
    keys = row_keys(table, keys)
    passes = sorted(table["passes"].unique())
    lines = passes_header(keys, passes)
    for key, group in table.groupby(keys, sort=True):
        rows = group.set_index("passes")
        best = rows[value].idxmin() if star and rows[value].notna().any() else None
        cells = []
        for k in passes:
            if k not in rows.index:
                cells.append("")
                continue
            row = rows.loc[k]
            # one seed: no std column (an all-NaN column is dropped from the table)
            cell = _cell(row[value], row.get(std)) + ("*" if k == best else "")
            if paper and not pd.isna(row.get(f"paper_{value}", np.nan)):
                cell += f" ({_cell(row[f'paper_{value}'], row.get(f'paper_{std}'))})"
            cells.append(cell)
        labels = [f"{part:g}" if isinstance(part, float) else str(part) for part in key]
        lines.append("| " + " | ".join(labels + cells) + " |")
    return "\n".join(lines)


def markdown_table(table, experiment, nonprivate_inputs=()):
    """Markdown report: relative error and running time per passes, then the choices."""
    parts = [
        f"# {experiment}",
        "",
        "Relative error (F(w) - F*) / F* at the last iterate, mean ± std over seeds, "
        "best hyperparameters per cell; * marks the lowest error of each row. "
        "`neighbouring`: the relation each row's epsilon holds under.",
        "",
        pivot_markdown(table, "rel_error_mean", "rel_error_std", star=True),
        "",
        "Running time in the solver kernels (seconds), same configurations."
        + (" DP-SGD runs all configurations of a seed in one kernel call, so its "
           "times here are amortised shares of that call; results/summary.md "
           "reports runs timed alone (the fresh seeds)."
           if (table["solver"] == "dp_sgd").any() else ""),
        "",
        pivot_markdown(table, "time_mean", "time_std", star=False),
        "",
        *_holdout_markdown(table),
        "Selected hyperparameters:",
        "",
        table.to_markdown(index=False, floatfmt=".4g"),
        "",
        "Non-private inputs (computed from the data without noise, not in the "
        f"budget): {', '.join(sorted(nonprivate_inputs)) or 'none'}.",
        "",
    ]
    return "\n".join(parts)


def _holdout_markdown(table):
    """Median test metric of the selected configurations, one row per solver and epsilon."""
    if "test_metric_median" not in table:
        return []
    metric = table["metric"].iloc[0]
    wide = table.pivot_table(index=row_keys(table, ["solver", "epsilon"]), columns="passes",
                             values="test_metric_median").reset_index()
    wide.columns = [f"{c} passes" if isinstance(c, (int, np.integer)) else c
                    for c in wide.columns]
    return [
        f"Test {metric} of the final iterate, median over seeds, configuration "
        f"selected on the validation set ({'highest' if metric == 'accuracy' else 'lowest'} "
        "median validation value).",
        "",
        wide.to_markdown(index=False, floatfmt=".4g"),
        "",
    ]


def read_table(path):
    """A selection (or fresh) table; config ids stay strings (an all-digit
    id such as 123456789012, or 12e456789012, would otherwise parse as a number)."""
    return pd.read_csv(path, dtype={"config_id": str})
