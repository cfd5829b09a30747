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
    """Rows at the last pass of each run."""
    return runs[runs["pass"] == runs["passes"]]


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
    aggregated = last.groupby(GROUP + ["config_id"], as_index=False).agg(
        rel_error_mean=("rel_error", "mean"),
        rel_error_std=("rel_error", "std"),
        time_mean=("time", "mean"),
        time_std=("time", "std"),
        epsilon_achieved=("epsilon_achieved", "max"),
        delta=("delta", "first"),
        n_seeds=("seed", "nunique"),
        status=("status", "first"),
    )
    hyper = last.groupby("config_id")[list(HYPERPARAMETERS)].first().reset_index()
    table = aggregated.merge(hyper, on="config_id")
    columns = GROUP + list(HYPERPARAMETERS) + [
        "rel_error_mean", "rel_error_std", "time_mean", "time_std",
        "epsilon_achieved", "delta", "n_seeds", "status", "config_id",
    ]
    table = table[columns].dropna(axis="columns", how="all")
    return table.sort_values(GROUP).reset_index(drop=True)


def _pivot(table, value, std, star):
    """Solver rows x passes columns of 'mean ± std', the row's lowest starred."""
    lines = []
    passes = sorted(table["passes"].unique())
    header = "| solver | epsilon | " + " | ".join(f"{k} passes" for k in passes) + " |"
    lines += [header, "|" + "---|" * (len(passes) + 2)]
    for (solver, epsilon), group in table.groupby(["solver", "epsilon"], sort=True):
        by_passes = group.set_index("passes")
        best = by_passes[value].idxmin() if star and by_passes[value].notna().any() else None
        cells = []
        for k in passes:
            if k not in by_passes.index:
                cells.append("")
                continue
            mean, spread = by_passes.loc[k, value], by_passes.loc[k, std]
            spread = 0.0 if pd.isna(spread) else spread
            cell = f"{mean:.4f} ± {spread:.0e}"
            cells.append(cell + ("*" if k == best else ""))
        lines.append(f"| {solver} | {epsilon:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_table(table, experiment, nonprivate_inputs=()):
    """Markdown report: relative error and running time per passes, then the choices."""
    parts = [
        f"# {experiment}",
        "",
        "Relative error (F(w) - F*) / F* at the last iterate, mean ± std over seeds, "
        "best hyperparameters per cell; * marks the lowest error of each row.",
        "",
        _pivot(table, "rel_error_mean", "rel_error_std", star=True),
        "",
        "Running time in the solver kernels (seconds), same configurations.",
        "",
        _pivot(table, "time_mean", "time_std", star=False),
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
