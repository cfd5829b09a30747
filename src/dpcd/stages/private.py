"""``dpcd solve-private``: the rule of ``private.smk`` (``search: private``)."""

import json
import logging
import time

import numpy as np

from dpcd.data.io import atomic_write
from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import add_command, read_json

log = logging.getLogger("dpcd")


def cmd_solve_private(args):
    """Selection seed ``--chunk``'s private searches of one solver entry
    (:func:`dpcd.tuning.workflow.run_private_chunk`): the released runs'
    table, every candidate's and released run for MLflow, the job's timing."""
    from dpcd import algorithms
    from dpcd.sweep.problem import load_problem
    from dpcd.tracking.payload import private_search_runs
    from dpcd.tracking.runs_file import job_name, write_mlflow_runs
    from dpcd.tuning.workflow import run_private_chunk

    from dpcd.privacy import cache

    wall = time.perf_counter()
    spec = json.loads(args.spec)
    problem = load_problem(args.data, spec["problem"], args.smoothness)
    reference = read_json(args.reference)
    split = {"loading": time.perf_counter() - wall}
    start = time.perf_counter()
    algorithms.warmup([spec.get("adapter", spec["solver"])])
    split["jit"] = time.perf_counter() - start
    calibration0 = cache.STATS["seconds"]
    w_star = np.asarray(reference["w"], dtype=np.float64) if "w" in reference else None
    table, records = run_private_chunk(spec, args.chunk, problem, reference["objective"],
                                       w_star=w_star)
    split["calibration"] = cache.STATS["seconds"] - calibration0
    split["kernels"] = float(sum(r.time.sum() for r, role in records
                                 if role["role"] == "candidate"))
    candidates = len(records) - sum(role["role"] == "released" for _, role in records)
    log.info("selection seed %d: %d candidates, %d released", args.chunk, candidates,
             len(records) - candidates)
    job = job_name(spec["experiment"], args.chunk, spec["solver"], "private")
    start = time.perf_counter()
    write_mlflow_runs(args.mlflow_runs, job,
                      private_search_runs(records, {**spec, "chunk": args.chunk}, problem))
    split["mlflow"] = time.perf_counter() - start
    atomic_write(args.out, lambda tmp: table.to_parquet(tmp, index=False))
    split["wall"] = time.perf_counter() - wall
    split["other"] = split["wall"] - sum(v for k, v in split.items() if k != "wall")
    write_json(args.timing, {"experiment": spec["experiment"], "solver": spec["solver"],
                             "chunk": args.chunk, "configurations": candidates,
                             "stage": "private", "seeds": 1, "seconds": split})


def cmd_private_compare(args):
    """A finished ``search: private`` workflow's tables beside
    the fresh tables of the same experiments tuned on the private data; the
    section goes into (or replaces itself in) ``--summary``, one figure per paper."""
    from pathlib import Path

    import pandas as pd

    from dpcd.report.private import (
        comparison_markdown,
        comparison_table,
        conclusions,
        plot_comparison,
    )
    from dpcd.report.tables import read_table

    baseline = {p.stem: read_table(p) for p in sorted(Path(args.baseline).glob("*.csv"))}
    private = {p.stem: read_table(p) for p in sorted(Path(args.private).glob("*.csv"))}
    runs = {}
    if args.baseline_runs:  # results/fresh/<experiment>.parquet
        runs["baseline_runs"] = {p.stem: pd.read_parquet(p)
                                 for p in sorted(Path(args.baseline_runs).glob("*.parquet"))}
    if args.private_runs:  # results/runs/<experiment>/<solver>/private/chunk<k>.parquet
        root = Path(args.private_runs)
        runs["private_runs"] = {
            name: pd.concat([pd.read_parquet(p) for p in files])
            for name in private
            if (files := sorted((root / name).glob("*/private/chunk*.parquet")))}
    table = comparison_table(baseline, private, **runs)
    if table.empty:
        raise ValueError(f"no experiment in both {args.baseline} and {args.private}")
    verdicts = conclusions(table)
    atomic_write(args.out, lambda tmp: table.to_csv(tmp, index=False))
    verdict_path = Path(args.out).with_name(Path(args.out).stem + "_conclusions.csv")
    atomic_write(verdict_path, lambda tmp: verdicts.to_csv(tmp, index=False))
    section = comparison_markdown(table, verdicts)
    Path(args.figures).mkdir(parents=True, exist_ok=True)
    for paper in sorted(table["paper"].unique()):
        name = paper.lower().replace(" ", "_").replace("-", "")
        path = Path(args.figures) / f"private_tuning_{name}.png"
        atomic_write(path, lambda tmp: plot_comparison(table, paper, tmp))
        section += f"\nFigure: `{path}`.\n"
    if args.section:  # the workflow's rule: the summary rule appends it
        atomic_write(args.section, lambda tmp: Path(tmp).write_text(section))
    else:  # by hand: into (or replacing itself in) an existing summary
        header = section.strip().splitlines()[0]
        text = Path(args.summary).read_text() if Path(args.summary).exists() else ""
        text = text.split("\n" + header)[0].rstrip("\n") + "\n" + section
        atomic_write(args.summary, lambda tmp: Path(tmp).write_text(text))
    log.info("%d cells compared; %d of %d verdicts survive", len(table),
             int(verdicts["survives"].sum()) if len(verdicts) else 0, len(verdicts))


def register(subparsers):
    """Add ``solve-private`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "solve-private", cmd_solve_private,
                    "search private: one selection seed's private searches of a solver")
    p.add_argument("--spec", required=True, help="JSON written by the solve_private rule")
    p.add_argument("--chunk", type=int, required=True, help="the selection seed's index")
    p.add_argument("--data", required=True)
    p.add_argument("--smoothness", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--mlflow-runs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timing", required=True)

    p = add_command(subparsers, "private-compare", cmd_private_compare,
                    "private tuning beside tuning on the private data")
    p.add_argument("--baseline", required=True,
                   help="results/tables/fresh of the workflow tuned on the private data")
    p.add_argument("--private", required=True, help="results/tables of the search: private run")
    p.add_argument("--baseline-runs", help="results/fresh of the baseline (medians; optional)")
    p.add_argument("--private-runs", help="results/runs of the private run (medians; optional)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--summary", help="summary markdown the section goes into")
    where.add_argument("--section", help="markdown file of the section alone (the workflow's)")
    p.add_argument("--out", required=True, help="CSV of the paired cells")
    p.add_argument("--figures", required=True, help="directory of the figures (one per paper)")
