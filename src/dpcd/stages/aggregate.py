"""``dpcd aggregate`` and ``dpcd aggregate-report``: the rules of ``aggregate.smk``."""

import json
from pathlib import Path

import numpy as np

from dpcd.data.io import atomic_write
from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import add_command, read_json


def _read_runs(paths, experiment):
    import pandas as pd

    runs = pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)
    if runs.empty:
        raise ValueError(f"experiment {experiment}: the solve stage produced no runs")
    return runs


def cmd_aggregate(args):
    """The tables of one experiment: its best configurations per solver and
    passes. Figures and MLflow are ``dpcd aggregate-report``'s, so that what
    reads the tables (the fresh seeds) waits for neither, and pays neither's
    imports (seaborn, MLflow: seconds a job)."""
    from dpcd.report.metrics import nonprivate_inputs
    from dpcd.report.tables import markdown_table, summary_table

    runs = _read_runs(args.runs, args.experiment)
    table = summary_table(runs, json.loads(args.spec).get("select_by", "last_objective"))
    atomic_write(args.csv, lambda tmp: table.to_csv(tmp, index=False))
    text = markdown_table(table, args.experiment, nonprivate_inputs(runs))
    atomic_write(args.md, lambda tmp: Path(tmp).write_text(text))


def cmd_aggregate_report(args):
    """The figures of one experiment; its MLflow experiment, the solve jobs'
    runs ingested (those not in the store already), tables and figures
    logged to its parent run."""
    from dpcd.report.figures import plot_rel_error, plot_solution_histogram
    from dpcd.report.metrics import experiment_metrics, nonprivate_inputs
    from dpcd.report.tables import read_table
    from dpcd.tracking import ingest_experiment, log_experiment_artifacts, processed_dataset

    runs = _read_runs(args.runs, args.experiment)
    select_by = json.loads(args.spec).get("select_by", "last_objective")
    for path, x in ((args.figure_passes, "pass"), (args.figure_time, "time")):
        atomic_write(path, lambda tmp: plot_rel_error(
            runs, tmp, x=x, title=args.experiment, select_by=select_by))
    w_star = np.asarray(read_json(args.reference)["w"], dtype=np.float64)
    atomic_write(args.figure_solution,
                 lambda tmp: plot_solution_histogram(w_star, tmp, title=args.experiment))
    info, ingest = ingest_experiment(args.mlflow_experiment, args.mlflow_runs,
                                     dataset=processed_dataset(args.data))
    log_experiment_artifacts(
        info, [args.csv, args.md, args.figure_passes, args.figure_time, args.figure_solution],
        tags={"privacy.nonprivate_inputs": ",".join(nonprivate_inputs(runs))},
        # the table as every later reader sees it (read_table's dtypes)
        metrics=experiment_metrics(read_table(args.csv), w_star),
    )
    write_json(args.mlflow, {**info, "ingest": ingest})


def register(subparsers):
    """Add ``aggregate`` and ``aggregate-report`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "aggregate", cmd_aggregate,
                    "the tables of one experiment: its best configurations")
    p.add_argument("--experiment", required=True)
    p.add_argument("--spec", required=True, help="JSON: select_by")
    p.add_argument("--runs", nargs="+", required=True, help="the solve jobs' tables")
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)

    p = add_command(subparsers, "aggregate-report", cmd_aggregate_report,
                    "figures of one experiment; its solve jobs' runs, tables and figures "
                    "into MLflow")
    p.add_argument("--experiment", required=True)
    p.add_argument("--spec", required=True, help="JSON: select_by")
    p.add_argument("--runs", nargs="+", required=True, help="the solve jobs' tables")
    p.add_argument("--mlflow-runs", nargs="+", required=True,
                   help="the solve jobs' MLflow runs files")
    p.add_argument("--mlflow-experiment", required=True, help="MLflow experiment name")
    p.add_argument("--reference", required=True)
    p.add_argument("--data", required=True,
                   help="the processed dataset: the MLflow input (name, digest, source) of its runs")
    p.add_argument("--csv", required=True, help="the table (dpcd aggregate)")
    p.add_argument("--md", required=True, help="the table in markdown (dpcd aggregate)")
    p.add_argument("--mlflow", required=True,
                   help="JSON out: the MLflow experiment, parent run and ingestion")
    p.add_argument("--figure-passes", required=True)
    p.add_argument("--figure-solution", required=True, help="histogram of |w*| (DP-GCD Figure 2)")
    p.add_argument("--figure-time", required=True)
