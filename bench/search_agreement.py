"""Staged vs exhaustive selection (issue 25), from a finished ``search: grid`` run.

A run's streams depend on its seed and configuration only, so the screen of
``search: staged`` is the grid's seed-0 runs and its confirm is the grid's runs
of the kept configurations (tests/workflow/test_staged_search.py checks the
confirm repeats the screen's seed 0 bit for bit). Per (solver, epsilon, passes):
agreed (same configuration), within noise (the staged choice's mean criterion
over all seeds within one standard error of the grid's choice's), disagrees.

    python bench/search_agreement.py WORKDIR KEEP [EXPERIMENT=validation ...]
"""
import glob
import os
import sys

import pandas as pd
from dpcd.report.tables import GROUP, best_configurations, final_iterates, last_checkpoints
from dpcd.report.search import keep_best
from dpcd.sweep.metrics import HIGHER_IS_BETTER

workdir, keep = sys.argv[1], int(sys.argv[2])
select_by = dict(a.split("=") for a in sys.argv[3:])
counts = {"agreed": 0, "within noise": 0, "disagrees": 0}
rows = []
for exp in sorted(os.listdir(f"{workdir}/results/runs")):
    paths = sorted(glob.glob(f"{workdir}/results/runs/{exp}/*/chunk*.parquet"))
    if not paths:
        continue
    runs = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    rule = select_by.get(exp, "last_objective")
    grid = best_configurations(runs, rule)
    kept = keep_best(runs[runs["seed_index"] == 0], rule, keep)
    staged = best_configurations(runs[runs["config_id"].isin(kept["config_id"])], rule)
    if rule == "validation":
        last, col = last_checkpoints(runs), "val_metric"
        sign = -1 if HIGHER_IS_BETTER[last["metric"].dropna().unique()[0]] else 1
    else:
        last, col, sign = final_iterates(runs), "objective", 1
    stats = last.groupby("config_id")[col].agg(["mean", "sem"])
    m = grid.merge(staged, on=GROUP, suffixes=("_grid", "_staged"))
    for r in m.itertuples():
        g, s = stats.loc[r.config_id_grid], stats.loc[r.config_id_staged]
        if r.config_id_grid == r.config_id_staged:
            verdict = "agreed"
        elif sign * s["mean"] <= sign * g["mean"] + g["sem"]:
            verdict = "within noise"
        else:
            verdict = "disagrees"
        counts[verdict] += 1
        rows.append(dict(experiment=exp, solver=r.solver, epsilon=r.epsilon, passes=r.passes,
                         verdict=verdict, criterion=col, grid_mean=g["mean"], grid_sem=g["sem"],
                         staged_mean=s["mean"]))
table = pd.DataFrame(rows)
print(workdir, "keep", keep, counts)
per = table.groupby(["experiment", "verdict"]).size().unstack(fill_value=0)
print(per.to_string())
bad = table[table.verdict == "disagrees"]
if len(bad):
    print(bad.to_string(index=False, float_format=lambda v: f"{v:.6g}"))
