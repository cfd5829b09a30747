"""Write sweeps to MLflow with few, batched calls.

Layout (kept usable when a sweep has thousands of configurations):

- one MLflow experiment per config experiment (``<prefix><name>``, the
  prefix per config file: ``dpcd/`` for the embedded default);
- one parent run per experiment (tag ``dpcd.role=parent``), which receives
  the tables and figures of the aggregation stage;
- one child run per configuration (solver x hyperparameters x passes x
  epsilon), its seeds summarised as mean/min/max curves, with tags
  ``dpcd.solver``, ``dpcd.job`` and ``sweep.config_id`` to filter on.

Solve jobs do not log: each writes its runs to a file (importing MLflow
alone costs a solve job 1.4 s), and the experiment's aggregate job, the one
writer of its child runs, ingests them. A job's runs replace its earlier
ones (same ``dpcd.job``), so a rerun never leaves duplicates, and the parent
run's tag ``dpcd.ingested.<job>`` (the runs file's SHA-256) lets a rerun of
the aggregation skip the jobs already in the store. Runs are written only
after their computation, so a killed job leaves nothing marked finished.

MLflow has no API to create many runs at once, and its client spends about
10 ms of ORM work per call, three calls per run at least: a 60 000-run grid
spent longer in MLflow than in its solvers. On a SQL store, a job's runs are
therefore inserted in one transaction through MLflow's own table models,
validated by MLflow's own batch check first (``tests/test_tracking.py``
checks both paths give the same runs); other stores (a tracking server) get
the client calls.
"""

import fcntl
import functools
import json
import os
import signal
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path

from mlflow.entities import (
    DatasetInput,
    InputTag,
    LifecycleStage,
    Metric,
    Param,
    RunStatus,
    RunTag,
    SourceType,
)
from mlflow.exceptions import MlflowException
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
from mlflow.store.tracking.dbmodels.models import (
    SqlDataset,
    SqlInput,
    SqlInputTag,
    SqlLatestMetric,
    SqlMetric,
    SqlParam,
    SqlRun,
    SqlTag,
)
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
from mlflow.tracking import MlflowClient
from mlflow.utils.validation import _validate_batch_log_data
from sqlalchemy import event, insert
from sqlalchemy.engine import Engine

DEFAULT_URI = "sqlite:///results/mlflow.db"

EXPERIMENT_KIND = "custom_model_development"
# A view of the runs table with what a user compares first, opened by
# #/experiments/<id>/runs?workflowType=machine_learning&viewStateShareKey=dpcd
# (MLflow's shared views; the default columns show neither error nor budget).
VIEW_KEY = "dpcd"
_COLUMNS = ["metrics.`final_rel_error_mean`", "metrics.`final_rel_error_std`",
            "metrics.`privacy.epsilon_achieved`", "metrics.`time_mean`", "params.`solver`",
            "params.`epsilon`", "params.`passes`", "params.`step`", "params.`clip`"]
RUNS_VIEW = json.dumps({"orderByKey": _COLUMNS[0], "orderByAsc": True,
                        "selectedColumns": _COLUMNS})

# Parent-run tag prefix: dpcd.ingested.<job> = SHA-256 of the job's runs file.
INGESTED = "dpcd.ingested."

# The context MLflow's UI shows beside a run's dataset.
TRAINING = [InputTag("mlflow.data.context", "training")]

# MLflow's per-request limits for log_batch.
MAX_ENTITIES, MAX_PARAMS, MAX_TAGS = 1000, 100, 100


def tracking_uri():
    """MLFLOW_TRACKING_URI when set (the workflow sets it from config), else the default."""
    return os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI


def _sqlite_wal(dbapi_connection, connection_record):
    """Write-ahead log for SQLite stores: commits skip the fsync of rollback
    journals (a third of the per-run cost measured on a sweep) and readers,
    such as the MLflow UI, no longer block the jobs that write."""
    if type(dbapi_connection).__module__.startswith("sqlite3"):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()


def _client(uri=None):
    """An MlflowClient; SQLite connections this process opens use WAL."""
    if not event.contains(Engine, "connect", _sqlite_wal):
        event.listen(Engine, "connect", _sqlite_wal)
    return MlflowClient(uri or tracking_uri())


def _retry(func, *args, attempts=8, **kwargs):
    """Retry a call that may race other jobs on a shared SQLite store."""
    for attempt in range(attempts):
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # mlflow wraps sqlite errors in several types
            text = str(exc).lower()
            transient = "locked" in text or "unique constraint" in text or "already exists" in text
            if not transient or attempt == attempts - 1:
                raise
            time.sleep(0.2 * 2**attempt)


def _artifact_location(name):
    """Artifacts of a local SQLite store live next to it, under results/."""
    uri = tracking_uri()
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///"):])
        return (db.parent.resolve() / "mlflow-artifacts" / name.replace("/", "_")).as_uri()
    return None


@functools.cache
def git_sha():
    """Commit of the code that ran, or 'unknown' outside a git checkout (asked
    once a process: every runs file an aggregate job ingests tags it)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@contextmanager
def _store_lock():
    """Serialise store creation: concurrent first uses of one SQLite file race
    MLflow's schema migrations (daizutabi/hydraflow#245)."""
    uri = tracking_uri()
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri[len("sqlite:///"):])
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def setup_experiment(name):
    """Get or create the MLflow experiment and its parent run.

    Parameters
    ----------
    name : str
        MLflow experiment name.

    Returns
    -------
    dict
        ``{"tracking_uri", "experiment_name", "experiment_id", "parent_run_id"}``.
    """
    with _store_lock():
        client = _client()
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            experiment_id = client.create_experiment(
                name, artifact_location=_artifact_location(name)
            )
        else:
            experiment_id = experiment.experiment_id
        # The kind tells model-training experiments from GenAI ones (MLflow 3.17's UI
        # still opens on its GenAI pages unless the link says workflowType=machine_learning).
        client.set_experiment_tag(experiment_id, "mlflow.experimentKind", EXPERIMENT_KIND)
        client.set_experiment_tag(experiment_id, f"mlflow.sharedViewState.{VIEW_KEY}", RUNS_VIEW)
        parents = client.search_runs(
            [experiment_id], filter_string="tags.`dpcd.role` = 'parent'", max_results=1
        )
        if parents:
            parent_id = parents[0].info.run_id
        else:
            parent = client.create_run(
                experiment_id,
                run_name=name.split("/")[-1],
                tags={"dpcd.role": "parent", "git.sha": git_sha()},
            )
            parent_id = parent.info.run_id
    return {
        "tracking_uri": tracking_uri(),
        "experiment_name": name,
        "experiment_id": experiment_id,
        "parent_run_id": parent_id,
    }


def _log_batch(client, run_id, metrics=(), params=(), tags=()):
    """Log one run's data in as few log_batch calls as MLflow's limits allow
    (usually one: each call costs a few ms of ORM work, whatever its size)."""
    params, tags, metrics = list(params), list(tags), list(metrics)
    while params or tags or metrics:
        p, params = params[:MAX_PARAMS], params[MAX_PARAMS:]
        t, tags = tags[:MAX_TAGS], tags[MAX_TAGS:]
        room = MAX_ENTITIES - len(p) - len(t)
        m, metrics = metrics[:room], metrics[room:]
        _retry(client.log_batch, run_id, metrics=m, params=p, tags=t)


def _delete_job_runs(client, info, job):
    """Remove a job's earlier child runs so a rerun replaces, never duplicates."""
    filter_string = f"tags.`dpcd.job` = '{job}'"
    page_token = None
    while True:
        page = client.search_runs(
            [info["experiment_id"]], filter_string=filter_string,
            max_results=1000, page_token=page_token,
        )
        for run in page:
            _retry(client.delete_run, run.info.run_id)
        page_token = page.token
        if not page_token:
            break


@contextmanager
def _terminate_as_failed_on_signal():
    """Turn SIGTERM (Snakemake cancelling a job) into an exception."""

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _child_run(info, job, run, sha, now, result_sha=None):
    """Tags, params and metrics of one child run as MLflow entities."""
    tags = {
        **run["tags"],
        "mlflow.parentRunId": info["parent_run_id"],
        "mlflow.runName": run["name"],
        "dpcd.job": job,
        "git.sha": sha,
        **({"result.sha": result_sha} if result_sha else {}),
    }
    return (
        [RunTag(k, str(v)) for k, v in tags.items()],
        [Param(k, str(v)) for k, v in sorted(run["params"].items())],
        [Metric(k, float(v), now, int(step)) for k, v, step in run["metrics"]],
    )


def log_dataset(info, dataset):
    """Log ``dataset`` (an ``mlflow.data`` dataset: name, digest, source) as the
    training input of the experiment's parent run; returns its MLflow entity,
    which :func:`log_configurations` gives to each child run."""
    entity = dataset._to_mlflow_entity()
    _retry(_client(info["tracking_uri"]).log_inputs, info["parent_run_id"],
           [DatasetInput(entity, TRAINING)])
    return entity


def _dataset_inputs(session, info, dataset, run_ids):
    """Rows linking each run to the experiment's dataset (logged on the parent)."""
    (dataset_uuid,) = session.query(SqlDataset.dataset_uuid).filter_by(
        experiment_id=int(info["experiment_id"]), name=dataset.name,
        digest=dataset.digest).one()
    inputs, tags = [], []
    for run_id in run_ids:
        input_uuid = uuid.uuid4().hex
        inputs.append(dict(input_uuid=input_uuid, source_type="DATASET", source_id=dataset_uuid,
                           destination_type="RUN", destination_id=run_id))
        tags += [dict(input_uuid=input_uuid, name=t.key, value=t.value) for t in TRAINING]
    return {SqlInput: inputs, SqlInputTag: tags}


@functools.cache
def _sql_store(uri, artifact_root):
    """One MLflow SQL store a process: each one made builds an engine and checks
    the schema's migrations (a third of an ingestion's time, once per runs file)."""
    return SqlAlchemyStore(uri, artifact_root)


def _insert_runs(uri, artifact_root, info, job, runs, sha, now, result_sha=None,
                 dataset=None):
    """All child runs of a job in one transaction of a SQL store, already FINISHED."""
    store = _sql_store(uri, artifact_root)
    rows = {model: [] for model in (SqlRun, SqlTag, SqlParam, SqlMetric, SqlLatestMetric)}
    run_ids = []
    for run in runs:
        tags, params, metrics = _child_run(info, job, run, sha, now, result_sha)
        _validate_batch_log_data(metrics, params, tags)
        run_id = uuid.uuid4().hex
        rows[SqlRun].append(dict(
            name=run["name"], run_uuid=run_id, experiment_id=int(info["experiment_id"]),
            artifact_uri=f"{artifact_root.rstrip('/')}/{run_id}/artifacts",
            source_type=SourceType.to_string(SourceType.UNKNOWN), source_name="",
            entry_point_name="", user_id="unknown", source_version="",
            status=RunStatus.to_string(RunStatus.FINISHED),
            start_time=run.get("start_time") or now, end_time=run.get("end_time") or now,
            deleted_time=None, lifecycle_stage=LifecycleStage.ACTIVE,
        ))
        rows[SqlTag] += [dict(run_uuid=run_id, key=t.key, value=t.value) for t in tags]
        rows[SqlParam] += [dict(run_uuid=run_id, key=p.key, value=p.value) for p in params]
        latest = {}
        for metric in dict.fromkeys(metrics):  # MLflow drops exact duplicates
            is_nan, value = store.sanitize_metric_value(metric.value)
            fields = dict(run_uuid=run_id, key=metric.key, value=value,
                          timestamp=metric.timestamp, step=metric.step, is_nan=is_nan)
            rows[SqlMetric].append(fields)
            # MLflow's "latest": the largest (step, timestamp, value)
            order = (metric.step, metric.timestamp, value)
            if metric.key not in latest or order > latest[metric.key][0]:
                latest[metric.key] = (order, fields)
        rows[SqlLatestMetric] += [fields for _, fields in latest.values()]
        run_ids.append(run_id)
    # Artifacts first: a committed run always has its files. The job's runs'
    # files staged as the experiment's tree (<run id>/artifacts/<name>) and
    # logged in one call (one per run cost more than the insert).
    with tempfile.TemporaryDirectory() as staging:
        for run_id, run in zip(run_ids, runs):
            if run.get("artifacts"):
                folder = Path(staging) / run_id / "artifacts"
                folder.mkdir(parents=True)
                for name, text in run["artifacts"].items():
                    (folder / name).write_text(text)
        if any(Path(staging).iterdir()):
            get_artifact_repository(artifact_root).log_artifacts(staging)
    # Core executemany inserts: the ORM's per-object bookkeeping cost more than SQLite.
    with store.ManagedSessionMaker() as session:
        if dataset is not None:
            rows.update(_dataset_inputs(session, info, dataset, run_ids))
        for model, values in rows.items():
            if values:
                session.execute(insert(model.__table__), values)
    return run_ids


def _log_runs_with_client(client, info, job, runs, sha, now, result_sha=None, dataset=None):
    """Client calls, one run at a time (stores that are not SQL databases)."""
    run_ids = []
    with _terminate_as_failed_on_signal():
        for run in runs:
            tags, params, metrics = _child_run(info, job, run, sha, now, result_sha)
            created = _retry(
                client.create_run, info["experiment_id"], run_name=run["name"],
                tags={t.key: t.value for t in tags}, start_time=run.get("start_time"),
            )
            run_id = created.info.run_id
            try:
                _log_batch(client, run_id, metrics=metrics, params=params)
                if dataset is not None:
                    _retry(client.log_inputs, run_id, [DatasetInput(dataset, TRAINING)])
                for path, text in run.get("artifacts", {}).items():
                    _retry(client.log_text, run_id, text, path)
            except BaseException:
                client.set_terminated(run_id, "FAILED")
                raise
            # A diverged configuration is a finished computation with a bad result.
            _retry(client.set_terminated, run_id, "FINISHED", end_time=run.get("end_time"))
            run_ids.append(run_id)
    return run_ids


def log_configurations(info, job, runs, bulk=True, result_sha=None, dataset=None):
    """Log one job's configurations as child runs of the experiment.

    Parameters
    ----------
    info : dict
        Output of :func:`setup_experiment`.
    job : str
        Identifier of the solve job (``experiment/solver/chunkK``).
    runs : list of dict
        Each with ``name``, ``params`` (dict), ``tags`` (dict),
        ``metrics`` (list of (key, value, step)) and optional ``artifacts``
        (dict of artifact file -> text).
    bulk : bool, default=True
        On a SQL store, insert all runs in one transaction (all or nothing);
        False, or another store, logs them one by one with client calls.
    result_sha : str, optional
        SHA-256 of the runs file they were read from: tagged ``result.sha`` on
        each run and, once all are in, ``dpcd.ingested.<job>`` on the parent
        (see :func:`ingested_jobs`).
    dataset : mlflow.entities.Dataset, optional
        The experiment's dataset, as :func:`log_dataset` logged it: each run's
        training input.

    Returns
    -------
    list of str
        The run ids, in the order of ``runs``.
    """
    uri = info["tracking_uri"]
    client = _client(uri)  # installs the SQLite WAL hook before any store connects
    if result_sha:
        # the tag says all the job's runs are in: false from the first deletion on
        with suppress(MlflowException):
            client.delete_tag(info["parent_run_id"], INGESTED + job)
    _delete_job_runs(client, info, job)
    sha = git_sha()
    now = int(time.time() * 1000)
    if bulk and uri.startswith(("sqlite:", "postgresql", "mysql", "mssql")):
        artifact_root = client.get_experiment(info["experiment_id"]).artifact_location
        run_ids = _retry(_insert_runs, uri, artifact_root, info, job, runs, sha, now, result_sha,
                         dataset)
    else:
        run_ids = _log_runs_with_client(client, info, job, runs, sha, now, result_sha, dataset)
    if result_sha:
        # after the runs: a kill in between only costs the next rerun an ingestion
        _retry(client.set_tag, info["parent_run_id"], INGESTED + job, result_sha)
    return run_ids


def ingested_jobs(info):
    """``{job: SHA-256 of its runs file}`` for the jobs whose runs are all in
    the store, from the parent run's ``dpcd.ingested.<job>`` tags."""
    tags = _client(info["tracking_uri"]).get_run(info["parent_run_id"]).data.tags
    return {k[len(INGESTED):]: v for k, v in tags.items() if k.startswith(INGESTED)}


def forget_jobs(info, jobs):
    """Remove the child runs of ``jobs`` and their ``dpcd.ingested.<job>``
    tags (jobs the workflow no longer has)."""
    client = _client(info["tracking_uri"])
    for job in jobs:
        with suppress(MlflowException):
            client.delete_tag(info["parent_run_id"], INGESTED + job)
        _delete_job_runs(client, info, job)


def log_experiment_artifacts(info, paths, tags=None, metrics=None, artifact_path=None):
    """Attach the aggregation's tables and figures to the parent run (under
    ``artifact_path`` when given: the fresh-seed tables share their names)."""
    client = _client(info["tracking_uri"])
    run_id = info["parent_run_id"]
    for path in paths:
        _retry(client.log_artifact, run_id, str(path), artifact_path)
    _log_batch(
        client, run_id,
        metrics=[Metric(k, float(v), int(time.time() * 1000), 0) for k, v in (metrics or {}).items()],
        tags=[RunTag(k, str(v)) for k, v in (tags or {}).items()],
    )
    _retry(client.set_terminated, run_id, "FINISHED")

