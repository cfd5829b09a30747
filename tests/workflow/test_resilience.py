"""Faults a long sweep meets: a kill mid-solve, many jobs on one store, two
workflows on one store (DESIGN.md, Reliability).

Each test starts from a copy of the finished tiny workflow (the uninterrupted
run), removes what it wants redone, injects the fault and checks the outcome
against that run.
"""

import os
import shutil
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

from conftest import BIN, snakemake, snakemake_env

pytestmark = pytest.mark.workflow

# Columns that depend on the machine's speed, not on the computation.
TIMING = ("time_mean", "time_std")


def _copy(finished_workdir, tmp_path):
    workdir = tmp_path / "wf"
    shutil.copytree(finished_workdir, workdir, symlinks=True)
    return workdir


def _table(workdir, name):
    table = pd.read_csv(workdir / "results" / "tables" / f"{name}.csv")
    return table.drop(columns=list(TIMING)).sort_values(["solver", "passes"]).reset_index(drop=True)


def _children(uri, experiment):
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=5000)
    return [r for r in runs if "mlflow.parentRunId" in r.data.tags]


def _forget(workdir, jobs, outputs):
    """Remove jobs' outputs and their MLflow runs: as if they never ran."""
    for path in outputs:
        (workdir / path).unlink()
    client = MlflowClient(f"sqlite:///{workdir}/results/mlflow.db")
    for run in _children(f"sqlite:///{workdir}/results/mlflow.db", "dpcd/exp_a"):
        if run.data.tags["dpcd.job"] in jobs:
            client.delete_run(run.info.run_id)


def _start(workdir, *args, env=None):
    """Snakemake in its own process group (its jobs inherit it)."""
    log = open(workdir / "snakemake.out", "w")
    return subprocess.Popen(
        [str(BIN / "snakemake"), *args], cwd=workdir, env=env or snakemake_env(),
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )


KILLED = ["exp_a/dp_cd/chunk0", "exp_a/dp_cd/chunk1"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_mid_solve_resumes_and_loses_nothing(finished_workdir, tmp_path, sig):
    workdir = _copy(finished_workdir, tmp_path)
    reference = _table(finished_workdir, "exp_a")
    outputs = [f"results/runs/{job}.parquet" for job in KILLED]
    outputs += ["results/tables/exp_a.csv", "results/mlflow/exp_a.json", "results/summary.csv"]
    # the experiment's report job ingests the runs (after its tables); the
    # summary job adds nothing to test here
    target = "results/mlflow/exp_a.json"
    _forget(workdir, KILLED, outputs)
    logs = [workdir / "results" / "logs" / "solve" / f"{job}.log" for job in KILLED]
    for log in logs:
        log.unlink()

    proc = _start(workdir, "--cores", "2", target)
    deadline = time.monotonic() + 120
    # Kill as soon as a solve job reports its first configuration done.
    while not any(log.exists() and "progress:" in log.read_text() for log in logs):
        assert proc.poll() is None, (workdir / "snakemake.out").read_text()[-3000:]
        assert time.monotonic() < deadline, "no solve job started"
        time.sleep(0.05)
    os.killpg(proc.pid, sig)
    proc.wait(timeout=60)
    if sig == signal.SIGTERM:  # Snakemake cancels its jobs; wait until they are gone
        for _ in range(100):
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
    assert proc.returncode != 0

    uri = f"sqlite:///{workdir}/results/mlflow.db"
    killed_runs = [r for r in _children(uri, "dpcd/exp_a") if r.data.tags["dpcd.job"] in KILLED]
    for job, output, log in zip(KILLED, outputs, logs):
        if (workdir / output).exists():
            continue  # this job finished before the kill: its runs are rightly FINISHED
        text = log.read_text() if log.exists() else ""
        finished = [r for r in killed_runs if r.data.tags["dpcd.job"] == job
                    and r.info.status == "FINISHED"]
        # A job's runs are committed in one transaction after its computation:
        # none of them is FINISHED unless the kill came after that commit.
        assert not finished or "logged" in text, (job, text)
    assert not (workdir / "results" / "tables" / "exp_a.csv").exists()

    # Resume. After SIGKILL Snakemake's own lock and its marks of the killed
    # jobs' outputs as incomplete stay behind, and it says what to do.
    rerun = snakemake(workdir, target, check=False)
    if rerun.returncode != 0:
        said = rerun.stdout + rerun.stderr
        assert "--unlock" in said or "--rerun-incomplete" in said, rerun.stderr[-3000:]
        assert sig == signal.SIGKILL
        snakemake(workdir, "--unlock")
        snakemake(workdir, target, "--rerun-incomplete")

    pd.testing.assert_frame_equal(_table(workdir, "exp_a"), reference)
    children = _children(uri, "dpcd/exp_a")
    assert all(r.info.status == "FINISHED" for r in children)
    keys = [(r.data.tags["dpcd.job"], r.data.tags["sweep.config_id"]) for r in children]
    assert len(keys) == len(set(keys)), "an MLflow run is duplicated"
    baseline = _children(f"sqlite:///{finished_workdir}/results/mlflow.db", "dpcd/exp_a")
    assert sorted(keys) == sorted(
        (r.data.tags["dpcd.job"], r.data.tags["sweep.config_id"]) for r in baseline
    )


def _experiment(config, name, chunks, solvers):
    exp = dict(config["experiments"]["exp_a"], chunks=chunks, solvers=solvers)
    return {name: exp}


def test_concurrent_jobs_and_workflows_share_one_store(finished_workdir, tmp_path):
    """Workflow A (--cores 4, 4 solve jobs at once) and workflow B (another
    config, other experiment names, 2 solve jobs) run at once against one SQLite
    store: every configuration of both arrives exactly once, FINISHED, and
    matches its table."""
    store = tmp_path / "shared"
    store.mkdir()
    uri = f"sqlite:///{store}/mlflow.db"
    procs = {}
    grids = {
        "conc_a": (4, 4, {"dp_cd": {"step": [0.3, 1.0], "clip": [0.1, 1.0]}}),
        "conc_b": (2, 2, {"dp_sgd": {"step": [0.1, 0.3], "clip": [1.0]}}),
    }
    for name, (cores, chunks, solvers) in grids.items():
        workdir = shutil.copytree(finished_workdir, tmp_path / name, symlinks=True)
        config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
        config["experiments"] = _experiment(config, name, chunks, solvers)
        (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config))
        env = dict(snakemake_env(), MLFLOW_TRACKING_URI=uri)
        procs[name] = (workdir, _start(workdir, "--cores", str(cores),
                                       f"results/mlflow/{name}.json", env=env))
    for name, (workdir, proc) in procs.items():
        assert proc.wait(timeout=600) == 0, (workdir / "snakemake.out").read_text()[-4000:]

    client = MlflowClient(uri)
    for name, (workdir, _) in procs.items():
        cores, chunks, solvers = grids[name]
        runs = pd.concat(pd.read_parquet(p) for p in (workdir / "results" / "runs" / name).rglob("*.parquet"))
        expected = sorted(set(zip(runs.solver, runs.config_id)))
        jobs = list((workdir / "results" / "runs" / name).rglob("*.parquet"))
        assert len(jobs) == chunks * len(solvers)
        children = _children(uri, f"dpcd/{name}")
        got = sorted((r.data.tags["dpcd.solver"], r.data.tags["sweep.config_id"]) for r in children)
        assert got == expected, "a run is lost or duplicated"
        assert all(r.info.status == "FINISHED" for r in children)
        parents = client.search_runs(
            [client.get_experiment_by_name(f"dpcd/{name}").experiment_id],
            filter_string="tags.`dpcd.role` = 'parent'",
        )
        assert len(parents) == 1
