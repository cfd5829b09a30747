"""``dpcd fresh`` and ``dpcd fresh-report``: the rules of ``fresh.smk`` after
the fresh solve jobs (report.fresh_seeds > 0)."""

import json
from pathlib import Path

from dpcd.data.io import atomic_write
from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import add_command, read_json


def _per_experiment(args, names):
    """Check that each of ``names`` (options of ``args``) gives one path per
    experiment of ``--experiments``."""
    if any(len(getattr(args, name)) != len(args.experiments) for name in names):
        options = ", ".join("--" + name.replace("_", "-") for name in names)
        raise ValueError(f"{options} take one path per experiment of --experiments")


def cmd_fresh(args):
    """For every experiment with fresh seeds: the fresh solve jobs' re-runs
    gathered, and beside the selection (the selected-on and fresh numbers side
    by side). One process for all: the imports cost more than the work."""
    import pandas as pd

    from dpcd.report.fresh import fresh_markdown, fresh_table
    from dpcd.report.tables import read_table

    spec = json.loads(args.spec)
    _per_experiment(args, ("selection", "out", "csv", "md"))
    runs = pd.concat([pd.read_parquet(path) for path in args.runs], ignore_index=True)
    for k, name in enumerate(args.experiments):
        # the selection table as every later reader sees it (read_table's dtypes)
        selected = read_table(args.selection[k])
        mine = runs[runs["experiment"] == name].reset_index(drop=True)
        if mine.empty:
            raise ValueError(f"experiment {name}: no fresh runs among --runs")
        atomic_write(args.out[k], lambda tmp: mine.to_parquet(tmp, index=False))
        table = fresh_table(selected, mine)
        atomic_write(args.csv[k], lambda tmp: table.to_csv(tmp, index=False))
        text = fresh_markdown(table, name, spec["fresh_seeds"])
        atomic_write(args.md[k], lambda tmp: Path(tmp).write_text(text))


def cmd_fresh_report(args):
    """For every experiment with fresh seeds: the fresh curves; the fresh solve
    jobs' MLflow runs ingested into the experiment's parent run (written by its
    aggregate job), with the fresh tables and curves as its artifacts under
    ``fresh/``. Apart from ``dpcd fresh`` so that the summary, which reads only
    the tables, need not wait for its MLflow and seaborn."""
    import pandas as pd

    from dpcd.report import plot_rel_error
    from dpcd.report.fresh import chosen_curves, fresh_metrics
    from dpcd.report.tables import read_table
    from dpcd.tracking import log_experiment_artifacts, processed_dataset
    from dpcd.tracking.ingest import ingest_runs_files
    from dpcd.tracking.mlflow_log import log_dataset
    from dpcd.tracking.runs_file import is_fresh_job, read_mlflow_runs

    spec = json.loads(args.spec)
    _per_experiment(args, ("runs", "csv", "md", "selection", "mlflow_info", "mlflow", "figure",
                           "data"))
    files = {}  # each runs file's experiment, from the job its header names
    for path in args.mlflow_runs:
        files.setdefault(read_mlflow_runs(path)[0].split("/")[0], []).append(path)
    for k, name in enumerate(args.experiments):
        runs = pd.read_parquet(args.runs[k])
        chosen = chosen_curves(read_table(args.selection[k]), spec["select_by"][name])
        atomic_write(args.figure[k], lambda tmp: plot_rel_error(
            runs, tmp, title=f"{name} (fresh seeds)", chosen=chosen))
        info = {key: v for key, v in read_json(args.mlflow_info[k]).items() if key != "ingest"}
        # the parent has the dataset already (its aggregate job): the same entity
        dataset = log_dataset(info, processed_dataset(args.data[k]))
        ingest = ingest_runs_files(info, files.get(name, []), replaces=is_fresh_job,
                                   dataset=dataset)
        log_experiment_artifacts(info, [args.csv[k], args.md[k], args.figure[k]],
                                 tags={"dpcd.fresh_seeds": spec["fresh_seeds"]},
                                 metrics=fresh_metrics(read_table(args.csv[k])),
                                 artifact_path="fresh")
        write_json(args.mlflow[k], {**info, "ingest": ingest})


def register(subparsers):
    """Add ``fresh`` and ``fresh-report`` to the ``dpcd`` parser."""
    each = "one path per experiment of --experiments, in its order"
    _fresh_command(subparsers, "fresh", cmd_fresh,
                   "the selected configurations' runs on fresh seeds beside the "
                   "selection, for every experiment: tables", {
                       "--runs": "the fresh solve jobs' tables",
                       "--selection": f"each experiment's table: {each}",
                       "--out": f"the fresh runs' tidy tables: {each}",
                       "--csv": f"the fresh tables: {each}",
                       "--md": f"the fresh tables in markdown: {each}"})
    _fresh_command(subparsers, "fresh-report", cmd_fresh_report,
                   "the fresh runs' curves, for every experiment; their runs, "
                   "tables and curves logged to MLflow", {
                       "--mlflow-runs": "the fresh solve jobs' MLflow runs files",
                       "--runs": f"the fresh runs (dpcd fresh --out): {each}",
                       "--csv": f"the fresh tables: {each}",
                       "--md": f"the fresh tables in markdown: {each}",
                       "--selection": f"each experiment's table: {each}",
                       "--mlflow-info": f"each aggregate job's JSON (its parent run): {each}",
                       "--mlflow": f"JSON out, the parent run and ingestion: {each}",
                       "--figure": f"the fresh curves: {each}",
                       "--data": "the processed datasets, the MLflow input (name, digest, "
                                 f"source) of the fresh runs: {each}"})


def _fresh_command(subparsers, name, func, help, paths):
    """A command over every experiment with fresh seeds: ``--spec``,
    ``--experiments``, and the options ``paths`` ({option: help}) of one or
    more paths each."""
    p = add_command(subparsers, name, func, help)
    p.add_argument("--spec", required=True,
                   help="JSON: fresh_seeds, select_by (experiment -> selection rule)")
    p.add_argument("--experiments", nargs="+", required=True)
    for option, text in paths.items():
        p.add_argument(option, nargs="+", required=True, help=text)
