"""Are two finished workflow runs' tables within seed noise of each other?

For example the same config run with ``noise: fast`` and ``noise: secure``
(docs/secure_noise.md, "In the workflow"). Per cell (experiment, solver,
epsilon, passes), Welch's two-sample t-test on the relative error:

* the selection tables (``results/tables/<experiment>.csv``), from their
  means, standard deviations and seed counts (the seeds of the selected
  configuration);
* the fresh-seed re-runs (``results/fresh/``), from the final iterate of
  every fresh seed.

    python bench/compare_runs.py WORKDIR_A WORKDIR_B [--level 0.01]

Prints every cell's p-value and how many are below the level, beside the
number of false alarms expected if every cell's laws were equal.
"""
import argparse
import glob
import os

import numpy as np
import pandas as pd
from scipy import stats

CELL = ["experiment", "solver", "epsilon", "passes"]


def selection_cells(workdir):
    frames = []
    for path in sorted(glob.glob(os.path.join(workdir, "results", "tables", "*.csv"))):
        table = pd.read_csv(path)
        if "rel_error_mean" not in table:
            continue
        frames.append(table.assign(experiment=os.path.basename(path)[:-4]))
    table = pd.concat(frames, ignore_index=True)
    return table.set_index(CELL)[["rel_error_mean", "rel_error_std", "n_seeds", "config_id"]]


def fresh_cells(workdir):
    files = sorted(glob.glob(os.path.join(workdir, "results", "fresh", "*", "*.parquet")))
    runs = pd.concat([pd.read_parquet(path) for path in files], ignore_index=True)
    runs = runs[runs["pass"] == runs["passes"]]  # each fresh seed's final iterate
    return runs.groupby(CELL)["rel_error"].apply(np.asarray)


def compare(a, b, level):
    rows = []
    sel_a, sel_b = selection_cells(a), selection_cells(b)
    for key in sel_a.index.intersection(sel_b.index):
        x, y = sel_a.loc[key], sel_b.loc[key]
        if min(x.n_seeds, y.n_seeds) < 2:
            continue
        p = stats.ttest_ind_from_stats(x.rel_error_mean, x.rel_error_std, x.n_seeds,
                                       y.rel_error_mean, y.rel_error_std, y.n_seeds,
                                       equal_var=False).pvalue
        rows.append(("selection", *key, x.rel_error_mean, y.rel_error_mean, p,
                     x.config_id == y.config_id))
    fr_a, fr_b = fresh_cells(a), fresh_cells(b)
    for key in fr_a.index.intersection(fr_b.index):
        x, y = fr_a[key], fr_b[key]
        p = stats.ttest_ind(x, y, equal_var=False).pvalue
        rows.append(("fresh", *key, x.mean(), y.mean(), p, None))
    table = pd.DataFrame(rows, columns=["table", *CELL, "mean_a", "mean_b", "p_value",
                                        "same_config"])
    # identical constant cells (e.g. a solver stuck at its start) have no variance
    table["p_value"] = table["p_value"].fillna(1.0)
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--level", type=float, default=0.01)
    args = parser.parse_args()
    table = compare(args.a, args.b, args.level)
    with pd.option_context("display.max_rows", None, "display.width", 160):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for name, part in table.groupby("table"):
        below = int((part.p_value < args.level).sum())
        print(f"{name}: {len(part)} cells, {below} below {args.level} "
              f"(expected false alarms {args.level * len(part):.2f}); "
              f"smallest p-value {part.p_value.min():.3g}")
    sel = table[table.table == "selection"]
    print(f"selection: the same configuration chosen in {int(sel.same_config.sum())} "
          f"of {len(sel)} cells")


if __name__ == "__main__":
    main()
