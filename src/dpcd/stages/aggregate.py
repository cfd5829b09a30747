"""``dpcd aggregate``: the rule of ``aggregate.smk``."""

import json
from pathlib import Path

import numpy as np

from dpcd.data.io import atomic_write
from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import add_command, read_json

def cmd_aggregate(args):
    """Tables and figures of one experiment; its MLflow experiment, the solve
    jobs' runs ingested (those not in the store already), tables and figures
    logged to its parent run."""
    import pandas as pd

    from dpcd.report import markdown_table, plot_rel_error, plot_solution_histogram, summary_table
    from dpcd.report.metrics import experiment_metrics, nonprivate_inputs
    from dpcd.tracking import ingest_experiment, log_experiment_artifacts, processed_dataset

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
    info, ingest = ingest_experiment(args.mlflow_experiment, args.mlflow_runs,
                                     dataset=processed_dataset(args.data))
    log_experiment_artifacts(
        info, [args.csv, args.md, args.figure_passes, args.figure_time, args.figure_solution],
        tags={"privacy.nonprivate_inputs": ",".join(nonprivate)},
        metrics=experiment_metrics(table, w_star),
    )
    write_json(args.mlflow, {**info, "ingest": ingest})


def register(subparsers):
    """Add ``aggregate`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "aggregate", cmd_aggregate,
                    "tables and figures of one experiment; its solve jobs' runs into MLflow")
    p.add_argument("--experiment", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--mlflow-runs", nargs="+", required=True,
                   help="the solve jobs' MLflow runs files")
    p.add_argument("--mlflow-experiment", required=True, help="MLflow experiment name")
    p.add_argument("--reference", required=True)
    p.add_argument("--data", required=True,
                   help="the processed dataset: the MLflow input (name, digest, source) of its runs")
    p.add_argument("--mlflow", required=True,
                   help="JSON out: the MLflow experiment, parent run and ingestion")
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--figure-passes", required=True)
    p.add_argument("--figure-solution", required=True, help="histogram of |w*| (DP-GCD Figure 2)")
    p.add_argument("--figure-time", required=True)
