"""MLflow layout and idempotence, against a real SQLite store in a temp dir."""

import gzip
import hashlib
import json
import shutil
import sqlite3

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from dpcd.tracking import (
    ingested_jobs,
    log_configurations,
    log_experiment_artifacts,
    setup_experiment,
)
from dpcd.tracking.runs_file import read_mlflow_runs, write_mlflow_runs


@pytest.fixture(scope="module")
def migrated_db(tmp_path_factory):
    """Create and migrate one store; each test copies it (migrations take seconds)."""
    path = tmp_path_factory.mktemp("template") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def store(tmp_path, monkeypatch, migrated_db):
    # sqlite's backup API, not a file copy: in WAL mode (dpcd.tracking sets it)
    # the last migrations may still sit in mlflow.db-wal
    with sqlite3.connect(migrated_db) as src, sqlite3.connect(tmp_path / "mlflow.db") as dst:
        src.backup(dst)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    return MlflowClient(uri)


def _run(name, value):
    return {
        "name": name,
        "params": {"solver": "dp_cd", "step": 1.0},
        "tags": {"dpcd.solver": "dp_cd"},
        "metrics": [("rel_error", value / (k + 1), k) for k in range(3)],
        "artifacts": {"privacy_ledger.json": '{"epsilon_target": 1.0}'},
    }


def test_setup_is_get_or_create(store):
    first = setup_experiment("dpcd/demo")
    again = setup_experiment("dpcd/demo")
    assert first == again
    runs = store.search_runs([first["experiment_id"]])
    assert [r.data.tags["dpcd.role"] for r in runs] == ["parent"]


def test_child_runs_are_nested_batched_and_replaced_on_rerun(store):
    info = setup_experiment("dpcd/demo")
    log_configurations(info, "demo/dp_cd/chunk0", [_run("a", 1.0), _run("b", 2.0)])
    log_configurations(info, "demo/dp_cd/chunk1", [_run("c", 3.0)])
    # The rerun of chunk0 replaces its two runs, and leaves chunk1's alone.
    ids = log_configurations(info, "demo/dp_cd/chunk0", [_run("a", 1.5)])
    children = store.search_runs(
        [info["experiment_id"]], filter_string="tags.`dpcd.solver` = 'dp_cd'"
    )
    assert sorted(r.info.run_name for r in children) == ["a", "c"]
    assert all(r.data.tags["mlflow.parentRunId"] == info["parent_run_id"] for r in children)
    assert all(r.info.status == "FINISHED" for r in children)
    history = store.get_metric_history(ids[0], "rel_error")
    assert [(m.step, m.value) for m in history] == [(0, 1.5), (1, 0.75), (2, 0.5)]
    assert [a.path for a in store.list_artifacts(ids[0])] == ["privacy_ledger.json"]


def test_more_params_than_one_batch_allows(store):
    info = setup_experiment("dpcd/demo")
    run = _run("wide", 1.0)
    run["params"] = {f"p{i:03d}": i for i in range(250)}
    run["metrics"] = [("m", float(k), k) for k in range(2500)]
    (run_id,) = log_configurations(info, "demo/wide/chunk0", [run])
    data = store.get_run(run_id).data
    assert len(data.params) == 250
    assert len(store.get_metric_history(run_id, "m")) == 2500


def test_sqlite_store_is_written_in_wal_mode(store, tmp_path):
    """WAL lets the MLflow UI read while jobs write; tags and metrics share one batch."""
    info = setup_experiment("dpcd/demo")
    run = _run("tagged", 1.0)
    run["tags"] = {f"t{i:03d}": "x" for i in range(150)}
    (run_id,) = log_configurations(info, "demo/tags/chunk0", [run])
    assert store.get_run(run_id).data.tags["t149"] == "x"
    with sqlite3.connect(tmp_path / "mlflow.db") as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_bad_run_fails_its_whole_job_and_logs_nothing(store):
    """On a SQL store a job's runs are one transaction: all or nothing."""
    info = setup_experiment("dpcd/demo")
    bad = _run("bad", 1.0)
    bad["params"] = {"bad|key": 1}  # MLflow rejects '|' in parameter names
    with pytest.raises(Exception, match="bad"):
        log_configurations(info, "demo/bad/chunk0", [_run("good", 1.0), bad])
    runs = store.search_runs([info["experiment_id"]])
    assert [r.data.tags.get("dpcd.role") for r in runs] == ["parent"]


def test_with_client_calls_a_run_that_fails_while_logging_is_marked_failed(store):
    info = setup_experiment("dpcd/demo")
    bad = _run("bad", 1.0)
    bad["params"] = {"bad|key": 1}
    with pytest.raises(Exception, match="bad"):
        log_configurations(info, "demo/bad/chunk0", [_run("good", 1.0), bad], bulk=False)
    runs = {r.info.run_name: r.info.status for r in store.search_runs([info["experiment_id"]])}
    assert runs["good"] == "FINISHED"
    assert runs["bad"] == "FAILED"


def _as_logged(client, run_id):
    run = client.get_run(run_id)
    history = {
        key: [(m.step, m.value) for m in client.get_metric_history(run_id, key)]
        for key in run.data.metrics
    }
    artifacts = {
        a.path: client.download_artifacts(run_id, a.path) for a in client.list_artifacts(run_id)
    }
    artifacts = {name: open(path).read() for name, path in artifacts.items()}
    return (run.info.run_name, run.info.status, run.info.lifecycle_stage, run.data.params,
            run.data.tags, run.data.metrics, history, artifacts)


def test_bulk_insert_logs_what_the_client_calls_log(store):
    """The one-transaction path writes the same runs as MLflow's own API."""
    info = setup_experiment("dpcd/demo")
    run = _run("twin", 1.0)
    run["metrics"] += [("nan", float("nan"), 0), ("inf", float("inf"), 0),
                       ("rel_error", 9.0, 1), ("rel_error", 0.5, 1)]
    (bulk,) = log_configurations(info, "demo/bulk/chunk0", [run])
    (calls,) = log_configurations(info, "demo/calls/chunk0", [run], bulk=False)
    a, b = _as_logged(store, bulk), _as_logged(store, calls)
    assert a[6]["rel_error"] == [(0, 1.0), (1, 0.5), (1, 9.0), (2, 1.0 / 3)]
    assert a[4].pop("dpcd.job") == "demo/bulk/chunk0" and b[4].pop("dpcd.job") == "demo/calls/chunk0"
    for x, y in zip(a, b):
        assert x == y or (x != x and y != y) or str(x) == str(y)
    found = store.search_runs([info["experiment_id"]], "metrics.rel_error < 2 and params.step = '1.0'")
    assert sorted(r.info.run_id for r in found) == sorted([bulk, calls])


def test_aggregation_artifacts_go_to_the_parent(store, tmp_path):
    info = setup_experiment("dpcd/demo")
    table = tmp_path / "demo.csv"
    table.write_text("solver,rel_error\ndp_cd,0.1\n")
    log_experiment_artifacts(info, [table], tags={"privacy.nonprivate_inputs": "x"}, metrics={"best": 0.1})
    parent = store.get_run(info["parent_run_id"])
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics["best"] == 0.1
    assert [a.path for a in store.list_artifacts(info["parent_run_id"])] == ["demo.csv"]


def _numpy_run(name):
    """A run as mlflow_runs builds it: numpy scalars, tuples, NaN."""
    run = _run(name, 1.0)
    run["params"].update(clip=np.float64(0.1), passes=np.int64(5), fast=np.bool_(True))
    run["metrics"] += [("time_mean", np.float64(0.25), 0), ("nan", np.float64("nan"), 0)]
    run["start_time"], run["end_time"] = 1_700_000_000_000, 1_700_000_000_500
    return run


def test_runs_read_back_from_their_file_log_what_the_runs_log(store, tmp_path):
    """A solve job writes its runs to a file, the aggregate job logs them from
    it: the MLflow runs are those the job would have logged itself."""
    info = setup_experiment("dpcd/demo")
    runs = [_numpy_run("a"), _numpy_run("b")]
    path = tmp_path / "chunk0.mlflow.jsonl.gz"
    write_mlflow_runs(path, "demo/dp_cd/chunk0", runs)
    job, read = read_mlflow_runs(path)
    assert job == "demo/dp_cd/chunk0"
    direct = log_configurations(info, "demo/direct/chunk0", runs)
    from_file = log_configurations(info, "demo/file/chunk0", read)
    for a, b in zip(direct, from_file):
        a, b = _as_logged(store, a), _as_logged(store, b)
        assert a[4].pop("dpcd.job") == "demo/direct/chunk0"
        assert b[4].pop("dpcd.job") == "demo/file/chunk0"
        for x, y in zip(a, b):
            assert x == y or (x != x and y != y) or str(x) == str(y)
    assert store.get_run(from_file[0]).data.params["clip"] == "0.1"
    assert store.get_run(from_file[0]).info.end_time == 1_700_000_000_500


@pytest.mark.parametrize("cut", [10, -5], ids=["header-only", "last-line-cut"])
def test_a_runs_file_that_is_not_whole_is_refused_naming_it(tmp_path, cut):
    path = tmp_path / "chunk0.mlflow.jsonl.gz"
    write_mlflow_runs(path, "demo/dp_cd/chunk0", [_run("a", 1.0), _run("b", 2.0)])
    with gzip.open(path, "rt") as fh:
        lines = fh.read().splitlines(keepends=True)
    text = "".join(lines[:1]) if cut == 10 else "".join(lines)[:cut]
    with gzip.open(path, "wt") as fh:
        fh.write(text)
    with pytest.raises(ValueError, match="chunk0.mlflow.jsonl.gz"):
        read_mlflow_runs(path)


def test_ingested_jobs_are_tagged_on_the_parent_once_all_their_runs_are_in(store):
    info = setup_experiment("dpcd/demo")
    assert ingested_jobs(info) == {}
    ids = log_configurations(info, "demo/dp_cd/chunk0", [_run("a", 1.0)], result_sha="ab12")
    log_configurations(info, "demo/dp_cd/chunk1", [_run("b", 1.0)])  # not from a file
    assert ingested_jobs(info) == {"demo/dp_cd/chunk0": "ab12"}
    assert store.get_run(ids[0]).data.tags["result.sha"] == "ab12"
    # a failed ingestion (the job's earlier runs already deleted) leaves no tag
    bad = _run("bad", 1.0)
    bad["params"] = {"bad|key": 1}
    with pytest.raises(Exception, match="bad"):
        log_configurations(info, "demo/dp_cd/chunk0", [bad], result_sha="cd34")
    assert ingested_jobs(info) == {}
    log_configurations(info, "demo/dp_cd/chunk0", [_run("a", 1.0)], result_sha="cd34")
    assert ingested_jobs(info) == {"demo/dp_cd/chunk0": "cd34"}


_INGEST = """
import sys
from dpcd.tracking.ingest import ingest_runs_files
from dpcd.tracking import setup_experiment
info = setup_experiment("dpcd/demo")
print("ingesting", flush=True)
print(ingest_runs_files(info, [sys.argv[1]]), flush=True)
"""


def test_an_ingestion_killed_midway_leaves_all_or_nothing_and_its_rerun_one_copy(
        store, tmp_path):
    """SIGKILL an aggregate-style ingestion of 2 000 runs inside its insert:
    the job's runs are all in or none is, its parent tag only with all of
    them; the rerun (skipping a tagged job) leaves exactly one copy."""
    import os
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "chunk0.mlflow.jsonl.gz"
    write_mlflow_runs(path, "demo/dp_cd/chunk0", [_numpy_run(f"r{i}") for i in range(2000)])
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    proc = subprocess.Popen([sys.executable, "-c", _INGEST, str(path)], env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ingesting"
    # Kill as soon as the insert's transaction writes its first pages to the
    # write-ahead log (the runs are built and their artifacts written first).
    wal = tmp_path / "mlflow.db-wal"
    size = wal.stat().st_size
    deadline = time.monotonic() + 60
    while wal.stat().st_size == size and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    info = setup_experiment("dpcd/demo")

    def job_runs():
        return [r for r in store.search_runs([info["experiment_id"]], max_results=5000)
                if r.data.tags.get("dpcd.job") == "demo/dp_cd/chunk0"]

    runs, tagged = job_runs(), ingested_jobs(info).get("demo/dp_cd/chunk0") == sha
    assert len(runs) in (0, 2000) and (len(runs) == 2000 or not tagged)
    assert all(r.info.status == "FINISHED" for r in runs)
    rerun = subprocess.run([sys.executable, "-c", _INGEST, str(path)], env=env,
                           capture_output=True, text=True, check=True)
    # the rerun skips the file only when the killed run had tagged it
    done = {"jobs": 0, "runs": 0, "skipped_jobs": 1, "removed_jobs": 0} if tagged else \
        {"jobs": 1, "runs": 2000, "skipped_jobs": 0, "removed_jobs": 0}
    assert rerun.stdout.splitlines()[-1] == str(done)
    runs = job_runs()
    assert len(runs) == 2000 and all(r.info.status == "FINISHED" for r in runs)
    assert len({r.info.run_name for r in runs}) == 2000
    assert ingested_jobs(info)["demo/dp_cd/chunk0"] == sha


def test_an_ingestion_replaces_the_jobs_of_its_stage_that_are_gone(store, tmp_path):
    """A stage whose jobs were cut otherwise (the fresh stage's per-solver jobs
    of earlier versions, now one job across the solvers): its ingestion
    removes the runs and tags of the jobs ``replaces`` selects that none of
    its files names, and leaves every other job's alone."""
    from dpcd.tracking.ingest import ingest_runs_files
    from dpcd.tracking.runs_file import is_fresh_job, job_name

    info = setup_experiment("dpcd/demo")
    old = {job: tmp_path / f"{k}.mlflow.jsonl.gz" for k, job in enumerate(
        ["demo/dp_cd/chunk0", "demo/dp_cd/fresh/chunk0", "demo/sgd/fresh/chunk0"])}
    for job, path in old.items():
        write_mlflow_runs(path, job, [_run(f"{job}-a", 1.0), _run(f"{job}-b", 2.0)])
    assert ingest_runs_files(info, old.values())["jobs"] == 3
    new = tmp_path / "packed.mlflow.jsonl.gz"
    packed = job_name("demo", 0, stage="fresh")
    assert packed == "demo/fresh/chunk0" and is_fresh_job(packed)
    assert not is_fresh_job(job_name("demo", 0, "dp_cd", "screen"))
    write_mlflow_runs(new, packed, [_run("p", 1.0)])
    ingest = ingest_runs_files(info, [new], replaces=is_fresh_job)
    assert ingest == {"jobs": 1, "runs": 1, "skipped_jobs": 0, "removed_jobs": 2}
    assert set(ingested_jobs(info)) == {"demo/dp_cd/chunk0", packed}
    jobs = [r.data.tags.get("dpcd.job") for r in store.search_runs([info["experiment_id"]])]
    assert sorted(filter(None, jobs)) == ["demo/dp_cd/chunk0"] * 2 + [packed]
    # again: the packed job is skipped (already in), and nothing else is removed
    assert ingest_runs_files(info, [new], replaces=is_fresh_job) == {
        "jobs": 0, "runs": 0, "skipped_jobs": 1, "removed_jobs": 0}


@pytest.mark.parametrize("name, url", [("sparse_lasso", None), ("california", "https://")])
@pytest.mark.parametrize("bulk", [True, False])
def test_runs_carry_their_dataset_as_an_input_without_data(store, tmp_path, name, url, bulk):
    """The parent run and each child run take the processed dataset as their
    training input: its name, the file's digest and its source, no rows."""
    from dpcd.data.io import save_dataset
    from dpcd.tracking import log_dataset, processed_dataset

    path = tmp_path / "raw.npz"
    X, y = np.random.default_rng(0).normal(size=(6, 3)), np.arange(6.0)
    save_dataset(path, X, y, {"dataset": "mine", "variant": "raw", "source": name,
                              "generator": {"name": name, "settings": {"seed": 3}}})
    dataset = processed_dataset(str(path))
    assert dataset.digest == hashlib.sha256(path.read_bytes()).hexdigest()[:32]
    info = setup_experiment("dpcd/demo")
    entity = log_dataset(info, dataset)
    ids = log_configurations(info, "demo/dp_cd/chunk0", [_run("a", 1.0), _run("b", 2.0)],
                             bulk=bulk, dataset=entity)
    for run_id in [info["parent_run_id"], *ids]:
        (item,) = store.get_run(run_id).inputs.dataset_inputs
        assert item.dataset.name == "mine/raw" and item.dataset.digest == dataset.digest
        assert {t.key: t.value for t in item.tags} == {"mlflow.data.context": "training"}
        assert not item.dataset.profile and not item.dataset.schema  # no rows, no columns
        source = json.loads(item.dataset.source)
        if url:
            assert item.dataset.source_type == "http" and source["url"].startswith(url)
        else:
            assert item.dataset.source_type == "code"
            generator = json.loads(source["tags"]["dpcd.generator"])
            assert source["tags"]["dpcd.source"] == name and generator["settings"] == {"seed": 3}
    # the same dataset again (a rerun): still one dataset in the experiment
    log_dataset(info, processed_dataset(str(path)))
    with sqlite3.connect(tmp_path / "mlflow.db") as db:
        assert db.execute("select count(*) from datasets").fetchone() == (1,)
