"""The runs file: a solve job's MLflow runs, written for the experiment's ingestion.

Gzipped JSON lines, a header line first (the job, how many runs), then one
run per line as :func:`dpcd.tracking.payload.mlflow_runs` builds it. Nothing
here imports MLflow.
"""

import gzip
import json
import zlib

import numpy as np

from dpcd.data.io import atomic_write


def _plain(value):
    """numpy scalars as the Python values MLflow would get from them."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {value!r}")


def job_name(experiment, chunk, solver=None, stage=None):
    """A solve job's name (its runs file's header, its runs' ``dpcd.job`` tag):
    ``<experiment>/<solver>/[<stage>/]chunk<k>``; the fresh stage's jobs,
    across the experiment's solvers: ``<experiment>/fresh/chunk<k>``."""
    return "/".join(filter(None, (experiment, solver, stage, f"chunk{chunk}")))


def is_fresh_job(job):
    """Whether ``job`` is a fresh-seed job: its own stage's ingestion replaces
    it (``<experiment>/fresh/chunk<k>``, or per solver as earlier versions
    of the workflow ran them, ``<experiment>/<solver>/fresh/chunk<k>``)."""
    return "fresh" in job.split("/")[1:-1]


def write_mlflow_runs(path, job, runs):
    """Write a job's MLflow runs (:func:`dpcd.tracking.payload.mlflow_runs`)
    for the experiment's ingestion: gzipped JSON lines, a header line first
    (the job, how many runs).

    Solve jobs do not import MLflow (1.4 s a job); the aggregate job of the
    experiment is the one that writes them to the tracking store.
    """

    def write(tmp):
        with gzip.open(tmp, "wt", compresslevel=1) as fh:
            fh.write(json.dumps({"job": job, "runs": len(runs)}) + "\n")
            for run in runs:
                fh.write(json.dumps(run, default=_plain) + "\n")

    atomic_write(path, write)


def read_mlflow_runs(path):
    """Read what :func:`write_mlflow_runs` wrote: ``(job, runs)``.

    Raises ValueError naming the file when it is not whole.
    """
    try:
        with gzip.open(path, "rt") as fh:
            header = json.loads(fh.readline())
            runs = [json.loads(line) for line in fh]
    except (EOFError, gzip.BadGzipFile, zlib.error, json.JSONDecodeError, KeyError) as exc:
        raise ValueError(f"{path}: not a whole MLflow runs file ({exc})") from None
    if len(runs) != header["runs"]:
        raise ValueError(f"{path}: {len(runs)} runs, its header says {header['runs']}")
    return header["job"], runs
