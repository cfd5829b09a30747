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

from dpcd.report.fresh import pair_cell
from dpcd.report.private import private_markdown  # noqa: F401 (the summary's section)
from dpcd.report.tables import RELATION, pivot_markdown, with_relation

KEY = ["experiment", "solver", "passes"]
ROWS = ("experiment", "solver", "epsilon")
VALUES = ["rel_error_mean", "rel_error_std", "time_mean", "time_std"]
# Optional columns (DP-GCD Tables 3 and 4): support of the final iterate
# against w*, the selected hyperparameters, and the factor that puts a
# published clip in our objective's convention (2 where the paper's least
# squares is half ours: our gradients are twice theirs).
EXTRA = ["nnz_correct", "nnz_incorrect", "step", "clip", "clip_to_ours"]


def read_published(path):
    """Published cells (``#`` lines are provenance comments)."""
    table = pd.read_csv(path, comment="#")
    missing = set(KEY + VALUES) - set(table.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    if table.duplicated(KEY).any():
        raise ValueError(f"{path}: duplicate (experiment, solver, passes) rows")
    table = table.astype({"passes": np.float64})
    return table[KEY + VALUES + [c for c in EXTRA if c in table]]


def stack_experiments(tables):
    """Stack per-experiment tables ({experiment: DataFrame}) into one."""
    frames = [with_relation(table).assign(experiment=name) for name, table in tables.items()]
    stacked = pd.concat(frames, ignore_index=True)
    # One dtype for the join with the published cells (fractional passes are floats).
    stacked["passes"] = stacked["passes"].astype(np.float64)
    # A one-seed table has no std columns (summary_table drops all-NaN columns).
    stacked = stacked.reindex(columns=list(dict.fromkeys([*stacked, *VALUES])))
    return stacked[KEY + ["epsilon", RELATION] + VALUES + ["config_id"]
                   + [c for c in EXTRA if c in stacked]]


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
    paper = published.rename(columns={v: f"paper_{v}" for v in VALUES + EXTRA})
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


def duel_relations(table, experiment, solvers=("dp_cd", "dp_sgd")):
    """The relation both ``solvers`` ran under in ``experiment``, or each one's."""
    table = with_relation(table)
    rows = table[(table["experiment"] == experiment) & table["solver"].isin(solvers)]
    each = {s: ",".join(sorted(rows.loc[rows["solver"] == s, RELATION].astype(str).unique()))
            for s in solvers}
    if len(set(each.values())) == 1:
        return next(iter(each.values()))
    return "; ".join(f"{s}: {r}" for s, r in each.items()) + " (differ)"


def best_per_solver(table):
    """Per (experiment, solver, epsilon): the passes budget with the lowest error
    (passes tuned like the other hyperparameters, DP-GCD Table 4)."""
    ok = table[table["rel_error_mean"].notna()]
    index = ok.groupby(["experiment", "solver", "epsilon"])["rel_error_mean"].idxmin()
    return table.loc[index].reset_index(drop=True)


def _published_row(table, experiment, solver, published=None):
    """The published cell of (experiment, solver), wherever its passes are: from
    ``published`` (:func:`read_published`) when given, so that a cell whose
    passes our grid lacks (the quick configs') still has its published value,
    else from the ``paper_*`` columns :func:`compare` joined."""
    if published is not None:
        rows = published[(published["experiment"] == experiment)
                         & (published["solver"] == solver)]
        rows = rows.rename(columns={v: f"paper_{v}" for v in VALUES + EXTRA})
        return None if rows.empty else rows.iloc[0]
    if "paper_rel_error_mean" not in table:
        return None
    rows = table[(table["experiment"] == experiment) & (table["solver"] == solver)]
    cols = [c for c in rows if c.startswith("paper_")]
    rows = rows[rows[cols].notna().any(axis=1)]
    return None if rows.empty else rows.iloc[0]


def _ratio(ours, paper):
    """``ours / paper`` as text, ``!`` after it when more than 2x away either way."""
    if pd.isna(ours) or pd.isna(paper) or paper == 0:
        return ""
    ratio = ours / paper
    return f"{ratio:.2g}" + (" !" if ratio > 2 or ratio < 0.5 else "")


def support_markdown(table, published=None):
    """DP-GCD Table 3: coordinates correctly / incorrectly non-zero and the
    relative gap of each solver's best configuration, the published cell
    beside it and the ratio of the gaps (ours / published, ``!`` beyond 2x)."""
    if "nnz_correct" not in table or table["nnz_correct"].isna().all():
        return ""
    best = best_per_solver(table)
    best = best[best["nnz_correct"].notna()]
    lines = ["| experiment | solver | correct / incorrect (rel. gap) | published | gap ratio |",
             "|---|---|---|---|---|"]
    for row in best.itertuples():
        paper = _published_row(table, row.experiment, row.solver, published)
        cell, ratio = "", ""
        if paper is not None and not pd.isna(paper.get("paper_nnz_correct", np.nan)):
            cell = (f"{paper['paper_nnz_correct']:g} / {paper['paper_nnz_incorrect']:g} "
                    f"({paper['paper_rel_error_mean']:.2g})")
            ratio = _ratio(row.rel_error_mean, paper["paper_rel_error_mean"])
        lines.append(
            f"| {row.experiment} | {row.solver} | {row.nnz_correct:.3g} / "
            f"{row.nnz_incorrect:.3g} ({row.rel_error_mean:.2g}) | {cell} | {ratio} |"
        )
    return "\n".join(lines)


def _clip_factor(paper):
    """The published row's ``clip_to_ours`` (1 where the CSV has none)."""
    factor = paper.get("paper_clip_to_ours", np.nan)
    return 1.0 if factor is None or pd.isna(factor) else float(factor)


def hyperparameters_markdown(table, published=None):
    """DP-GCD Table 4: each solver's selected passes, clipping threshold and
    step size, published in parentheses, then the ratios ours / published
    (``!`` beyond 2x). A published clip is shown in our objective's
    convention: times its row's ``clip_to_ours`` when the CSV gives one."""
    if not {"step", "clip"} <= set(table):
        return ""
    best = best_per_solver(table)
    lines = ["| experiment | solver | passes | clip | step | ratios passes / clip / step |",
             "|---|---|---|---|---|---|"]
    for row in best.itertuples():
        paper = _published_row(table, row.experiment, row.solver, published)
        cells, ratios = [], []
        for name, value in (("passes", row.passes), ("clip", row.clip), ("step", row.step)):
            cell = "" if pd.isna(value) else f"{value:.3g}"
            ref = None if paper is None else (paper["passes"] if name == "passes" else paper.get(f"paper_{name}"))
            if name == "clip" and ref is not None:
                ref = ref * _clip_factor(paper)
            if paper is not None and name == "passes" and pd.isna(paper.get("paper_step", np.nan)):
                ref = None
            if ref is not None and not pd.isna(ref):
                cell += f" ({ref:.3g})"
                ratios.append(_ratio(value, ref))
            cells.append(cell)
        lines.append(f"| {row.experiment} | {row.solver} | " + " | ".join(cells)
                     + f" | {' / '.join(ratios)} |")
    return "\n".join(lines)


def solo_times(table):
    """``table`` with each cell's running time from its fresh re-runs where
    there are some: those are timed alone, while a sweep runs DP-SGD's
    configurations of one seed together (an algorithm spec's ``run_many``)
    and records each an amortised share of the call."""
    if "fresh_time_mean" not in table:
        return table
    fresh = table["fresh_time_mean"].notna()
    return table.assign(time_mean=table["fresh_time_mean"].where(fresh, table["time_mean"]),
                        time_std=table["fresh_time_std"].where(fresh, table["time_std"]))


def _time_source(table):
    """Where Table 3's times come from (see :func:`solo_times`)."""
    if "fresh_time_mean" in table and table["fresh_time_mean"].notna().all():
        return ", each run timed alone on the fresh seeds (report.fresh_seeds)"
    return (", timed alone on the fresh seeds where the cell has them; elsewhere "
            "DP-SGD's times are amortised shares of one kernel call running all "
            "configurations of a seed")


def summary_markdown(table, factor=2.0, published=None):
    """Tables 2 and 3 across experiments, the solver comparison and the flagged
    cells; ``published`` (:func:`read_published`) gives DP-GCD Tables 3 and 4
    their published cells whatever passes our grid ran."""
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
        "Seconds per run of the best configuration, mean ± std over seeds"
        + _time_source(table) + "." + paper_note,
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
            "Share of the passes budgets where DP-CD's error is lower, and the "
            "neighbouring relation of each solver's epsilon (a comparison at one "
            "epsilon is like for like only when the two agree):",
            "",
            "| experiment | DP-CD ahead | neighbouring |",
            "|---|---|---|",
            *[f"| {name} | {share:.0%} | {duel_relations(table, name)} |"
              for name, share in ahead.items()],
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
    support = support_markdown(table, published)
    if support:
        parts += [
            "## Support recovery (DP-GCD Table 3)",
            "",
            "Coordinates of the final iterate correctly / incorrectly non-zero "
            "against the non-private solution w*, mean over seeds, and relative "
            "gap, for each solver's best configuration (passes tuned)."
            + (" Published values beside." if with_paper else ""),
            "",
            support,
            "",
        ]
    hyper = hyperparameters_markdown(table, published)
    if hyper:
        parts += [
            "## Selected hyperparameters (DP-GCD Table 4)",
            "",
            "Best configuration of each solver over its whole grid (passes "
            "included)." + (" Published values in parentheses." if with_paper else ""),
            "",
            hyper,
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


OVERHEAD = ("loading", "jit", "calibration", "kernels", "mlflow", "other")


def solve_overhead(timings):
    """Sum the solve jobs' overhead ledgers per (experiment, solver).

    Parameters
    ----------
    timings : list of dict
        What each solve job wrote beside its table (``seconds`` by part).

    Returns
    -------
    pandas.DataFrame
        Seconds per part and ``wall`` per (experiment, solver); ``attrs``
        holds ``kernel_share``, the kernels' share of all solve time.
    """
    rows = [{"experiment": t["experiment"], "solver": t["solver"],
             **{k: t["seconds"][k] for k in OVERHEAD + ("wall",)}} for t in timings]
    if not rows:
        return pd.DataFrame()
    table = (pd.DataFrame(rows).groupby(["experiment", "solver"], as_index=False)
             .sum(numeric_only=True))
    table.attrs["kernel_share"] = table["kernels"].sum() / table["wall"].sum()
    return table


def overhead_markdown(overhead, ingests=()):
    """The summary's "where solve time goes" section (empty without ledgers),
    with the MLflow ingestion of the solve jobs' runs by the aggregate jobs
    (``ingest`` of each experiment's ``results/mlflow/<experiment>.json``)."""
    if overhead.empty:
        return ""
    ingest = {k: sum(i[k] for i in ingests) for k in ("runs", "jobs", "skipped_jobs", "seconds")}
    ingested = (
        f"The aggregate jobs ingested the solve jobs' MLflow runs: {ingest['runs']} runs of "
        f"{ingest['jobs']} jobs in {ingest['seconds']:.0f} s, outside solve time "
        f"({ingest['skipped_jobs']} jobs were in the store already)."
        if ingests else ""
    )
    total = overhead[list(OVERHEAD) + ["wall"]].sum()
    split = ", ".join(f"{k} {100 * total[k] / total['wall']:.1f} %" for k in OVERHEAD)
    shown = overhead.copy()
    for k in OVERHEAD + ("wall",):
        shown[k] = shown[k].map(lambda v: f"{v:.1f}")
    return "\n".join([
        "",
        "## Where solve time goes",
        "",
        f"Kernels {100 * overhead.attrs['kernel_share']:.1f} % of solve time "
        f"({total['wall']:.0f} s in all solve jobs: {split}). {ingested}".rstrip(),
        "",
        "Seconds summed over each solver's chunk jobs:",
        "",
        shown.to_markdown(index=False),
        "",
    ])


# --- fresh seeds --------------------------------------------------------------
FRESH = ["fresh_rel_error_mean", "fresh_rel_error_std", "test_metric_median",
         "fresh_test_metric_median", "fresh_time_mean", "fresh_time_std"]


def add_fresh(table, fresh_tables):
    """Join each experiment's fresh numbers ({experiment: fresh table}) to the
    stacked table, by the selected configuration."""
    frames = [t.assign(experiment=name) for name, t in fresh_tables.items()]
    fresh = pd.concat(frames, ignore_index=True)
    # the selected-on test metric comes along (the stacked table has no held-out columns)
    columns = ["experiment", "solver", "config_id"] + [
        c for c in FRESH if c in fresh and c not in table]
    fresh = fresh[columns].astype({"config_id": str})
    return table.astype({"config_id": str}).merge(
        fresh, on=["experiment", "solver", "config_id"], how="left")


def best_solver_per_cell(table, value):
    """Per (experiment, epsilon, passes): the solver with the lowest ``value``."""
    ok = table[table[value].notna()]
    index = ok.groupby(["experiment", "epsilon", "passes"])[value].idxmin()
    return ok.loc[index, ["experiment", "epsilon", "passes", "solver"]].set_index(
        ["experiment", "epsilon", "passes"])["solver"]


def conclusions_on_fresh(table, solvers=("dp_cd", "dp_sgd")):
    """Which of the summary's conclusions hold on the fresh numbers.

    Returns
    -------
    duel : pandas.DataFrame
        Per (experiment, epsilon, passes) with both ``solvers``: their errors
        on the selection seeds and on fresh seeds, the winner on each, and
        ``holds`` (same winner).
    best : pandas.DataFrame
        Per cell: the lowest-error solver on the selection seeds and on fresh
        seeds, and ``holds``.
    """
    first, second = solvers
    selected = winners(table, solvers)
    fresh = winners(table.assign(rel_error_mean=table["fresh_rel_error_mean"]), solvers)
    duel = pd.DataFrame()
    if not selected.empty and not fresh.empty:
        duel = selected.merge(fresh, on=["experiment", "epsilon", "passes"],
                              suffixes=("", "_fresh"))
        duel["holds"] = duel["winner"] == duel["winner_fresh"]
        duel = duel.rename(columns={first: f"{first}_selected_on", second: f"{second}_selected_on",
                                    "winner": "winner_selected_on"})
    best = pd.concat({"best_selected_on": best_solver_per_cell(table, "rel_error_mean"),
                      "best_fresh": best_solver_per_cell(table, "fresh_rel_error_mean")},
                     axis=1).dropna().reset_index()
    best["holds"] = best["best_selected_on"] == best["best_fresh"]
    return duel, best


def fresh_summary_markdown(table):
    """The summary's fresh-seed sections: both numbers per cell, and which
    conclusions still hold on the fresh numbers."""
    from dpcd.report.fresh import pair_markdown

    if "fresh_rel_error_mean" not in table or table["fresh_rel_error_mean"].isna().all():
        return ""
    with np.errstate(divide="ignore", invalid="ignore"):
        optimism = (table["fresh_rel_error_mean"] / table["rel_error_mean"]).replace(
            [np.inf, -np.inf], np.nan).dropna()
    parts = [
        "",
        "## Selected on / fresh seeds",
        "",
        "Relative error of each cell's selected configuration: mean over the seeds it "
        "was selected on / mean over fresh seeds never used for selection "
        "(report.fresh_seeds; results/tables/fresh/). The first is optimistic. "
        + (f"Fresh / selected-on ratio: median {optimism.median():.3g}, "
           f"max {optimism.max():.3g} over {len(optimism)} cells." if len(optimism) else ""),
        "",
        pair_markdown(table, "rel_error_mean", "fresh_rel_error_mean", keys=ROWS),
        "",
    ]
    if {"test_metric_median", "fresh_test_metric_median"} <= set(table) and \
            table["fresh_test_metric_median"].notna().any():
        parts += [
            "Test metric (median over seeds; selection on the validation set): "
            "selected on / fresh.",
            "",
            pair_markdown(table[table["fresh_test_metric_median"].notna()],
                          "test_metric_median", "fresh_test_metric_median", keys=ROWS, fmt=".4g"),
            "",
        ]
    duel, best = conclusions_on_fresh(table)
    parts += ["## Conclusions on fresh seeds", ""]
    if not duel.empty:
        held = int(duel["holds"].sum())
        parts += [
            f"DP-CD against DP-SGD: the winner of {held} of {len(duel)} cells is the same "
            "on fresh seeds. Per cell (relative error, selected on / fresh):",
            "",
            "| experiment | epsilon | passes | DP-CD | DP-SGD | winner | holds on fresh seeds |",
            "|---|---|---|---|---|---|---|",
            *[f"| {r.experiment} | {r.epsilon:g} | {r.passes:g} | "
              f"{pair_cell(r.dp_cd_selected_on, r.dp_cd_fresh, '.4f')} | "
              f"{pair_cell(r.dp_sgd_selected_on, r.dp_sgd_fresh, '.4f')} | "
              f"{r.winner_selected_on} / {r.winner_fresh} | {'yes' if r.holds else '**no**'} |"
              for r in duel.itertuples()],
            "",
        ]
    if not best.empty:
        held = int(best["holds"].sum())
        parts += [
            f"Lowest-error solver of each cell: the same on fresh seeds in {held} of "
            f"{len(best)} cells."
            + ("" if held == len(best) else " Cells where it changes:"),
            "",
        ]
        if held != len(best):
            parts += [best[~best["holds"]].to_markdown(index=False, floatfmt=".4g"), ""]
    return "\n".join(parts)


def lambda_summary_markdown(table):
    """The summary's regularisation-sensitivity section (from ``dpcd lambda-table``)."""
    from dpcd.report.lambdas import lambda_markdown

    if table.empty:
        return ""
    fresh = table["fresh_rel_error_mean"].notna().any()
    parts = [
        "",
        "## Regularisation sensitivity",
        "",
        "Best relative error of each solver (its best cell, passes tuned, chosen on "
        "the selection seeds) at each regularisation strength lambda of the "
        "experiments with an alpha_grid (lambda_max = |grad f(0)|_inf of the "
        "training data)" + (": selected on / fresh seeds." if fresh else ".")
        + " Figure: figures/lambda_sensitivity.png.",
        "",
        lambda_markdown(table),
        "",
    ]
    column = "fresh_rel_error_mean" if fresh else "rel_error_mean"
    pivot = table.pivot_table(index=["experiment", "epsilon", "alpha"], columns="solver",
                              values=column)
    if {"dp_cd", "dp_sgd"} <= set(pivot.columns):
        ahead = (pivot["dp_cd"] < pivot["dp_sgd"]).groupby(level=["experiment", "epsilon"])
        lines = []
        for (experiment, epsilon), wins in ahead:
            lambdas = wins.index.get_level_values("alpha")
            lost = [f"{a:.3g}" for a, w in zip(lambdas, wins) if not w]
            lines.append(f"- {experiment} (ε={epsilon:g}): DP-CD ahead of DP-SGD at "
                         f"{int(wins.sum())} of {len(wins)} lambdas"
                         + (f"; not at lambda = {', '.join(lost)}." if lost else "."))
        parts += [f"On the {'fresh' if fresh else 'selection'} numbers:", "", *lines, ""]
    return "\n".join(parts)
