"""Ingest the solve jobs' runs files into an experiment's MLflow store.

The experiment's aggregate job is the one writer of its child runs: it reads
each runs file (:mod:`dpcd.tracking.runs_file`) and logs it in one batch,
skipping the files whose hash the parent run already records.
"""

import hashlib
import logging
import time
from pathlib import Path

from dpcd.tracking.mlflow_log import (forget_jobs, ingested_jobs, log_configurations,
                                      log_dataset, setup_experiment)
from dpcd.tracking.runs_file import read_mlflow_runs

log = logging.getLogger("dpcd.tracking")


def ingest_runs_files(info, paths, replaces=None, dataset=None):
    """Log the solve jobs' runs files (:func:`dpcd.tracking.runs_file.write_mlflow_runs`)
    to the experiment ``info``, skipping those already in the store.

    ``replaces``: a predicate on job names; the jobs in the store it selects
    that no file of ``paths`` names are removed (a stage whose jobs were cut
    otherwise leaves none of its earlier runs beside the new ones).
    ``dataset``: the MLflow dataset entity (:func:`~dpcd.tracking.mlflow_log.log_dataset`)
    each new run takes as its input.

    Returns ``{"jobs", "runs", "skipped_jobs", "removed_jobs"}``.
    """
    # a file's header names its job: an ingested hash is that job's same runs
    ingested = ingested_jobs(info)
    done = {sha: job for job, sha in ingested.items()}
    ingest = {"jobs": 0, "runs": 0, "skipped_jobs": 0, "removed_jobs": 0}
    named = set()
    for path in paths:
        sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        if sha in done:  # a rerun of the aggregation only: not even read
            named.add(done[sha])
            ingest["skipped_jobs"] += 1
            continue
        job, runs = read_mlflow_runs(path)
        named.add(job)
        log_configurations(info, job, runs, result_sha=sha, dataset=dataset)
        ingest["jobs"] += 1
        ingest["runs"] += len(runs)
    if replaces:
        gone = sorted(job for job in ingested if replaces(job) and job not in named)
        forget_jobs(info, gone)
        ingest["removed_jobs"] = len(gone)
    return ingest


def ingest_experiment(name, paths, dataset=None):
    """Set up the MLflow experiment ``name`` (:func:`dpcd.tracking.setup_experiment`)
    and ingest the runs files ``paths`` into it; returns ``(info, ingest)``,
    ``ingest`` as :func:`ingest_runs_files` with the ``seconds`` both took.
    ``dataset`` (an ``mlflow.data`` dataset, :func:`dpcd.tracking.dataset.processed_dataset`):
    the input of the parent run and of each run ingested."""
    start = time.perf_counter()
    info = setup_experiment(name)
    entity = log_dataset(info, dataset) if dataset is not None else None
    ingest = ingest_runs_files(info, paths, dataset=entity)
    ingest["seconds"] = time.perf_counter() - start
    log.info("MLflow: %d runs of %d jobs ingested in %.1f s (%d jobs already in)",
             ingest["runs"], ingest["jobs"], ingest["seconds"], ingest["skipped_jobs"])
    log.info("MLflow experiment %s at %s; runs table with error and budget: "
             "<ui>/#/experiments/%s/runs?workflowType=machine_learning&viewStateShareKey=dpcd",
             info["experiment_id"], info["tracking_uri"], info["experiment_id"])
    return info, ingest
