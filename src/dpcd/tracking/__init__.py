"""MLflow tracking: one experiment per config experiment, one parent run per
sweep, one child run per configuration, each written with batched calls."""

from dpcd.tracking.mlflow_log import (
    ingested_jobs,
    log_configurations,
    log_experiment_artifacts,
    setup_experiment,
    tracking_uri,
)

__all__ = [
    "ingested_jobs",
    "log_configurations",
    "log_experiment_artifacts",
    "setup_experiment",
    "tracking_uri",
]
