"""Regularisation sensitivity: each solver's best relative error against lambda.

An experiment with an ``alpha_grid`` runs again at each strength as
``<name>_lam<k>`` (``dpcd.plan.expand_lambda_grids``). Per experiment of such a group
(the base included, at its own alpha) and per solver and epsilon, the cell
with the lowest relative error on the selection seeds (passes tuned like the
other hyperparameters) gives the row; its fresh-seed error sits beside it when
the fresh re-evaluation ran. The papers never state lambda, while which
solver wins can change with it.
"""

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from dpcd.report.fresh import pair_cell  # noqa: E402

COLUMNS = ["experiment", "run", "alpha", "lambda_max", "lambda_fraction", "solver",
           "neighbouring", "epsilon", "passes", "rel_error_mean", "fresh_rel_error_mean"]


def lambda_table(groups, tables, references, fresh=None):
    """Best relative error per (experiment, lambda, solver, epsilon).

    Parameters
    ----------
    groups : dict
        ``{run name: {"base": experiment, ...}}`` of the experiments an
        ``alpha_grid`` added; a table not in ``groups`` is a base itself.
    tables : dict
        ``{run name: selection table}`` (``results/tables/<run>.csv``).
    references : dict
        ``{run name: reference JSON}`` with the ``alpha`` used and ``lambda_max``.
    fresh : dict, optional
        ``{run name: fresh table}`` (``results/tables/fresh/<run>.csv``).

    Returns
    -------
    pandas.DataFrame
        Columns ``experiment`` (the base), ``run``, ``alpha``, ``lambda_max``,
        ``lambda_fraction`` (alpha / lambda_max), ``solver``, ``neighbouring``, ``epsilon``,
        ``passes`` (of the best cell), ``rel_error_mean`` (on its selection
        seeds) and ``fresh_rel_error_mean`` (NaN without fresh runs), sorted by
        experiment, solver, epsilon and alpha.
    """
    rows = []
    for run, table in tables.items():
        if fresh and run in fresh:
            table = fresh[run]
        ok = table[table["rel_error_mean"].notna()]
        best = ok.loc[ok.groupby(["solver", "epsilon"])["rel_error_mean"].idxmin()]
        ref = references[run]
        for row in best.itertuples():
            rows.append({
                "experiment": groups.get(run, {}).get("base", run),
                "run": run,
                "alpha": float(ref["alpha"]),
                "lambda_max": float(ref["lambda_max"]),
                "lambda_fraction": float(ref["alpha"]) / float(ref["lambda_max"]),
                "solver": row.solver,
                "neighbouring": getattr(row, "neighbouring", "unrecorded"),
                "epsilon": float(row.epsilon),
                "passes": float(row.passes),
                "rel_error_mean": float(row.rel_error_mean),
                "fresh_rel_error_mean": float(getattr(row, "fresh_rel_error_mean", np.nan)),
            })
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values(["experiment", "solver", "epsilon", "alpha"]).reset_index(drop=True)


def lambda_markdown(table):
    """Rows (experiment, epsilon, lambda) x solver columns of 'selected on / fresh'."""
    fresh = table["fresh_rel_error_mean"].notna().any()
    solvers = sorted(table["solver"].unique())
    lines = [
        "| experiment | epsilon | lambda / lambda_max | lambda | "
        + " | ".join(solvers) + " |",
        "|" + "---|" * (4 + len(solvers)),
    ]
    keys = ["experiment", "epsilon", "alpha"]
    for (experiment, epsilon, alpha), group in table.groupby(keys, sort=True):
        rows = group.set_index("solver")
        cells = []
        for solver in solvers:
            if solver not in rows.index:
                cells.append("")
            elif fresh:
                cells.append(pair_cell(rows.loc[solver, "rel_error_mean"],
                                   rows.loc[solver, "fresh_rel_error_mean"], ".4f"))
            else:
                cells.append(f"{rows.loc[solver, 'rel_error_mean']:.4f}")
        fraction = group["lambda_fraction"].iloc[0]
        lines.append(f"| {experiment} | {epsilon:g} | {fraction:.3g} | {alpha:.4g} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_lambda(table, path):
    """Best relative error against lambda / lambda_max, one panel per experiment:
    solid lines on fresh seeds (when present), dashed on the selection seeds."""
    experiments = sorted(table["experiment"].unique())
    fresh = table["fresh_rel_error_mean"].notna().any()
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, len(experiments), figsize=(5 * len(experiments), 4),
                             squeeze=False)
    labels = sorted(set(table["solver"] + " (ε=" + table["epsilon"].map("{:g}".format) + ")"))
    palette = dict(zip(labels, sns.color_palette(n_colors=len(labels))))
    for ax, experiment in zip(axes[0], experiments):
        part = table[table["experiment"] == experiment]
        for (solver, epsilon), group in part.groupby(["solver", "epsilon"]):
            label = f"{solver} (ε={epsilon:g})"
            group = group.sort_values("lambda_fraction")
            x = group["lambda_fraction"]
            if fresh:
                ax.plot(x, group["fresh_rel_error_mean"], marker="o", color=palette[label],
                        label=label + " fresh")
            ax.plot(x, group["rel_error_mean"], marker="x", linestyle="--",
                    color=palette[label], label=label + (" selected on" if fresh else ""))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("lambda / lambda_max")
        ax.set_ylabel("best relative error")
        ax.set_title(experiment)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)
