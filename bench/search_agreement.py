"""Staged vs exhaustive selection, from a finished ``search: grid`` run.

A run's streams depend on its seed and configuration only, so the stages of
``search: staged`` are the grid's runs of their configurations
(:func:`dpcd.sweep.staged.replay_staged`; tests/workflow/test_staged_search.py
checks the replay against the workflow). Per (solver, epsilon, passes):
agreed (same configuration), within noise (the staged choice's mean criterion
over all seeds within one standard error of the grid's choice's), disagrees.

    python bench/search_agreement.py WORKDIR CONFIG [--keep 3] [--stride 3] [--refine 2]
        [--fidelity 1 --promote 6] [--staged STAGED_WORKDIR]

CONFIG is the config the grid run used (its experiments, grids, select_by).
With ``--staged``, the selection is not replayed but read from a finished
``search: staged`` run of the same CONFIG (``--config search=staged``): its
runs share the grid's streams, so its confirm's kept configurations are
judged on the grid's seeds. This is how a multi-fidelity screen is measured
with ``select_by: validation`` (an exhaustive run records no validation
metric before a run's end, so it cannot be replayed).
"""
import argparse
import copy
import glob
import os

import pandas as pd
import yaml
from snakemake.utils import validate

from dpcd import plan
from dpcd.sweep.staged import replay_staged
from dpcd.report.tables import GROUP, best_configurations, final_iterates, last_checkpoints
from dpcd.sweep.grid import epsilons_of, expanded_grid
from dpcd.problems.metrics import HIGHER_IS_BETTER

SCHEMA = os.path.join(os.path.dirname(__file__), "..", "workflow", "schemas",
                      "config.schema.yaml")


def grids_of(p, name):
    """Solver -> (configurations, grid, axes) of one experiment of a plan."""
    exp = p.experiment(name)
    out = {}
    for solver in sorted(exp["solvers"]):
        _, grid, passes = plan.solver_entry(exp, solver)
        axes, configs = expanded_grid(solver, grid, passes, epsilons_of(exp["privacy"]))
        out[solver] = (configs, grid, axes)
    return out


def agreement(runs, rule, kept):
    """Verdict rows per (solver, epsilon, passes): grid's choice vs the staged one."""
    grid = best_configurations(runs, rule)
    staged = best_configurations(runs[runs["config_id"].isin(kept["config_id"])], rule)
    if rule == "validation":
        last, col = last_checkpoints(runs), "val_metric"
        sign = -1 if HIGHER_IS_BETTER[last["metric"].dropna().unique()[0]] else 1
    else:
        last, col, sign = final_iterates(runs), "objective", 1
    stats = last.groupby("config_id")[col].agg(["mean", "sem"])
    rows = []
    for r in grid.merge(staged, on=GROUP, suffixes=("_grid", "_staged")).itertuples():
        g, s = stats.loc[r.config_id_grid], stats.loc[r.config_id_staged]
        if r.config_id_grid == r.config_id_staged:
            verdict = "agreed"
        elif sign * s["mean"] <= sign * g["mean"] + g["sem"]:
            verdict = "within noise"
        else:
            verdict = "disagrees"
        rows.append(dict(solver=r.solver, epsilon=r.epsilon, passes=r.passes,
                         verdict=verdict, criterion=col, grid_mean=g["mean"],
                         grid_sem=g["sem"], staged_mean=s["mean"]))
    return pd.DataFrame(rows)


def staged_selection(workdir, name):
    """What a finished staged run kept for its confirm, and each stage's count."""
    counts = {}
    for stage in ("screen", "refine", "promote", "confirm"):
        paths = sorted(glob.glob(f"{workdir}/results/runs/{name}/*/{stage}/chunk*.parquet"))
        if paths:
            ids = pd.concat([pd.read_parquet(path, columns=["config_id"]) for path in paths])
            counts[stage] = ids["config_id"].nunique()
    # the confirm reads the last select's: after the promote, the refine or the screen
    for stage in ("promote", "refine", "screen"):
        path = f"{workdir}/results/selection/{name}/{stage}.csv"
        if os.path.exists(path):
            return pd.read_csv(path), counts
    raise FileNotFoundError(f"{workdir}: no selection of experiment {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir")
    parser.add_argument("config")
    parser.add_argument("--keep", type=int, default=3)
    parser.add_argument("--stride", type=int, default=3)
    parser.add_argument("--refine", type=int, default=2)
    parser.add_argument("--fidelity", type=float, default=1.0)
    parser.add_argument("--promote", type=int, default=6)
    parser.add_argument("--staged", help="a finished search: staged run of CONFIG")
    args = parser.parse_args()
    with open(args.config) as fh:
        config = yaml.safe_load(fh)
    validate(config, SCHEMA)
    p = plan.Plan(copy.deepcopy(config))
    tables, ran = [], []
    for name in p.experiments:
        paths = sorted(glob.glob(f"{args.workdir}/results/runs/{name}/*/chunk*.parquet"))
        if not paths:
            continue
        runs = pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)
        rule = p.experiment(name)["select_by"]
        if args.staged:
            kept, counts = staged_selection(args.staged, name)
        else:
            kept, counts = replay_staged(runs, grids_of(p, name), rule, args.keep,
                                         args.stride, args.refine, args.fidelity,
                                         args.promote)
        tables.append(agreement(runs, rule, kept).assign(experiment=name))
        ran.append(dict(experiment=name, grid=runs["config_id"].nunique(), **counts))
    table = pd.concat(tables, ignore_index=True)
    how = (f"staged run {args.staged}" if args.staged else
           f"keep {args.keep} stride {args.stride} refine {args.refine} "
           f"fidelity {args.fidelity} promote {args.promote}")
    print(f"{args.workdir} {how}:",
          table["verdict"].value_counts().to_dict())
    print(pd.DataFrame(ran).to_string(index=False))
    print(table.groupby(["experiment", "verdict"]).size().unstack(fill_value=0).to_string())
    off = table[table.verdict != "agreed"]
    if len(off):
        print(off.to_string(index=False, float_format=lambda v: f"{v:.6g}"))


if __name__ == "__main__":
    main()
