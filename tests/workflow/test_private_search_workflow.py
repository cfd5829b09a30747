"""search: private through real Snakemake and MLflow on SQLite (issue 29): one
solve job per solver and selection seed; every candidate's run tagged
role=candidate and the released run role=released; the released run's
privacy.epsilon_achieved equal to dp-accounting's RepeatAndSelectDpEvent
computed here from the configuration alone; no hyperparameter_selection among
its non-private inputs (nor, for DP-CD-P, exact_smoothness: each candidate
releases its own smoothness constants, composed into its event); the summary's
"Private tuning" section; bad settings refused before anything runs, naming
the setting."""

import copy
import json
import math
import re

import dp_accounting
import mlflow
import pandas as pd
import pytest
from conftest import make_workdir, planned_jobs, snakemake
from dp_accounting import dp_event as ev
from dp_accounting.rdp import rdp_privacy_accountant as rdp

pytestmark = pytest.mark.workflow

N, P, PASSES, BATCH, MEAN, SEEDS, EPS = 80, 20, 2, 8, 2.0, 2, 3.0
FRACTION = 0.1  # dp_cd_p's smoothness_fraction
SOLVERS = 3
CONFIG = {
    "mlflow": {"tracking_uri": "sqlite:///results/mlflow.db"},
    "report": {"fresh_seeds": 0},
    "datasets": {"lasso": {"source": "sparse_lasso", "params": {
        "n_samples": N, "n_features": P, "n_informative": 5, "noise": 0.1, "seed": 0}}},
    "experiments": {"priv": {
        "dataset": "lasso", "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
        "privacy": {"epsilon": EPS}, "passes": [PASSES], "seeds": 2,
        "search": "private",
        "search_private": {"mean": MEAN, "selection_seeds": SEEDS},
        "solvers": {"dp_cd": {"step": [0.3, 1.0], "clip": [0.1, 1.0]},
                    "dp_sgd": {"step": [0.01, 0.1], "clip": [1.0], "batch_size": [BATCH]},
                    "dp_cd_p": {"step": [0.3, 1.0], "clip": [0.1, 1.0],
                                "smoothness_fraction": FRACTION}}}},
}
# the same searches in the secure mode (dp_cd and DP-SGD, one pass), in the same run
CONFIG["experiments"]["priv_secure"] = {
    **copy.deepcopy(CONFIG["experiments"]["priv"]), "passes": [1],
    "privacy": {"epsilon": EPS, "noise": "secure"}}
del CONFIG["experiments"]["priv_secure"]["solvers"]["dp_cd_p"]
SECURE_SOLVERS = 2


@pytest.fixture(scope="module")
def private(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("private"), CONFIG)
    planned = planned_jobs(workdir)
    snakemake(workdir)
    return workdir, planned


@pytest.fixture(scope="module")
def runs(private):
    workdir, _ = private
    mlflow.set_tracking_uri(f"sqlite:///{workdir}/results/mlflow.db")
    return mlflow.search_runs(experiment_names=["dpcd/priv"])


def test_one_solve_job_per_solver_and_selection_seed(private):
    _, planned = private
    assert planned["solve_private"] == (SOLVERS + SECURE_SOLVERS) * SEEDS
    assert "solve" not in planned


def test_roles_in_mlflow(runs):
    children = runs[runs["params.solver"].notna()]
    assert set(children["tags.role"]) == {"candidate", "released"}
    released = children[children["tags.role"] == "released"]
    assert len(released) == SOLVERS * SEEDS  # K >= 1 (geometric): one release per search
    # each search ran candidates, marked as the researcher's private record
    for (solver, name), group in children.groupby(
            [children["params.solver"],
             children["tags.mlflow.runName"].str.extract(r"-(seed\d+)-")[0]]):
        candidates = group[group["tags.role"] == "candidate"]
        assert len(candidates) >= 1
        assert candidates["tags.privacy.private_record"].str.contains("voids").all()
        assert group["tags.privacy.released"].tolist().count("true") == 1


def test_a_release_carries_no_k(private, runs, tmp_path):
    """Neither the released runs' params, tags and metrics nor their ledger
    artifacts nor the released rows hold K (the number of candidates)."""
    workdir, _ = private
    released = runs[runs["tags.role"] == "released"]
    assert len(released) == SOLVERS * SEEDS
    for row in released.to_dict("records"):
        for key, value in row.items():
            assert not re.search(r"candidates|selection\.k$|\.k$", key), key
            assert not re.search(r"\bK=\d", str(value)), (key, value)
        ledger = mlflow.MlflowClient().download_artifacts(
            row["run_id"], "privacy_ledger.json", str(tmp_path))
        text = open(ledger).read()
        assert '"k_distribution": "geometric"' in text  # the law of K is there
        assert '"k":' not in text and "K=" not in text
    tables = [pd.read_parquet(p) for p in workdir.glob("results/runs/priv/*/private/*.parquet")]
    assert len(tables) == SOLVERS * SEEDS
    assert all("k" not in t and "candidates" not in t for t in tables)


def _expected_epsilon(solver, z_train, z_score, delta, z_smooth=None):
    """dp-accounting alone, from the configuration: DP-CD's PASSES * P Gaussian
    coordinate releases; DP-SGD under replace-one as ceil(PASSES * N / BATCH)
    unsampled Gaussians (no amplification); DP-CD-P's as DP-CD's, after its P
    smoothness means released with Laplace noise of multiplier ``z_smooth``
    each (P / (FRACTION * train_epsilon), checked by the caller); the Laplace
    score; repeat-and-select with K geometric of mean MEAN (shape 1)."""
    steps = PASSES * P if solver in ("dp_cd", "dp_cd_p") else math.ceil(PASSES * N / BATCH)
    training = [ev.SelfComposedDpEvent(ev.GaussianDpEvent(z_train), steps)]
    if solver == "dp_cd_p":
        training.insert(0, ev.SelfComposedDpEvent(
            ev.LaplaceDpEvent(z_smooth), P))
    acc = rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(ev.RepeatAndSelectDpEvent(
        ev.ComposedDpEvent([*training, ev.LaplaceDpEvent(z_score)]), MEAN, 1.0))
    return acc.get_epsilon(delta)


def test_released_epsilon_is_repeat_and_select(runs):
    released = runs[runs["tags.role"] == "released"]
    delta = 1.0 / N**2
    for row in released.to_dict("records"):
        first = 1 if row["params.solver"] == "dp_cd_p" else 0  # after its smoothness
        assert row[f"params.privacy.mechanism.{first + 1}.name"] == "score_loss"
        z_smooth = row["metrics.privacy.mechanism.0.noise_multiplier"] if first else None
        expected = _expected_epsilon(
            row["params.solver"], row[f"metrics.privacy.mechanism.{first}.noise_multiplier"],
            row[f"metrics.privacy.mechanism.{first + 1}.noise_multiplier"], delta, z_smooth)
        assert row["metrics.privacy.epsilon_achieved"] == pytest.approx(expected, rel=1e-9)
        if first:
            assert row["params.privacy.mechanism.0.name"] == "smoothness_means"
            # the param holds 6 digits of train_epsilon
            train_epsilon = float(row["params.privacy.selection.train_epsilon"])
            assert z_smooth == pytest.approx(P / (FRACTION * train_epsilon), rel=1e-5)
            assert row["metrics.privacy.noise_multiplier"] == \
                row["metrics.privacy.mechanism.1.noise_multiplier"]
        assert expected <= EPS * (1 + 1e-9)
        assert row["params.privacy.delta"] and float(row["metrics.privacy.delta"]) == delta


def test_hyperparameter_selection_not_a_nonprivate_input_of_the_release(private, runs):
    workdir, _ = private
    released = runs[runs["tags.role"] == "released"]
    for column in ("tags.privacy.nonprivate_inputs", "params.privacy.nonprivate_inputs"):
        assert not released[column].str.contains("hyperparameter_selection").any()
        # DP-CD-P's constants are its own private release; its crude bounds stay named
        cdp = released.loc[released["params.solver"] == "dp_cd_p", column]
        assert len(cdp) == SEEDS and not cdp.str.contains("exact_smoothness").any()
        assert cdp.str.contains("smoothness_bounds_from_data").all()
    parent = runs[runs["params.solver"].isna()]
    assert not parent["tags.privacy.nonprivate_inputs"].str.contains(
        "hyperparameter_selection").any()
    table = pd.read_csv(workdir / "results" / "tables" / "priv.csv")
    assert table["config_id"].str.startswith("private_search_").all()
    assert (table["n_seeds"] == SEEDS).all()
    assert "hyperparameter_selection" not in (workdir / "results" / "tables" / "priv.md").read_text()


def test_summary_private_tuning_section(private):
    workdir, _ = private
    text = (workdir / "results" / "summary.md").read_text()
    section = text.split("## Private tuning")[1]
    assert "researcher's evaluation of the released model" in section
    assert "not part of the release" in section
    assert "RepeatAndSelectDpEvent" in section
    assert section.count("| priv ") == SOLVERS


def test_finished_private_workdir_reruns_nothing(private):
    workdir, _ = private
    assert planned_jobs(workdir) == {}


@pytest.mark.parametrize("setting, value, named", [
    ("mean", 0, "search_private.mean"),
    ("distribution", "uniform", "search_private.distribution"),
    ("score_fraction", 1.0, "search_private.score_fraction"),
])
def test_bad_settings_refused_before_anything_runs(tmp_path, setting, value, named):
    config = copy.deepcopy(CONFIG)
    config["experiments"]["priv"]["search_private"][setting] = value
    workdir = make_workdir(tmp_path, config)
    proc = snakemake(workdir, "-n", check=False)
    assert proc.returncode != 0
    assert named in proc.stdout + proc.stderr
    assert not (workdir / "results").exists() or not any((workdir / "results").rglob("*.npz"))


def test_one_configuration_and_non_candidate_refused(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "cdp").mkdir()
    config = copy.deepcopy(CONFIG)
    config["experiments"]["priv"]["solvers"] = {"dp_cd": {"step": [1.0], "clip": [1.0]}}
    proc = snakemake(make_workdir(tmp_path / "one", config), "-n", check=False)
    assert proc.returncode != 0
    assert "solvers.dp_cd: the grid has 1 configuration" in proc.stdout + proc.stderr
    config["experiments"]["priv"]["solvers"] = {"cd": {"step": [0.1, 1.0]}}
    proc = snakemake(make_workdir(tmp_path / "cdp", config), "-n", check=False)
    assert proc.returncode != 0
    assert "solvers.cd: cd cannot be a private-search candidate" in proc.stdout + proc.stderr



def test_secure_private_search_runs_and_records_no_seed(private, tmp_path):
    """``noise: secure`` with ``search: private`` (experiment priv_secure of
    the same run): every run says ``secure``, the released DP-SGD ledger
    carries the lattice's closeness line, epsilon is met, and the released
    rows' seed column is -1 - selection seed (no seed recorded)."""
    workdir, _ = private
    mlflow.set_tracking_uri(f"sqlite:///{workdir}/results/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["dpcd/priv_secure"])
    children = runs[runs["params.solver"].notna()]
    assert (children["params.privacy.noise"] == "secure").all()
    released = children[children["tags.role"] == "released"]
    assert sorted(released["params.solver"]) == ["dp_cd", "dp_cd", "dp_sgd", "dp_sgd"]
    for row in released.to_dict("records"):
        ledger = json.loads(open(mlflow.MlflowClient().download_artifacts(
            row["run_id"], "privacy_ledger.json", str(tmp_path))).read())
        assert ledger["noise"] == "secure" and ledger["epsilon_achieved"] <= EPS
        groups = [line["group"] for line in ledger["budget"]]
        assert groups == (["selection", "lattice_rounding"] if row["params.solver"] == "dp_sgd"
                          else ["selection"])
    tables = [pd.read_parquet(p)
              for p in workdir.glob("results/runs/priv_secure/*/private/*.parquet")]
    assert sorted(tuple(sorted(set(t["seed"]))) for t in tables) == [(-2,), (-2,), (-1,), (-1,)]
