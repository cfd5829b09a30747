"""One table across experiments (the papers' Tables 2 and 3), next to published values.

Each experiment's aggregation writes its best configuration per (solver,
epsilon, passes); this module stacks them, joins the published cells when a
CSV of them is given (columns ``experiment, solver, passes, rel_error_mean,
rel_error_std, time_mean, time_std``), and checks the comparisons the papers
draw: which solver wins each cell, and where our value and the published one
differ by more than a factor 2.
"""

import numpy as np
import pandas as pd

from dpcd.report.tables import pivot_markdown

KEY = ["experiment", "solver", "passes"]
ROWS = ("experiment", "solver", "epsilon")
VALUES = ["rel_error_mean", "rel_error_std", "time_mean", "time_std"]


def read_published(path):
    """Published cells (``#`` lines are provenance comments)."""
    table = pd.read_csv(path, comment="#")
    missing = set(KEY + VALUES) - set(table.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    if table.duplicated(KEY).any():
        raise ValueError(f"{path}: duplicate (experiment, solver, passes) rows")
    table = table.astype({"passes": np.float64})
    return table[KEY + VALUES]


def stack_experiments(tables):
    """Stack per-experiment tables ({experiment: DataFrame}) into one."""
    frames = [table.assign(experiment=name) for name, table in tables.items()]
    stacked = pd.concat(frames, ignore_index=True)
    # One dtype for the join with the published cells (fractional passes are floats).
    stacked["passes"] = stacked["passes"].astype(np.float64)
    return stacked[KEY + ["epsilon"] + VALUES + ["config_id"]]


def compare(ours, published=None, factor=2.0):
    """Our cells with the published ones beside them.

    Parameters
    ----------
    ours : pandas.DataFrame
        Output of :func:`stack_experiments`.
    published : pandas.DataFrame, optional
        Output of :func:`read_published`.
    factor : float, default=2.0
        Cells whose relative errors differ by more than this factor (either
        way) are flagged in ``differs``.

    Returns
    -------
    pandas.DataFrame
        ``ours`` plus ``paper_*`` columns, ``error_ratio`` (ours / paper) and
        ``speedup`` (paper time / our time) where a published cell exists.
    """
    table = ours.copy()
    if published is None:
        return table
    paper = published.rename(columns={v: f"paper_{v}" for v in VALUES})
    table = table.merge(paper, on=KEY, how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        table["error_ratio"] = table["rel_error_mean"] / table["paper_rel_error_mean"]
        table["speedup"] = table["paper_time_mean"] / table["time_mean"]
    ratio = table["error_ratio"]
    table["differs"] = (ratio > factor) | (ratio < 1.0 / factor)
    return table


def winners(table, solvers=("dp_cd", "dp_sgd")):
    """Per (experiment, epsilon, passes): relative errors of two solvers and which is lower."""
    first, second = solvers
    wide = table.pivot_table(
        index=["experiment", "epsilon", "passes"], columns="solver", values="rel_error_mean"
    )
    if first not in wide or second not in wide:
        return pd.DataFrame()
    out = wide[[first, second]].dropna().reset_index()
    out["winner"] = np.where(out[first] < out[second], first, second)
    return out


def summary_markdown(table, factor=2.0):
    """Tables 2 and 3 across experiments, the solver comparison and the flagged cells."""
    with_paper = "paper_rel_error_mean" in table
    paper_note = " Published values in parentheses." if with_paper else ""
    parts = [
        "# Summary across experiments",
        "",
        "## Relative error (Table 2)",
        "",
        "(F(w) - F*) / F* at the last iterate, mean ± std over seeds, best "
        "configuration per cell; * marks the lowest of each row (ours)." + paper_note,
        "",
        pivot_markdown(table, "rel_error_mean", "rel_error_std", True, ROWS, with_paper),
        "",
        "## Running time (Table 3)",
        "",
        "Seconds per run of the best configuration, mean ± std over seeds." + paper_note,
        "",
        pivot_markdown(table, "time_mean", "time_std", False, ROWS, with_paper),
        "",
    ]
    duel = winners(table)
    if not duel.empty:
        ahead = duel.groupby("experiment")["winner"].agg(lambda w: (w == "dp_cd").mean())
        parts += [
            "## DP-CD against DP-SGD",
            "",
            "Share of the passes budgets where DP-CD's error is lower:",
            "",
            "| experiment | DP-CD ahead |",
            "|---|---|",
            *[f"| {name} | {share:.0%} |" for name, share in ahead.items()],
            "",
        ]
    wide = table.pivot_table(
        index=["experiment", "epsilon", "passes"], columns="solver", values="rel_error_mean"
    )
    if {"dp_cd", "dp_cd_p"} <= set(wide.columns):
        ratio = (wide["dp_cd_p"] / wide["dp_cd"]).dropna().unstack("passes")
        if not ratio.empty:
            parts += [
                "## DP-CD-P against DP-CD",
                "",
                "Relative error of DP-CD-P (private smoothness constants) over "
                "DP-CD's (exact constants), per passes:",
                "",
                ratio.reset_index().to_markdown(index=False, floatfmt=".3g"),
                "",
            ]
    if with_paper:
        flagged = table[table["differs"].fillna(False)]
        parts += [
            f"## Cells more than {factor:g}x away from the published value",
            "",
            "None." if flagged.empty else flagged[
                KEY + ["rel_error_mean", "paper_rel_error_mean", "error_ratio"]
            ].to_markdown(index=False, floatfmt=".4g"),
            "",
        ]
    return "\n".join(parts)
