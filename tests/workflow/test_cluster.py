"""The SLURM profile: every paper configuration planned (dry runs), and the
default configuration run on a real single-node SLURM cluster
(tests/cluster/start_slurm.sh; `.ci/run` starts one), a cancelled job included.

The executor plugin's failures are hangs, so every subprocess has a timeout.
"""

import functools
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import time

import pandas as pd
import psutil
import pytest
import yaml
from mlflow.tracking import MlflowClient

from conftest import BIN, ROOT, snakemake_env

pytestmark = [
    pytest.mark.workflow,
    pytest.mark.skipif(
        importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
        reason="snakemake-executor-plugin-slurm is not installed (pip install '.[cluster]')",
    ),
]

PAPER = sorted((ROOT / "config" / "paper").glob("*.yaml"))
PROFILE = yaml.safe_load((ROOT / "config" / "profiles" / "slurm" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A user's clone: the workflow and its configs, no results."""
    path = tmp_path_factory.mktemp("clone")
    for name in ("Snakefile", "workflow", "envs", "config"):
        shutil.copytree(ROOT / name, path / name) if (ROOT / name).is_dir() \
            else shutil.copy(ROOT / name, path / name)
    return path


def _jobs(text):
    """(rule, resources dict, shell command) of every job a dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", text):
        rule = re.search(r"^(?:local)?rule (\w+):", block, flags=re.M)
        if not rule:
            continue
        res = re.search(r"^\s+resources: (.*)$", block, flags=re.M)
        resources = dict(item.split("=", 1) for item in res.group(1).split(", ")) if res else {}
        command = re.search(r"^Shell command: (.*)$", block, flags=re.M)
        command = command.group(1) if command else ""
        jobs.append((rule.group(1), resources, command))
    return jobs


@functools.cache
def _slurm_plan(clone, name):
    """(returncode, output) of the dry run of config/paper/``name`` through the
    SLURM profile, shell commands printed; once per module (two tests read it)."""
    proc = subprocess.run(
        [str(BIN / "snakemake"), "--workflow-profile", "config/profiles/slurm", "-n",
         "--printshellcmds", "--configfile", f"config/paper/{name}"],
        cwd=clone, env=snakemake_env(), capture_output=True, text=True, timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("config", PAPER, ids=[p.stem for p in PAPER])
def test_slurm_profile_plans_every_paper_config(clone, config):
    returncode, out = _slurm_plan(clone, config.name)
    assert returncode == 0, out[-4000:]
    jobs = _jobs(out)
    assert {"solve", "aggregate", "summary", "reference"} <= {rule for rule, _, _ in jobs}
    assert all(command.startswith("dpcd ") for rule, _, command in jobs if rule != "all")
    defaults = PROFILE["default-resources"]
    for rule, resources, command in jobs:
        if rule == "all":
            continue
        wanted = {**defaults, **PROFILE.get("set-resources", {}).get(rule, {})}
        for key in ("mem_mb", "runtime", "slurm_account", "slurm_partition"):
            assert key in resources, (rule, resources)
        assert int(resources["mem_mb"]) == wanted["mem_mb"], rule
        assert int(resources["runtime"]) == wanted["runtime"], rule
        # Nothing only the submitting machine has: no absolute paths of this
        # clone or of the interpreter's environment in a job's command.
        assert str(clone) not in command and str(BIN.parent) not in command, command


def _dry_run(clone, *args, out=None):
    if out is None:
        proc = subprocess.run(
            [str(BIN / "snakemake"), "-n", *args], cwd=clone, env=snakemake_env(),
            capture_output=True, text=True, timeout=300,
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-4000:]
    logged = re.search(
        r"dpcd: estimated solve cost ([0-9.e+]+) core-hours in (\d+) solve jobs "
        r"\(([^)]*)\); largest job ([0-9.e+]+) core-hours", out)
    assert logged, out[-4000:]
    # the solve rule's jobs (the fresh stage's are fresh_solve's, logged apart)
    solve_jobs = int(re.search(r"^solve\s+(\d+)$", out, flags=re.M).group(1))
    total, n_jobs, sizing, largest = logged.groups()
    return float(total), int(n_jobs), sizing, float(largest), solve_jobs


def test_exhaustive_grid_is_cut_for_the_cluster(clone):
    """The DP-SCD paper's exhaustive grid (YearPredictionMSD's DP-SGD alone is
    days of one core) through the SLURM profile: the run's estimate is logged
    before any job, and its solve jobs are cut so that the largest is
    estimated at <= chunk_core_hours (2); the default profile keeps the
    configured chunks (and the same total)."""
    config = "config/paper/dpscd_aaai21.yaml"
    returncode, out = _slurm_plan(clone, "dpscd_aaai21.yaml")  # the plan above's dry run
    assert returncode == 0, out[-4000:]
    total, n_jobs, sizing, largest, solve_jobs = _dry_run(clone, out=out)
    assert PROFILE["config"] == ["chunk_core_hours=2", "search=grid"]
    assert sizing == "chunk_core_hours: 2"
    assert n_jobs == solve_jobs and largest <= 2
    assert total > 100  # a cluster's run: the estimate says so before anything runs
    # The same grid on one machine: the configured chunks, the same total.
    local = _dry_run(clone, "--workflow-profile", "config/profiles/default", "--configfile", config,
                     "--config", "search=grid")
    assert local[2] == "chunks as configured" and local[1] == local[4] < solve_jobs
    assert local[3] > 2 and abs(local[0] - total) <= 0.01 * total
    # The config as committed (search: staged) is a fraction of the grid.
    staged = _dry_run(clone, "--workflow-profile", "config/profiles/default", "--configfile", config)
    assert staged[0] < total / 5


def _job_stats(out):
    """Rule -> number of jobs, from Snakemake's job stats table."""
    table = out.split("Job stats:")[1].split("total")[0]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)$", table, flags=re.M) if m.group(1) != "job"}


def test_profile_runs_the_default_config_with_or_without_configfile(clone):
    """The profile's --config (chunk_core_hours, search) alone still loads the
    embedded config/config.yaml; with --configfile it is the same plan."""
    plans = []
    for args in ([], ["--configfile", "config/config.yaml"]):
        proc = subprocess.run(
            [str(BIN / "snakemake"), "--workflow-profile", "config/profiles/slurm", "-n", *args],
            cwd=clone, env=snakemake_env(), capture_output=True, text=True, timeout=300,
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-4000:]
        assert "in 6 solve jobs (chunk_core_hours: 2)" in out, out[-4000:]
        assert "fresh-seed re-runs in 1 fresh_solve job " in out, out[-4000:]
        plans.append(_job_stats(out))
    assert plans[0] == plans[1] and plans[0]["solve"] == 6 and plans[0]["fresh_solve"] == 1


# --- On a real SLURM cluster -------------------------------------------------

START_SLURM = ROOT / "tests" / "cluster" / "start_slurm.sh"
# Fast polling for a test: the first status check 1 s after a submission (the
# profile says 10 s); no SLURM accounts on the test cluster.
FAST = ["--seconds-between-status-checks", "1", "--slurm-init-seconds-before-status-checks", "1",
        "--slurm-no-account"]


@pytest.fixture(scope="module")
def slurm():
    """Skip (or, where CI started a cluster, fail) unless SLURM runs jobs here."""
    reason = None
    if subprocess.run([str(START_SLURM), "status"], timeout=60).returncode != 0:
        reason = ("no test cluster running jobs here: tests/cluster/start_slurm.sh up "
                  "starts one (needs root and apt-get)")
    if reason and os.environ.get("DPCD_REQUIRE_SLURM"):
        pytest.fail(reason)
    if reason:
        pytest.skip(reason)


def _copy_clone(path):
    for name in ("Snakefile", "workflow", "envs", "config"):
        shutil.copytree(ROOT / name, path / name) if (ROOT / name).is_dir() \
            else shutil.copy(ROOT / name, path / name)
    return path


def _squeue(*args):
    out = subprocess.run(["squeue", "-h", *args], capture_output=True, text=True, timeout=60).stdout
    return [line.split("|") for line in out.splitlines()]


def _job_processes(jobid):
    """The processes SLURM started for a job (they carry its SLURM_JOB_ID)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("SLURM_JOB_ID") == jobid:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


def _submitted(out):
    """(rule, SLURM job id, SLURM log) of every job a run submitted with sbatch."""
    jobs = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: ([^)]*)\)", out)
    return [(re.search(r"/rule_(\w+)/", log).group(1), jobid, log) for jobid, log in jobs]


def _started(out, local=False):
    """Rules of every job a run started on the cluster (Snakemake's job blocks),
    or with ``local`` beside Snakemake (the Snakefile's localrules), but `all`."""
    pattern = r"^localrule (\w+):$" if local else r"^rule (\w+):$"
    return [r for r in re.findall(pattern, out, flags=re.M) if r != "all"]


def _localrules():
    """The Snakefile's localrules (run beside Snakemake, not submitted)."""
    text = (ROOT / "Snakefile").read_text()
    return set(re.findall(r"^    (\w+),$", text.split("\nlocalrules:\n")[1], flags=re.M))


def _tables(workdir):
    """Every table and run file, less its timing columns (the machine's speed)."""
    tables = {}
    paths = [*(workdir / "results" / "tables").rglob("*.csv"),
             *(workdir / "results" / "runs").rglob("*.parquet")]
    for path in sorted(paths):
        table = pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)
        tables[path.relative_to(workdir)] = table.drop(columns=[c for c in table if "time" in c])
    return tables


def _children(workdir):
    """(experiment, job, config id) and final metrics of every MLflow child run, sorted."""
    client = MlflowClient(f"sqlite:///{workdir}/results/mlflow.db")
    children = []
    for experiment in client.search_experiments():
        for run in client.search_runs([experiment.experiment_id], max_results=10000):
            if "mlflow.parentRunId" in run.data.tags:
                assert run.info.status == "FINISHED", run
                key = (experiment.name, run.data.tags["dpcd.job"], run.data.tags["sweep.config_id"])
                metrics = {k: v for k, v in run.data.metrics.items() if "time" not in k}
                children.append((key, metrics))
    return sorted(children)


@pytest.fixture(scope="module")
def cluster_run(slurm, tmp_path_factory):
    """The default config through the SLURM profile, no --configfile; a solve
    job is cancelled with scancel as soon as it runs; then the same command
    again. A local run of the same config meanwhile, to compare with."""
    local = _copy_clone(tmp_path_factory.mktemp("local"))
    local_proc = subprocess.Popen(
        [str(BIN / "snakemake"), "--workflow-profile", "config/profiles/default", "--cores", "2"],
        cwd=local, env=snakemake_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    workdir = _copy_clone(tmp_path_factory.mktemp("cluster"))
    command = [str(BIN / "snakemake"), "--workflow-profile", "config/profiles/slurm", *FAST]
    first = workdir / "first.out"
    with open(first, "w") as out:
        proc = subprocess.Popen(command, cwd=workdir, env=snakemake_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        run_id = cancelled = None
        while cancelled is None:
            assert proc.poll() is None, first.read_text()[-4000:]
            assert time.monotonic() < deadline, "no solve job ran within 10 minutes"
            run_id = run_id or re.search(r"SLURM run ID: (\S+)", first.read_text())
            if run_id:
                for jobid, state, comment in _squeue("--name", run_id.group(1), "-o", "%i|%T|%k"):
                    if state == "RUNNING" and comment.startswith("rule_solve"):
                        cancelled = jobid
                        break
            time.sleep(0.2)
        subprocess.run(["scancel", cancelled], timeout=60, check=True)
        cancelled_at = time.monotonic()
        # Its processes end on SLURM's SIGTERM (a hang guard: SIGKILL follows
        # after SLURM's KillWait anyway).
        while _job_processes(cancelled):
            assert time.monotonic() < cancelled_at + 60, _job_processes(cancelled)
            time.sleep(0.1)
        cancel_seconds = time.monotonic() - cancelled_at
        proc.wait(timeout=600)
    except BaseException:
        local_proc.kill()
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if run_id:  # no orphans, whatever happened
            subprocess.run(["scancel", "--name", run_id.group(1)], timeout=60)
    rerun = subprocess.run(command, cwd=workdir, env=snakemake_env(), capture_output=True,
                           text=True, timeout=900)
    assert local_proc.wait(timeout=900) == 0
    print(f"scancel of a running solve job: its processes gone after {cancel_seconds:.1f} s")
    return dict(workdir=workdir, local=local, first_rc=proc.returncode, first=first.read_text(),
                cancelled=cancelled, rerun=rerun)


def test_cancelled_job_fails_the_run_with_slurms_reason(cluster_run):
    out, jobid = cluster_run["first"], cluster_run["cancelled"]
    assert cluster_run["first_rc"] != 0
    assert f"SLURM-job '{jobid}' failed, SLURM status is: 'CANCELLED'" in out, out[-4000:]
    # Its SLURM log stays where the docs say; successful jobs' logs are removed.
    logs = cluster_run["workdir"] / ".snakemake" / "slurm_logs"
    (log,) = [path for rule, j, path in _submitted(out) if j == jobid]
    assert log.startswith(str(logs / "rule_solve")) and log.endswith(f"/{jobid}.log")
    assert os.path.exists(log)
    assert list(logs.rglob("*.log")) == [logs.joinpath(log)]


def test_every_job_went_through_sbatch_and_the_rerun_redid_only_what_was_missing(cluster_run):
    first, rerun = cluster_run["first"], cluster_run["rerun"]
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-4000:]
    again = rerun.stdout + rerun.stderr
    local = _localrules()
    assert {"data_generate", "summary", "fresh", "fresh_report"} <= local
    assert not local & {"solve", "fresh_solve", "reference"}
    for out in (first, again):
        assert sorted(_started(out)) == sorted(rule for rule, _, _ in _submitted(out))
        assert not set(_started(out)) & local and set(_started(out, local=True)) <= local
    # The cancelled solve, what depends on it, and what the failure kept from
    # starting; nothing twice.
    done_first = {rule for rule, _, _ in _submitted(first)} - {"solve"}
    assert set(_started(again)) <= {"solve", "aggregate", "aggregate_report", "fresh_solve"}
    assert set(_started(again, local=True)) <= {"fresh", "fresh_report", "summary"}
    assert "solve" in _started(again) and "aggregate" not in done_first
    # Every job of the plan but the local ones once, the cancelled one twice.
    assert len(_submitted(first)) + len(_submitted(again)) - 1 == sum(
        n for rule, n in _job_stats(first).items() if rule not in local)
    assert _started(first, local=True)  # the data jobs, at least


def test_cluster_results_equal_a_local_run(cluster_run):
    cluster, local = _tables(cluster_run["workdir"]), _tables(cluster_run["local"])
    assert sorted(cluster) == sorted(local) and cluster
    for path, table in cluster.items():
        pd.testing.assert_frame_equal(table, local[path], obj=str(path))
    children = _children(cluster_run["workdir"])
    keys = [key for key, _ in children]
    assert len(keys) == len(set(keys)), "an MLflow run is duplicated"
    assert children == _children(cluster_run["local"])
