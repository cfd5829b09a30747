"""Entry points of the workflow stages after the data stage.

Each subcommand is what one Snakemake rule runs: read the rule's inputs and
params, call the package, write the rule's outputs atomically (a failed job
leaves nothing Snakemake could take as done).
"""

import hashlib
import json
import logging
import os
import time
from pathlib import Path

import numpy as np

from dpcd.data.io import atomic_write
from dpcd.data.io import write_json_atomic as write_json

log = logging.getLogger("dpcd")


def read_json(path):
    with open(path) as fh:
        return json.load(fh)


def read_table(path):
    """A selection (or fresh) table; config ids stay strings (an all-digit
    id such as 123456789012, or 12e456789012, would otherwise parse as a number)."""
    import pandas as pd

    return pd.read_csv(path, dtype={"config_id": str})


# --- warmup -----------------------------------------------------------------
def cmd_warmup(args):
    """Compile kernels once into NUMBA_CACHE_DIR before parallel jobs run."""
    from dpcd import solvers

    start = time.perf_counter()
    families = solvers.warmup(args.families)
    elapsed = time.perf_counter() - start
    log.info("compiled kernels of %s in %.1f s (cache: %s)", ", ".join(families), elapsed,
             os.environ.get("NUMBA_CACHE_DIR"))
    write_json(args.out, {"seconds": elapsed, "families": families,
                          "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR")})


# --- smoothness ---------------------------------------------------------------
def cmd_smoothness(args):
    """Exact coordinate-wise smoothness constants of one dataset and loss."""
    from dpcd.data import load_dataset
    from dpcd.problems import make_problem
    from dpcd.sweep.problem import as_solver_input

    dataset = load_dataset(args.data)
    X = as_solver_input(dataset.X)  # sparse stays sparse (dorothea)
    datafit, _ = make_problem(args.loss, "none", 0.0)
    max_abs = np.ravel(abs(X).max(axis=0).toarray() if hasattr(X, "toarray")
                       else np.abs(X).max(axis=0)).tolist()
    if not getattr(datafit, "smooth", True):
        # hinge: no smoothness constants exist; the solvers that need them refuse it
        write_json(args.out, {"loss": args.loss, "n_samples": int(X.shape[0]),
                              "n_features": int(X.shape[1]), "smoothness": None,
                              "global_smoothness": None, "max_abs": max_abs})
        return
    smoothness = datafit.coordinate_smoothness(X)
    zero = np.flatnonzero(smoothness <= 0)
    if zero.size:
        raise ValueError(
            f"{args.data}: column(s) {zero.tolist()} are all zero, so M_j = 0; "
            "drop them in preprocessing"
        )
    write_json(
        args.out,
        {
            "loss": args.loss,
            "n_samples": int(X.shape[0]),
            "n_features": int(X.shape[1]),
            "smoothness": smoothness.tolist(),
            "global_smoothness": float(datafit.global_smoothness(X)),
            "max_abs": max_abs,
        },
    )


def cmd_private_smoothness(args):
    """Private smoothness constants per (epsilon, seed), DP-CD Appendix F."""
    from dpcd.data import load_dataset
    from dpcd.sweep.grid import run_seed
    from dpcd.sweep.run import epsilons_of, private_smoothness_estimates

    spec = json.loads(args.spec)
    X = load_dataset(args.data).X
    if hasattr(X, "toarray"):
        raise ValueError(
            f"{args.data}: sparse X; the private smoothness estimate (dp_cd_p) takes "
            "dense data, and sparse datasets are never densified"
        )
    seeds = [run_seed(spec["base_seed"], k) for k in range(spec["seeds"])]
    estimates = private_smoothness_estimates(
        X, spec["loss"], spec["smoothness_fraction"], epsilons_of(spec["privacy"]),
        seeds, spec["experiment"], noise=spec["privacy"].get("noise", "fast"))
    write_json(args.out, estimates)


# --- reference ----------------------------------------------------------------
def cmd_reference(args):
    """Non-private optimum F* of an experiment's problem."""
    from dpcd import solvers
    from dpcd.data import load_dataset
    from dpcd.problems import make_problem
    from dpcd.sweep.problem import as_solver_input, resolve_alpha

    problem = json.loads(args.problem)
    dataset = load_dataset(args.data)
    X, y = as_solver_input(dataset.X), np.asarray(dataset.y, dtype=np.float64)
    alpha, lam_max = resolve_alpha(problem, X, y)
    datafit, penalty = make_problem(
        problem["loss"], problem["penalty"], alpha, problem.get("l1_ratio", 0.5)
    )
    if getattr(datafit, "smooth", True):
        result = solvers.reference_solve(X, y, datafit, penalty, tol=args.tol)
    else:
        result = _reference_nonsmooth(X, y, datafit, penalty, args.tol)
    f_star = float(result.objective[-1])
    log.info("F* = %.12g (%s)", f_star, result.extra)
    write_json(
        args.out,
        {
            "objective": f_star,
            "w": np.asarray(result.w).tolist(),
            "extra": {k: v if isinstance(v, str) else float(v)
                      for k, v in result.extra.items() if np.isscalar(v)},
            "problem": problem,
            # the strength used, and its scale (lambda-sensitivity table)
            "alpha": alpha,
            "lambda_max": lam_max,
        },
    )


def _reference_nonsmooth(X, y, datafit, penalty, tol):
    """F* of a hinge (SVM) problem: SDCA, whose duality gap certifies it.

    Passes grow tenfold until the relative duality gap is below ``tol``.
    """
    from dpcd import solvers
    from dpcd.solvers.dp_scd import duality_gap_scd

    if hasattr(X, "toarray"):
        raise ValueError("the hinge reference needs dense X")
    X = np.ascontiguousarray(X)
    for passes in (100, 1000, 10000):
        result = solvers.scd(X, y, datafit, penalty, passes=passes, seed=0)
        gap = duality_gap_scd(X, y, result.extra["alpha"], datafit, penalty)
        rel_gap = gap / max(abs(float(result.objective[-1])), 1e-300)
        if rel_gap <= tol:
            break
    result.extra.update(gap=gap, rel_gap=rel_gap, passes=passes)
    log.info("SDCA reference: %d passes, relative duality gap %.3g", passes, rel_gap)
    if rel_gap > tol:  # F* is still certified to within rel_gap; say so
        log.warning("SDCA reference: relative duality gap %.3g above tol %.3g after %d passes; "
                    "F* is certified to that relative accuracy", rel_gap, tol, passes)
    return result


# --- solve --------------------------------------------------------------------
def cmd_solve(args):
    """Run one chunk of one solver's sweep; write its table and its MLflow runs
    (which the experiment's aggregate job ingests).

    Beside the table it writes the job's overhead ledger: how its wall time
    split between loading, calibration, JIT, the solver kernels, MLflow (the
    runs built and written) and the rest (tidy tables, ledgers, Python around
    the runs).
    """
    from dpcd import solvers
    from dpcd.privacy import cache
    from dpcd.sweep import run_chunk
    from dpcd.sweep.problem import load_problem
    from dpcd.sweep.run import mlflow_runs, write_mlflow_runs

    wall = time.perf_counter()
    spec = json.loads(args.spec)
    problem = load_problem(args.data, spec["problem"], args.smoothness)
    reference = read_json(args.reference)
    private = read_json(args.private_smoothness) if args.private_smoothness else None
    split = {"loading": time.perf_counter() - wall}
    # load (or compile) the solver's kernels now, so no run of the sweep pays for it
    start = time.perf_counter()
    solvers.warmup([spec.get("adapter", spec["solver"])])
    split["jit"] = time.perf_counter() - start
    calibration0 = cache.STATS["seconds"]
    start = time.perf_counter()
    w_star = np.asarray(reference["w"], dtype=np.float64) if "w" in reference else None
    table, records = run_chunk(
        spec, args.chunk, problem, reference["objective"], private, w_star=w_star
    )
    log.info("%d configurations in %.1f s", len(records), time.perf_counter() - start)
    split["calibration"] = cache.STATS["seconds"] - calibration0
    split["kernels"] = float(sum(record.time.sum() for record in records))
    stage = f"{spec['stage']}/" if "stage" in spec else ""  # staged search
    job = f"{spec['experiment']}/{spec['solver']}/{stage}chunk{args.chunk}"
    start = time.perf_counter()
    write_mlflow_runs(args.mlflow_runs, job, mlflow_runs(records, spec, problem))
    split["mlflow"] = time.perf_counter() - start
    log.info("wrote %d MLflow runs in %.1f s", len(records), split["mlflow"])
    atomic_write(args.out, lambda tmp: table.to_parquet(tmp, index=False))
    split["wall"] = time.perf_counter() - wall
    split["other"] = split["wall"] - sum(v for k, v in split.items() if k != "wall")
    log.info("overhead ledger: %s", {k: round(v, 3) for k, v in split.items()})
    if args.timing:
        write_json(args.timing, {"experiment": spec["experiment"], "solver": spec["solver"],
                                 "chunk": args.chunk, "configurations": len(records),
                                 "stage": spec.get("stage", "grid"), "seeds": spec["seeds"],
                                 "seconds": split})


# --- aggregate ----------------------------------------------------------------
def cmd_aggregate(args):
    """Tables and figures of one experiment; its MLflow experiment, the solve
    jobs' runs ingested (those not in the store already), tables and figures
    logged to its parent run; then, with ``--fresh-spec``, the selected
    configurations re-run on fresh seeds (:func:`fresh_seeds_stage`).

    One job does both: each would otherwise pay seconds of the same imports
    (MLflow, seaborn, pandas) and its own MLflow connection, once per experiment.
    """
    import pandas as pd

    from dpcd.report import (
        markdown_table, plot_rel_error, plot_solution_histogram, quasi_sparsity_alpha,
        summary_table,
    )
    from dpcd.tracking import log_experiment_artifacts, setup_experiment

    given = [bool(getattr(args, name)) for name in (
        "fresh_spec", "data", "smoothness", "fresh_out", "fresh_csv", "fresh_md", "fresh_figure")]
    if any(given) and not all(given):
        raise ValueError("--fresh-spec goes with --data, --smoothness, --fresh-out, "
                         "--fresh-csv, --fresh-md and --fresh-figure: all of them, or none")
    runs = pd.concat([pd.read_parquet(path) for path in args.runs], ignore_index=True)
    if runs.empty:
        raise ValueError(f"experiment {args.experiment}: the solve stage produced no runs")
    spec = json.loads(args.spec)
    table = summary_table(runs, spec.get("select_by", "last_objective"))
    # Selecting hyperparameters on the private data is itself not private.
    nonprivate = {"hyperparameter_selection"}
    for value in runs["nonprivate_inputs"].dropna().unique():
        nonprivate.update(filter(None, value.split(",")))
    atomic_write(args.csv, lambda tmp: table.to_csv(tmp, index=False))
    text = markdown_table(table, args.experiment, sorted(nonprivate))
    atomic_write(args.md, lambda tmp: Path(tmp).write_text(text))
    for path, x in ((args.figure_passes, "pass"), (args.figure_time, "time")):
        atomic_write(path, lambda tmp: plot_rel_error(
            runs, tmp, x=x, title=args.experiment, select_by=spec.get("select_by", "last_objective")))
    w_star = np.asarray(read_json(args.reference)["w"], dtype=np.float64)
    atomic_write(args.figure_solution,
                 lambda tmp: plot_solution_histogram(w_star, tmp, title=args.experiment))
    best = table.loc[table.groupby("solver")["rel_error_mean"].idxmin()]
    metrics = {f"best_rel_error.{row.solver}": row.rel_error_mean for row in best.itertuples()}
    if "test_metric_median" in table:
        # One value per (solver, epsilon): the largest passes budget's test metric.
        for row in table.sort_values("passes").groupby(["solver", "epsilon"]).last().reset_index().itertuples():
            metrics[f"test_{row.metric}.{row.solver}.eps{row.epsilon:g}"] = row.test_metric_median
    # DP-GCD Figure 2 / Table 3: sparsity of the non-private solution.
    metrics["w_star_nnz"] = int(np.count_nonzero(w_star))
    metrics["w_star_alpha_5"] = quasi_sparsity_alpha(w_star, 5)
    start = time.perf_counter()
    info = setup_experiment(args.mlflow_experiment)
    ingest = ingest_runs_files(info, args.mlflow_runs)
    ingest["seconds"] = time.perf_counter() - start
    log.info("MLflow: %d runs of %d jobs ingested in %.1f s (%d jobs already in)",
             ingest["runs"], ingest["jobs"], ingest["seconds"], ingest["skipped_jobs"])
    log.info("MLflow experiment %s at %s; runs table with error and budget: "
             "<ui>/#/experiments/%s/runs?workflowType=machine_learning&viewStateShareKey=dpcd",
             info["experiment_id"], info["tracking_uri"], info["experiment_id"])
    log_experiment_artifacts(
        info, [args.csv, args.md, args.figure_passes, args.figure_time, args.figure_solution],
        tags={"privacy.nonprivate_inputs": ",".join(sorted(nonprivate))},
        metrics=metrics,
    )
    if args.fresh_spec:
        # the selection table as every later reader sees it (read_table's dtypes)
        fresh_seeds_stage(args, info, read_table(args.csv))
    write_json(args.mlflow, {**info, "ingest": ingest})


def ingest_runs_files(info, paths):
    """Log the solve jobs' runs files (:func:`dpcd.sweep.run.write_mlflow_runs`)
    to the experiment ``info``, skipping those already in the store; returns
    ``{"jobs", "runs", "skipped_jobs"}``."""
    from dpcd.sweep.run import read_mlflow_runs
    from dpcd.tracking import ingested_jobs, log_configurations

    # a file's header names its job: an ingested hash is that job's same runs
    done = set(ingested_jobs(info).values())
    ingest = {"jobs": 0, "runs": 0, "skipped_jobs": 0}
    for path in paths:
        sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        if sha in done:  # a rerun of the aggregation only: not even read
            ingest["skipped_jobs"] += 1
            continue
        job, runs = read_mlflow_runs(path)
        log_configurations(info, job, runs, result_sha=sha)
        ingest["jobs"] += 1
        ingest["runs"] += len(runs)
    return ingest


# --- fresh seeds ----------------------------------------------------------------
def fresh_seeds_stage(args, info, selected):
    """Re-run every solver's selected configurations (``selected``, the
    selection table) on fresh seeds (a new release), then the selected-on and
    fresh numbers side by side, the fresh curves, logged to the parent run
    ``info``."""
    import pandas as pd

    from dpcd import solvers
    from dpcd.report import plot_rel_error
    from dpcd.report.fresh import chosen_curves, fresh_markdown, fresh_metrics, fresh_table
    from dpcd.sweep.fresh import run_fresh
    from dpcd.sweep.problem import load_problem
    from dpcd.sweep.run import mlflow_runs
    from dpcd.tracking import log_configurations, log_experiment_artifacts

    spec = json.loads(args.fresh_spec)
    problem = load_problem(args.data, next(iter(spec["solvers"].values()))["problem"],
                           args.smoothness)
    reference = read_json(args.reference)
    solvers.warmup([s.get("adapter", s["solver"]) for s in spec["solvers"].values()])
    w_star = np.asarray(reference["w"], dtype=np.float64) if "w" in reference else None
    frames = []
    for solver, solver_spec in sorted(spec["solvers"].items()):
        start = time.perf_counter()
        runs, records, run_spec = run_fresh({**solver_spec, "fresh_seeds": spec["fresh_seeds"]},
                                            selected, problem, reference["objective"], w_star)
        log.info("%s: %d selected configurations x %d fresh seeds in %.1f s", solver,
                 len(records), run_spec["seeds"], time.perf_counter() - start)
        job = f"{args.experiment}/{solver}/fresh"
        log_configurations(info, job, mlflow_runs(records, run_spec, problem))
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


# --- summary ------------------------------------------------------------------
def cmd_summary(args):
    """Tables 2 and 3 across experiments, beside the published values if given."""
    import pandas as pd

    from dpcd.report.summary import (
        add_fresh,
        compare,
        fresh_summary_markdown,
        lambda_summary_markdown,
        overhead_markdown,
        read_published,
        solo_times,
        solve_overhead,
        stack_experiments,
        summary_markdown,
    )
    from dpcd.tracking import log_experiment_artifacts, setup_experiment

    if len(args.experiments) != len(args.tables):
        raise ValueError("--experiments and --tables must pair up")
    tables = {name: read_table(path) for name, path in zip(args.experiments, args.tables)}
    published = read_published(args.published) if args.published else None
    table = stack_experiments(tables)
    if args.fresh_tables:
        # results/tables/fresh/<experiment>.csv
        fresh = {Path(path).stem: read_table(path) for path in args.fresh_tables}
        table = add_fresh(table, fresh)
    # Table 3 and the speed-ups against the paper from runs timed alone
    table = compare(solo_times(table), published)
    atomic_write(args.csv, lambda tmp: table.to_csv(tmp, index=False))
    overhead = solve_overhead([read_json(path) for path in args.timings or []])
    text = summary_markdown(table, published=published) + fresh_summary_markdown(table)
    if args.lambda_table:
        text += lambda_summary_markdown(pd.read_csv(args.lambda_table))
    ingests = [read_json(path)["ingest"] for path in args.ingests or []]
    text += overhead_markdown(overhead, ingests)
    from dpcd.report.search import search_markdown  # staged search: what ran
    text += search_markdown([read_json(path) for path in args.timings or []])
    atomic_write(args.md, lambda tmp: Path(tmp).write_text(text))
    metrics = {}
    if published is not None:
        metrics["cells_off_by_2x"] = int(table["differs"].fillna(False).sum())
        metrics["cells_compared"] = int(table["paper_rel_error_mean"].notna().sum())
    if "fresh_rel_error_mean" in table:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (table["fresh_rel_error_mean"] / table["rel_error_mean"]).replace(
                [np.inf, -np.inf], np.nan).dropna()
        if len(ratio):
            metrics["fresh_over_selected_rel_error_median"] = float(ratio.median())
    if not overhead.empty:
        metrics["kernel_share_of_solve_time"] = float(overhead.attrs["kernel_share"])
    if ingests:
        metrics["mlflow_ingest_seconds"] = sum(i["seconds"] for i in ingests)
    log_experiment_artifacts(setup_experiment(args.mlflow_experiment), [args.csv, args.md],
                             metrics=metrics)


def cmd_lambda_table(args):
    """Best relative error per solver against lambda (experiments' alpha_grid)."""
    import pandas as pd

    from dpcd.report.lambdas import lambda_table, plot_lambda

    if not len(args.experiments) == len(args.tables) == len(args.references):
        raise ValueError("--experiments, --tables and --references must pair up")
    tables = {name: read_table(path) for name, path in zip(args.experiments, args.tables)}
    references = {name: read_json(path) for name, path in zip(args.experiments, args.references)}
    fresh = {Path(path).stem: read_table(path) for path in args.fresh_tables or []}
    table = lambda_table(json.loads(args.groups), tables, references, fresh)
    atomic_write(args.csv, lambda tmp: table.to_csv(tmp, index=False))
    atomic_write(args.figure, lambda tmp: plot_lambda(table, tmp))


# --- paper report -----------------------------------------------------------
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
    """Add the stage subcommands to the ``dpcd`` parser."""

    def add(name, func, help):
        parser = subparsers.add_parser(name, help=help, description=help)
        parser.set_defaults(func=_with_logging(func))
        return parser

    p = add("warmup", cmd_warmup, "compile the numba kernels into the cache")
    p.add_argument("--families", nargs="+",
                   help="kernel families (reference, dp_cd, dp_sgd, dp_gcd, dp_scd); all if absent")
    p.add_argument("--out", required=True)

    p = add("smoothness", cmd_smoothness, "exact coordinate-wise smoothness constants")
    p.add_argument("--data", required=True)
    p.add_argument("--loss", required=True)
    p.add_argument("--out", required=True)

    p = add("private-smoothness", cmd_private_smoothness, "private smoothness constants (DP-CD App. F)")
    p.add_argument("--data", required=True)
    p.add_argument("--spec", required=True, help="JSON: experiment, privacy, seeds, base_seed, loss, smoothness_fraction")
    p.add_argument("--out", required=True)

    p = add("reference", cmd_reference, "non-private optimum F* of a problem")
    p.add_argument("--data", required=True)
    p.add_argument("--problem", required=True, help="JSON: loss, penalty, alpha, l1_ratio")
    p.add_argument("--tol", type=float, default=1e-10)
    p.add_argument("--out", required=True)

    p = add("solve", cmd_solve, "run one chunk of a solver sweep; its table and MLflow runs")
    p.add_argument("--spec", required=True, help="JSON written by the solve rule")
    p.add_argument("--chunk", type=int, required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--smoothness", required=True)
    p.add_argument("--private-smoothness", default="")
    p.add_argument("--reference", required=True)
    p.add_argument("--mlflow-runs", required=True,
                   help="where the job's MLflow runs go (gzipped JSON lines)")
    p.add_argument("--out", required=True)
    p.add_argument("--timing", help="JSON: where the job's overhead ledger goes (optional)")

    p = add("aggregate", cmd_aggregate,
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
    p.add_argument("--figure-solution", required=True,
                   help="histogram of |w*| (DP-GCD Figure 2)")
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

    p = add("summary", cmd_summary, "tables across experiments, beside published values")
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

    p = add("lambda-table", cmd_lambda_table, "best relative error per solver against lambda")
    p.add_argument("--experiments", nargs="+", required=True)
    p.add_argument("--tables", nargs="+", required=True, help="each experiment's table CSV")
    p.add_argument("--references", nargs="+", required=True, help="each experiment's reference JSON")
    p.add_argument("--fresh-tables", nargs="*", help="their fresh tables, if any")
    p.add_argument("--groups", required=True, help="JSON: experiment -> {base, alpha | fraction}")
    p.add_argument("--csv", required=True)
    p.add_argument("--figure", required=True)

    p = add("paper-report", cmd_paper_report, "cross-experiment paper figures and report page")
    p.add_argument("--experiments", nargs="+", required=True)
    p.add_argument("--tables", nargs="+", required=True, help="each experiment's table CSV")
    p.add_argument("--runs", nargs="*", default=[], help="solve tables of the figures' experiments")
    p.add_argument("--figures", required=True, help="JSON: config report.figures")
    p.add_argument("--figure-paths", nargs="*", default=[])
    p.add_argument("--published", help="CSV of values the paper states about its figures")
    p.add_argument("--mlflow-experiment", required=True)
    p.add_argument("--md", required=True)


def _with_logging(func):
    def run(args):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        return func(args)

    return run
