"""The workflow against a real ``mlflow server`` (SQLite backend; PostgreSQL
where a server and a driver are available), as a group shares one.

Also runs Snakemake as ``.venv/bin/snakemake`` with the environment not
activated (its bin directory off PATH): the rules must find ``dpcd`` anyway.
"""

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest
import yaml
from mlflow.tracking import MlflowClient

from conftest import BIN, snakemake_env

pytestmark = pytest.mark.workflow


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_http(url, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "server exited"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(url)


def _postgres(tmp_path):
    """A throw-away PostgreSQL cluster; its URI, and how to stop it."""
    reasons = []
    if not shutil.which("initdb") and not shutil.which("postgres"):
        reasons.append("no postgres binaries")
    if importlib.util.find_spec("psycopg2") is None:
        reasons.append("no psycopg2 driver")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        reasons.append("postgres refuses to run as root")
    if reasons:
        pytest.skip("PostgreSQL backend: " + "; ".join(reasons))
    bindir = os.path.dirname(os.path.realpath(shutil.which("pg_ctl")))
    data, port = tmp_path / "pg", _free_port()
    subprocess.run([f"{bindir}/initdb", "-D", str(data), "-U", "mlflow", "-A", "trust"],
                   check=True, capture_output=True)
    subprocess.run([f"{bindir}/pg_ctl", "-D", str(data), "-w", "-o",
                    f"-p {port} -k {tmp_path} -h 127.0.0.1", "start"],
                   check=True, capture_output=True)
    subprocess.run([f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "mlflow",
                    "mlflow"], check=True, capture_output=True)
    stop = [f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"]
    return f"postgresql://mlflow@127.0.0.1:{port}/mlflow", stop


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request, tmp_path):
    stop_db = None
    if request.param == "sqlite":
        backend = f"sqlite:///{tmp_path}/server.db"
    else:
        backend, stop_db = _postgres(tmp_path)
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(
        [str(BIN / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", backend, "--artifacts-destination", str(tmp_path / "artifacts"),
         "--workers", "1"],
        cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(url + "/health", proc)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        if stop_db:
            subprocess.run(stop_db, capture_output=True)


def _children(client, name):
    exp = client.get_experiment_by_name(name)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    return exp, [r for r in runs if "mlflow.parentRunId" in r.data.tags], \
        [r for r in runs if r.data.tags.get("dpcd.role") == "parent"]


def test_workflow_logs_to_a_tracking_server(finished_workdir, tmp_path, server):
    """Pointing a finished workdir at a server reruns exp_b's tracking, solve,
    aggregate and summary jobs (the tracking URI is a param of the tracking
    rule): what arrives equals what the local SQLite store holds."""
    workdir = shutil.copytree(finished_workdir, tmp_path / "wf", symlinks=True)
    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    del config["experiments"]["exp_a"]
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    env = snakemake_env()
    env["MLFLOW_TRACKING_URI"] = server
    # Not activated: nothing of the environment on PATH.
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != str(BIN))
    proc = subprocess.run([str(BIN / "snakemake"), "--cores", "2"], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "solve" in proc.stderr and "mlflow_experiment" in proc.stderr

    remote = MlflowClient(server)
    local = MlflowClient(f"sqlite:///{finished_workdir}/results/mlflow.db")
    exp, children, parents = _children(remote, "dpcd/exp_b")
    assert exp.tags.get("mlflow.experimentKind") == "custom_model_development"
    _, local_children, _ = _children(local, "dpcd/exp_b")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert {a.path for a in remote.list_artifacts(parents[0].info.run_id)} >= {
        "exp_b.csv", "exp_b.md", "exp_b_rel_error.png", "exp_b_rel_error_time.png"}
    by_config = {r.data.tags["sweep.config_id"]: r for r in local_children}
    assert sorted(by_config) == sorted(r.data.tags["sweep.config_id"] for r in children)
    for run in children:
        mine = by_config[run.data.tags["sweep.config_id"]]
        assert run.info.status == "FINISHED"
        assert run.data.params == mine.data.params
        assert run.data.metrics.keys() == mine.data.metrics.keys()
        for key in ("final_rel_error_mean", "privacy.epsilon_achieved"):
            assert run.data.metrics[key] == pytest.approx(mine.data.metrics[key], rel=1e-12)
        history = remote.get_metric_history(run.info.run_id, "rel_error")
        assert [m.step for m in history] == list(range(int(run.data.params["passes"]) + 1))
        assert remote.download_artifacts(run.info.run_id, "privacy_ledger.json", str(tmp_path))
        ledger = (tmp_path / "privacy_ledger.json").read_text()
        (tmp_path / "local").mkdir(exist_ok=True)
        path = local.download_artifacts(mine.info.run_id, "privacy_ledger.json",
                                        str(tmp_path / "local"))
        assert ledger == open(path).read()
        assert run.info.start_time <= run.info.end_time
    summary = remote.get_experiment_by_name("dpcd/summary")
    (run,) = remote.search_runs([summary.experiment_id])
    assert {a.path for a in remote.list_artifacts(run.info.run_id)} == {"summary.csv", "summary.md"}
