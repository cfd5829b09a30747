"""The workflow against a real ``mlflow server`` (SQLite backend; PostgreSQL
where its binaries and the psycopg2 driver are installed, else skipped saying
which is missing; ``.ci/run`` installs Debian's), as a group shares one.

Also runs Snakemake as ``.venv/bin/snakemake`` with the environment not
activated (its bin directory off PATH): the rules must find ``dpcd`` anyway.
"""

import contextlib
import glob
import importlib.util
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

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


def _pg_bindir():
    """PostgreSQL's server binaries: next to ``pg_ctl`` on PATH, else Debian's
    versioned directory (the ``postgresql`` package puts only wrappers on PATH)."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    dirs = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")]
    dirs.sort(key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else -1)
    return dirs[-1] if dirs else None


@contextlib.contextmanager
def _postgres(also_on=None):
    """A throw-away PostgreSQL cluster listening on 127.0.0.1; yields its URI.

    PostgreSQL refuses to run as root, so as root (CI, containers) the cluster
    is made and run by the ``postgres`` system user, in a temporary directory
    that user owns (pytest's tmp_path is private to root). The cluster is
    stopped and its directory removed however the test ends. ``also_on``: one
    more address to listen on, whose /30 link gets the same trust as loopback.
    """
    bindir = _pg_bindir()
    reasons = []
    if bindir is None:
        reasons.append("no postgres binaries (pg_ctl, initdb)")
    if importlib.util.find_spec("psycopg2") is None:
        reasons.append("no psycopg2 driver (pip install psycopg2-binary)")
    as_user = {}
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            reasons.append("running as root and no `postgres` user to run the server as")
        else:
            as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    if reasons:
        pytest.skip("PostgreSQL backend: " + "; ".join(reasons))

    def pg(tool, *args):
        return subprocess.run([str(bindir / tool), *args], cwd=root, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120, **as_user)

    # Short path: the socket goes here too (a socket path has at most 107 bytes).
    root = tempfile.mkdtemp(prefix="dpcd-pg-")
    try:
        if as_user:
            os.chown(root, as_user["user"], as_user["group"])
        data, port = os.path.join(root, "data"), _free_port()
        done = pg("initdb", "-D", data, "-U", "mlflow", "-A", "trust", "--no-locale",
                  "-E", "UTF8")
        assert done.returncode == 0, done.stdout + done.stderr
        hosts = "127.0.0.1"
        if also_on:
            hosts += "," + also_on
            with open(os.path.join(data, "pg_hba.conf"), "a") as hba:
                hba.write(f"host all all {also_on}/30 trust\n")
        # -l: the server writes to a file, not to pipes pg_ctl would leave open.
        done = pg("pg_ctl", "-D", data, "-l", os.path.join(root, "server.log"), "-w",
                  "-o", f"-p {port} -k {root} -h {hosts}", "start")
        assert done.returncode == 0, done.stdout + done.stderr + _tail(root, "server.log")
        try:
            done = pg("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "mlflow", "mlflow")
            assert done.returncode == 0, done.stdout + done.stderr
            yield f"postgresql://mlflow@{also_on or '127.0.0.1'}:{port}/mlflow"
        finally:
            pg("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _tail(root, name):
    try:
        return Path(root, name).read_text()[-4000:]
    except OSError:
        return ""


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request, tmp_path):
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            backend = f"sqlite:///{tmp_path}/server.db"
        else:
            backend = stack.enter_context(_postgres())
        port = _free_port()
        log = stack.enter_context(open(tmp_path / "server.log", "w"))
        proc = subprocess.Popen(
            [str(BIN / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
             "--backend-store-uri", backend, "--artifacts-destination",
             str(tmp_path / "artifacts"), "--serve-artifacts", "--workers", "1"],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            # no GenAI job runner (7 Huey processes), as `make ui` (README recipe)
            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        )
        # Stopped before the database it writes to (callbacks run last-in first-out).
        stack.callback(_stop, proc)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_http(url + "/health", proc)
        except (AssertionError, TimeoutError) as err:
            raise AssertionError(f"{err}\n{(tmp_path / 'server.log').read_text()[-4000:]}")
        yield url


def _stop(proc):
    """SIGTERM the server's process group; SIGKILL what is left after 30 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
            return


def _children(client, name):
    exp = client.get_experiment_by_name(name)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    return exp, [r for r in runs if "mlflow.parentRunId" in r.data.tags], \
        [r for r in runs if r.data.tags.get("dpcd.role") == "parent"]


def test_workflow_logs_to_a_tracking_server(finished_workdir, tmp_path, server):
    """Pointing a finished workdir at a server reruns exp_b's aggregate_report job,
    which ingests the solve jobs' runs files, and the summary (the tracking
    URI is a param of the tracked rules), and no solve job: what arrives
    equals what the local SQLite store holds."""
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
    ran = re.findall(r"^(?:local)?rule (\w+):", proc.stderr, re.M)
    assert "aggregate_report" in ran and "summary" in ran and "solve" not in ran, ran

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


# The test host: a network namespace of the test's own, joined to this one by
# a veth pair on a documentation subnet (RFC 5737). The shared server runs in
# it, so its clients reach it at a non-loopback address across a link.
_HOST_SIDE, _SERVER_SIDE = "198.51.100.1", "198.51.100.2"


def _ip(*args, netns=None):
    cmd = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def _test_host():
    """A network namespace reached at ``_SERVER_SIDE``; yields its name.
    Needs root and iproute2 (skipped, saying why, without them)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("a test host in a network namespace needs root and iproute2 (ip)")
    name, pid = f"dpcd-srv-{os.getpid()}", os.getpid()
    outer, inner = f"dpcdh{pid}"[:15], f"dpcdn{pid}"[:15]
    done = _ip("netns", "add", name)
    if done.returncode != 0:
        pytest.skip(f"cannot make a network namespace: {done.stderr.strip()}")
    try:
        for args, netns in [(("link", "add", outer, "type", "veth", "peer", "name", inner), None),
                            (("link", "set", inner, "netns", name), None),
                            (("addr", "add", f"{_HOST_SIDE}/30", "dev", outer), None),
                            (("link", "set", outer, "up"), None),
                            (("addr", "add", f"{_SERVER_SIDE}/30", "dev", inner), name),
                            (("link", "set", inner, "up"), name),
                            (("link", "set", "lo", "up"), name)]:
            done = _ip(*args, netns=netns)
            assert done.returncode == 0, f"ip {' '.join(args)}: {done.stderr}"
        yield name
    finally:
        _ip("link", "del", outer)
        _ip("netns", "del", name)


def _status(url, data=None, headers=()):
    """HTTP status of one request (a browser's, with ``headers``), 10 s at most."""
    request = urllib.request.Request(url, data=data, headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def test_the_shared_server_recipe_through_a_non_loopback_address(tmp_path, monkeypatch):
    """docs/operations.md's server recipe on PostgreSQL, on a test host of its
    own (a network namespace) at a non-loopback address: dpcd's jobs log runs through it, the
    UI's page and its state-changing calls (which carry the page's origin)
    are answered, and a name or origin the recipe does not list is refused."""
    from mlflow.version import VERSION

    from dpcd.tracking import log_configurations, setup_experiment

    address = _SERVER_SIDE
    with contextlib.ExitStack() as stack:
        netns = stack.enter_context(_test_host())
        backend = stack.enter_context(_postgres(also_on=_HOST_SIDE))
        port = _free_port()
        url = f"http://{address}:{port}"
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
               "MLFLOW_SERVER_ALLOWED_HOSTS": f"{address}:{port},localhost:{port}",
               "MLFLOW_SERVER_CORS_ALLOWED_ORIGINS": url}
        log = stack.enter_context(open(tmp_path / "server.log", "w"))
        proc = subprocess.Popen(
            ["ip", "netns", "exec", netns,
             str(BIN / "mlflow"), "server", "--host", address, "--port", str(port),
             "--backend-store-uri", backend, "--artifacts-destination",
             str(tmp_path / "artifacts"), "--serve-artifacts", "--workers", "1"],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        stack.callback(_stop, proc)
        try:
            _wait_http(url + "/health", proc)
        except (AssertionError, TimeoutError) as err:
            raise AssertionError(f"{err}\n{(tmp_path / 'server.log').read_text()[-4000:]}")

        # the workflow's jobs: dpcd's client calls, at the address
        monkeypatch.setenv("MLFLOW_TRACKING_URI", url)
        monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
        info = setup_experiment("dpcd/shared")
        run = {"name": "r", "params": {"solver": "dp_cd"}, "tags": {"dpcd.solver": "dp_cd"},
               "metrics": [("rel_error", 0.5, 0), ("rel_error", 0.25, 1)],
               "artifacts": {"privacy_ledger.json": '{"epsilon_target": 1.0}'}}
        (run_id,) = log_configurations(info, "shared/dp_cd/chunk0", [run])
        client = MlflowClient(url)
        assert client.get_run(run_id).data.metrics == {"rel_error": 0.25}
        assert client.download_artifacts(run_id, "privacy_ledger.json", str(tmp_path))

        # the UI at that address: its page, and a search as the page sends it
        search = f"{url}/ajax-api/2.0/mlflow/experiments/search"
        body, json_type = b'{"max_results": 5}', {"Content-Type": "application/json"}
        assert _status(url + "/") == 200
        assert _status(search, body, {**json_type, "Origin": url}) == 200
        if tuple(int(p) for p in VERSION.split(".")[:2]) >= (3, 5):  # the checks exist
            assert _status(search, body, {**json_type, "Host": f"elsewhere.example:{port}"}) == 403
            assert _status(search, body, {**json_type, "Origin": "http://elsewhere.example"}) == 403
