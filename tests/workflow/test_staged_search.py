"""search: staged through real Snakemake and MLflow: the screen runs every
configuration on one seed, the select rule keeps the best few, the confirm
runs those on every seed, and the tables' selection agrees with the
exhaustive grid's (same configuration, or within one standard error of its
mean objective over all seeds)."""

import numpy as np
import pandas as pd
import pytest
from conftest import make_workdir, planned_jobs, snakemake

from dpcd.report.tables import GROUP, best_configurations, final_iterates

pytestmark = pytest.mark.workflow

KEEP = 2
EXPERIMENT = {
    "dataset": "lasso",
    "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
    "privacy": {"epsilon": 2.0},
    "passes": [2, 5],
    "seeds": 4,
    "chunks": 2,
    "solvers": {
        "dp_cd": {"step": [0.1, 0.3, 1.0], "clip": {"geomspace": [0.01, 10.0, 4]}},
        "dp_sgd": {"step": [0.01, 0.1], "clip": [0.1, 1.0]},
    },
}
CONFIG = {
    "mlflow": {"tracking_uri": "sqlite:///results/mlflow.db"},
    "report": {"fresh_seeds": 0},
    "datasets": {
        "lasso": {
            "source": "sparse_lasso",
            "params": {"n_samples": 100, "n_features": 20, "n_informative": 5,
                       "noise": 0.1, "seed": 0},
        }
    },
    "experiments": {
        "grid": EXPERIMENT,
        "staged": {**EXPERIMENT, "search": "staged", "search_keep": KEEP},
    },
}


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("staged"), CONFIG)
    planned = planned_jobs(workdir)
    snakemake(workdir)
    return workdir, planned


def test_job_graph_known_before_anything_runs(staged):
    _, planned = staged
    # grid: 2 solvers x 2 chunks; staged: the same for screen and for confirm
    assert planned["solve"] == 4 + 4 + 4
    assert planned["select"] == 1


def test_screen_one_seed_confirm_the_kept_on_every_seed(staged):
    workdir, _ = staged
    runs = workdir / "results" / "runs" / "staged"
    screen = pd.concat(pd.read_parquet(p) for p in sorted(runs.glob("*/screen/chunk*.parquet")))
    confirm = pd.concat(pd.read_parquet(p) for p in sorted(runs.glob("*/confirm/chunk*.parquet")))
    grid = pd.concat(pd.read_parquet(p) for p in sorted(
        (workdir / "results" / "runs" / "grid").glob("*/chunk*.parquet")))
    assert screen["seed_index"].unique().tolist() == [0]
    assert screen["config_id"].nunique() == grid["config_id"].nunique()
    assert sorted(confirm["seed_index"].unique()) == [0, 1, 2, 3]
    selection = pd.read_csv(workdir / "results" / "selection" / "staged" / "screen.csv")
    groups = grid.groupby(GROUP).ngroups
    assert len(selection) == KEEP * groups
    assert set(confirm["config_id"]) == set(selection["config_id"])
    # rank 0 is what the paper's rule selects on the screen
    best = best_configurations(screen)
    assert set(best["config_id"]) == set(selection.loc[selection["rank"] == 0, "config_id"])
    # the confirm's first seed is the screen's run (same streams)
    first = confirm[confirm["seed_index"] == 0].merge(
        screen, on=["config_id", "seed_index", "pass"], suffixes=("", "_screen"))
    np.testing.assert_array_equal(first["objective"], first["objective_screen"])


def test_selection_agrees_with_the_exhaustive_grid(staged):
    """Per (solver, epsilon, passes): the staged table's configuration is the
    grid's, or its mean objective over all seeds (on the grid's own runs) lies
    within one standard error of the grid's selection's."""
    workdir, _ = staged
    tables = workdir / "results" / "tables"
    chosen = {name: pd.read_csv(tables / f"{name}.csv") for name in ("grid", "staged")}
    grid_runs = final_iterates(pd.concat(pd.read_parquet(p) for p in sorted(
        (workdir / "results" / "runs" / "grid").glob("*/chunk*.parquet"))))
    stats = grid_runs.groupby("config_id")["objective"].agg(["mean", "sem"])
    merged = chosen["grid"].merge(chosen["staged"], on=GROUP, suffixes=("_grid", "_staged"))
    assert len(merged) == len(chosen["grid"]) > 0
    for row in merged.itertuples():
        if row.config_id_grid == row.config_id_staged:
            continue
        exhaustive = stats.loc[row.config_id_grid]
        assert stats.loc[row.config_id_staged, "mean"] <= exhaustive["mean"] + exhaustive["sem"]


def test_stage_recorded_in_mlflow(staged):
    import mlflow

    workdir, _ = staged
    mlflow.set_tracking_uri(f"sqlite:///{workdir}/results/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["dpcd/staged"])
    children = runs[runs["params.solver"].notna()]
    counts = children["params.search_stage"].value_counts().to_dict()
    selection = pd.read_csv(workdir / "results" / "selection" / "staged" / "screen.csv")
    assert counts["confirm"] == len(selection)
    assert counts["screen"] > counts["confirm"]
    grid = mlflow.search_runs(experiment_names=["dpcd/grid"])
    assert "params.search_stage" not in grid or grid["params.search_stage"].isna().all()


def test_finished_staged_workdir_reruns_nothing(staged):
    workdir, _ = staged
    assert planned_jobs(workdir) == {}


def test_summary_says_what_ran(staged):
    workdir, _ = staged
    text = (workdir / "results" / "summary.md").read_text()
    section = text.split("## Search")[1]
    selection = pd.read_csv(workdir / "results" / "selection" / "staged" / "screen.csv")
    lines = {tuple(c.strip() for c in line.strip("|").split("|")) for line in section.splitlines()
             if line.startswith("|")}
    assert ("staged", "confirm", str(len(selection)), "4", str(4 * len(selection))) in lines
    assert ("grid", "grid", "32", "4", "128") in lines  # (12 + 4) x 2 passes
