"""Cross-experiment figures of a paper and its report page (DP-SCD Figures 1-3).

Configured by ``report.figures`` (kinds ``metric_vs_epsilon``,
``objective_vs_passes``, ``metric_vs_batch_size``); the report page holds the
test metrics behind Figure 1, the tuning cost (configurations tuned per method,
DP-SCD §5.1 "Tuning cost") and the values the paper states, beside ours.
Every figure uses the configurations the experiment's own selection chose
(``results/tables/<experiment>.csv``).
"""

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from dpcd import algorithms  # noqa: E402
from dpcd.report.tables import last_checkpoints  # noqa: E402
from dpcd.problems.metrics import HIGHER_IS_BETTER  # noqa: E402

PUBLISHED_COLUMNS = ["experiment", "solver", "epsilon", "quantity", "value", "source", "note"]


def _final_passes(table):
    """Each (solver, epsilon)'s row at its largest passes budget."""
    table = table.sort_values("passes")
    return table.groupby(["solver", "epsilon"], as_index=False).last()


def _metric_label(table):
    metric = table["metric"].dropna().iloc[0]
    return "test MSE" if metric == "mse" else "test accuracy"


def plot_metric_vs_epsilon(tables, path, spec):
    """DP-SCD Figure 1: median test metric against epsilon, one panel per experiment."""
    names = spec["experiments"]
    nonprivate = set(spec.get("nonprivate", algorithms.names(private=False)))
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.8), squeeze=False)
    for ax, name in zip(axes[0], names):
        table = _final_passes(tables[name])
        if spec.get("solvers"):
            table = table[table["solver"].isin(spec["solvers"])]
        colours = dict(zip(sorted(table["solver"].unique()), sns.color_palette(n_colors=8)))
        for solver, rows in table.groupby("solver"):
            rows = rows.sort_values("epsilon")
            if solver in nonprivate:
                ax.axhline(rows["test_metric_median"].median(), ls="--",
                           color=colours[solver], label=f"{solver} (non-private)")
                continue
            err = [rows["test_metric_median"] - rows["test_metric_q25"],
                   rows["test_metric_q75"] - rows["test_metric_median"]]
            ax.errorbar(rows["epsilon"], rows["test_metric_median"], yerr=err,
                        marker="o", capsize=3, color=colours[solver], label=solver)
        ax.set_xscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel(_metric_label(table) + " (median, IQR)")
        ax.set_title(name)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


def plot_objective_vs_passes(tables, runs, path, spec):
    """DP-SCD Figure 2: training objective per pass of the selected configurations."""
    name = spec["experiments"][0]
    table, data = _final_passes(tables[name]), runs[name]
    nonprivate = set(spec.get("nonprivate", algorithms.names(private=False)))
    epsilons = spec.get("epsilons")
    chosen = []
    for row in table.itertuples():
        if spec.get("solvers") and row.solver not in spec["solvers"]:
            continue
        private = row.solver not in nonprivate
        if private and epsilons and not np.isclose(epsilons, row.epsilon).any():
            continue
        label = f"{row.solver} (ε={row.epsilon:g})" if private else row.solver
        chosen.append((label, row.config_id, row.epsilon, private))
    # A non-private solver runs once per epsilon with the same seeds: draw one curve.
    seen, curves = set(), []
    for label, cid, epsilon, private in chosen:
        if label in seen:
            continue
        seen.add(label)
        rows = data[(data["config_id"] == cid) & np.isclose(data["epsilon"], epsilon)]
        curve = rows.groupby("pass")["objective"].median().reset_index()
        curves.append(curve.assign(label=label, private=private))
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6, 4))
    for curve in curves:
        ax.plot(curve["pass"], curve["objective"], label=curve["label"].iloc[0],
                ls="-" if curve["private"].iloc[0] else "--")
    ax.set_xlabel("epochs (passes over the training set)")
    ax.set_ylabel("training objective (median over seeds)")
    ax.set_title(name)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


def metric_by_batch_and_clip(runs, spec):
    """Median test metric per (batch_size, clip), best other hyperparameters on validation."""
    epsilon = (spec.get("epsilons") or [1.0])[0]
    solvers = spec.get("solvers") or ["dp_scd"]
    last = last_checkpoints(runs[(runs["solver"].isin(solvers)) & np.isclose(runs["epsilon"], epsilon)])
    if last.empty:
        return pd.DataFrame(columns=["solver", "batch_size", "clip", "test_metric_median"])
    higher = HIGHER_IS_BETTER[last["metric"].dropna().iloc[0]]
    per_config = last.groupby(["solver", "passes", "batch_size", "clip", "config_id"],
                              as_index=False).agg(val=("val_metric", "median"),
                                                  test_metric_median=("test_metric", "median"))
    per_config["_key"] = (-per_config["val"] if higher else per_config["val"]).fillna(np.inf)
    per_config = per_config.sort_values(["_key", "config_id"])
    best = per_config.groupby(["solver", "passes", "batch_size", "clip"], as_index=False).first()
    return best.drop(columns="_key")


def plot_metric_vs_batch_size(tables, runs, path, spec):
    """DP-SCD Figure 3: median test metric against L, one line per C, at one epsilon."""
    name = spec["experiments"][0]
    curves = metric_by_batch_and_clip(runs[name], spec)
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6, 4))
    for (solver, clip), rows in curves.groupby(["solver", "clip"]):
        rows = rows.sort_values("batch_size")
        ax.plot(rows["batch_size"], rows["test_metric_median"], marker="o",
                label=f"{solver} C={clip:g}")
    ax.set_xscale("log")
    ax.set_xlabel("mini-batch size L")
    ax.set_ylabel(_metric_label(tables[name]) + " (median)")
    ax.set_title(f"{name}, ε={(spec.get('epsilons') or [1.0])[0]:g}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


PLOTS = {
    "metric_vs_epsilon": lambda tables, runs, path, spec: plot_metric_vs_epsilon(tables, path, spec),
    "objective_vs_passes": plot_objective_vs_passes,
    "metric_vs_batch_size": plot_metric_vs_batch_size,
}


def read_published_figures(path):
    """What a paper states about its figures (``#`` lines are provenance comments)."""
    table = pd.read_csv(path, comment="#")
    missing = set(PUBLISHED_COLUMNS) - set(table.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    bad = ~table["source"].isin(["text", "figure"])
    if bad.any():
        raise ValueError(f"{path}: source must be 'text' or 'figure', got "
                         f"{table.loc[bad, 'source'].iloc[0]!r}")
    return table[PUBLISHED_COLUMNS]


def tuning_cost(tables):
    """Configurations tuned per (experiment, solver) for one (epsilon, passes) cell."""
    rows = [table.assign(experiment=name) for name, table in tables.items()]
    stacked = pd.concat(rows, ignore_index=True)
    return stacked.groupby(["experiment", "solver"], as_index=False)["n_configs"].max()


def ours_for(published, tables, runs):
    """Our value of each published quantity (NaN where we have none)."""
    values = []
    for row in published.itertuples():
        table = tables.get(row.experiment)
        value = np.nan
        if table is not None and row.quantity == "n_configs":
            cells = table[table["solver"] == row.solver]["n_configs"]
            value = cells.max() if not cells.empty else np.nan
        elif table is not None and row.quantity in ("test_mse", "test_accuracy"):
            cells = _final_passes(table)
            cells = cells[(cells["solver"] == row.solver) & np.isclose(cells["epsilon"], row.epsilon)]
            value = cells["test_metric_median"].iloc[0] if not cells.empty else np.nan
        elif row.quantity == "best_clip" and row.experiment in runs:
            curves = metric_by_batch_and_clip(
                runs[row.experiment], {"epsilons": [row.epsilon], "solvers": [row.solver]})
            if not curves.empty:
                higher = HIGHER_IS_BETTER[tables[row.experiment]["metric"].iloc[0]]
                pick = curves["test_metric_median"].idxmax() if higher else curves["test_metric_median"].idxmin()
                value = curves.loc[pick, "clip"]
        values.append(value)
    return published.assign(ours=values)


def conclusions(tables, nonprivate=None):
    """The paper's claims (§5.1) checked per (experiment, epsilon) where the solvers ran.

    ``dp_scd_vs_dp_sgd``: DP-SCD's median test metric is at least as good as
    DP-SGD's (the paper: yes on ridge and SVM, slightly worse on logistic);
    ``seq_dp_scd_worst``: seqDP-SCD has the worst test metric of the private methods.
    ``nonprivate``: the solvers that are not private methods (default: the
    registry's non-private ones).
    """
    if nonprivate is None:
        nonprivate = algorithms.names(private=False)
    rows = []
    for name, table in tables.items():
        if "test_metric_median" not in table:
            continue
        cells = _final_passes(table)
        higher = HIGHER_IS_BETTER[cells["metric"].iloc[0]]
        for epsilon, group in cells.groupby("epsilon"):
            value = group.set_index("solver")["test_metric_median"]
            private = value.drop([s for s in nonprivate if s in value.index])
            row = {"experiment": name, "epsilon": epsilon}
            if {"dp_scd", "dp_sgd"} <= set(value.index):
                a, b = value["dp_scd"], value["dp_sgd"]
                row["dp_scd_vs_dp_sgd"] = bool(a >= b if higher else a <= b)
            if "seq_dp_scd" in private.index and len(private) > 1:
                worst = private.idxmin() if higher else private.idxmax()
                row["seq_dp_scd_worst"] = worst == "seq_dp_scd"
            if len(row) > 2:
                rows.append(row)
    return pd.DataFrame(rows)


def report_markdown(tables, runs, figures, published=None):
    """The report page: Figure 1's numbers, tuning cost, published values beside ours."""
    parts = ["# Paper figures", ""]
    for name, path in figures.items():
        parts += [f"![{name}]({path})", ""]
    stacked = pd.concat([_final_passes(t).assign(experiment=n) for n, t in tables.items()
                         if "test_metric_median" in t], ignore_index=True) if tables else None
    if stacked is not None and not stacked.empty:
        wide = stacked.pivot_table(index=["experiment", "solver"], columns="epsilon",
                                   values="test_metric_median").reset_index()
        wide.columns = [f"ε={c:g}" if isinstance(c, float) else c for c in wide.columns]
        parts += ["## Test metric of the selected configurations (Figure 1)", "",
                  "Median over seeds of the final iterate's test MSE (squares) or "
                  "accuracy (classification); configurations selected on the validation set.",
                  "", wide.to_markdown(index=False, floatfmt=".4g"), ""]
    claims = conclusions(tables)
    if not claims.empty:
        parts += ["## The paper's conclusions, checked on our numbers", "",
                  "dp_scd_vs_dp_sgd: DP-SCD's median test metric at least as good as "
                  "DP-SGD's (paper: yes for ridge and SVM, not for logistic); "
                  "seq_dp_scd_worst: seqDP-SCD worst of the private methods (paper: yes).", "",
                  claims.to_markdown(index=False), ""]
    parts += ["## Tuning cost", "",
              "Configurations tuned per method for one (ε, passes) cell.", "",
              tuning_cost(tables).to_markdown(index=False), ""]
    if published is not None:
        parts += ["## Values the paper states, beside ours", "",
                  "source: `text` = stated in the paper's text, `figure` = read off a "
                  "figure (approximate).", "",
                  ours_for(published, tables, runs).to_markdown(index=False, floatfmt=".4g"), ""]
    return "\n".join(parts)
