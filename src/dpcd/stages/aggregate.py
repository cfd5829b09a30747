"""``dpcd aggregate``: the rule of ``aggregate.smk``."""

import json
from pathlib import Path

import numpy as np

from dpcd.data.io import atomic_write
from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import add_command, read_json

FRESH = ("fresh_spec", "data", "smoothness", "fresh_out", "fresh_csv", "fresh_md", "fresh_figure")


def cmd_aggregate(args):
    """Tables and figures of one experiment; its MLflow experiment, the solve
    jobs' runs ingested (those not in the store already), tables and figures
    logged to its parent run; then, with ``--fresh-spec``, the selected
    configurations re-run on fresh seeds (:func:`fresh_seeds`).

    One job does both: each would otherwise pay seconds of the same imports
    (MLflow, seaborn, pandas) and its own MLflow connection, once per experiment.
    """
    import pandas as pd

    from dpcd.report import markdown_table, plot_rel_error, plot_solution_histogram, summary_table
    from dpcd.report.metrics import experiment_metrics, nonprivate_inputs
    from dpcd.report.tables import read_table
    from dpcd.tracking import ingest_experiment, log_experiment_artifacts

    given = [bool(getattr(args, name)) for name in FRESH]
    if any(given) and not all(given):
        raise ValueError("--fresh-spec goes with --data, --smoothness, --fresh-out, "
                         "--fresh-csv, --fresh-md and --fresh-figure: all of them, or none")
    runs = pd.concat([pd.read_parquet(path) for path in args.runs], ignore_index=True)
    if runs.empty:
        raise ValueError(f"experiment {args.experiment}: the solve stage produced no runs")
    select_by = json.loads(args.spec).get("select_by", "last_objective")
    table = summary_table(runs, select_by)
    nonprivate = nonprivate_inputs(runs)
    atomic_write(args.csv, lambda tmp: table.to_csv(tmp, index=False))
    text = markdown_table(table, args.experiment, nonprivate)
    atomic_write(args.md, lambda tmp: Path(tmp).write_text(text))
    for path, x in ((args.figure_passes, "pass"), (args.figure_time, "time")):
        atomic_write(path, lambda tmp: plot_rel_error(
            runs, tmp, x=x, title=args.experiment, select_by=select_by))
    w_star = np.asarray(read_json(args.reference)["w"], dtype=np.float64)
    atomic_write(args.figure_solution,
                 lambda tmp: plot_solution_histogram(w_star, tmp, title=args.experiment))
    info, ingest = ingest_experiment(args.mlflow_experiment, args.mlflow_runs)
    log_experiment_artifacts(
        info, [args.csv, args.md, args.figure_passes, args.figure_time, args.figure_solution],
        tags={"privacy.nonprivate_inputs": ",".join(nonprivate)},
        metrics=experiment_metrics(table, w_star),
    )
    if args.fresh_spec:
        # the selection table as every later reader sees it (read_table's dtypes)
        fresh_seeds(args, info, read_table(args.csv))
    write_json(args.mlflow, {**info, "ingest": ingest})


def fresh_seeds(args, info, selected):
    """Re-run every solver's selected configurations (``selected``, the
    selection table) on fresh seeds (a new release), then the selected-on and
    fresh numbers side by side, the fresh curves, logged to the parent run
    ``info``."""
    import pandas as pd

    from dpcd.report import plot_rel_error
    from dpcd.report.fresh import chosen_curves, fresh_markdown, fresh_metrics, fresh_table
    from dpcd.sweep.fresh import run_fresh_solvers
    from dpcd.sweep.problem import load_problem
    from dpcd.tracking import log_configurations, log_experiment_artifacts
    from dpcd.tracking.payload import mlflow_runs

    spec = json.loads(args.fresh_spec)
    problem = load_problem(args.data, next(iter(spec["solvers"].values()))["problem"],
                           args.smoothness)
    frames = []
    for solver, runs, records, run_spec in run_fresh_solvers(
            spec, selected, problem, read_json(args.reference)):
        log_configurations(info, f"{args.experiment}/{solver}/fresh",
                           mlflow_runs(records, run_spec, problem))
        frames.append(runs)
    runs = pd.concat(frames, ignore_index=True)
    atomic_write(args.fresh_out, lambda tmp: runs.to_parquet(tmp, index=False))
    table = fresh_table(selected, runs)
    atomic_write(args.fresh_csv, lambda tmp: table.to_csv(tmp, index=False))
    text = fresh_markdown(table, args.experiment, spec["fresh_seeds"])
    atomic_write(args.fresh_md, lambda tmp: Path(tmp).write_text(text))
    chosen = chosen_curves(selected, spec.get("select_by", "last_objective"))
    atomic_write(args.fresh_figure, lambda tmp: plot_rel_error(
        runs, tmp, title=f"{args.experiment} (fresh seeds)", chosen=chosen))
    log_experiment_artifacts(info, [args.fresh_csv, args.fresh_md, args.fresh_figure],
                             tags={"dpcd.fresh_seeds": spec["fresh_seeds"]},
                             metrics=fresh_metrics(table), artifact_path="fresh")


def register(subparsers):
    """Add ``aggregate`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "aggregate", cmd_aggregate,
                    "tables and figures of one experiment; its solve jobs' runs into MLflow; "
                    "with --fresh-spec, the selected configurations re-run on fresh seeds")
    p.add_argument("--experiment", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--mlflow-runs", nargs="+", required=True,
                   help="the solve jobs' MLflow runs files")
    p.add_argument("--mlflow-experiment", required=True, help="MLflow experiment name")
    p.add_argument("--reference", required=True)
    p.add_argument("--mlflow", required=True,
                   help="JSON out: the MLflow experiment, parent run and ingestion")
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--figure-passes", required=True)
    p.add_argument("--figure-solution", required=True, help="histogram of |w*| (DP-GCD Figure 2)")
    p.add_argument("--figure-time", required=True)
    fresh = p.add_argument_group(
        "fresh seeds", "re-run the selected configurations on fresh seeds; selected-on "
        "and fresh numbers side by side (all of these, or none)")
    fresh.add_argument("--fresh-spec",
                       help="JSON: solvers (solver -> solve spec), select_by, fresh_seeds")
    fresh.add_argument("--data")
    fresh.add_argument("--smoothness")
    fresh.add_argument("--fresh-out", help="tidy table of the fresh runs (parquet)")
    fresh.add_argument("--fresh-csv")
    fresh.add_argument("--fresh-md")
    fresh.add_argument("--fresh-figure")
