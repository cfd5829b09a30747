"""report.private_baseline through real Snakemake (issue 29, item 5): a
baseline run tuned on the data (grid, fresh seeds) in one working directory,
the same experiment under search: private in another, whose private_compare
rule pairs the two: the paired cells' numbers are the two runs' own tables,
the summary carries the section, the figure is drawn, an edit of the
baseline's fresh table reruns the comparison and the summary only, and a
baseline set without a private experiment is refused before anything runs."""

import copy

import pandas as pd
import pytest
from conftest import make_workdir, planned_jobs, snakemake

pytestmark = pytest.mark.workflow

EXPERIMENT = {
    "dataset": "lasso", "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
    "privacy": {"epsilon": 3.0}, "passes": [2], "seeds": 2,
    "solvers": {"dp_cd": {"step": [0.3, 1.0], "clip": [0.1, 1.0]},
                "dp_sgd": {"step": [0.01, 0.1], "clip": [1.0], "batch_size": [8]}},
}
BASE = {
    "mlflow": {"tracking_uri": "sqlite:///results/mlflow.db"},
    "report": {"fresh_seeds": 2},
    "datasets": {"lasso": {"source": "sparse_lasso", "params": {
        "n_samples": 80, "n_features": 20, "n_informative": 5, "noise": 0.1, "seed": 0}}},
    "experiments": {"cell": EXPERIMENT},
}
SEEDS = 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    baseline = make_workdir(tmp_path_factory.mktemp("baseline"), BASE)
    # what private_compare reads of it: its fresh table and fresh runs (not its
    # MLflow ingestion, figures or summary)
    snakemake(baseline, "results/tables/fresh/cell.csv", "results/fresh/cell.parquet")
    config = copy.deepcopy(BASE)
    config["report"] = {"fresh_seeds": 0, "private_baseline": str(baseline)}
    config["experiments"]["cell"].update(
        search="private", search_private={"mean": 2.0, "selection_seeds": SEEDS})
    private = make_workdir(tmp_path_factory.mktemp("private"), config)
    assert planned_jobs(private)["private_compare"] == 1
    snakemake(private)
    return baseline, private


def test_cells_are_the_two_runs_tables(runs):
    baseline, private = runs
    table = pd.read_csv(private / "results" / "private_tuning.csv")
    fresh = pd.read_csv(baseline / "results" / "tables" / "fresh" / "cell.csv")
    released = pd.read_csv(private / "results" / "tables" / "cell.csv")
    assert sorted(table["solver"]) == ["dp_cd", "dp_sgd"]
    assert set(table["paper"]) == {"DP-CD Table 2"}
    for row in table.itertuples():
        ours = fresh[fresh["solver"] == row.solver].iloc[0]
        theirs = released[released["solver"] == row.solver].iloc[0]
        assert row.nonprivate_rel_error_mean == pytest.approx(ours["fresh_rel_error_mean"])
        assert row.private_rel_error_mean == pytest.approx(theirs["rel_error_mean"])
        assert row.selection_seeds == SEEDS
    verdicts = pd.read_csv(private / "results" / "private_tuning_conclusions.csv")
    assert list(verdicts["comparison"]) == ["dp_cd vs dp_sgd"]


def test_summary_section_and_figure(runs):
    _, private = runs
    text = (private / "results" / "summary.md").read_text()
    assert text.count("## Private tuning against tuning on the private data") == 1
    assert "DP-CD Table 2, dp_cd vs dp_sgd: " in text
    figure = private / "results" / "figures" / "private_tuning" / "private_tuning_dpcd_table_2.png"
    assert figure.stat().st_size > 1000


def test_baseline_edit_reruns_comparison_only(runs):
    baseline, private = runs
    assert planned_jobs(private) == {}
    path = baseline / "results" / "tables" / "fresh" / "cell.csv"
    fresh = pd.read_csv(path)
    fresh["fresh_rel_error_mean"] *= 2  # the baseline re-run
    fresh.to_csv(path, index=False)
    assert planned_jobs(private) == {"private_compare": 1, "summary": 1, "all": 1}


def test_baseline_without_private_experiment_refused(tmp_path):
    config = copy.deepcopy(BASE)
    config["report"]["private_baseline"] = str(tmp_path)
    (tmp_path / "w").mkdir()
    workdir = make_workdir(tmp_path / "w", config)
    proc = snakemake(workdir, "-n", check=False)
    assert proc.returncode != 0
    assert "report.private_baseline" in proc.stdout + proc.stderr
