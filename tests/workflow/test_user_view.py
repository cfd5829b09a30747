"""The results as users see them: the Snakemake report, the solve logs, the
MLflow UI in a headless browser."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest
from mlflow.tracking import MlflowClient

from conftest import BIN, ROOT, report_entries, snakemake

pytestmark = pytest.mark.workflow


def caption_text(entry):
    return " ".join(re.sub(r"<[^>]+>", " ", entry["caption"]).split())


def test_report_has_every_figure_table_and_the_summary(finished_workdir, tmp_path):
    workdir = shutil.copytree(finished_workdir, tmp_path / "wf", symlinks=True)
    entries = report_entries(workdir)
    captions = {
        name: " ".join((ROOT / "workflow" / "report" / f"{name}.rst").read_text().split())
        for name in ("rel_error", "rel_error_time", "summary")
    }
    for experiment in ("exp_a", "exp_b"):
        for name in ("rel_error", "rel_error_time"):
            entry = entries[f"results/figures/{experiment}_{name}.png"]
            assert entry["filename"] == f"{experiment}_{name}.png"
            assert captions[name].split(";")[0] in caption_text(entry)
        assert f"results/figures/{experiment}_solution.png" in entries
        for suffix in ("csv", "md"):
            entry = entries[f"results/tables/{experiment}.{suffix}"]
            assert f"The table of {experiment}" in caption_text(entry)
    for suffix in ("csv", "md"):
        assert captions["summary"][:60] in caption_text(entries[f"results/summary.{suffix}"])
    # every figure and table the run wrote, nothing left out
    written = {str(p.relative_to(workdir)) for sub in ("figures", "tables", "paper")
               for p in (workdir / "results" / sub).rglob("*") if p.is_file()}
    written |= {f"results/summary.{suffix}" for suffix in ("csv", "md")}
    assert len(written) == 12 and written <= set(entries), written - set(entries)


def test_solve_logs_report_progress(finished_workdir):
    logs = sorted((finished_workdir / "results" / "logs" / "solve").rglob("*.log"))
    assert logs
    for log in logs:
        lines = re.findall(r"progress: (\d+)/(\d+) configurations, ([\d.]+) s elapsed, "
                           r"~([\d.]+) s remaining", log.read_text())
        assert lines, log
        done, total, _, remaining = lines[-1]
        assert done == total and float(remaining) == 0.0


def test_child_runs_record_their_own_start_and_end(finished_workdir):
    client = MlflowClient(f"sqlite:///{finished_workdir}/results/mlflow.db")
    exp = client.get_experiment_by_name("dpcd/exp_a")
    runs = [r for r in client.search_runs([exp.experiment_id], max_results=1000)
            if "mlflow.parentRunId" in r.data.tags]
    by_job = {}
    for run in runs:
        assert run.info.start_time <= run.info.end_time
        by_job.setdefault(run.data.tags["dpcd.job"], []).append(run.info.start_time)
    # Configurations of one job ran one after the other, not all at "now".
    assert any(len(set(starts)) > 1 for starts in by_job.values())


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_chromium() is None, reason="no Chromium on this machine "
                    "(Debian: apt-get install chromium)")
def test_mlflow_ui_shows_error_and_budget_columns(finished_workdir, tmp_path):
    """`make ui`'s command on the default run's store, opened in headless
    Chromium on the runs view every experiment carries; the screenshot is kept
    in the test's temporary directory."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    makefile = (ROOT / "Makefile").read_text()
    make_ui = re.search(r"^ui: \$\(VENV\).*\n\t\$\(BIN\)/(mlflow ui [^\n]+)", makefile,
                        flags=re.M).group(1).split()
    exports = dict(re.findall(r"^ui: export (\w+) = (\S+)$", makefile, flags=re.M))
    assert exports == {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    server = subprocess.Popen(
        [str(BIN / make_ui[0]), *make_ui[1:], "--host", "127.0.0.1", "--port", str(port)],
        cwd=finished_workdir, stdout=open(tmp_path / "ui.log", "w"), stderr=subprocess.STDOUT,
        start_new_session=True, env={**os.environ, **exports},
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, (tmp_path / "ui.log").read_text()
            try:
                urllib.request.urlopen(base + "/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "mlflow ui did not start"
                time.sleep(0.5)
        info = json.loads((finished_workdir / "results" / "mlflow" / "exp_a.json").read_text())
        url = (f"{base}/#/experiments/{info['experiment_id']}/runs"
               "?workflowType=machine_learning&viewStateShareKey=dpcd")
        browser = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                   "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=2000,900",
                   "--virtual-time-budget=20000"]
        png = tmp_path / "mlflow_ui.png"
        # one page load: the screenshot to its file, the DOM to stdout
        dom = subprocess.run([*browser, f"--screenshot={png}", "--dump-dom", url],
                             capture_output=True, text=True, timeout=180).stdout
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    for column in ("final_rel_error_mean", "privacy.epsilon_achieved", "Run Name"):
        assert column in dom, column
    # the runs are listed: every child's name is on the page
    assert len(set(re.findall(r"dp_cd-[0-9a-f]{12}", dom))) == 8
