"""Private tuning's report: the summary's "Private tuning" section, and the
papers' comparisons under private tuning against tuning on the private data.

The summary's section (``search: private``)
-------------------------------------------
A private search's table cell is the mean ± std over its selection seeds of
the released model's error: one independent search per selection seed, each
released with its whole price (``epsilon_achieved`` is the ε of the
repeat-and-select release, hyperparameter selection included). The relative
error to F* and the test metric are the researcher's evaluation of the
released model (F* and the test rows are read without noise): they are not
part of the release.

The comparison (``report.private_baseline``)
--------------------------------------------
The same experiments run twice: once as the papers do (every configuration,
the best per cell chosen on the private data, then re-run on fresh seeds:
``results/tables/fresh/<experiment>.csv``) and once with ``search: private``
(the released model of independent private searches, one per selection seed:
``results/tables/<experiment>.csv``), at the same target epsilon. This module
pairs the cells, says which of the papers' comparisons keep their winner,
and draws one figure per paper:

* DP-CD Table 2 (experiments with ``dp_cd``): relative error at the last
  iterate, DP-CD against DP-SGD (lower wins);
* DP-SCD Figure 1 (experiments with ``dp_scd``): median test metric of the
  final iterates, DP-SCD against DP-SGD (accuracy: higher wins; MSE, the
  ridge problem's: lower wins);
* DP-GCD Table 3 (experiments with a DP-GCD entry, ``dp_gcd`` or
  ``dp_gcd_<rule>``, whatever else they run: they also run ``dp_cd``, so
  this is checked first): relative error at the last iterate, each DP-GCD
  entry against DP-CD and against DP-SGD (lower wins), each solver at its
  best number of passes as Table 3 reports it (DP-GCD's passes are not
  DP-CD's). Under private tuning each passes is its own private search;
  picking the best of them on the evaluation is the researcher's, not part
  of a release, so the verdict also says whether DP-GCD wins at every pair
  of passes (``private_every_passes``), which picks nothing.

An experiment ``<name>_aor`` is ``<name>``'s DP-SGD under add-or-remove-one;
its rows join ``<name>``'s cells under the solver label ``dp_sgd (aor)``.
Every number here is the researcher's evaluation of released models (F* and
the test rows are read without noise), not part of any release.
"""

import numpy as np
import pandas as pd

from dpcd.report.tables import RELATION, with_relation
from dpcd.problems.metrics import HIGHER_IS_BETTER
from dpcd.tuning.release import RELEASED_ID


# ------------------------------------------------------------------ the summary's section
EVALUATION_NOTE = (
    "The relative error to F* and the test metric below are the researcher's "
    "evaluation of the released model (F* and the held-out rows are read without "
    "noise); they are not part of the release. What is released, per selection "
    "seed, is one model and its noisy score, at the end-to-end epsilon shown "
    "(dp_accounting's RepeatAndSelectDpEvent on the RDP accountant: every "
    "candidate's training and score, and the selection). Its ledger lists no "
    "hyperparameter_selection."
)


def private_cells(tables):
    """The released cells of every private-search experiment, stacked
    (``{experiment: table}`` of :func:`dpcd.report.tables.summary_table`)."""
    frames = [with_relation(t).assign(experiment=name) for name, t in tables.items()
              if "config_id" in t and _released(t).any()]
    if not frames:
        return pd.DataFrame()
    cells = pd.concat(frames, ignore_index=True)
    return cells[_released(cells)].reset_index(drop=True)


def _released(table):
    return table["config_id"].astype(str).str.startswith(RELEASED_ID + "_")


def private_markdown(tables):
    """The "Private tuning" section (empty without a ``search: private``
    experiment)."""
    cells = private_cells(tables)
    if cells.empty:
        return ""
    cells = cells.assign(
        rel_error=[f"{m:.3g} ± {s:.2g}" for m, s in zip(cells["rel_error_mean"],
                                                     cells["rel_error_std"].fillna(0.0))],
        epsilon_end_to_end=cells["epsilon_achieved"].map(lambda e: f"{e:.4g}"),
        selection_seeds=cells["n_seeds"])
    columns = ["experiment", "solver", RELATION, "epsilon", "passes", "rel_error",
               "selection_seeds", "epsilon_end_to_end"]
    if "test_metric_median" in cells:
        columns.insert(6, "test_metric_median")
    return "\n".join([
        "",
        "## Private tuning",
        "",
        "Experiments with search: private: per (solver, epsilon, passes), relative "
        "error at the last iterate of the released model, mean ± std over independent "
        "private searches (selection seeds). " + EVALUATION_NOTE,
        "",
        cells[columns].sort_values(["experiment", "solver", "epsilon", "passes"])
        .to_markdown(index=False),
        "",
    ])


# ------------------------------------------------------------------ the comparison
# a: the paper's method (every solver label a or a_<variant>: DP-GCD's rules);
# b: its rivals (labels starting with one, "dp_sgd (aor)" included);
# over_passes: each solver at its best passes (cell = experiment, epsilon);
# higher: None when the cell's metric says it (accuracy or MSE).
PAPERS = {
    "DP-CD Table 2": {"a": "dp_cd", "b": ("dp_sgd",), "value": "rel_error",
                      "higher": False, "over_passes": False},
    "DP-GCD Table 3": {"a": "dp_gcd", "b": ("dp_cd", "dp_sgd"), "value": "rel_error",
                       "higher": False, "over_passes": True},
    "DP-SCD Figure 1": {"a": "dp_scd", "b": ("dp_sgd",), "value": "test_metric",
                        "higher": None, "over_passes": False},
}


AOR = "_aor"


def _is(solver, name):
    """``solver`` is the label ``name`` or a variant of it (``dp_gcd_gs_q``)."""
    return solver == name or solver.startswith(name + "_")


def _paper(experiment_tables, name):
    """The paper an experiment reproduces, from its solver labels: DP-GCD
    first (its experiments run DP-CD too), then DP-SCD, else DP-CD Table 2."""
    solvers = set(experiment_tables[name]["solver"])
    if any(_is(s, "dp_gcd") for s in solvers):
        return "DP-GCD Table 3"
    return "DP-SCD Figure 1" if "dp_scd" in solvers else "DP-CD Table 2"


def final_medians(runs):
    """Median over seeds of the last iterate's relative error per (solver,
    epsilon, passes) of a tidy runs table (robust to the few searches whose
    released model diverged: a search of K = 1 releases its only candidate)."""
    from dpcd.report.tables import final_iterates

    return final_iterates(runs).groupby(["solver", "epsilon", "passes"])["rel_error"].median()


def comparison_table(baseline, private, baseline_runs=None, private_runs=None):
    """One row per cell (experiment, solver, relation, epsilon, passes) run both ways.

    Parameters
    ----------
    baseline : dict
        experiment -> its fresh table (:func:`dpcd.report.fresh.fresh_table`).
    private : dict
        experiment -> its table from ``search: private``
        (:func:`dpcd.report.tables.summary_table`).
    baseline_runs, private_runs : dict, optional
        experiment -> the fresh re-runs, resp. the released runs (tidy tables):
        adds the medians over seeds (``*_rel_error_median``).
    """
    rows = []
    for name in sorted(set(baseline) & set(private)):
        base = with_relation(baseline[name])
        ours = with_relation(private[name])
        key = ["solver", "epsilon", "passes"]
        ours = ours[[c for c in ours if c not in ("fresh_rel_error_mean",)]]
        ours = ours.rename(columns={c: f"{c}_p" for c in ours if c not in key})
        base = base[key + [c for c in base if c.startswith("fresh_")]]
        merged = base.merge(ours, on=key)
        experiment = name[:-len(AOR)] if name.endswith(AOR) else name
        for row in merged.to_dict("records"):
            solver = row["solver"] + (" (aor)" if name.endswith(AOR) else "")
            out = {
                "experiment": experiment, "solver": solver,
                RELATION: row[f"{RELATION}_p"], "epsilon": row["epsilon"],
                "passes": row["passes"],
                "nonprivate_rel_error_mean": row["fresh_rel_error_mean"],
                "nonprivate_rel_error_std": row["fresh_rel_error_std"],
                "nonprivate_seeds": row["fresh_n_seeds"],
                "private_rel_error_mean": row["rel_error_mean_p"],
                "private_rel_error_std": row["rel_error_std_p"],
                "selection_seeds": row["n_seeds_p"],
                "private_epsilon_achieved": row["epsilon_achieved_p"],
                "nonprivate_epsilon_achieved": row["fresh_epsilon_achieved"],
            }
            for tuning, runs in (("nonprivate", baseline_runs), ("private", private_runs)):
                if runs and name in runs:
                    medians = final_medians(runs[name])
                    cell = (row["solver"], row["epsilon"], row["passes"])
                    out[f"{tuning}_rel_error_median"] = float(medians.get(cell, np.nan))
            if pd.notna(row.get("fresh_test_metric_median")) \
                    and pd.notna(row.get("test_metric_median_p")):
                out.update(metric=row.get("metric_p"),
                           nonprivate_test_metric_median=row["fresh_test_metric_median"],
                           private_test_metric_median=row["test_metric_median_p"],
                           private_test_metric_q25=row["test_metric_q25_p"],
                           private_test_metric_q75=row["test_metric_q75_p"])
            rows.append(out)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["paper"] = [_paper(baseline, e if e in baseline else e + AOR)
                      for e in table["experiment"]]
    return table.sort_values(["paper", "experiment", "solver", "epsilon", "passes"]) \
        .reset_index(drop=True)


def conclusions(table):
    """Per paper and cell the winner of each comparison under each tuning, and
    whether it survives private tuning. A cell is (experiment, epsilon,
    passes), or (experiment, epsilon) for a paper compared ``over_passes``
    (each solver at its best passes under each tuning, the passes it took in
    ``*_passes``, and ``private_every_passes``: the paper's method wins at
    every pair of passes under private tuning). DP-SGD under add-or-remove
    (``dp_sgd (aor)``) is a rival too, as its own row (a different relation:
    a weaker guarantee)."""
    out = []
    for paper, spec in PAPERS.items():
        cells = table[table["paper"] == paper]
        column = {"rel_error": "rel_error_mean", "test_metric": "test_metric_median"}[
            spec["value"]]
        keys = ["experiment", "epsilon"] + ([] if spec["over_passes"] else ["passes"])
        for cell, group in cells.groupby(keys):
            row0 = dict(zip(keys, cell), paper=paper)
            labels = sorted(group["solver"].unique())
            for a in [s for s in labels if _is(s, spec["a"])]:
                for rival in [s for s in labels if s.startswith(spec["b"])]:
                    row = {"paper": paper, **row0, "comparison": f"{a} vs {rival}"}
                    row.update(_verdict(group, a, rival, spec, column))
                    out.append(row)
    columns = ["paper", "experiment", "epsilon", "passes", "comparison"]
    frame = pd.DataFrame(out)
    return frame[[c for c in columns if c in frame]
                 + [c for c in frame if c not in columns]] if len(frame) else frame


def _verdict(group, a, rival, spec, column):
    """One comparison of one cell (rows of ``group``: one per solver, or per
    solver and passes when compared over passes)."""
    higher = spec["higher"]
    if higher is None:  # the test metric: accuracy (higher wins) or MSE (lower wins)
        higher = HIGHER_IS_BETTER[group["metric"].dropna().iloc[0]]

    def best(solver, name):  # the solver's best value over its passes, and those passes
        rows = group[group["solver"] == solver].dropna(subset=[name])
        if rows.empty:
            return np.nan, np.nan
        pick = rows.loc[rows[name].idxmax() if higher else rows[name].idxmin()]
        return pick[name], pick["passes"]

    row = {}
    for tuning in ("nonprivate", "private"):
        (va, ka), (vb, kb) = best(a, f"{tuning}_{column}"), best(rival, f"{tuning}_{column}")
        better_a = va > vb if higher else va < vb
        row[f"{tuning}_winner"] = a if better_a else rival
        if spec["over_passes"]:
            row[f"{tuning}_passes"] = f"{ka:g} vs {kb:g}"
    row["survives"] = row["nonprivate_winner"] == row["private_winner"]
    if spec["value"] == "rel_error" and "private_rel_error_median" in group:
        va, _ = best(a, "private_rel_error_median")
        vb, _ = best(rival, "private_rel_error_median")
        row["private_winner_median"] = a if va < vb else rival
    if spec["over_passes"]:
        name = f"private_{column}"
        worst_a = group.loc[group["solver"] == a, name].max()
        best_b = group.loc[group["solver"] == rival, name].min()
        row["private_every_passes"] = bool(worst_a < best_b)
    return row


def _cell(mean, std):
    if not np.isfinite(mean):
        return "n/a"
    return f"{mean:.3g} ± {std:.2g}" if np.isfinite(std) else f"{mean:.3g}"


def comparison_markdown(table, verdicts):
    """The summary section: both tunings side by side, then the verdicts."""
    if table.empty:
        return ""
    shown = table.assign(
        nonprivate_tuning=[_cell(m, s) for m, s in zip(table["nonprivate_rel_error_mean"],
                                                       table["nonprivate_rel_error_std"])],
        private_tuning=[_cell(m, s) for m, s in zip(table["private_rel_error_mean"],
                                                    table["private_rel_error_std"])],
        private_epsilon=table["private_epsilon_achieved"].map(lambda e: f"{e:.4g}"))
    columns = ["paper", "experiment", "solver", RELATION, "epsilon", "passes",
               "nonprivate_tuning", "private_tuning", "selection_seeds", "private_epsilon"]
    for tuning in ("nonprivate", "private"):
        if f"{tuning}_rel_error_median" in table:
            shown[f"{tuning}_median"] = table[f"{tuning}_rel_error_median"].map(
                lambda v: f"{v:.3g}")
            columns.insert(columns.index("selection_seeds"), f"{tuning}_median")
    parts = [
        "",
        "## Private tuning against tuning on the private data",
        "",
        "Relative error at the last iterate, mean ± std (and median) over seeds. "
        "`nonprivate_tuning`: the "
        "paper protocol (best configuration chosen on the private data, re-run on "
        "fresh seeds; its epsilon leaves the selection out). `private_tuning`: the "
        "released model of independent private searches (search: private, one per "
        "selection seed), whose `private_epsilon` is end to end (repeat-and-select, "
        "selection included) and the same target. Both are the researcher's "
        "evaluation of released models (F* read without noise), not part of a release.",
        "",
        shown[columns].to_markdown(index=False),
        "",
    ]
    if "private_test_metric_median" in table:
        metric = table[table["private_test_metric_median"].notna()]
        if not metric.empty:
            metric = metric.assign(private_iqr=[
                f"[{a:.3g}, {b:.3g}]" for a, b in zip(metric["private_test_metric_q25"],
                                                      metric["private_test_metric_q75"])])
            parts += [
                "Test metric of the final iterate (median over fresh seeds, resp. "
                "over selection seeds with its interquartile range):",
                "",
                metric[["paper", "experiment", "solver", RELATION, "epsilon", "metric",
                        "nonprivate_test_metric_median", "private_test_metric_median",
                        "private_iqr"]].to_markdown(index=False),
                "",
            ]
    if not verdicts.empty:
        kept = verdicts.groupby(["paper", "comparison"])["survives"].agg(["sum", "count"])
        parts += [
            "Which conclusions survive (the winner of each cell under both tunings, "
            "on the mean as the tables select, and under private tuning on the median; "
            "`dp_sgd (aor)` is DP-SGD under add-or-remove-one, a weaker relation). "
            "DP-GCD Table 3 compares each solver at its best passes (`*_passes`: the "
            "DP-GCD entry's vs its rival's), as the paper's Table 3 does; each passes "
            "is its own private search and that last pick, made on the evaluation, is "
            "the researcher's, not part of a release; `private_every_passes`: the "
            "DP-GCD entry wins at every pair of passes, a verdict that picks none:",
            "",
            verdicts.to_markdown(index=False),
            "",
            "Cells whose winner is unchanged: " + "; ".join(
                f"{paper}, {comparison}: {int(row['sum'])} of {int(row['count'])}"
                for (paper, comparison), row in kept.iterrows()) + ".",
            "",
        ]
    return "\n".join(parts)


def plot_comparison(table, paper, path):
    """One paper's cells: each solver's value under both tunings (error bars:
    std over fresh seeds, resp. selection seeds; DP-SCD: the test metric's
    interquartile range over selection seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = table[table["paper"] == paper]
    metric = paper == "DP-SCD Figure 1" and "private_test_metric_median" in cells
    experiments = sorted(cells["experiment"].unique())
    fig, axes = plt.subplots(1, max(1, len(experiments)), squeeze=False,
                             figsize=(4.2 * max(1, len(experiments)), 3.6))
    for ax, experiment in zip(axes[0], experiments):
        sub = cells[cells["experiment"] == experiment]
        x_name = "epsilon" if metric else "passes"
        for k, (solver, group) in enumerate(sub.groupby("solver")):
            group = group.sort_values(x_name)
            x = group[x_name].to_numpy(dtype=float) * (1 + 0.04 * k)
            if metric:
                ax.plot(x, group["nonprivate_test_metric_median"], "o--",
                        label=f"{solver}, tuned on data", color=f"C{k}")
                mid = group["private_test_metric_median"].to_numpy()
                err = [mid - group["private_test_metric_q25"].to_numpy(),
                       group["private_test_metric_q75"].to_numpy() - mid]
                ax.errorbar(x, mid, yerr=err, fmt="s-", capsize=3, color=f"C{k}",
                            label=f"{solver}, private tuning")
                ax.set_ylabel(f"test {group['metric'].iloc[0]} (median)")
            elif "private_rel_error_median" in group:  # medians: a few K = 1 searches diverge
                ax.plot(x, group["nonprivate_rel_error_median"], "o--", color=f"C{k}",
                        label=f"{solver}, tuned on data")
                ax.plot(x, group["private_rel_error_median"], "s-", color=f"C{k}",
                        label=f"{solver}, private tuning")
                ax.set_yscale("log")
                ax.set_ylabel("relative error, median over seeds")
            else:
                ax.errorbar(x, group["nonprivate_rel_error_mean"],
                            yerr=group["nonprivate_rel_error_std"], fmt="o--", capsize=3,
                            color=f"C{k}", label=f"{solver}, tuned on data")
                ax.errorbar(x, group["private_rel_error_mean"],
                            yerr=group["private_rel_error_std"], fmt="s-", capsize=3,
                            color=f"C{k}", label=f"{solver}, private tuning")
                ax.set_yscale("log")
                ax.set_ylabel("relative error (F - F*) / F*")
        ax.set_xscale("log")
        ticks = sorted(sub[x_name].unique())
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel(x_name)
        ax.set_title(experiment, fontsize=9)
        ax.legend(fontsize=5)
    fig.suptitle(f"{paper}: tuning on the private data vs private tuning (same epsilon)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)
