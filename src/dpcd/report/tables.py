"""Select the best configuration per solver and passes, as the papers do, and tabulate.

Selection (DP-CD App. G.1): for each (solver, epsilon, passes), keep the
hyperparameters with the lowest objective at the last iterate averaged over
seeds. This selection looks at the private data without noise, so tables
carry the tag ``hyperparameter_selection`` among their non-private inputs.
"""

import numpy as np
import pandas as pd

from dpcd.sweep.adapters import HYPERPARAMETERS

GROUP = ["solver", "epsilon", "passes"]


def final_iterates(runs):
    """Rows at the last pass of each run (float-safe: fractional passes such as 0.001)."""
    passes = runs["passes"].to_numpy(dtype=np.float64)
    return runs[np.isclose(runs["pass"].to_numpy(dtype=np.float64), passes, rtol=1e-9, atol=0.0)]


def best_configurations(runs):
    """Return, per (solver, epsilon, passes), the best configuration's id.

    Parameters
    ----------
    runs : pandas.DataFrame
        Tidy table of the solve stage (one row per configuration, seed, pass).

    Returns
    -------
    pandas.DataFrame
        Columns ``solver, epsilon, passes, config_id, mean_objective``.
    """
    last = final_iterates(runs)
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


def summary_table(runs):
    """Mean and std over seeds of the best configurations' last iterates.

    Returns
    -------
    pandas.DataFrame
        One row per (solver, epsilon, passes): the selected hyperparameters,
        relative error and running time (mean, std), seeds and status.
    """
    best = best_configurations(runs)
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
        delta=("delta", "first"),
        n_seeds=("seed", "nunique"),
        status=("status", "first"),
        # Final iterate's support against w* (DP-GCD Table 3), mean over seeds.
        nnz_correct=("nnz_correct", "mean"),
        nnz_incorrect=("nnz_incorrect", "mean"),
    )
    hyper = last.groupby("config_id")[list(HYPERPARAMETERS)].first().reset_index()
    table = aggregated.merge(hyper, on="config_id")
    columns = GROUP + list(HYPERPARAMETERS) + [
        "rel_error_mean", "rel_error_std", "time_mean", "time_std",
        "epsilon_achieved", "delta", "n_seeds", "status", "config_id",
        "nnz_correct", "nnz_incorrect",
    ]
    table = table[columns].dropna(axis="columns", how="all")
    return table.sort_values(GROUP).reset_index(drop=True)


def _cell(mean, std):
    return f"{mean:.4f} ± {0.0 if pd.isna(std) else std:.0e}"


def pivot_markdown(table, value, std, star, keys=("solver", "epsilon"), paper=False):
    """Rows ``keys`` x passes columns of 'mean ± std'.

    ``star`` marks each row's lowest value; ``paper`` appends the
    ``paper_<value>`` cell in parentheses where one is given.
    """
    keys = list(keys)
    passes = sorted(table["passes"].unique())
    lines = [
        "| " + " | ".join(keys) + " | " + " | ".join(f"{k:g} passes" for k in passes) + " |",
        "|" + "---|" * (len(passes) + len(keys)),
    ]
    for key, group in table.groupby(keys, sort=True):
        rows = group.set_index("passes")
        best = rows[value].idxmin() if star and rows[value].notna().any() else None
        cells = []
        for k in passes:
            if k not in rows.index:
                cells.append("")
                continue
            row = rows.loc[k]
            cell = _cell(row[value], row[std]) + ("*" if k == best else "")
            if paper and not pd.isna(row.get(f"paper_{value}", np.nan)):
                cell += f" ({_cell(row[f'paper_{value}'], row[f'paper_{std}'])})"
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
        "best hyperparameters per cell; * marks the lowest error of each row.",
        "",
        pivot_markdown(table, "rel_error_mean", "rel_error_std", star=True),
        "",
        "Running time in the solver kernels (seconds), same configurations.",
        "",
        pivot_markdown(table, "time_mean", "time_std", star=False),
        "",
        "Selected hyperparameters:",
        "",
        table.to_markdown(index=False, floatfmt=".4g"),
        "",
        "Non-private inputs (computed from the data without noise, not in the "
        f"budget): {', '.join(sorted(nonprivate_inputs)) or 'none'}.",
        "",
    ]
    return "\n".join(parts)
