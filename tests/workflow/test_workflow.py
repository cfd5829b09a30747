"""End to end: the real workflow on the tiny config, read back from its outputs and MLflow."""

import re
import shutil

import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

from conftest import make_workdir, planned_jobs, snakemake

pytestmark = pytest.mark.workflow

TINY_SOLVERS = {"cd": 1 * 2, "dp_cd": 4 * 2, "dp_sgd": 1 * 2}  # configurations x passes


def test_outputs_exist_and_tables_are_complete(finished_workdir):
    results = finished_workdir / "results"
    for experiment in ("exp_a", "exp_b"):
        for figure in ("rel_error", "rel_error_time"):
            png = results / "figures" / f"{experiment}_{figure}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (results / "tables" / f"{experiment}.md").read_text().startswith(f"# {experiment}")
    table = pd.read_csv(results / "tables" / "exp_a.csv")
    # One row per solver and passes, the best configuration of each.
    assert sorted(zip(table.solver, table.passes)) == sorted(
        (s, k) for s in TINY_SOLVERS for k in (2, 3)
    )
    assert (table.n_seeds == 2).all()
    assert (table.status == "done").all()
    # The non-private CD reaches F* much more closely than the private solvers.
    cd = table[table.solver == "cd"].rel_error_mean.min()
    assert cd >= -1e-9
    assert (table[table.solver != "cd"].rel_error_mean > -1e-9).all()
    # Private runs spend no more than their budget.
    private = table[table.solver != "cd"]
    assert (private.epsilon_achieved <= 5.0 + 1e-9).all()
    assert (private.epsilon_achieved >= 0.99 * 5.0).all()


def test_summary_stacks_every_experiment_and_goes_to_mlflow(finished_workdir):
    results = finished_workdir / "results"
    summary = pd.read_csv(results / "summary.csv")
    for experiment in ("exp_a", "exp_b"):
        table = pd.read_csv(results / "tables" / f"{experiment}.csv")
        mine = summary[summary.experiment == experiment]
        assert len(mine) == len(table)
        assert sorted(mine.rel_error_mean) == sorted(table.rel_error_mean)
    text = (results / "summary.md").read_text()
    assert "## Relative error (Table 2)" in text and "## Running time (Table 3)" in text
    client = MlflowClient(f"sqlite:///{results}/mlflow.db")
    experiment = client.get_experiment_by_name("dpcd/summary")
    (run,) = client.search_runs([experiment.experiment_id])
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"summary.csv", "summary.md"}


def test_solve_jobs_account_for_their_time_and_share_calibrations(finished_workdir):
    import gzip
    import json
    import re

    results = finished_workdir / "results"
    ledgers = sorted((results / "runs").rglob("chunk*.timing.json"))
    assert len(ledgers) == len(list((results / "runs").rglob("chunk*.parquet")))
    for path in ledgers:
        seconds = json.loads(path.read_text())["seconds"]
        parts = ("loading", "jit", "calibration", "kernels", "mlflow", "other")
        assert all(seconds[k] >= 0 for k in parts if k != "other")
        assert sum(seconds[k] for k in parts) == pytest.approx(seconds["wall"])
        assert seconds["kernels"] > 0
    # the summary's share is the ledgers' sum (tiny test problems: kernels ≪ wall)
    total = [json.loads(p.read_text())["seconds"] for p in ledgers]
    expected = 100 * sum(t["kernels"] for t in total) / sum(t["wall"] for t in total)
    text = (results / "summary.md").read_text()
    share = re.search(r"Kernels (\d+\.\d+) % of solve time", text)
    assert share and float(share.group(1)) == pytest.approx(expected, abs=0.051)
    # the runs' MLflow ingestion by the aggregate jobs, stated beside it
    ingests = [json.loads(p.read_text())["ingest"] for p in (results / "mlflow").glob("*.json")]
    runs = sum(i["runs"] for i in ingests)
    assert runs == sum(1 for p in (results / "runs").rglob("chunk*.mlflow.jsonl.gz")
                       for _ in gzip.open(p)) - len(ledgers)  # a header line per file
    assert f"ingested the solve jobs' MLflow runs: {runs} runs of {len(ledgers)} jobs" in text
    # every distinct calibration is stored once, whichever job computed it
    entries = [json.loads(p.read_text()) for p in (results / "calibration").glob("*/*.json")]
    assert entries
    keys = [json.dumps(e["key"], sort_keys=True) for e in entries]
    assert len(keys) == len(set(keys))


def test_every_table_states_the_neighbouring_relation(finished_workdir):
    # One relation for every private solver (the default, replace-one), and a
    # column of the selection table, the summary table and their markdown.
    results = finished_workdir / "results"
    table = pd.read_csv(results / "tables" / "exp_a.csv")
    assert dict(zip(table.solver, table.neighbouring)) == {
        "cd": "none", "dp_cd": "replace_one", "dp_sgd": "replace_one"}
    assert "| dp_sgd | replace_one | 5 |" in (results / "tables" / "exp_a.md").read_text()
    summary = pd.read_csv(results / "summary.csv")
    assert set(summary[summary.solver != "cd"].neighbouring) == {"replace_one"}
    text = (results / "summary.md").read_text()
    assert "| exp_a | dp_sgd | replace_one | 5 |" in text
    assert re.search(r"\| exp_a \| \d+% \| replace_one \|", text)  # DP-CD against DP-SGD


def test_tidy_runs_have_every_seed_and_pass(finished_workdir):
    runs = pd.concat(
        pd.read_parquet(p) for p in (finished_workdir / "results" / "runs" / "exp_a").rglob("*.parquet")
    )
    per_config = runs.groupby(["solver", "config_id"]).size()
    assert per_config.groupby("solver").size().to_dict() == TINY_SOLVERS
    # seeds x (passes + 1) rows for each configuration.
    for (solver, cid), size in per_config.items():
        passes = runs[(runs.solver == solver) & (runs.config_id == cid)].passes.iloc[0]
        assert size == 2 * (passes + 1)


def test_mlflow_runs_carry_params_curves_and_budget(finished_workdir):
    client = MlflowClient(f"sqlite:///{finished_workdir}/results/mlflow.db")
    experiment = client.get_experiment_by_name("dpcd/exp_a")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("dpcd.role") == "parent"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    assert len(children) == sum(TINY_SOLVERS.values())
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
    assert all(r.info.status == "FINISHED" for r in runs)
    for run in children:
        params, metrics = run.data.params, run.data.metrics
        passes = int(params["passes"])
        history = client.get_metric_history(run.info.run_id, "rel_error")
        assert [m.step for m in history] == list(range(passes + 1))
        assert {"solver", "step", "passes", "epsilon", "dataset"} <= set(params)
        if run.data.tags["dpcd.solver"] == "cd":
            assert run.data.tags["privacy.private"] == "false"
            continue
        assert float(params["privacy.epsilon_target"]) == 5.0
        assert params["privacy.neighbouring"] == "replace_one"  # the default, for every solver
        assert 0 < float(params["privacy.delta"]) < 1
        assert 0 < metrics["privacy.epsilon_achieved"] <= 5.0 + 1e-9
        assert metrics["privacy.noise_multiplier"] > 0
        assert metrics["privacy.n_releases"] > 0
        assert "exact_smoothness" in run.data.tags["privacy.nonprivate_inputs"] or (
            run.data.tags["dpcd.solver"] == "dp_sgd"
        )
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert "privacy_ledger.json" in artifacts
    parent_artifacts = {a.path for a in client.list_artifacts(parents[0].info.run_id)}
    assert {"exp_a.csv", "exp_a.md", "exp_a_rel_error.png"} <= parent_artifacts


def test_second_run_does_nothing(finished_workdir):
    assert planned_jobs(finished_workdir) == {}


def _copy(finished_workdir, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_workdir, workdir, symlinks=True)
    return workdir, yaml.safe_load((workdir / "config" / "config.yaml").read_text())


def _write(workdir, config):
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_editing_a_solver_grid_replans_only_its_solves_and_aggregate(finished_workdir, tmp_path):
    workdir, config = _copy(finished_workdir, tmp_path)
    config["experiments"]["exp_a"]["solvers"]["dp_sgd"]["step"] = [0.1, 0.2]
    _write(workdir, config)
    # its calibrate job reads the grid too (its events all read from the cache)
    assert planned_jobs(workdir) == {"all": 1, "calibrate": 1, "solve": 2, "aggregate": 1,
                                     "aggregate_report": 1, "summary": 1}


def test_editing_a_generator_seed_replans_that_dataset_chain_only(finished_workdir, tmp_path):
    workdir, config = _copy(finished_workdir, tmp_path)
    config["datasets"]["lasso_b"]["params"]["seed"] = 7
    _write(workdir, config)
    jobs = planned_jobs(workdir)
    # exp_b's chain: data stage, smoothness, reference, its single solve, aggregate.
    assert jobs.get("solve") == 1
    assert jobs.get("aggregate") == 1 and jobs.get("summary") == 1
    assert jobs.get("reference") == 1
    assert jobs.get("smoothness") == 1
    assert "warmup_numba" not in jobs
    data_rules = set(jobs) - {"all", "solve", "aggregate", "aggregate_report", "summary",
                              "reference", "smoothness"}
    assert data_rules and all(jobs[rule] == 1 for rule in data_rules)


def test_an_experiment_of_another_kernel_family_replans_only_its_own_jobs(
        finished_workdir, tmp_path):
    """One warm-up job per kernel family, named by the family alone: without
    exp_a (dp_cd, dp_sgd) and with an experiment of DP-GCD's (a family the
    finished run never compiled), the plan is that family's warm-up and the new
    experiment's jobs, and nothing of exp_b (whose dp_cd family exp_a shared)."""
    workdir, config = _copy(finished_workdir, tmp_path)
    del config["experiments"]["exp_a"]
    config["experiments"]["exp_c"] = {**config["experiments"]["exp_b"],
                                      "solvers": {"dp_gcd": {"step": [1.0], "clip": [1.0]}}}
    _write(workdir, config)
    assert planned_jobs(workdir) == {"all": 1, "warmup_numba": 1, "reference": 1,
                                     "calibrate": 1, "solve": 1, "aggregate": 1,
                                     "aggregate_report": 1, "summary": 1}


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda c: c["experiments"]["exp_a"]["solvers"].update(newton={"step": [1.0]}), "newton"),
        (lambda c: c["experiments"]["exp_a"]["privacy"].update(epsilon=0), "epsilon"),
        (lambda c: c["experiments"]["exp_a"].update(dataset="nowhere"), "nowhere"),
        (lambda c: c["experiments"]["exp_b"]["privacy"].update(delta=1.5), "delta"),
        (lambda c: c["experiments"]["exp_a"]["privacy"].update(neighbouring="swap_two"),
         "neighbouring"),
        # DP-CD's means over a public n are calibrated under replace-one only
        (lambda c: c["experiments"]["exp_a"]["privacy"].update(neighbouring="add_or_remove_one"),
         "experiments.exp_a.privacy.neighbouring, solver dp_cd"),
    ],
    ids=["unknown-solver", "epsilon-not-positive", "missing-dataset", "delta-out-of-range",
         "unknown-relation", "relation-a-solver-refuses"],
)
def test_invalid_config_fails_at_start_naming_the_field(tmp_path, edit, field):
    config = yaml.safe_load((make_workdir(tmp_path) / "config" / "config.yaml").read_text())
    edit(config)
    _write(tmp_path, config)
    proc = snakemake(tmp_path, "-n", check=False)
    assert proc.returncode != 0
    assert field in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_lint_and_format(tmp_path):
    workdir = make_workdir(tmp_path)
    proc = snakemake(workdir, "--lint", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr


def test_snakefiles_are_formatted():
    import subprocess

    from conftest import BIN, ROOT

    proc = subprocess.run(
        [str(BIN / "snakefmt"), "--check", "Snakefile", "workflow/rules"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _child_ids(workdir, experiment):
    """{(dpcd.job, config id): run id} of an experiment's child runs."""
    client = MlflowClient(f"sqlite:///{workdir}/results/mlflow.db")
    exp = client.get_experiment_by_name(f"dpcd/{experiment}")
    runs = client.search_runs([exp.experiment_id], "tags.`dpcd.job` LIKE '%chunk%'",
                              max_results=5000)
    ids = {(r.data.tags["dpcd.job"], r.data.tags["sweep.config_id"]): r.info.run_id
           for r in runs}
    assert len(ids) == len(runs), "an MLflow run is duplicated"
    return ids


def test_the_aggregation_ingests_only_the_solve_jobs_that_changed(finished_workdir, tmp_path):
    """Solve jobs write their runs to files; the aggregate job ingests them, and
    on a rerun leaves the jobs already in the store alone."""
    import json

    workdir, _ = _copy(finished_workdir, tmp_path)
    before = _child_ids(workdir, "exp_a")
    info = json.loads((workdir / "results" / "mlflow" / "exp_a.json").read_text())
    n_jobs = 2 * len(TINY_SOLVERS)
    assert info["ingest"]["jobs"] == n_jobs and info["ingest"]["skipped_jobs"] == 0
    assert info["ingest"]["runs"] == len(before) == sum(TINY_SOLVERS.values())

    # up to the experiment's ingestion record (the summary after it is not checked here)
    target = "results/mlflow/exp_a.json"
    snakemake(workdir, target, "--forcerun", "results/tables/exp_a.csv")
    info = json.loads((workdir / "results" / "mlflow" / "exp_a.json").read_text())
    assert info["ingest"]["jobs"] == 0 and info["ingest"]["skipped_jobs"] == n_jobs
    assert _child_ids(workdir, "exp_a") == before

    rerun = "exp_a/dp_cd/chunk0"
    snakemake(workdir, target, "--forcerun", f"results/runs/{rerun}.parquet")
    info = json.loads((workdir / "results" / "mlflow" / "exp_a.json").read_text())
    assert info["ingest"]["jobs"] == 1 and info["ingest"]["skipped_jobs"] == n_jobs - 1
    after = _child_ids(workdir, "exp_a")
    assert sorted(after) == sorted(before)
    for key, run_id in after.items():
        assert (run_id != before[key]) == (key[0] == rerun), key
