"""A Ctrl-C mid-solve stops the workflow within seconds, and the rerun redoes
only what was interrupted.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group:
Snakemake and its running jobs. A ``dpcd`` job ends at once (its outputs are
written atomically and Snakemake discards an interrupted job's), even inside a
numba kernel call, where Python would only notice the signal when the call
returns (here after tens of seconds, on a paper grid minutes).
"""

import os
import signal
import subprocess
import time

import psutil
import pytest
import yaml

from conftest import BIN, TINY, make_workdir, planned_jobs, snakemake, snakemake_env

pytestmark = pytest.mark.workflow

# One solve job of long kernel calls: one configuration, two seeds (one call
# each), 10000 passes of DP-CD over 5000 x 100 (about 5 s of one core each:
# the interrupt comes about 1 s into the first; the rerun runs both whole).
SLOW = {
    "datasets": {"lasso_long": {"source": "sparse_lasso", "params": {
        "n_samples": 5000, "n_features": 100, "n_informative": 5, "noise": 0.1, "seed": 0}}},
    "experiments": {"slow": {
        "dataset": "lasso_long",
        "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
        "privacy": {"epsilon": 5.0},
        "passes": [10000],
        "seeds": 2,
        "solvers": {"dp_cd": {"step": [1.0], "clip": [1.0]}},
    }},
}


def _solve_process(workdir):
    """The running ``dpcd solve`` of this workdir, or None."""
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["cwd"] == str(workdir) and "solve" in cmdline and any(
                part.endswith("dpcd") for part in cmdline):
            return proc
    return None


def test_ctrl_c_mid_solve_stops_within_seconds_and_the_rerun_finishes(tmp_path):
    tiny = yaml.safe_load(TINY.read_text())
    workdir = make_workdir(tmp_path, {**{k: tiny[k] for k in ("mlflow", "report")}, **SLOW})
    out = open(workdir / "snakemake.out", "w")
    proc = subprocess.Popen(
        [str(BIN / "snakemake"), "--cores", "2"], cwd=workdir, env=snakemake_env(),
        stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        # Wait until the solve job is inside its first kernel call: past its
        # imports and data loading (under 2 s of CPU), by the CPU time it used.
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, (workdir / "snakemake.out").read_text()[-3000:]
            assert time.monotonic() < deadline, "no solve job started"
            solve = _solve_process(workdir)
            try:
                if solve is not None and sum(solve.cpu_times()[:2]) > 3:
                    break
            except psutil.NoSuchProcess:
                pass
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        # A hang guard, not a timing test: Python's own SIGINT handler waited
        # for the kernel call to return (minutes on a paper grid).
        proc.wait(timeout=30)
        solve.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0
    # Killed by the signal, not by Python's KeyboardInterrupt after the call.
    log = workdir / "results" / "logs" / "solve" / "slow" / "dp_cd" / "chunk0.log"
    assert "KeyboardInterrupt" not in log.read_text()
    assert not (workdir / "results" / "runs" / "slow" / "dp_cd" / "chunk0.parquet").exists()

    # Only the interrupted job and what depends on it are left to do.
    assert planned_jobs(workdir) == {"solve": 1, "aggregate": 1, "aggregate_report": 1,
                                     "summary": 1, "all": 1}
    snakemake(workdir)
    assert (workdir / "results" / "tables" / "slow.csv").exists()
    assert planned_jobs(workdir) == {}
