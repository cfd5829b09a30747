"""``dpcd paper-report``: the rule of ``report.smk``."""

import json
import os
from pathlib import Path

from dpcd.data.io import atomic_write
from dpcd.stages.common import add_command


def cmd_paper_report(args):
    """Cross-experiment figures (config report.figures) and the report page."""
    import pandas as pd

    from dpcd.report.paper import PLOTS, read_published_figures, report_markdown
    from dpcd.tracking import log_experiment_artifacts, setup_experiment

    if len(args.experiments) != len(args.tables):
        raise ValueError("--experiments and --tables must pair up")
    tables = {name: pd.read_csv(path) for name, path in zip(args.experiments, args.tables)}
    frames = [pd.read_parquet(path) for path in args.runs]
    runs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    runs = {name: group for name, group in runs.groupby("experiment")} if len(runs) else {}
    specs = json.loads(args.figures)
    if sorted(specs) != sorted(Path(p).stem for p in args.figure_paths):
        raise ValueError("--figures and --figure-paths must name the same figures")
    paths = {Path(p).stem: p for p in args.figure_paths}
    for name, spec in specs.items():
        plot = PLOTS[spec["kind"]]
        atomic_write(paths[name], lambda tmp, plot=plot, spec=spec: plot(tables, runs, tmp, spec))
    published = read_published_figures(args.published) if args.published else None
    relative = {name: os.path.relpath(path, os.path.dirname(args.md)) for name, path in paths.items()}
    text = report_markdown(tables, runs, relative, published)
    atomic_write(args.md, lambda tmp: Path(tmp).write_text(text))
    log_experiment_artifacts(setup_experiment(args.mlflow_experiment), [args.md, *args.figure_paths])


def register(subparsers):
    """Add ``paper-report`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "paper-report", cmd_paper_report,
                    "cross-experiment paper figures and report page")
    p.add_argument("--experiments", nargs="+", required=True)
    p.add_argument("--tables", nargs="+", required=True, help="each experiment's table CSV")
    p.add_argument("--runs", nargs="*", default=[], help="solve tables of the figures' experiments")
    p.add_argument("--figures", required=True, help="JSON: config report.figures")
    p.add_argument("--figure-paths", nargs="*", default=[])
    p.add_argument("--published", help="CSV of values the paper states about its figures")
    p.add_argument("--mlflow-experiment", required=True)
    p.add_argument("--md", required=True)
