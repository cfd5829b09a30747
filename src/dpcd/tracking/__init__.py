"""MLflow tracking: one experiment per config experiment, one parent run per
sweep, one child run per configuration, each written with batched calls.

The path of a sweep's runs: :mod:`dpcd.tracking.payload` (the runs as plain
data) -> :mod:`dpcd.tracking.runs_file` (the solve job's file) ->
:mod:`dpcd.tracking.ingest` (the aggregate job's MLflow writes, through
:mod:`dpcd.tracking.mlflow_log`). Only the last two import MLflow (1.4 s a
job), so the names below load it on first use: a solve job, which writes
runs files only, never does. :mod:`dpcd.tracking.model` logs a fitted
estimator's release as an MLflow model, with its ledger.
"""

from dpcd.lazy import lazy_names

_LAZY = {
    "ingested_jobs": "dpcd.tracking.mlflow_log",
    "log_configurations": "dpcd.tracking.mlflow_log",
    "log_dataset": "dpcd.tracking.mlflow_log",
    "log_experiment_artifacts": "dpcd.tracking.mlflow_log",
    "processed_dataset": "dpcd.tracking.dataset",
    "setup_experiment": "dpcd.tracking.mlflow_log",
    "tracking_uri": "dpcd.tracking.mlflow_log",
    "ingest_experiment": "dpcd.tracking.ingest",
    "ingest_runs_files": "dpcd.tracking.ingest",
    "load_estimator": "dpcd.tracking.model",
    "log_estimator": "dpcd.tracking.model",
}

__all__ = sorted(_LAZY)
__getattr__ = lazy_names(__name__, _LAZY)
