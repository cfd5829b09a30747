"""``dpcd lambda-table``, ``summary``: the rules of ``summary.smk``."""

import json
from pathlib import Path

from dpcd.data.io import atomic_write
from dpcd.stages.common import add_command, read_json


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
        fresh = {Path(path).stem: read_table(path) for path in args.fresh_tables}
        table = s.add_fresh(table, fresh)
    # Table 3 and the speed-ups against the paper from runs timed alone
    table = s.compare(s.solo_times(table), published)
    atomic_write(args.csv, lambda tmp: table.to_csv(tmp, index=False))
    timings = [read_json(path) for path in args.timings or []]
    overhead = s.solve_overhead(timings)
    text = s.summary_markdown(table, published=published) + s.fresh_summary_markdown(table)
    if args.lambda_table:
        text += s.lambda_summary_markdown(pd.read_csv(args.lambda_table))
    ingests = [read_json(path)["ingest"] for path in args.ingests or []]
    text += (s.overhead_markdown(overhead, ingests) + search_markdown(timings)
             + s.private_markdown(tables))
    for section in args.sections or []:  # e.g. results/private_tuning.md
        text += Path(section).read_text()
    atomic_write(args.md, lambda tmp: Path(tmp).write_text(text))
    log_experiment_artifacts(setup_experiment(args.mlflow_experiment), [args.csv, args.md],
                             metrics=summary_metrics(table, published, overhead, ingests))


def register(subparsers):
    """Add ``lambda-table`` and ``summary`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "lambda-table", cmd_lambda_table,
                    "best relative error per solver against lambda")
    p.add_argument("--experiments", nargs="+", required=True)
    p.add_argument("--tables", nargs="+", required=True, help="each experiment's table CSV")
    p.add_argument("--references", nargs="+", required=True,
                   help="each experiment's reference JSON")
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
    p.add_argument("--sections", nargs="*",
                   help="markdown sections appended as they are (private_compare's)")
    p.add_argument("--mlflow-experiment", required=True)
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
