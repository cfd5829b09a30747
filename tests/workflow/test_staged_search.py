"""search: staged through real Snakemake and MLflow: the screen runs every
configuration (stride 1) or the coarse lattice (stride 2) on one seed, the
select rule keeps the best few, the refine runs the full-resolution
neighbours of a coarse screen's kept ones, the confirm runs the kept on every
seed. The replay of bench/search_agreement.py gives the workflow's selections
exactly, and replayed on the grid experiment's exhaustive runs the staged
selection agrees with the grid's (same configuration, or within one standard
error of its mean objective over all seeds)."""

import copy
import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, make_workdir, planned_jobs, snakemake

from dpcd.sweep.staged import replay_staged
from dpcd.report.tables import GROUP, best_configurations, final_iterates
from dpcd.sweep.grid import expand_grid, expanded_grid
from dpcd.streams import config_id

pytestmark = pytest.mark.workflow

KEEP = 2
PROMOTE = 3
EXPERIMENT = {
    "dataset": "lasso",
    "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
    "privacy": {"epsilon": 2.0},
    "passes": [2, 5],
    "seeds": 4,
    "chunks": 1,
    "solvers": {
        # a third of a decade apart: a stride of 2 is allowed (dpcd.plan.LATTICE_DECADES)
        "dp_cd": {"step": {"geomspace": [0.03, 3.0, 7]}, "clip": {"geomspace": [0.01, 10.0, 10]}},
        "dp_sgd": {"step": [0.01, 0.1], "clip": [0.1, 1.0]},
    },
}
CONFIG = {
    "mlflow": {"tracking_uri": "sqlite:///results/mlflow.db"},
    "report": {"fresh_seeds": 0},
    "datasets": {
        "lasso": {
            "source": "sparse_lasso",
            # 1 000 records: the grid's configurations differ by more than
            # the seeds' noise at epsilon 2 (at 100, the noise ranks them)
            "params": {"n_samples": 1000, "n_features": 20, "n_informative": 5,
                       "noise": 0.1, "seed": 0},
        }
    },
    "experiments": {
        "grid": EXPERIMENT,
        # in 3 chunks (each stage's jobs, the selects read them all; the confirm
        # in 2, the groups whose best it is sure to run): the others in 1, each
        # solve job being seconds of start-up around milliseconds of runs
        "staged": {**EXPERIMENT, "search": "staged", "search_keep": KEEP, "search_stride": 1,
                   "chunks": 3},
        "coarse": {**EXPERIMENT, "search": "staged", "search_keep": KEEP, "search_stride": 2,
                   "search_refine": 1},
        # a multi-fidelity screen: 1 of 2 passes, 3 of 5, then 3 promoted per group
        "fidelity": {**EXPERIMENT, "search": "staged", "search_keep": KEEP, "search_stride": 1,
                     "search_fidelity": 0.5, "search_promote": PROMOTE},
    },
}


def read_runs(workdir, experiment, pattern):
    paths = sorted((workdir / "results" / "runs" / experiment).glob(pattern))
    return pd.concat(pd.read_parquet(p) for p in paths)


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("staged"), CONFIG)
    planned = planned_jobs(workdir)
    snakemake(workdir)
    return workdir, planned


def test_job_graph_known_before_anything_runs(staged):
    workdir, planned = staged
    # grid: 2 solvers; staged: 2 solvers x 3 chunks for the screen, x 2 for the
    # confirm (of the KEEP per group it is sure of each group's best: 2 groups);
    # coarse: and dp_cd's refine (dp_sgd has no geomspace axis: no refine);
    # fidelity: screen, promote, confirm
    assert planned["solve"] == 2 + (6 + 4) + (2 + 1 + 2) + (2 + 2 + 2)
    assert planned["select"] == 1 + 2 + 2
    # and no solve job ran nothing
    ran = [json.loads(p.read_text())["configurations"]
           for p in (workdir / "results" / "runs").glob("*/*/**/chunk*.timing.json")]
    assert len(ran) == planned["solve"] and min(ran) > 0


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
    # the confirm's first seed is the screen's run, reused (one MLflow run: the
    # screen's, test_stage_recorded_in_mlflow), beside its own runs of the others
    first = confirm[confirm["seed_index"] == 0].merge(
        screen, on=["config_id", "seed_index", "pass"], suffixes=("", "_screen"))
    assert len(first) == (confirm["seed_index"] == 0).sum() > 0
    for column in ("objective", "time", "seed"):
        np.testing.assert_array_equal(first[column], first[f"{column}_screen"])


@pytest.mark.parametrize("name,stride,refine", [("staged", 1, 2), ("coarse", 2, 1)])
def test_selection_agrees_with_the_exhaustive_grid(staged, name, stride, refine):
    """Per (solver, epsilon, passes): the staged search of the grid experiment
    (replayed from its exhaustive runs: the replay keeps what the workflow
    keeps, test below) selects the grid's configuration, or one whose mean
    objective over all seeds lies within one standard error of the grid's
    selection's. (The staged experiments themselves draw other streams, their
    names being part of each run's identity: on those, both picked for dp_cd at
    2 passes a configuration whose mean on the grid's seeds is 2.74 +- 0.80
    against the grid's 0.87 +- 0.09, good on their one screening seed.)"""
    workdir, _ = staged
    runs = read_runs(workdir, "grid", "*/chunk*.parquet")
    kept, ran = replay_staged(runs, grids(name), "last_objective", KEEP, stride, refine)
    assert ran["screen"] < 148 if stride > 1 else ran["screen"] == 148
    stats = final_iterates(runs).groupby("config_id")["objective"].agg(["mean", "sem"])
    grid = best_configurations(runs)
    chosen = best_configurations(runs[runs["config_id"].isin(kept["config_id"])])
    merged = grid.merge(chosen, on=GROUP, suffixes=("_grid", "_staged"))
    assert len(merged) == len(grid) == 4
    tables = pd.read_csv(workdir / "results" / "tables" / "grid.csv")
    assert set(tables["config_id"]) == set(grid["config_id"])
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
    coarse = mlflow.search_runs(experiment_names=["dpcd/coarse"])
    coarse = coarse[coarse["params.solver"].notna()]["params.search_stage"].value_counts()
    refine = read_runs(workdir, "coarse", "*/refine/chunk*.parquet")
    assert coarse["refine"] == refine["config_id"].nunique() > 0
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
    kept = len(selection)
    # the confirm ran the seeds after the first (the screen's runs of the first)
    assert ("staged", "confirm", str(kept), f"{kept / 148:.1%} of 148", "3", str(3 * kept)) in lines
    assert ("grid", "grid", "148", "100.0% of 148", "4", "592") in lines  # (70 + 4) x 2
    # coarse: dp_cd's 4 x 6 lattice and dp_sgd's 4, x 2 passes, of 148
    assert ("coarse", "screen", "56", "37.8% of 148", "1", "56") in lines
    refine = read_runs(workdir, "coarse", "*/refine/chunk*.parquet")["config_id"].nunique()
    assert ("coarse", "refine", str(refine), f"{refine / 148:.1%} of 148", "1",
            str(refine)) in lines


def grids(name="coarse"):
    """Solver -> (configurations, grid, axes) of the test's experiment, as the
    workflow plans them (the schema's defaults filled in: dp_sgd's batch_size)."""
    from snakemake.utils import validate

    from dpcd import plan

    config = copy.deepcopy(CONFIG)
    validate(config, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    exp = plan.Plan(config).experiment(name)
    out = {}
    for solver in exp["solvers"]:
        _, grid, passes = plan.solver_entry(exp, solver)
        axes, configs = expanded_grid(solver, grid, passes, [2.0])
        out[solver] = (configs, grid, axes)
    return out


def test_coarse_to_fine_stages(staged):
    """The screen runs the lattice of stride 2 (positions 0, 2, 4, 6 of the
    steps, 0, 2, 4, 6, 8, 9 of the thresholds), the refine the off-lattice configurations within one
    position of a configuration the screen kept (one per group), and the
    confirm what the second select kept from screen and refine together."""
    workdir, _ = staged
    screen = read_runs(workdir, "coarse", "*/screen/chunk*.parquet")
    refine = read_runs(workdir, "coarse", "*/refine/chunk*.parquet")
    confirm = read_runs(workdir, "coarse", "*/confirm/chunk*.parquet")
    assert screen["seed_index"].unique().tolist() == [0]
    assert refine["seed_index"].unique().tolist() == [0]
    assert sorted(confirm["seed_index"].unique()) == [0, 1, 2, 3]
    axes = {name: expand_grid(EXPERIMENT["solvers"]["dp_cd"][name]) for name in ("step", "clip")}
    configs = {config_id(c): c for configs, _, _ in grids().values() for c in configs}
    position = lambda cid, name: axes[name].index(configs[cid][name])  # noqa: E731
    lattice = {"step": (0, 2, 4, 6), "clip": (0, 2, 4, 6, 8, 9)}
    on_lattice = {cid for cid, c in configs.items()
                  if c["solver"] != "dp_cd" or all(position(cid, n) in lattice[n] for n in axes)}
    assert set(screen["config_id"]) == on_lattice
    first = pd.read_csv(workdir / "results" / "selection" / "coarse" / "screen.csv")
    assert len(first) == screen.groupby(GROUP).ngroups  # search_refine 1
    kept = first[first["solver"] == "dp_cd"]["config_id"]
    assert set(refine["solver"]) == {"dp_cd"}
    for cid in set(refine["config_id"]):
        assert cid not in on_lattice
        assert any(configs[cid]["passes"] == configs[k]["passes"]
                   and all(abs(position(cid, n) - position(k, n)) <= 1 for n in axes)
                   for k in kept)
    second = pd.read_csv(workdir / "results" / "selection" / "coarse" / "refine.csv")
    assert len(second) == KEEP * screen.groupby(GROUP).ngroups
    assert set(confirm["config_id"]) == set(second["config_id"])
    both = pd.concat([screen, refine])
    assert set(best_configurations(both)["config_id"]) == set(
        second.loc[second["rank"] == 0, "config_id"])


@pytest.mark.parametrize("name,stride,refine", [("staged", 1, 2), ("coarse", 2, 1)])
def test_replay_gives_the_workflows_selection(staged, name, stride, refine):
    """bench/search_agreement.py's replay (dpcd.sweep.staged.replay_staged)
    keeps exactly what the staged workflow kept. A run's streams depend on its
    experiment, configuration and seed, not on its stage (the confirm's first
    seed repeats the screen's and the refine's runs bit for bit), so the
    replay reads the experiment's own first-seed runs, as it reads an
    exhaustive run's of the same experiment."""
    workdir, _ = staged
    runs = read_runs(workdir, name, "*/*/chunk*.parquet")
    confirm = read_runs(workdir, name, "*/confirm/chunk*.parquet")
    for stage in ("screen", "refine")[:stride]:
        ran = read_runs(workdir, name, f"*/{stage}/chunk*.parquet")
        again = confirm[confirm["seed_index"] == 0].merge(
            ran, on=["config_id", "seed_index", "pass"], suffixes=("", "_first"))
        np.testing.assert_array_equal(again["objective"], again["objective_first"])
    first = runs.drop_duplicates(["config_id", "seed_index", "pass"])
    kept, ran = replay_staged(first, grids(name), "last_objective", KEEP, stride, refine)
    last = "refine" if stride > 1 else "screen"
    selection = pd.read_csv(workdir / "results" / "selection" / name / f"{last}.csv")
    assert set(kept["config_id"]) == set(selection["config_id"])
    assert ran["screen"] == read_runs(workdir, name, "*/screen/chunk*.parquet")[
        "config_id"].nunique()
    if stride > 1:
        assert ran["refine"] == read_runs(workdir, name, "*/refine/chunk*.parquet")[
            "config_id"].nunique()


def test_multi_fidelity_screen_promote_confirm(staged):
    """search_fidelity 0.5: the screen runs every configuration's first passes
    (1 of 2, 3 of 5) on one seed, the first select ranks them there and keeps
    search_promote per group, the promote runs those whole on the first seed
    (their first passes bit for bit the screen's), the second select ranks the
    promoted alone, and the confirm runs its search_keep on every seed; MLflow
    records each stage and the screen's fidelity. Replayed from the grid
    experiment's exhaustive runs, the selection agrees with the grid's (same
    configuration or within one standard error)."""
    import mlflow

    workdir, _ = staged
    screen = read_runs(workdir, "fidelity", "*/screen/chunk*.parquet")
    promote = read_runs(workdir, "fidelity", "*/promote/chunk*.parquet")
    confirm = read_runs(workdir, "fidelity", "*/confirm/chunk*.parquet")
    assert screen["seed_index"].unique().tolist() == [0] == promote["seed_index"].unique().tolist()
    assert sorted(confirm["seed_index"].unique()) == [0, 1, 2, 3]
    assert screen["config_id"].nunique() == 148
    ends = screen.groupby("passes")["pass"].max().to_dict()
    assert ends == {2: 1.0, 5: 3.0}
    assert promote.groupby("passes")["pass"].max().to_dict() == {2: 2.0, 5: 5.0}
    first = pd.read_csv(workdir / "results" / "selection" / "fidelity" / "screen.csv")
    groups = screen.groupby(GROUP).ngroups
    assert len(first) == PROMOTE * groups
    assert set(promote["config_id"]) == set(first["config_id"])
    # the first select ranks each run at its last (prefix) pass
    at_end = best_configurations(screen, prefix=True)
    assert set(at_end["config_id"]) == set(first.loc[first["rank"] == 0, "config_id"])
    again = promote.merge(screen, on=["config_id", "seed_index", "pass"],
                          suffixes=("", "_screen"))
    assert len(again) == len(screen[screen["config_id"].isin(promote["config_id"])])
    np.testing.assert_array_equal(again["objective"], again["objective_screen"])
    second = pd.read_csv(workdir / "results" / "selection" / "fidelity" / "promote.csv")
    assert len(second) == KEEP * groups
    assert set(confirm["config_id"]) == set(second["config_id"])
    assert set(best_configurations(promote)["config_id"]) == set(
        second.loc[second["rank"] == 0, "config_id"])
    # the replay keeps what the workflow kept, from the experiment's own runs
    runs = read_runs(workdir, "fidelity", "*/*/chunk*.parquet")
    kept, ran = replay_staged(runs.drop_duplicates(["config_id", "seed_index", "pass"]),
                              grids("fidelity"), "last_objective", KEEP, 1, 2, 0.5, PROMOTE)
    assert set(kept["config_id"]) == set(second["config_id"])
    assert ran == {"screen": 148, "promote": len(first), "confirm": len(second)}
    mlflow.set_tracking_uri(f"sqlite:///{workdir}/results/mlflow.db")
    found = mlflow.search_runs(experiment_names=["dpcd/fidelity"])
    found = found[found["params.solver"].notna()]
    assert found["params.search_stage"].value_counts().to_dict() == {
        "screen": 148, "promote": len(first), "confirm": len(second)}
    assert set(found.loc[found["params.search_stage"] == "screen",
                         "params.search_fidelity"]) == {"0.5"}
    # from the grid's exhaustive runs
    grid_runs = read_runs(workdir, "grid", "*/chunk*.parquet")
    kept, _ = replay_staged(grid_runs, grids("grid"), "last_objective", KEEP, 1, 2, 0.5, PROMOTE)
    stats = final_iterates(grid_runs).groupby("config_id")["objective"].agg(["mean", "sem"])
    chosen = best_configurations(grid_runs[grid_runs["config_id"].isin(kept["config_id"])])
    merged = best_configurations(grid_runs).merge(chosen, on=GROUP, suffixes=("_grid", "_staged"))
    assert len(merged) == 4
    for row in merged.itertuples():
        exhaustive = stats.loc[row.config_id_grid]
        assert stats.loc[row.config_id_staged, "mean"] <= exhaustive["mean"] + exhaustive["sem"]
    with pytest.raises(ValueError, match="last_objective only"):
        replay_staged(grid_runs, grids("grid"), "validation", KEEP, 1, 2, 0.5, PROMOTE)


def test_staged_paper_config_plans_its_estimate(tmp_path):
    """The DP-GCD paper's config with search: staged on every experiment (the
    defaults: stride 3, refine 2, keep 3), dry run: before any job the log
    states the staged run's core-hours per stage beside the exhaustive grid's,
    and the job graph has every stage's solve jobs and two selects per
    experiment."""
    workdir = make_workdir(tmp_path, {})
    shutil.rmtree(workdir / "config")
    shutil.copytree(ROOT / "config", workdir / "config")
    config = yaml.safe_load((ROOT / "config/paper/dpgcd_aistats23.yaml").read_text())
    for exp in config["experiments"].values():
        exp["search"] = "staged"
    (workdir / "staged.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(workdir, "-n", "--configfile", "staged.yaml")
    out = proc.stdout + proc.stderr
    logged = re.search(r"dpcd: search staged \(8 experiments\): ([0-9.e+-]+) core-hours: "
                       r"screen [0-9.e+-]+ \((\d+) configurations, 1 seed\), refine "
                       r"[0-9.e+-]+ \(at most (\d+) configurations, 1 seed\), confirm "
                       r"[0-9.e+-]+ \((\d+) configurations, the other seeds\); their exhaustive "
                       r"grid: ([0-9.e+-]+) core-hours \((\d+) configurations", out)
    assert logged, out[-3000:]
    staged, screen, refine, confirm, grid, full = map(float, logged.groups())
    assert staged < 2 and staged < grid / 10
    assert screen + refine + confirm < full / 3
    assert int(re.search(r"^select\s+(\d+)$", out, flags=re.M).group(1)) == 2 * 8
