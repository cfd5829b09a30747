"""``dpcd aggregate``, ``lambda-table``, ``summary``: the rules of ``aggregate.smk``."""

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


def cmd_lambda_table(args):
    """Best relative error per solver against lambda (experiments' alpha_grid)."""
    from dpcd.report.lambdas import lambda_table, plot_lambda
    from dpcd.report.tables import read_table

    if not len(args.experiments) == len(args.tables) == len(args.references):
        raise ValueError("--experiments, --tables and --references must pair up")
    tables = {name: read_table(path) for name, path in zip(args.experiments, args.tables)}
    references = {name: read_json(path) for name, path in zip(args.experiments, args.references)}
    fresh = {Path(path).stem: read_table(path) for path in args.fresh_tables or []}
    table = lambda_table(json.loads(args.groups), tables, references, fresh)
    atomic_write(args.csv, lambda tmp: table.to_csv(tmp, index=False))
    atomic_write(args.figure, lambda tmp: plot_lambda(table, tmp))


def cmd_summary(args):
    """Tables 2 and 3 across experiments, beside the published values if given."""
    import pandas as pd

    from dpcd.report import summary as s
    from dpcd.report.metrics import summary_metrics
    from dpcd.report.search import search_markdown
    from dpcd.report.tables import read_table
    from dpcd.tracking import log_experiment_artifacts, setup_experiment

    if len(args.experiments) != len(args.tables):
        raise ValueError("--experiments and --tables must pair up")
    tables = {name: read_table(path) for name, path in zip(args.experiments, args.tables)}
    published = s.read_published(args.published) if args.published else None
    table = s.stack_experiments(tables)
    if args.fresh_tables:  # results/tables/fresh/<experiment>.csv
        table = s.add_fresh(table, {Path(path).stem: read_table(path) for path in args.fresh_tables})
    # Table 3 and the speed-ups against the paper from runs timed alone
    table = s.compare(s.solo_times(table), published)
    atomic_write(args.csv, lambda tmp: table.to_csv(tmp, index=False))
    timings = [read_json(path) for path in args.timings or []]
    overhead = s.solve_overhead(timings)
    text = s.summary_markdown(table, published=published) + s.fresh_summary_markdown(table)
    if args.lambda_table:
        text += s.lambda_summary_markdown(pd.read_csv(args.lambda_table))
    ingests = [read_json(path)["ingest"] for path in args.ingests or []]
    text += s.overhead_markdown(overhead, ingests) + search_markdown(timings) + s.private_markdown(tables)
    atomic_write(args.md, lambda tmp: Path(tmp).write_text(text))
    log_experiment_artifacts(setup_experiment(args.mlflow_experiment), [args.csv, args.md],
                             metrics=summary_metrics(table, published, overhead, ingests))


def register(subparsers):
    """Add ``aggregate``, ``lambda-table`` and ``summary`` to the ``dpcd`` parser."""
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

    p = add_command(subparsers, "lambda-table", cmd_lambda_table,
                    "best relative error per solver against lambda")
    p.add_argument("--experiments", nargs="+", required=True)
    p.add_argument("--tables", nargs="+", required=True, help="each experiment's table CSV")
    p.add_argument("--references", nargs="+", required=True, help="each experiment's reference JSON")
    p.add_argument("--fresh-tables", nargs="*", help="their fresh tables, if any")
    p.add_argument("--groups", required=True, help="JSON: experiment -> {base, alpha | fraction}")
    p.add_argument("--csv", required=True)
    p.add_argument("--figure", required=True)

    p = add_command(subparsers, "summary", cmd_summary,
                    "tables across experiments, beside published values")
    p.add_argument("--experiments", nargs="+", required=True)
    p.add_argument("--tables", nargs="+", required=True, help="each experiment's table CSV")
    p.add_argument("--published", help="CSV of published cells to compare with")
    p.add_argument("--timings", nargs="*", help="the solve jobs' overhead ledgers (JSON)")
    p.add_argument("--ingests", nargs="*",
                   help="results/mlflow/<experiment>.json: the runs' MLflow ingestion")
    p.add_argument("--fresh-tables", nargs="*",
                   help="results/tables/fresh/<experiment>.csv: numbers on fresh seeds")
    p.add_argument("--lambda-table", help="CSV of dpcd lambda-table (regularisation sensitivity)")
    p.add_argument("--mlflow-experiment", required=True)
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
