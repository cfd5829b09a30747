"""``dpcd warmup``, ``dpcd reference``, ``dpcd solve``: the rules of ``solve.smk``."""

import json
import logging
import os
import time

import numpy as np

from dpcd.data.io import atomic_write
from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import Ledger, add_command, read_json

log = logging.getLogger("dpcd")


def cmd_warmup(args):
    """Compile kernels once into NUMBA_CACHE_DIR before parallel jobs run."""
    import scipy.sparse  # noqa: F401 (the sparse designs' kernels too: dpcd.solvers.warmup)

    from dpcd import algorithms

    start = time.perf_counter()
    families = algorithms.warmup(args.families)
    elapsed = time.perf_counter() - start
    log.info("compiled kernels of %s in %.1f s (cache: %s)", ", ".join(families), elapsed,
             os.environ.get("NUMBA_CACHE_DIR"))
    record = {"seconds": elapsed, "families": families,
              "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR")}
    if args.out:
        write_json(args.out, record)
    else:
        print(json.dumps(record, indent=2))


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
    result = solvers.reference_optimum(X, y, datafit, penalty, tol=args.tol)
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


def cmd_solve(args):
    """Run one chunk of one solver's sweep, or of the fresh stage (the cells of
    all an experiment's solvers: a spec with ``solvers``); write its table and
    its MLflow runs (which the experiment's aggregate_report job ingests).

    Beside the table it writes the job's overhead ledger: how its wall time
    split between loading, calibration, JIT, the solver kernels, MLflow (the
    runs built and written) and the rest (tidy tables, ledgers, Python around
    the runs); a fresh job's, with each solver's configurations and kernels;
    and their CPU (:class:`~dpcd.stages.common.Ledger`).
    """
    from dpcd import algorithms
    from dpcd.privacy import cache
    from dpcd.sweep import run_chunk
    from dpcd.sweep.grid import grid_size
    from dpcd.sweep.problem import load_problem
    from dpcd.sweep.tidy import kernel_seconds, records_run, write_table
    from dpcd.tracking.payload import mlflow_runs
    from dpcd.tracking.runs_file import job_name, write_mlflow_runs

    ledger = Ledger()
    spec = json.loads(args.spec)
    fresh = "solvers" in spec  # the fresh stage re-runs what the table selected
    solvers = spec["solvers"] if fresh else [spec]
    problem = load_problem(args.data, spec["problem"], args.smoothness)
    reference = read_json(args.reference)
    private = read_json(args.private_smoothness) if args.private_smoothness else None
    ledger.lap("loading")
    # load (or compile) the solvers' kernels now, so no run of the sweep pays for it
    algorithms.warmup(sorted({solver.get("adapter", solver["solver"]) for solver in solvers}))
    ledger.lap("jit")
    calibration0 = dict(cache.STATS)
    w_star = np.asarray(reference["w"], dtype=np.float64) if "w" in reference else None
    if fresh:
        from dpcd.sweep.fresh import run_fresh_chunk

        parts = run_fresh_chunk(spec, args.chunk, problem, reference["objective"], w_star=w_star)
    else:  # the table as columns, written without pandas (dpcd.sweep.tidy.write_table)
        parts = [(spec, *run_chunk(spec, args.chunk, problem, reference["objective"],
                                   private, w_star=w_star, columns=True))]
    records = [record for _, _, part in parts for record in part]
    runs_wall, runs_cpu = ledger.lap()
    log.info("%d configurations run, %d rows in %.1f s", len(records_run(records)), len(records),
             runs_wall)
    # the calibrations' CPU, calls and entries computed (not read): how much of
    # their wall was computing, and which events more than one job asked for
    calibrations = {key: cache.STATS[key] - calibration0[key]
                    for key in ("seconds", "cpu_seconds", "calls", "computed")}
    ledger.add("calibration", calibrations.pop("seconds"), calibrations["cpu_seconds"])
    # the kernels are timed by wall (their runs' ``time``): their CPU is taken
    # at the CPU / wall ratio of the runs around them, calibrations apart
    kernels, rest_wall, rest_cpu = (kernel_seconds(records), runs_wall - ledger.seconds[
        "calibration"], runs_cpu - ledger.cpu_seconds["calibration"])
    ledger.add("kernels", kernels,
               min(kernels * rest_cpu / rest_wall, rest_cpu) if rest_wall > 0 else 0.0)
    stage = "fresh" if fresh else spec.get("stage")  # staged search, fresh seeds
    job = job_name(spec["experiment"], args.chunk, None if fresh else spec["solver"], stage)
    write_mlflow_runs(args.mlflow_runs, job, [
        run for solver, _, part in parts for run in mlflow_runs(part, solver, problem)])
    log.info("wrote %d MLflow runs in %.1f s", len(records), ledger.lap("mlflow")[0])
    tables = [runs for _, runs, _ in parts]
    if spec.get("first_seed"):  # a staged confirm: the first seed's runs ran before
        from dpcd.sweep.staged import with_first_seed

        tables = [with_first_seed(tables[0], spec["reused_runs"])]
    atomic_write(args.out, lambda tmp: write_table(tables, tmp))
    ledger.close()
    log.info("overhead ledger: %s; CPU: %s", ledger.seconds, ledger.cpu_seconds)
    if not args.timing:
        return
    if fresh:
        what = {"solvers": {solver["solver"]: {
            "configurations": len(part), "kernels": kernel_seconds(part)}
            for solver, _, part in parts}}
    else:
        what = {"solver": spec["solver"], "grid_configurations": grid_size(spec)}
    write_json(args.timing, {"experiment": spec["experiment"], "chunk": args.chunk,
                             "configurations": len(records), "stage": stage or "grid",
                             "seeds": solvers[0]["seeds"], **what, "seconds": ledger.seconds,
                             "cpu_seconds": ledger.cpu_seconds, "calibrations": calibrations})


def cmd_select(args):
    """``search: staged``: keep the best ``keep`` configurations per (solver,
    epsilon, passes) of what ran so far (the screen, or screen and refine, or
    the promote), by the paper's selection rule; ``prefix``: the runs are
    prefixes (``search_fidelity``), ranked at their last pass."""
    import pandas as pd

    from dpcd.sweep.staged import keep_best

    spec = json.loads(args.spec)
    runs = pd.concat([pd.read_parquet(path) for path in args.runs], ignore_index=True)
    table = keep_best(runs, spec["select_by"], spec["keep"], prefix=spec.get("prefix", False))
    log.info("kept %d of %d configurations (%d per solver, epsilon and passes)",
             table["config_id"].nunique(), runs["config_id"].nunique(), spec["keep"])
    atomic_write(args.out, lambda tmp: table.to_csv(tmp, index=False))


def register(subparsers):
    """Add ``warmup``, ``reference``, ``solve`` and ``select`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "warmup", cmd_warmup, "compile the numba kernels into the cache")
    p.add_argument("--families", nargs="+",
                   help="kernel families (reference, dp_cd, dp_sgd, dp_gcd, dp_scd); all if absent")
    p.add_argument("--out", help="JSON record of what was compiled (the workflow's marker); "
                                 "printed if absent")

    p = add_command(subparsers, "reference", cmd_reference, "non-private optimum F* of a problem")
    p.add_argument("--data", required=True)
    p.add_argument("--problem", required=True, help="JSON: loss, penalty, alpha, l1_ratio")
    p.add_argument("--tol", type=float, default=1e-10)
    p.add_argument("--out", required=True)

    p = add_command(subparsers, "solve", cmd_solve,
                    "run one chunk of a solver sweep; its table and MLflow runs")
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

    p = add_command(subparsers, "select", cmd_select, "staged search: keep the best so far")
    p.add_argument("--spec", required=True, help="JSON: select_by, keep")
    p.add_argument("--runs", nargs="+", required=True,
                   help="the tables it ranks together (screen, refine; promote)")
    p.add_argument("--out", required=True, help="selection CSV")
