"""Seaborn figures of relative error against passes and running time."""

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402

from dpcd.report.tables import best_configurations, final_iterates  # noqa: E402

FLOOR = 1e-12  # log axes cannot show 0; errors at machine precision sit here


def best_overall(runs, select_by="last_objective"):
    """Per (solver, epsilon), the configuration with the lowest mean final objective,
    the number of passes tuned like the hyperparameters (DP-CD paper, Figure 1).

    With ``select_by="validation"`` the configuration chosen on the validation set
    at the largest passes budget (DP-SCD Figure 2 draws that one)."""
    if select_by == "validation":
        best = best_configurations(runs, "validation").sort_values("passes")
        best = best.groupby(["solver", "epsilon"], as_index=False).last()
        return runs.merge(best[["solver", "epsilon", "passes", "config_id"]])
    last = final_iterates(runs)
    means = last.groupby(["solver", "epsilon", "config_id"])["objective"].mean()
    means = means.replace([np.inf, -np.inf, np.nan], np.inf).reset_index()
    means = means.sort_values(["solver", "epsilon", "objective", "config_id"])
    best = means.groupby(["solver", "epsilon"], as_index=False).first()
    return runs.merge(best[["solver", "epsilon", "config_id"]])


def _decades_axis(ax, values):
    """Log-like x axis when the points span decades (passes from 0.001 to 20):
    symlog keeps the starting point 0 on the axis, linear below the smallest
    positive value."""
    positive = np.asarray(values, dtype=np.float64)
    positive = positive[positive > 0]
    if positive.size and positive.max() / positive.min() >= 100:
        ax.set_xscale("symlog", linthresh=float(positive.min()))


def plot_rel_error(runs, path, x="pass", title=None, select_by="last_objective", chosen=None):
    """Relative error of each solver's best configuration: mean line, min/max band.

    Parameters
    ----------
    runs : pandas.DataFrame
        Tidy table of the solve stage.
    path : str
        PNG file to write.
    x : {"pass", "time"}
        Horizontal axis: passes over the data, or seconds in the kernels.
    title : str, optional
    select_by : {"last_objective", "validation"}
        How each solver's configuration is chosen (see :mod:`dpcd.report.tables`).
    chosen : pandas.DataFrame, optional
        Columns ``solver, epsilon, config_id``: draw these configurations
        instead of choosing on ``runs`` (the fresh-seed curves of the
        configurations chosen on the selection seeds).
    """
    if chosen is None:
        curves = best_overall(runs, select_by).copy()
    else:
        curves = runs.merge(chosen[["solver", "epsilon", "config_id"]]).copy()
    curves["rel_error"] = curves["rel_error"].clip(lower=FLOOR)
    curves["label"] = curves["solver"] + " (ε=" + curves["epsilon"].map("{:g}".format) + ")"
    stats = curves.groupby(["label", "pass"]).agg(
        mean=("rel_error", "mean"), low=("rel_error", "min"),
        high=("rel_error", "max"), time=("time", "mean"),
    ).reset_index()
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6, 4))
    xcol = "pass" if x == "pass" else "time"
    palette = dict(zip(sorted(stats["label"].unique()), sns.color_palette(n_colors=stats["label"].nunique())))
    sns.lineplot(data=stats, x=xcol, y="mean", hue="label", palette=palette, ax=ax, marker="o")
    for label, group in stats.groupby("label"):
        ax.fill_between(group[xcol], group["low"], group["high"], alpha=0.2, color=palette[label])
    ax.set_yscale("log")
    _decades_axis(ax, stats[xcol])
    ax.set_xlabel("passes over the data" if x == "pass" else "time in solver kernels (s)")
    ax.set_ylabel("relative error to non-private optimum")
    ax.legend(title="solver (best configuration)")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


def quasi_sparsity_alpha(w, tau=5):
    """Smallest alpha such that ``w`` is (alpha, tau)-quasi-sparse (DP-GCD
    Section 4.4): at most ``tau`` entries exceed alpha in magnitude, i.e. the
    (tau + 1)-th largest |w_j| (0 when w has at most tau entries)."""
    magnitude = np.sort(np.abs(np.asarray(w, dtype=np.float64)))[::-1]
    return float(magnitude[tau]) if magnitude.size > tau else 0.0


def plot_solution_histogram(w, path, tau=5, title=None):
    """Histogram of |w*| with the alpha of (alpha, tau)-quasi-sparsity (DP-GCD
    Figure 2); logarithmic counts, as the paper's.

    Parameters
    ----------
    w : array, shape (n_features,)
        Non-private solution (the reference stage's ``w``).
    path : str
        PNG file to write.
    tau : int, default=5
    title : str, optional
    """
    magnitude = np.abs(np.asarray(w, dtype=np.float64))
    alpha = quasi_sparsity_alpha(magnitude, tau)
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.hist(magnitude, bins=50, color=sns.color_palette()[0])
    ax.axvline(alpha, color="purple", label=f"alpha = {alpha:.3g} ((alpha, {tau})-quasi-sparse)")
    ax.set_yscale("log")
    ax.set_xlabel("|w*_j|")
    ax.set_ylabel("number of coordinates")
    ax.legend()
    ax.set_title((title + ": " if title else "") + f"||w*||_0 = {np.count_nonzero(magnitude)}")
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)
