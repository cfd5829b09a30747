"""select_by: validation through the real workflow (DP-SCD App. E style):
held-out metrics in the tidy tables, selection on validation, the paper figures
and report page, MLflow. Solvers are plugged in by name: adding one is a line
of SOLVERS (e.g. ``"dp_scd": {"clip": [0.1, 1.0], "batch_size": [5, 20]}``)."""

import shutil
import sqlite3

import pandas as pd
import pytest

from conftest import make_workdir, report_entries, snakemake

pytestmark = pytest.mark.workflow

SOLVERS = {
    "cd": {"step": [1.0]},
    "dp_sgd": {"step": [0.1, 1.0], "clip": [0.1, 1.0], "batch_size": [5, 20]},
}
NONPRIVATE = ["cd"]

CONFIG = {
    "mlflow": {"tracking_uri": "sqlite:///results/mlflow.db"},
    "report": {
        "figures": {
            "fig_eps": {"kind": "metric_vs_epsilon", "experiments": ["ridge", "logit"],
                        "nonprivate": NONPRIVATE},
            "fig_obj": {"kind": "objective_vs_passes", "experiments": ["ridge"],
                        "epsilons": [1.0], "nonprivate": NONPRIVATE},
            "fig_batch": {"kind": "metric_vs_batch_size", "experiments": ["ridge"],
                          "epsilons": [1.0], "solvers": ["dp_sgd"]},
        },
    },
    "datasets": {
        # The stand-in's generator at a small size: 300 rows, the last 60 the test file.
        "msd": {"source": "yearpredictionmsd_standin",
                "params": {"n_samples": 300, "n_features": 10, "n_test": 60, "seed": 0}},
        "log": {"source": "log1", "params": {"n_samples": 200, "n_features": 8, "seed": 0}},
    },
    "experiments": {
        "ridge": {"dataset": "msd", "variant": "maxabs_unitnorm",
                  "problem": {"loss": "squares", "penalty": "l2", "alpha": 1e-4},
                  "privacy": {"epsilon": [0.5, 1.0], "delta": 1e-3},
                  "passes": [3], "seeds": 3, "select_by": "validation", "solvers": SOLVERS},
        "logit": {"dataset": "log", "variant": "maxabs_unitnorm",
                  "problem": {"loss": "logistic", "penalty": "l2", "alpha": 1e-4},
                  "privacy": {"epsilon": [0.5, 1.0], "delta": 1e-3},
                  "passes": [2], "seeds": 3, "select_by": "validation", "solvers": SOLVERS,
                  # the DP-SCD reference code's hold-out: redrawn per run seed
                  "validation_split": "per_seed"},
    },
}


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("validation"), CONFIG)
    snakemake(workdir)
    return workdir


def test_tidy_tables_carry_holdout_metrics(done):
    runs = pd.read_parquet(done / "results/runs/ridge/dp_sgd/chunk0.parquet")
    last = runs[runs["pass"] == runs["passes"]]
    assert set(runs["metric"]) == {"mse"}
    assert last["val_metric"].notna().all() and last["test_metric"].notna().all()
    assert runs.loc[runs["pass"] < runs["passes"], "val_metric"].isna().all()
    logit = pd.read_parquet(done / "results/runs/logit/dp_sgd/chunk0.parquet")
    acc = logit["test_metric"].dropna()
    assert set(logit["metric"]) == {"accuracy"} and acc.between(0, 1).all()


def test_selection_on_validation_and_median_test_metric(done):
    runs = pd.concat(pd.read_parquet(p) for p in (done / "results/runs/ridge").glob("*/*.parquet"))
    table = pd.read_csv(done / "results/tables/ridge.csv")
    last = runs[runs["pass"] == runs["passes"]]
    for row in table.itertuples():
        cell = last[(last["solver"] == row.solver) & (last["epsilon"] == row.epsilon)]
        medians = cell.groupby("config_id")["val_metric"].median()
        assert row.config_id == medians.idxmin()  # lowest validation MSE
        chosen = cell[cell["config_id"] == row.config_id]
        assert row.test_metric_median == pytest.approx(chosen["test_metric"].median())
        assert row.n_configs == len(medians)
    assert set(table.loc[table["solver"] == "dp_sgd", "n_configs"]) == {8}
    md = (done / "results/tables/ridge.md").read_text()
    assert "Test mse" in md and "hyperparameter_selection" in md


def test_snakemake_report_has_the_paper_figures(done, tmp_path):
    """The paper's figures and report page are in ``snakemake --report``."""
    workdir = shutil.copytree(done, tmp_path / "wf", symlinks=True)
    entries = report_entries(workdir)
    for name in ("fig_eps", "fig_obj", "fig_batch"):
        assert entries[f"results/paper/{name}.png"]["filename"] == f"{name}.png"
    assert "results/paper/report.md" in entries


def test_paper_figures_report_and_mlflow(done):
    for name in ("fig_eps", "fig_obj", "fig_batch"):
        assert (done / f"results/paper/{name}.png").stat().st_size > 1000
    report = (done / "results/paper/report.md").read_text()
    assert "Tuning cost" in report and "| ridge " in report
    con = sqlite3.connect(done / "results/mlflow.db")
    names = {r[0] for r in con.execute("select name from experiments")}
    assert "dpcd/paper" in names
    keys = {r[0] for r in con.execute("select distinct key from metrics")}
    assert "test_mse_median" in keys and "val_accuracy_median" in keys


def test_per_seed_validation_split_is_tagged(done):
    """logit redraws its hold-out per run seed (validation_split: per_seed): its
    configurations' runs say so, ridge's (the fixed split) do not, and the split is not among
    the non-private inputs (the selection on validation is, in the tables)."""
    con = sqlite3.connect(done / "results/mlflow.db")
    rows = con.execute(
        "select e.name, t.value from runs r join experiments e on r.experiment_id = "
        "e.experiment_id left join tags t on t.run_uuid = r.run_uuid and "
        "t.key = 'dpcd.validation_split' where (e.name like '%logit' or e.name like '%ridge')"
        " and r.run_uuid in (select run_uuid from tags where key = 'sweep.config_id')"
    ).fetchall()
    by_experiment = {}
    for name, value in rows:
        by_experiment.setdefault(name.rsplit("/", 1)[-1], set()).add(value)
    assert by_experiment["logit"] == {"per_seed"}
    assert by_experiment["ridge"] == {None}
    runs = pd.read_parquet(done / "results/runs/logit/dp_sgd/chunk0.parquet")
    assert not runs["nonprivate_inputs"].str.contains("validation").any()
    assert "hyperparameter_selection" in (done / "results/tables/logit.md").read_text()


def test_each_run_records_the_seed_of_its_division(done):
    """MLflow params say which division every configuration's seeds ran on: the
    dataset's split_seed (ridge, fixed), each run seed (logit, per_seed: its
    selection seeds, and the fresh re-runs their own fresh seeds)."""
    con = sqlite3.connect(done / "results/mlflow.db")

    def params(experiment, key):
        rows = con.execute(
            "select p.value, (select value from tags t where t.run_uuid = r.run_uuid and "
            "t.key = 'dpcd.seed_set') from runs r join experiments e on r.experiment_id = "
            "e.experiment_id join params p on p.run_uuid = r.run_uuid and p.key = ? "
            "where e.name like ?", (key, f"%/{experiment}")).fetchall()
        return rows

    assert {value for value, _ in params("ridge", "validation_split")} == {"fixed"}
    assert {value for value, _ in params("ridge", "validation_split_seed")} == {"0"}
    assert {value for value, _ in params("logit", "validation_split")} == {"per_seed"}
    seeds = params("logit", "validation_split_seed")
    selection = {value for value, seed_set in seeds if seed_set is None}
    fresh = {value for value, seed_set in seeds if seed_set == "fresh"}
    runs = pd.read_parquet(done / "results/runs/logit/dp_sgd/chunk0.parquet")
    ordered = runs.drop_duplicates("seed_index").sort_values("seed_index")["seed"]
    assert selection == {",".join(map(str, ordered))}
    assert fresh and all(len(value.split(",")) == 10 for value in fresh)
    assert not set(",".join(fresh).split(",")) & set(map(str, ordered))
