"""A solver from outside dpcd (tests/outside_solver/: its kernel and its spec,
nothing in src/dpcd) run by the real workflow: the config lists its module
under ``algorithms`` and names it among an experiment's solvers."""
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

from conftest import make_workdir, snakemake

pytestmark = pytest.mark.workflow

OUTSIDE = Path(__file__).resolve().parents[1] / "outside_solver"

# The config docs/add_your_own_solver.md gives (noisy_gd against dp_cd), as a
# reader runs it from the directory holding their copy of tests/outside_solver/.
CONFIG = yaml.safe_load((OUTSIDE / "compare.yaml").read_text())
EXPERIMENT = "noisy_gd_vs_dp_cd"


def test_outside_solver_runs_through_the_workflow(tmp_path):
    workdir = make_workdir(tmp_path)
    shutil.copytree(OUTSIDE, workdir / "my_solvers",
                    ignore=shutil.ignore_patterns("__pycache__"))
    snakemake(workdir, "--configfile", "my_solvers/compare.yaml")
    results = workdir / "results"
    runs = pd.read_parquet(results / "runs" / EXPERIMENT / "noisy_gd" / "chunk0.parquet")
    assert sorted(runs.step.unique()) == [0.5, 1.0]
    assert len(runs) == 2 * 2 * (3 + 1)  # configurations x seeds x (passes + 1)
    assert (runs.epsilon_achieved <= 5.0 + 1e-9).all() and (runs.status == "done").all()
    assert set(runs.nonprivate_inputs.iloc[0].split(",")) >= {"global_smoothness"}
    table = pd.read_csv(results / "tables" / f"{EXPERIMENT}.csv")
    assert set(table.solver) == {"cd", "dp_cd", "noisy_gd"}
    assert table.set_index("solver").neighbouring["noisy_gd"] == "replace_one"
    # its kernel was compiled by its family's warm-up job, before the solve jobs
    assert "noisy_gd" in (results / ".numba_cache" / "warmup_noisy_gd.done").read_text()
    client = MlflowClient(f"sqlite:///{results}/mlflow.db")
    # MLflow experiments are named per config file: dpcd/<file name>/<experiment>
    experiment = client.get_experiment_by_name(f"dpcd/compare/{EXPERIMENT}")
    children = [r for r in client.search_runs([experiment.experiment_id])
                if r.data.tags.get("dpcd.solver") == "noisy_gd"]
    assert len(children) == 2
    for run in children:
        assert float(run.data.params["privacy.epsilon_target"]) == 5.0
        assert run.data.params["privacy.neighbouring"] == "replace_one"
    # a second run has nothing to do
    dry = snakemake(workdir, "-n", "--configfile", "my_solvers/compare.yaml")
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_unknown_solver_is_refused_when_the_workflow_plans(tmp_path):
    config = {**CONFIG, "algorithms": []}
    workdir = make_workdir(tmp_path, config)
    proc = snakemake(workdir, "-n", check=False)
    assert proc.returncode != 0
    assert f"experiments.{EXPERIMENT}.solvers.noisy_gd: unknown solver 'noisy_gd'" \
        in proc.stdout + proc.stderr
