"""Run the real workflow (real Snakemake, real MLflow on SQLite) in temp dirs."""

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TINY = Path(__file__).with_name("tiny.yaml")
BIN = Path(sys.executable).parent


def snakemake_env():
    env = dict(os.environ)
    # Rules call the `dpcd` console script of this interpreter's environment.
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("MLFLOW_RUN_ID", None)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / "results" / ".numba_cache"))
    return env


def make_workdir(path, config=None):
    """A copy of the workflow (as a user's clone has it) with the tiny config."""
    for name in ("Snakefile", "workflow", "envs"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, path / name)
        else:
            shutil.copy(src, path / name)
    (path / "config").mkdir()
    config = config if config is not None else yaml.safe_load(TINY.read_text())
    (path / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake(workdir, *args, check=True):
    """Run snakemake in ``workdir``; return the completed process."""
    cmd = [str(BIN / "snakemake"), "--cores", "2", *args]
    proc = subprocess.run(
        cmd, cwd=workdir, env=snakemake_env(), capture_output=True, text=True, timeout=900
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
        )
    return proc


def report_entries(workdir):
    """``snakemake --report``'s results: path -> entry (file name, caption, ...)."""
    snakemake(workdir, "--report", "report.html")
    html = (workdir / "report.html").read_text()
    decoder = json.JSONDecoder()
    entries = {}
    for match in re.finditer(r'"(results/[^"]+)": \{', html):
        entries[match.group(1)], _ = decoder.raw_decode(html, match.end() - 1)
    return entries


def planned_jobs(workdir):
    """Rule -> number of jobs a dry run plans (parsed from Snakemake's job stats)."""
    proc = snakemake(workdir, "-n", "--nolock", "--quiet", "rules")
    text = proc.stdout + proc.stderr
    if "Nothing to be done" in text:
        return {}
    jobs = {}
    table = text.split("Job stats:")[-1]
    for line in table.splitlines():
        match = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(\d+)\s*$", line)
        if match and match.group(1) != "total":
            jobs[match.group(1)] = int(match.group(2))
    return jobs


@pytest.fixture(scope="session")
def finished_workdir(tmp_path_factory):
    """One full run of the tiny workflow, shared by the read-only tests.

    Under pytest-xdist the workers share it too: the first to get here builds
    it under a lock in the session's common temp dir, the others wait and reuse
    it. Tests only read it or copy it (dry runs in it use --nolock).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # one per session, common to its workers
    workdir, done = root / "finished_workflow", root / "finished_workflow.done"
    with open(root / "finished_workflow.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(workdir, ignore_errors=True)  # a failed attempt's leftovers
            workdir.mkdir()
            snakemake(make_workdir(workdir))
            done.touch()
    return workdir
