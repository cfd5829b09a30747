"""Fresh-seed re-evaluation and an alpha_grid on the tiny config, end to end.

The finished tiny workdir (fresh_seeds: 0) is copied, its MLflow store moved
with it, then report.fresh_seeds and an alpha_grid are turned on: the run must
add the fresh re-runs (the fresh solve stage and the fresh rule) and the lambda
experiments, rerun no search solve job or aggregation of the finished
experiments, and ingest none of their runs again.
"""

import json
import re
import shutil
import sqlite3

import numpy as np
import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

from conftest import planned_jobs, snakemake

pytestmark = pytest.mark.workflow

FRESH = 2


def _job_stats(text):
    """Rule -> jobs of Snakemake's job stats table in ``text``."""
    table = text.split("Job stats:")[-1].split("\n\n")[0]
    jobs = {}
    for line in table.splitlines():
        match = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(\d+)\s*$", line)
        if match and match.group(1) != "total":
            jobs[match.group(1)] = int(match.group(2))
    return jobs


def _copy(src, dst):
    """Copy a workdir and point its SQLite MLflow store at the copy's artifacts
    (the store records absolute artifact locations)."""
    shutil.copytree(src, dst, symlinks=True)
    with sqlite3.connect(dst / "results" / "mlflow.db") as db:
        old, new = (src / "results").resolve().as_uri(), (dst / "results").resolve().as_uri()
        db.execute("UPDATE experiments SET artifact_location = replace(artifact_location, ?, ?)",
                   (old, new))
        db.execute("UPDATE runs SET artifact_uri = replace(artifact_uri, ?, ?)", (old, new))
    return dst


def _edit(workdir, edit):
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    edit(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture(scope="module")
def honest(finished_workdir, tmp_path_factory):
    """(workdir, jobs run) after turning fresh seeds and an alpha_grid on."""
    workdir = _copy(finished_workdir, tmp_path_factory.mktemp("honest") / "wd")

    def edit(config):
        config["report"]["fresh_seeds"] = FRESH
        config["experiments"]["exp_b"]["alpha_grid"] = {"lambda_max_fractions": [0.1]}

    _edit(workdir, edit)
    proc = snakemake(workdir)
    return workdir, _job_stats(proc.stdout + proc.stderr), finished_workdir


def test_only_the_new_jobs_run(honest):
    workdir, jobs, finished = honest
    # the new lambda experiment's reference, solve and aggregation; one fresh
    # solve job per experiment (exp_a's 3 solvers in one: its 2 chunks merge,
    # its re-runs being under a second of work); one fresh job and one
    # fresh_report job for all. No search solve job or aggregation of
    # exp_a / exp_b: their runs are not ingested again.
    assert jobs == {"all": 1, "reference": 1, "solve": 1, "aggregate": 1,
                    "aggregate_report": 1, "fresh_solve": 3,
                    "fresh": 1, "fresh_report": 1, "lambda_table": 1, "summary": 1}
    for name in ("exp_a", "exp_b"):
        mlflow = workdir / "results" / "mlflow"
        aggregated = (finished / "results" / "mlflow" / f"{name}.json").read_text()
        assert (mlflow / f"{name}.json").read_text() == aggregated  # not rerun
        ingest = json.loads((mlflow / "fresh" / f"{name}.json").read_text())["ingest"]
        assert ingest == {**ingest, "jobs": 1, "skipped_jobs": 0, "removed_jobs": 0}


def test_fresh_seeds_never_coincide_with_selection_seeds(honest):
    workdir = honest[0]
    results = workdir / "results"
    for experiment in ("exp_a", "exp_b", "exp_b_lam0"):
        selection = pd.concat([pd.read_parquet(p)
                               for p in (results / "runs" / experiment).rglob("*.parquet")])
        fresh = pd.read_parquet(results / "fresh" / f"{experiment}.parquet")
        # FRESH seeds per cell (experiment, solver, epsilon, passes), each cell its own
        per_cell = fresh.groupby(["solver", "epsilon", "passes"])["seed"].unique()
        assert all(len(seeds) == FRESH for seeds in per_cell)
        assert fresh["seed"].nunique() == FRESH * len(per_cell)
        assert not set(fresh["seed"]) & set(selection["seed"])
        # exactly the selected configurations, every one of them
        table = pd.read_csv(results / "tables" / f"{experiment}.csv")
        assert set(fresh["config_id"]) == set(table["config_id"])


def test_tables_and_summary_show_both_numbers(honest):
    workdir = honest[0]
    results = workdir / "results"
    selected = pd.read_csv(results / "tables" / "exp_a.csv")
    table = pd.read_csv(results / "tables" / "fresh" / "exp_a.csv")
    assert list(table["rel_error_mean"]) == list(selected["rel_error_mean"])
    assert (table["fresh_n_seeds"] == FRESH).all()
    assert np.isfinite(table["fresh_rel_error_mean"]).all()
    assert not np.allclose(table["fresh_rel_error_mean"], table["rel_error_mean"])
    png = results / "figures" / "exp_a_rel_error_fresh.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = pd.read_csv(results / "summary.csv")
    merged = summary[summary.experiment == "exp_a"].merge(table, on=["solver", "config_id"])
    assert np.allclose(merged["fresh_rel_error_mean_x"], merged["fresh_rel_error_mean_y"])
    text = (results / "summary.md").read_text()
    assert "## Selected on / fresh seeds" in text and "## Conclusions on fresh seeds" in text
    assert re.search(r"DP-CD against DP-SGD: the winner of \d of 2 cells", text)


def test_fresh_runs_are_releases_with_their_own_ledgers(honest):
    workdir = honest[0]
    client = MlflowClient(f"sqlite:///{workdir}/results/mlflow.db")
    experiment = client.get_experiment_by_name("dpcd/exp_a")
    fresh = client.search_runs([experiment.experiment_id], "tags.`dpcd.seed_set` = 'fresh'")
    table = pd.read_csv(workdir / "results" / "tables" / "exp_a.csv")
    assert sorted(r.data.tags["sweep.config_id"] for r in fresh) == sorted(table["config_id"])
    private = [r for r in fresh if r.data.tags["privacy.private"] == "true"]
    assert len(private) == (table.solver != "cd").sum()
    for run in private:
        assert run.data.tags["privacy.release"] == "fresh_seeds"
        assert "hyperparameter_selection" in run.data.tags["privacy.nonprivate_inputs"]
        assert run.data.params["seeds"] == str(FRESH)
        ledger = json.loads(open(client.download_artifacts(run.info.run_id, "privacy_ledger.json")).read())
        assert "hyperparameter_selection" in ledger["nonprivate_inputs"]
        assert ledger["epsilon_achieved"] <= 5.0 + 1e-9
    # The selection runs' ledgers are untouched: their claim is their own.
    selection = client.search_runs([experiment.experiment_id],
                                   "tags.`privacy.private` = 'true' and tags.`dpcd.role` != 'parent'")
    assert all("hyperparameter_selection" not in r.data.tags["privacy.nonprivate_inputs"]
               for r in selection if "dpcd.seed_set" not in r.data.tags)
    (parent,) = client.search_runs([experiment.experiment_id], "tags.`dpcd.role` = 'parent'")
    assert {"fresh_best_rel_error.dp_cd", "fresh_best_rel_error.dp_sgd"} <= set(parent.data.metrics)
    assert {"fresh/exp_a.csv", "fresh/exp_a.md", "fresh/exp_a_rel_error_fresh.png"} <= {
        a.path for a in client.list_artifacts(parent.info.run_id, "fresh")}


def test_every_run_carries_its_dataset_not_its_data(honest):
    """The parent, search and fresh runs of each experiment: one dataset input
    each, the parent's (name, digest, source), and no rows of it in the store."""
    client = MlflowClient(f"sqlite:///{honest[0]}/results/mlflow.db")
    for name, dataset in (("exp_a", "lasso_a/raw"), ("exp_b", "lasso_b/raw"),
                          ("exp_b_lam0", "lasso_b/raw")):
        experiment = client.get_experiment_by_name(f"dpcd/{name}")
        runs = client.search_runs([experiment.experiment_id], max_results=10_000)
        assert {r.data.tags.get("dpcd.seed_set") for r in runs} >= {"fresh", None}
        (parent,) = [r for r in runs if r.data.tags.get("dpcd.role") == "parent"]
        (logged,) = parent.inputs.dataset_inputs
        assert logged.dataset.name == dataset and len(logged.dataset.digest) == 32
        def fields(d):
            return d.name, d.digest, d.source_type, d.source

        for run in runs:
            (item,) = run.inputs.dataset_inputs
            assert fields(item.dataset) == fields(logged.dataset)
            assert [t.value for t in item.tags] == ["training"]
            assert item.dataset.profile is None and item.dataset.schema is None


def test_alpha_grid_runs_each_lambda_and_tabulates_them(honest):
    workdir = honest[0]
    results = workdir / "results"
    reference = json.loads((results / "reference" / "exp_b_lam0.json").read_text())
    data = np.load(results / "data" / "processed" / "lasso_b" / "raw.npz")
    X, y = data["X"], data["y"]
    assert reference["lambda_max"] == pytest.approx(2 * np.abs(X.T @ y).max() / len(y))
    assert reference["alpha"] == pytest.approx(0.1 * reference["lambda_max"])
    table = pd.read_csv(results / "tables" / "lambda" / "sensitivity.csv")
    assert set(table["run"]) == {"exp_b", "exp_b_lam0"} and set(table["experiment"]) == {"exp_b"}
    assert sorted(table["alpha"]) == pytest.approx(sorted([0.05, reference["alpha"]]))
    assert table["fresh_rel_error_mean"].notna().all()
    text = (results / "summary.md").read_text()
    assert "## Regularisation sensitivity" in text
    png = results / "figures" / "lambda_sensitivity.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_editing_fresh_seeds_replans_only_the_reevaluation(honest, tmp_path):
    workdir = tmp_path / "edit"
    shutil.copytree(honest[0], workdir, symlinks=True)  # dry runs only: no store to move
    assert planned_jobs(workdir) == {}

    def edit(config):
        config["report"]["fresh_seeds"] = FRESH + 1

    _edit(workdir, edit)
    assert planned_jobs(workdir) == {"all": 1, "fresh_solve": 3, "fresh": 1, "fresh_report": 1,
                                     "lambda_table": 1, "summary": 1}
