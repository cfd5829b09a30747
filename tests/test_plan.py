"""The workflow planner (dpcd.plan): job lists, priorities, lambda expansion and
which specs a config edit changes. The Snakefile imports the same package;
tests/test_plan.py runs it on every paper config without Snakemake."""

import copy
import math
import os
import subprocess
import sys

import pytest
import yaml
from snakemake.utils import validate

from dpcd import plan
from dpcd.plan import lattice
from dpcd.algorithms import get, plan_facts
from dpcd.data.registry import generated_sources, registry

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(REPO, "workflow", "schemas", "config.schema.yaml")

# Solve jobs per config, as `snakemake -n` listed them before the planner moved
# out of common.smk (main a9c6558).
SOLVE_JOBS = {
    "config/config.yaml": 6,
    "config/paper/dpcd_icml22.yaml": 48,
    "config/paper/dpcd_icml22_quick.yaml": 32,
    "config/paper/dpgcd_aistats23.yaml": 128,
    "config/paper/dpgcd_aistats23_quick.yaml": 37,
    # SCD (one configuration) in one job, not one per chunk
    "config/paper/dpscd_aaai21.yaml": 67,
    "config/paper/dpscd_aaai21_quick.yaml": 15,
    "config/paper/dpscd_aaai21_phishing.yaml": 17,
    "config/paper/dpgcd_aistats23_midsize.yaml": 44,
    "config/paper/private_tuning.yaml": 12,
    "config/paper/private_tuning_baseline.yaml": 12,
    # 4 problems x 5 solver entries, dorothea in 2 chunks in the baseline;
    # the private config under search=grid (the test's override), 1 chunk each
    "config/paper/private_tuning_dpgcd.yaml": 20,
    "config/paper/private_tuning_dpgcd_baseline.yaml": 25,
    # 2 problems x 2 solvers, the stand-in in 2 chunks in the baseline
    "config/paper/private_tuning_dpscd.yaml": 4,
    "config/paper/private_tuning_dpscd_baseline.yaml": 6,
}


def load(path):
    with open(os.path.join(REPO, path)) as fh:
        config = yaml.safe_load(fh)
    validate(config, SCHEMA)  # fills the schema's defaults, as the Snakefile does
    return config


def make(config):
    return plan.Plan(copy.deepcopy(config), registry(), solver_facts=plan_facts())


def test_generated_sources_match_registry():
    assert sorted(plan.GENERATED_SOURCES) == generated_sources()


def test_stdlib_and_yaml_only():
    """The Snakefile imports the plan package in Snakemake's own process, which
    runs no kernel: it imports nothing but the standard library and yaml."""
    code = (
        "import sys\n"
        "from dpcd import plan; plan.Plan\n"
        "ours = [k for k in sys.modules if k.split('.')[0] == 'dpcd']\n"
        "assert all(k in ('dpcd', 'dpcd.leak') or k.startswith('dpcd.plan') for k in ours), ours\n"
        "bad = [k for k in sys.modules if k.split('.')[0] in "
        "('numpy', 'numba', 'pandas', 'scipy', 'mlflow')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={"PATH": ""})


@pytest.mark.parametrize("path", sorted(SOLVE_JOBS))
def test_job_list_of_every_config(path):
    config = load(path)
    config["search"] = "grid"  # the exhaustive grid (the SLURM profile's search=grid)
    p = make(config)
    jobs = p.jobs()
    assert len(jobs) == SOLVE_JOBS[path]
    assert len(set(jobs)) == len(jobs)
    for name in p.experiments:
        exp = p.experiment(name)
        # the configured chunks, never more than a solver's configurations
        assert [(j.solver, j.chunk) for j in p.jobs(name)] == [
            (s, c) for s in sorted(exp["solvers"])
            for c in range(min(exp["chunks"], len(p.config_passes(name, s))))
        ]
        assert {j.stage for j in p.jobs(name)} == {"grid"}
    paths = [p.job_path(job, ".parquet") for job in jobs]
    assert len(set(paths)) == len(paths)
    outputs = p.final_outputs()
    assert "results/summary.md" in outputs
    for name in p.experiments:
        assert f"results/tables/{name}.csv" in outputs
    assert ("results/tables/lambda/sensitivity.csv" in outputs) == bool(p.lambda_groups)
    assert all(f"results/tables/fresh/{n}.csv" in outputs for n in p.experiments) == bool(
        p.fresh_seeds
    )


def test_solve_params_string_unchanged():
    """The solve rule's params string of a finished workdir (main a9c6558's
    `snakemake -n -p`): a different string would rerun every finished job."""
    p = make(load("config/config.yaml"))
    assert plan.render(p.solve_spec("sparse_lasso", "dp_sgd")) == (
        '{"base_seed":0,"chunks":2,"dataset":"sparse_lasso_small","experiment":'
        '"sparse_lasso","grid":{"batch_size":[1],"clip":{"geomspace":[0.01,10.0,4]},'
        '"step":[0.01,0.1,1.0]},"passes":[2,5,10],"privacy":{"accountant":"auto",'
        '"delta":null,"epsilon":10.0,"neighbouring":"replace_one"},"problem":'
        '{"alpha":0.1,"l1_ratio":0.5,"loss":"squares","penalty":"l1"},"seeds":3,'
        '"solver":"dp_sgd","variant":"raw"}'
    )


def small_config():
    config = load("config/config.yaml")
    exp = config["experiments"]["sparse_lasso"]
    big = copy.deepcopy(exp)
    big["dataset"] = "big"
    config["datasets"]["big"] = {
        "source": "sparse_lasso",
        "params": {"n_samples": 5000, "n_features": 100},
    }
    config["experiments"]["big"] = big
    return config


def test_priorities():
    p = make(small_config())
    # log10 of the estimated ns of the experiment's solve jobs (its fresh re-runs included)
    for name in p.experiments:
        assert p.priority(name) == pytest.approx(math.log10(p.work_hours(name) * 3.6e12))
    # ten times the rows, ten times the work
    assert p.priority("big") - p.priority("sparse_lasso") == pytest.approx(1.0)
    assert max(p.priority(n) for n in p.experiments) < plan.WARMUP_PRIORITY
    # a variant's own passes count
    config = small_config()
    config["experiments"]["big"]["solvers"]["dp_cd"]["passes"] = [100]
    assert make(config).priority("big") > p.priority("big")
    # a registry source without params: its recorded shape
    config["datasets"]["big"] = {"source": "california"}
    shape = registry()["california"]["expected"]
    assert make(config).dataset_size("big") == shape["n_samples"] * shape["n_features"]


def test_longest_chain_first():
    """The experiment with the most estimated work starts first: dorothea's
    800 rows hold 727 760 non-zeros, the most work of the DP-GCD configs
    (it started last when priorities counted n x p from the registry's
    expected shape, which gives no n_features for it)."""
    for path in ("config/paper/dpgcd_aistats23.yaml", "config/paper/dpgcd_aistats23_quick.yaml"):
        p = make(load(path))
        work = {name: p.work_hours(name) for name in p.experiments}
        assert max(p.experiments, key=p.priority) == max(work, key=work.get) == "dorothea"
        assert sorted(p.experiments, key=p.priority) == sorted(p.experiments, key=work.get)


def test_lambda_expansion():
    config = load("config/config.yaml")
    config["experiments"]["sparse_lasso"]["alpha_grid"] = {"alphas": [0.5, 1]}
    p = make(config)
    assert p.experiments == ["sparse_lasso", "sparse_lasso_lam0", "sparse_lasso_lam1"]
    assert p.lambda_groups == {
        "sparse_lasso_lam0": {"base": "sparse_lasso", "alpha": 0.5},
        "sparse_lasso_lam1": {"base": "sparse_lasso", "alpha": 1.0},
    }
    assert "alpha_grid" not in p.experiment("sparse_lasso")
    assert p.experiment("sparse_lasso")["problem"]["alpha"] == 0.1
    assert p.experiment("sparse_lasso_lam1")["problem"]["alpha"] == 1.0
    assert p.lambda_experiments() == p.experiments
    assert len(p.jobs()) == 3 * 6
    config["experiments"]["sparse_lasso"]["alpha_grid"] = {"lambda_max_fractions": [0.01]}
    p = make(config)
    assert p.experiment("sparse_lasso_lam0")["problem"]["lambda_max_fraction"] == 0.01
    config["experiments"]["sparse_lasso_lam0"] = copy.deepcopy(
        config["experiments"]["sparse_lasso"]
    )
    with pytest.raises(ValueError, match="sparse_lasso_lam0.*already an experiment"):
        make(config)


def specs(p):
    """Every spec the rules' params carry, by (kind, experiment, solver)."""
    out = {("fresh", None, None): plan.render(p.fresh_spec())}
    for name in p.experiments:
        out["aggregate", name, None] = plan.render(p.aggregate_spec(name))
        for solver in p.experiment(name)["solvers"]:
            out["solve", name, solver] = plan.render(p.solve_spec(name, solver))
    for name in p.fresh_experiments():
        out["fresh_solve", name, None] = plan.render(p.fresh_solve_spec(name))
    return out


def changed(config, edit):
    """The specs an edit changes, adds or removes."""
    before = specs(make(config))
    config = copy.deepcopy(config)
    edit(config)
    after = specs(make(config))
    return {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def test_an_edit_changes_only_the_expected_specs():
    config = small_config()

    def grid(c):
        c["experiments"]["big"]["solvers"]["dp_cd"]["step"] = [0.5]

    assert changed(config, grid) == {("solve", "big", "dp_cd"), ("fresh_solve", "big", None)}

    def seeds(c):
        c["experiments"]["big"]["seeds"] = 4

    # the fresh jobs run fresh_seeds seeds (they rerun when the table they read changes)
    assert changed(config, seeds) == {("solve", "big", s) for s in ("cd", "dp_cd", "dp_sgd")}

    def fresh(c):
        c["report"]["fresh_seeds"] = 3

    assert changed(config, fresh) == {("fresh", None, None)} | {
        ("fresh_solve", n, None) for n in ("big", "sparse_lasso")}

    def select(c):
        c["experiments"]["sparse_lasso"]["select_by"] = "validation"

    assert changed(config, select) == {("aggregate", "sparse_lasso", None), ("fresh", None, None)}

    def chunks(c):
        c["experiments"]["big"]["chunks"] = 3

    # not the fresh stage's: its re-runs here are under a second of work, one job
    assert changed(config, chunks) == {("solve", "big", s) for s in ("cd", "dp_cd", "dp_sgd")}


def test_variant_and_validation_split_keys_only_when_set():
    config = small_config()
    p = make(config)
    assert "adapter" not in p.solve_spec("big", "dp_cd")
    assert "validation_split" not in p.solve_spec("big", "dp_cd")
    config["experiments"]["big"]["solvers"]["dp_cd_1"] = {"solver": "dp_cd", "step": [1.0]}
    config["experiments"]["big"]["validation_split"] = "per_seed"
    p = make(config)
    assert p.solve_spec("big", "dp_cd_1")["adapter"] == "dp_cd"
    assert p.solve_spec("big", "dp_cd")["validation_split"] == "per_seed"


def test_private_smoothness_routing():
    p = make(load("config/paper/dpcd_icml22_quick.yaml"))
    routed = {(j.experiment, j.solver) for j in p.jobs() if p.uses_private_smoothness(
        j.experiment, j.solver)}
    assert routed and all(solver == "dp_cd_p" for _, solver in routed)
    name = sorted(routed)[0][0]
    spec = p.private_smoothness_spec(name)
    assert "neighbouring" not in spec["privacy"]
    assert spec["smoothness_fraction"] == p.experiment(name)["solvers"]["dp_cd_p"][
        "smoothness_fraction"]


def test_bad_configs_are_refused_with_the_setting_named():
    config = small_config()
    config["experiments"]["big"]["dataset"] = "nope"
    with pytest.raises(ValueError, match="experiments.big.dataset: unknown dataset 'nope'"):
        make(config)
    config = small_config()
    config["experiments"]["summary"] = config["experiments"]["big"]
    with pytest.raises(ValueError, match="experiments.summary: the name is reserved"):
        make(config)
    config = small_config()
    config["datasets"]["big"]["source"] = "nope"
    with pytest.raises(ValueError, match="datasets.big.source: unknown registry entry"):
        make(config)


def test_data_specs():
    datasets = load("config/config.yaml")["datasets"]
    assert plan.data_spec(datasets, "sparse_lasso_small", "download") == {
        "source": "sparse_lasso"
    }
    assert plan.data_spec(datasets, "sparse_lasso_small", "preprocess") == {
        "source": "sparse_lasso", "split_seed": 0}
    assert plan.raw_path(datasets, "sparse_lasso_small").endswith("generated.npz")
    assert plan.raw_path({"c": {"source": "california"}}, "c").endswith("manifest.json")
    with pytest.raises(ValueError, match="unknown dataset key 'x'"):
        plan.data_spec(datasets, "x", "generate")


def reused(p, name, solver, *stages):
    """The tables of ``solver``'s jobs of ``stages``, whose first seed the confirm reuses."""
    paths = [p.job_path(job, ".parquet") for stage in stages for job in p.jobs(name, stage)
             if job.solver == solver]
    assert paths
    return paths


def test_staged_search_jobs_and_specs():
    config = small_config()
    config["experiments"]["big"].update(search="staged", search_keep=2, search_stride=1)
    p = make(config)
    grid = make(small_config())
    # the grid experiment is untouched: same jobs, same specs
    assert p.jobs("sparse_lasso") == grid.jobs("sparse_lasso")
    assert p.solve_spec("sparse_lasso", "dp_cd") == grid.solve_spec("sparse_lasso", "dp_cd")
    jobs = p.jobs("big")
    assert [j.stage for j in jobs] == ["screen"] * 6 + ["confirm"] * 6
    assert p.jobs("big", "final") == [j for j in jobs if j.stage == "confirm"]
    assert p.jobs(stage="final") == [j for j in p.jobs() if j.stage in ("grid", "confirm")]
    assert p.job_path(jobs[0], ".parquet") == "results/runs/big/cd/screen/chunk0.parquet"
    screen = p.solve_spec("big", "dp_cd", "screen")
    confirm = p.solve_spec("big", "dp_cd", "confirm")
    base = grid.solve_spec("big", "dp_cd")
    assert screen == {**base, "stage": "screen", "seeds": 1}
    # the confirm runs the seeds after the first and reuses the screen's runs of it
    assert confirm == {**base, "stage": "confirm", "selection": "results/selection/big/screen.csv",
                       "seeds": base["seeds"] - 1, "first_seed": 1,
                       "reused_runs": reused(p, "big", "dp_cd", "screen")}
    assert p.select_spec("big") == {"select_by": "last_objective", "keep": 2}
    # search settings only reach the select rule: the specs of the solve jobs
    # do not change with search_keep (the confirm reads the selection file)
    config["experiments"]["big"]["search_keep"] = 3
    assert make(config).solve_spec("big", "dp_cd", "confirm") == confirm


def test_bad_search_settings_are_refused():
    config = small_config()
    config["experiments"]["big"]["search"] = "random"
    with pytest.raises(ValueError, match="experiments.big.search: unknown value 'random'"):
        make(config)
    config["experiments"]["big"].update(search="staged", seeds=1)
    with pytest.raises(ValueError, match="experiments.big.seeds: search staged .* seeds >= 2"):
        make(config)
    config["experiments"]["big"]["seeds"] = 2
    make(config)
    for key, value in (("search_stride", 0), ("search_refine", 0), ("search_keep", 1.5)):
        bad = copy.deepcopy(config)
        bad["experiments"]["big"][key] = value
        with pytest.raises(ValueError, match=f"experiments.big.{key}: must be an integer >= 1"):
            make(bad)
    # a stride with no geomspace axis to coarsen
    bad = copy.deepcopy(config)
    for entry in bad["experiments"]["big"]["solvers"].values():
        entry.pop("clip", None)
    bad["experiments"]["big"]["search_stride"] = 2
    with pytest.raises(ValueError, match="experiments.big.search_stride: 2 coarsens nothing"):
        make(bad)
    bad["experiments"]["big"]["search_stride"] = 1
    make(bad)
    # the schema refuses an unknown value too, naming the setting
    config = load("config/config.yaml")
    config["experiments"]["sparse_lasso"]["search"] = "random"
    with pytest.raises(Exception, match="random"):
        validate(config, SCHEMA)


# -- cluster sizing (issue 25 item 4) -----------------------------------------
FULL = ("config/paper/dpcd_icml22.yaml", "config/paper/dpgcd_aistats23.yaml",
        "config/paper/dpscd_aaai21.yaml")


@pytest.mark.parametrize("path", FULL)
def test_chunk_core_hours_bounds_every_job(path):
    """With chunk_core_hours set, every solve job's estimate is within it
    (or the job is one configuration, the least a job runs); the sweep's total
    does not depend on how it is cut; without it the chunks are as configured.
    The exhaustive grid, as the SLURM profile runs it (search=grid)."""
    config = load(path)
    config["search"] = "grid"
    loose = make(config)
    config["chunk_core_hours"] = 2
    sized = make(config)
    n_jobs = 0
    for name in sized.experiments:
        exp = sized.experiment(name)
        for solver in sorted(exp["solvers"]):
            free, cut = loose.cost(name, solver), sized.cost(name, solver)
            n_configs = len(sized.config_passes(name, solver))
            assert free.chunks == min(exp["chunks"], n_configs) == loose.solve_spec(
                name, solver)["chunks"]
            assert cut.chunks == sized.solve_spec(name, solver)["chunks"] >= free.chunks
            assert cut.job <= 2 or cut.chunks >= n_configs, (name, solver, cut)
            assert math.isclose(cut.sweep, free.sweep)
            assert cut.job <= free.job + 1e-12
            n_jobs += cut.chunks
    assert n_jobs == len(sized.jobs())


def test_cost_model_follows_the_sweep():
    """The planner's configurations are the sweep's (dpcd.sweep.grid), in its
    order (a non-private solver's at one epsilon), so its round-robin chunk
    estimates are those of the real chunks; the estimate is linear in seeds
    and in the data's entries."""
    from dpcd.sweep import chunk_of
    from dpcd.sweep.run import chunk_runs

    config = load("config/paper/dpscd_aaai21.yaml")
    p = make(config)
    for name in p.experiments:
        exp = p.experiment(name)
        for solver in sorted(exp["solvers"]):
            configs, _ = chunk_runs({**p.solve_spec(name, solver), "chunks": 1}, 0)
            assert p.config_passes(name, solver) == [c["passes"] for c in configs]
            chunks = p.chunks(name, solver) + 2
            largest = max(
                p._hours(name, solver, "grid", [c["passes"] for c in chunk_of(configs, k, chunks)])
                for k in range(chunks)
            )
            assert math.isclose(p._largest_chunk(name, solver, "grid", chunks), largest)
    name = p.experiments[0]
    solver = sorted(p.experiment(name)["solvers"])[0]
    before = p.cost(name, solver).sweep
    p.experiment(name)["seeds"] *= 2
    assert math.isclose(p.cost(name, solver).sweep, 2 * before)
    # the screen runs one seed, the confirm search_keep configurations per epsilon and passes
    p.experiment(name).update(search="staged", search_stride=1, search_fidelity=1)
    screen, confirm = p.cost(name, solver, "screen"), p.cost(name, solver, "confirm")
    assert math.isclose(screen.sweep * p.experiment(name)["seeds"], 2 * before)
    assert confirm.sweep < 2 * before
    # a prefix screen costs its share of the passes (2 of the config's 10 here)
    p.experiment(name)["search_fidelity"] = 0.2
    assert math.isclose(p.cost(name, solver, "screen").sweep, 0.2 * screen.sweep)


def test_coarse_to_fine_jobs_specs_and_costs():
    """search_stride > 1: screen (the coarse lattice), refine (the neighbours of
    the search_refine kept, on the first seed), confirm; the select after the
    screen keeps search_refine, the one after the refine search_keep."""
    def fine(config):  # thresholds a third of a decade apart: a stride of 2 is allowed
        for solver in ("dp_cd", "dp_sgd"):
            config["experiments"]["big"]["solvers"][solver]["clip"] = {
                "geomspace": [0.01, 10.0, 10]}
        return config

    config = fine(small_config())
    config["experiments"]["big"].update(search="staged", search_keep=2, search_stride=2,
                                        search_refine=1)
    p = make(config)
    base = make(fine(small_config())).solve_spec("big", "dp_cd")
    assert p.stages("big") == ("screen", "refine", "confirm")
    assert p.selects("big") == ("screen", "refine")
    # cd (no geomspace axis) has no refine job; dp_cd and dp_sgd one each, not
    # their 2 chunks: a threshold kept at the grid's end (positions 8 and 9,
    # both on the lattice) has no neighbour off it, so a group may refine
    # nothing, and a second chunk could run nothing
    assert [j.stage for j in p.jobs("big")] == ["screen"] * 6 + ["refine"] * 2 + ["confirm"] * 6
    assert p.least_configurations("big", "dp_cd", "refine") == 0
    # the confirm runs at least the best of each group
    n_groups = len(p.config_passes("big", "dp_cd", "confirm")) // 2
    assert p.least_configurations("big", "dp_cd", "confirm") == n_groups >= 2
    assert p.solve_spec("big", "dp_cd", "screen") == {**base, "stage": "screen", "seeds": 1,
                                                      "stride": 2}
    assert p.solve_spec("big", "dp_cd", "refine") == {
        **base, "stage": "refine", "seeds": 1, "stride": 2, "chunks": 1,
        "selection": "results/selection/big/screen.csv"}
    assert p.solve_spec("big", "dp_cd", "confirm") == {
        **base, "stage": "confirm", "selection": "results/selection/big/refine.csv",
        "seeds": base["seeds"] - 1, "first_seed": 1,
        "reused_runs": reused(p, "big", "dp_cd", "screen", "refine")}
    assert p.select_spec("big", "screen") == {"select_by": "last_objective", "keep": 1}
    assert p.select_spec("big", "refine") == {"select_by": "last_objective", "keep": 2}
    assert p.selection_input("big", "screen") is None
    # clip {geomspace: [.., .., 10]} at stride 2: positions 0, 2, 4, 6, 8, 9; the
    # box of a kept configuration reaches 1 position: at most 3 - 1 new ones
    step = 3  # dp_cd's list axis, kept whole
    full = len(p.config_passes("big", "dp_cd"))
    n_groups = full // (step * 10)
    assert len(p.config_passes("big", "dp_cd", "screen")) == n_groups * step * 6
    assert len(p.config_passes("big", "dp_cd", "refine")) == n_groups * 1 * 2
    assert len(p.config_passes("big", "dp_cd", "confirm")) == n_groups * 2
    assert plan.coarse_indices(4, 2) == [0, 2, 3]
    # the fewest a kept lattice point's box leaves off the lattice: DP-CD's
    # thresholds at stride 3 (at 99: 97 and 98 of 97-99), with its steps at
    # stride 2 (at 9: 8 and 9, both on the lattice) 3 x 2 - 1 x 2
    clip, dp_cd_step = {"geomspace": [1e-3, 1e6, 100]}, {"geomspace": [1e-2, 10.0, 10]}
    assert lattice.refine_least({"clip": clip}, 3) == 2
    assert lattice.refine_least({"clip": clip, "step": dp_cd_step}, 3) == 4
    assert lattice.refine_least({"clip": {"geomspace": [0.01, 10.0, 10]}}, 2) == 0
    assert lattice.refine_least({"step": [1, 2]}, 3) == 0  # no geomspace axis
    # the lattice is at most 0.7 decades apart: small_config's thresholds are
    # one decade apart already, so a stride coarsens nothing there
    assert plan.axis_stride({"geomspace": [0.01, 10.0, 4]}, 3) == 1
    assert plan.axis_stride({"geomspace": [0.01, 10.0, 7]}, 3) == 1
    assert plan.axis_stride({"geomspace": [0.01, 10.0, 10]}, 3) == 2
    assert plan.axis_stride({"geomspace": [1e-3, 1e6, 100]}, 3) == 3  # DP-CD's clip
    assert plan.axis_stride({"geomspace": [1e-4, 1e6, 50]}, 3) == 3  # DP-GCD's clip
    assert plan.axis_stride({"geomspace": [1e-6, 1.0, 10]}, 3) == 1  # DP-GCD's DP-SGD step
    assert plan.axis_stride({"geomspace": [1e-2, 10.0, 10]}, 3) == 2  # DP-CD, DP-GCD steps
    assert plan.axis_stride({"geomspace": [1e-2, 10.0, 2]}, 3) == 1
    coarse_nothing = small_config()
    coarse_nothing["experiments"]["big"].update(search="staged", search_stride=3)
    q = make(coarse_nothing)
    assert q.stages("big") == ("screen", "confirm") and "stride" not in q.solve_spec(
        "big", "dp_cd", "screen")
    assert plan.coarse_indices(13, 3) == [0, 3, 6, 9, 12]
    assert plan.coarse_indices(50, 3)[-2:] == [48, 49]
    # a solver without a geomspace axis (cd) has no refine job
    assert p.chunks("big", "cd", "refine") == 0
    assert p.cost("big", "cd", "refine").sweep == 0
    text = p.search_summary()
    assert "search staged (1 experiments)" in text and "refine" in text
    assert make(small_config()).search_summary() == ""


def test_multi_fidelity_jobs_specs_and_costs():
    """search_fidelity < 1: the screen (and refine) run a prefix of each run,
    a promote stage runs the search_promote best whole on the first seed, the
    select after it ranks the promoted alone; the estimate follows the passes run."""
    config = small_config()
    config["experiments"]["big"].update(search="staged", search_keep=2, search_stride=1,
                                        search_fidelity=0.25, search_promote=4)
    p = make(config)
    base = make(small_config()).solve_spec("big", "dp_cd")
    assert p.stages("big") == ("screen", "promote", "confirm")
    assert p.selects("big") == ("screen", "promote")
    assert p.solve_spec("big", "dp_cd", "screen") == {**base, "stage": "screen", "seeds": 1,
                                                      "fidelity": 0.25}
    assert p.solve_spec("big", "dp_cd", "promote") == {
        **base, "stage": "promote", "seeds": 1, "selection": "results/selection/big/screen.csv"}
    assert p.solve_spec("big", "dp_cd", "confirm") == {
        **base, "stage": "confirm", "selection": "results/selection/big/promote.csv",
        "seeds": base["seeds"] - 1, "first_seed": 1,
        "reused_runs": reused(p, "big", "dp_cd", "promote")}
    assert p.select_spec("big", "screen") == {"select_by": "last_objective", "keep": 4,
                                              "prefix": True}
    assert p.select_spec("big", "promote") == {"select_by": "last_objective", "keep": 2}
    assert p.select_inputs("big", "screen") == ("screen",)
    assert p.select_inputs("big", "promote") == ("promote",)
    whole = make({**small_config(), "experiments": {
        **small_config()["experiments"],
        "big": {**small_config()["experiments"]["big"], "search": "staged", "search_stride": 1}}})
    passes = p.experiment("big")["passes"]
    screen = p.config_passes("big", "dp_cd", "screen")
    assert screen == [plan.prefix_passes(k, 0.25) for k in whole.config_passes(
        "big", "dp_cd", "screen")]
    assert p.cost("big", "dp_cd", "screen").sweep < whole.cost("big", "dp_cd", "screen").sweep
    n_groups = len(whole.config_passes("big", "dp_cd", "confirm")) // 3  # keep 3 by default
    assert len(p.config_passes("big", "dp_cd", "promote")) == n_groups * 4
    assert sorted(set(p.config_passes("big", "dp_cd", "promote"))) == sorted(set(passes))
    assert "promote" in p.search_summary() and "a prefix of each run" in p.search_summary()
    # with a stride: screen and refine are prefixes, ranked together
    config["experiments"]["big"].update(search_stride=2)
    for solver in ("dp_cd", "dp_sgd"):
        config["experiments"]["big"]["solvers"][solver]["clip"] = {"geomspace": [0.01, 10.0, 10]}
    q = make(config)
    assert q.stages("big") == ("screen", "refine", "promote", "confirm")
    assert q.select_inputs("big", "refine") == ("screen", "refine")
    assert q.solve_spec("big", "dp_cd", "refine")["fidelity"] == 0.25
    assert q.select_spec("big", "screen") == {"select_by": "last_objective", "keep": 2,
                                              "prefix": True}
    assert q.select_spec("big", "refine")["keep"] == 4
    # fidelity 1 (the default) is today's search, specs unchanged
    config["experiments"]["big"]["search_fidelity"] = 1
    assert "promote" not in make(config).stages("big")


def test_bad_fidelity_settings_are_refused():
    config = small_config()
    config["experiments"]["big"].update(search="staged", search_keep=3)
    for value in (0, 1.5, -0.1, True):
        bad = copy.deepcopy(config)
        bad["experiments"]["big"]["search_fidelity"] = value
        with pytest.raises(ValueError, match="experiments.big.search_fidelity: .* in \\(0, 1\\]"):
            make(bad)
    bad = copy.deepcopy(config)
    bad["experiments"]["big"].update(search_fidelity=0.5, search_promote=2)
    with pytest.raises(ValueError, match="experiments.big.search_promote: 2 .* search_keep = 3"):
        make(bad)
    bad["experiments"]["big"]["search_promote"] = 0
    with pytest.raises(ValueError, match="experiments.big.search_promote: must be an integer"):
        make(bad)
    config = load("config/config.yaml")
    config["experiments"]["sparse_lasso"]["search_fidelity"] = 0
    with pytest.raises(Exception, match="search_fidelity|0"):
        validate(config, SCHEMA)


def test_coarse_to_fine_keeps_each_full_config_small():
    """The default staged search (stride 3, refine 2, keep 3) on the paper
    configs: the planner's estimate (2026-11-25's step_cost_ns) is under
    2 core-hours for DP-CD and DP-GCD, a tenth of their exhaustive grids or
    less; DP-SCD's grids are a decade apart (nothing to coarsen): its screen
    runs 2 epochs of each run on the stand-in (search_fidelity), under 5 core-hours in all, a
    fiftieth of its grid (docs/operations.md)."""
    for path, most, factor in (("config/paper/dpcd_icml22.yaml", 2, 10),
                               ("config/paper/dpgcd_aistats23.yaml", 2, 10),
                               ("config/paper/dpscd_aaai21.yaml", 5, 50)):
        config = load(path)
        grid = make({**config, "search": "grid"})
        p = make({**config, "search": "staged"})
        staged = sum(p.cost(n, s, st).sweep for n in p.experiments for st in p.stages(n)
                     for s in p.experiment(n)["solvers"])
        exhaustive = sum(grid.cost(n, s).sweep for n in grid.experiments
                         for s in grid.experiment(n)["solvers"])
        assert staged < most and staged < exhaustive / factor, path


def test_sparse_data_costs_its_non_zeros():
    """dorothea's cost counts its non-zeros at the sparse kernels' cost per step."""
    config = load("config/paper/dpgcd_aistats23.yaml")
    p = make(config)
    entries, sparse = p.dataset_entries("dorothea")
    assert sparse and entries == registry()["dorothea"]["expected"]["nnz"]
    sparse = get("dp_gcd").runtime.step_cost_ns["sparse"]
    assert p.step_cost_ns("dorothea", "dp_gcd_gs_q") == sparse
    assert p.dataset_entries("california") == (p.dataset_size("california"), False)


def test_cost_summary_names_total_and_largest_job():
    config = load("config/paper/dpscd_aaai21.yaml")
    config.update(chunk_core_hours=2, search="grid")
    p = make(config)
    text = p.cost_summary()
    total = sum(
        p.cost(n, s).sweep for n in p.experiments for s in p.experiment(n)["solvers"]
    )
    assert f"{total:.3g} core-hours in {len(p.jobs())} solve jobs" in text
    assert "chunk_core_hours: 2" in text


def test_fresh_seed_reruns_are_counted():
    """The fresh stage's re-runs (one configuration per solver and (epsilon,
    passes), on report.fresh_seeds seeds) are estimated apart from the search's
    solve jobs, linear in fresh_seeds, none without them or under
    search: private."""
    config = load("config/paper/dpscd_aaai21.yaml")
    config["report"]["fresh_seeds"] = 10
    p = make(config)
    name = "yearpredictionmsd_ridge"
    exp = p.experiment(name)
    entries, _ = p.dataset_entries(exp["dataset"])
    expected = sum(p.step_cost_ns(name, s) * entries * 10 * 4 * 50
                   for s in exp["solvers"]) / 3.6e12
    assert math.isclose(p.fresh_hours(name), expected)
    total = sum(p.fresh_hours(n) for n in p.experiments)
    assert f"and {total:.3g} core-hours of fresh-seed re-runs" in p.cost_summary()
    config["report"]["fresh_seeds"] = 20
    assert math.isclose(make(config).fresh_hours(name), 2 * expected)
    config["report"]["fresh_seeds"] = 0
    quiet = make(config)
    assert quiet.fresh_hours(name) == 0 and "fresh-seed" not in quiet.cost_summary()
    private = make(load("config/paper/private_tuning_dpscd.yaml"))
    assert all(private.fresh_hours(n) == 0 for n in private.experiments)


def test_coarse_to_fine_counts_match_the_sweep():
    """The planner's counts per stage (chunks, cost) are the sweep's: the
    screen's lattice exactly, the refine at most its bound, reached when the
    kept configurations' boxes are whole and apart, not when they overlap."""
    from dpcd.streams import config_id
    from dpcd.sweep.grid import epsilons_of, expanded_grid
    from dpcd.sweep.staged import coarse_configurations, refine_configurations

    config = load("config/paper/dpgcd_aistats23.yaml")
    for exp in config["experiments"].values():
        exp.update(search="staged", search_stride=3, search_refine=2)
    p = make(config)
    # DP-SGD's steps (6 decades in 10 values) are not coarsened; its thresholds are
    log1 = p.experiment("log1")
    sgd = plan.solver_entry(log1, "dp_sgd")[1]
    assert len(p.config_passes("log1", "dp_sgd", "screen")) == len(
        p.config_passes("log1", "dp_sgd")) // 50 * 18
    assert plan.axis_stride(sgd["step"], 3) == 1
    for name, solver in (("log1", "dp_cd"), ("california", "dp_gcd_gs_q")):
        exp = p.experiment(name)
        _, grid, passes = plan.solver_entry(exp, solver)
        axes, configs = expanded_grid(solver, grid, passes, epsilons_of(exp["privacy"]))
        screen = coarse_configurations(configs, grid, axes, 3)
        assert len(screen) == len(p.config_passes(name, solver, "screen"))
        bound = len(p.config_passes(name, solver, "refine"))
        # per (epsilon, passes): clip (stride 3: 18 lattice values of 50) x step
        # (stride 2: 6 of 10), step inner; lattice point k = 6 * clip index + step index
        groups = len(configs) // 500
        assert bound == groups * 2 * (5 * 3 - 1)
        apart = (6 * 5 + 1, 6 * 10 + 2)  # clip 15, step 2; clip 30, step 4: 5 x 3 boxes
        near = (6 * 5 + 1, 6 * 5 + 2)  # clip 15, steps 2 and 4: the boxes share a column
        for picks, whole in ((apart, True), (near, False)):
            keep = {config_id(screen[g * 108 + k]) for g in range(groups) for k in picks}
            fine = refine_configurations(configs, grid, axes, 3, keep)
            assert not {config_id(c) for c in fine} & {config_id(c) for c in screen}
            assert (len(fine) == bound) if whole else (0 < len(fine) < bound)



def test_top_level_search_sets_every_experiment():
    """`search` at the top (the paper configs' staged, the SLURM profile's
    search=grid) is every experiment's search, whatever each says."""
    config = load("config/paper/dpcd_icml22_quick.yaml")
    names = sorted(config["experiments"])
    config["experiments"][names[0]]["search"] = "staged"
    config["search"] = "grid"
    p = make(config)
    assert {p.search(n) for n in names} == {"grid"}
    assert {j.stage for j in p.jobs()} == {"grid"}
    config["search"] = "staged"
    p = make(config)
    assert {p.search(n) for n in names} == {"staged"}
    assert {"screen", "confirm"} <= {j.stage for j in p.jobs()}
    config["search"] = None  # the schema's default: each experiment's own
    p = make(config)
    assert [p.search(n) for n in names] == ["staged"] + ["grid"] * (len(names) - 1)


def test_paper_configs_search_staged_and_slurm_profile_grid():
    """One machine runs the full paper configs staged; the cluster profile
    switches them to the exhaustive grid with one setting."""
    for name in ("dpcd_icml22", "dpgcd_aistats23", "dpscd_aaai21"):
        assert load(f"config/paper/{name}.yaml")["search"] == "staged"
    with open(os.path.join(REPO, "config", "profiles", "slurm", "config.yaml")) as fh:
        assert "search=grid" in yaml.safe_load(fh)["config"]


def test_the_sweep_reads_the_lattice_leaf_only():
    """Below the workflow, dpcd reads the planner's lattice arithmetic only
    (dpcd.plan.lattice): never the planner itself."""
    import ast
    from pathlib import Path

    src = Path(plan.__file__).parents[1]
    reads = {}
    for path in src.rglob("*.py"):
        if path.parent.name == "plan" or path.name == "plan.py":
            continue  # the planner itself and what it is given (dpcd.stages.plan)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and (
                    node.module == "dpcd.plan" or node.module.startswith("dpcd.plan.")
                    or (node.module == "dpcd" and any(a.name == "plan" for a in node.names))):
                reads.setdefault(node.module, set()).add(path.relative_to(src).as_posix())
    assert set(reads) == {"dpcd.plan.lattice"}, reads


def test_the_fresh_stage_is_chunked_solve_jobs_after_the_aggregation():
    """report.fresh_seeds plans a solve stage "fresh" per experiment: jobs that
    cut the cells of all its solvers together, reading the experiment's table,
    on fresh_seeds seeds, apart from the search's stages (whose runs the
    aggregation reads: no cycle); none without fresh seeds or under search: private."""
    config = load("config/paper/dpscd_aaai21.yaml")
    config["report"]["fresh_seeds"] = 5
    p = make(config)
    name = "yearpredictionmsd_ridge"  # 4 epsilons x 1 passes: 4 cells per solver, chunks 8
    solvers = sorted(p.experiment(name)["solvers"])
    assert p.fresh_jobs(name) == [plan.FreshJob(name, k) for k in range(8)]
    spec = p.fresh_solve_spec(name)
    assert spec["chunks"] == 8 and spec["seed_set"] == "fresh"
    assert spec["selection"] == p.selection_input(name, "fresh") == f"results/tables/{name}.csv"
    assert spec["problem"] == p.experiment(name)["problem"]
    assert [s["solver"] for s in spec["solvers"]] == solvers
    for each in spec["solvers"]:
        assert each["seeds"] == 5 and each["seed_set"] == "fresh" and "chunks" not in each
        assert "stage" not in each  # the fresh MLflow runs carry no search_stage
    paths = p.fresh_paths(".parquet", name)
    assert paths[0] == f"results/fresh/{name}/chunk0.parquet"
    assert not set(paths) & set(p.job_paths(".parquet", [name]))
    assert p.fresh_tables([name]) == [f"results/tables/fresh/{name}.csv"]
    # one fresh rule and one fresh_report rule for every experiment, their
    # inputs and outputs in one order; the report reads the fresh rule's outputs
    names = p.fresh_experiments()
    assert names == p.experiments
    assert p.fresh_outputs()["fresh_csv"] == [f"results/tables/fresh/{n}.csv" for n in names]
    assert p.fresh_inputs() == {"runs": p.fresh_paths(".parquet"),
                                "selection": [f"results/tables/{n}.csv" for n in names]}
    report = p.fresh_report_inputs()
    assert {key: report[key] for key in p.fresh_outputs()} == p.fresh_outputs()
    assert report["mlflow_runs"] == p.fresh_paths(".mlflow.jsonl.gz")
    assert report["mlflow"] == [f"results/mlflow/{n}.json" for n in names]
    assert report["data"] == [  # the fresh runs' MLflow dataset input
        "results/data/processed/{dataset}/{variant}.npz".format(**p.experiment(n)) for n in names]
    assert p.fresh_report_outputs() == {
        "mlflow": [f"results/mlflow/fresh/{n}.json" for n in names],
        "fresh_figure": [f"results/figures/{n}_rel_error_fresh.png" for n in names]}
    assert p.fresh_spec() == {"fresh_seeds": 5, "select_by": {n: "validation" for n in names}}
    config["report"]["fresh_seeds"] = 0
    assert make(config).fresh_jobs() == [] and make(config).fresh_tables() == []
    assert make(config).fresh_outputs() == {} == make(config).fresh_report_outputs()
    private = make(load("config/paper/private_tuning_dpscd.yaml"))
    assert private.fresh_jobs() == []


def test_a_fresh_job_carries_at_least_its_least_work():
    """The fresh stage merges its chunks until each job's estimate reaches
    least_job_hours (a job's start-up is seconds), never below one job per
    experiment nor above its chunks or cells; chunk_core_hours still bounds
    every job from above, cutting the cells of all its solvers round-robin."""
    config = load("config/paper/dpscd_aaai21.yaml")
    p = make(config)
    least = p.owner("adult_svm", "fresh").least_job_hours
    assert least > 0 and p.owner("adult_svm", "screen").least_job_hours == 0
    for name in p.fresh_experiments():
        exp, chunks, work = p.experiment(name), p.fresh_chunks(name), p.fresh_hours(name)
        cells = 4 * len(exp["solvers"])  # 4 epsilons x 1 passes per solver
        assert 1 <= chunks <= min(exp["chunks"], cells)
        assert chunks == 1 or work / chunks >= least
        # merged only where a chunk more would fall below the least work
        merged = chunks < min(exp["chunks"], cells)
        assert not merged or work / (chunks + 1) < least
    # Adult's re-runs are seconds: one job; the stand-in's are minutes: its chunks
    assert len(p.fresh_jobs("adult_svm")) == 1
    msd = "yearpredictionmsd_ridge"
    assert len(p.fresh_jobs(msd)) == p.experiment(msd)["chunks"] == 8
    # the search's stages keep the configured chunks, however small their jobs
    small = make(small_config())
    assert small.chunks("sparse_lasso", "dp_cd") == small.experiment("sparse_lasso")["chunks"] == 2
    fresh = small_config()
    fresh["report"]["fresh_seeds"] = 3
    assert make(fresh).fresh_chunks("sparse_lasso") == 1
    # chunk_core_hours: no job's cells (round-robin over the solvers) above it
    config["chunk_core_hours"] = least / 10
    bounded = make(config)
    for name in bounded.fresh_experiments():
        hours, chunks = bounded._fresh_cells_hours(name), bounded.fresh_chunks(name)
        assert chunks == len(hours) or max(
            sum(hours[k::chunks]) for k in range(chunks)) <= least / 10


def test_a_non_private_solver_is_planned_at_one_epsilon():
    """Its runs are the same at every epsilon (dpcd.sweep.run runs them once):
    the cost model counts one epsilon, a private solver every one; the fresh
    stage every cell (its seeds are drawn per cell)."""
    config = load("config/paper/dpscd_aaai21.yaml")
    p = make(config)
    name = "yearpredictionmsd_ridge"  # 4 epsilons
    for solver, private, grid in (("sgd", False, 13 * 11), ("dp_sgd", True, 13 * 13 * 11)):
        assert p.private(name, solver) is private
        assert len(p.config_passes(name, solver, "screen")) == (4 if private else 1) * grid
    assert len(p.config_passes(name, "scd", "fresh")) == 4
    # without solver facts (dpcd not importable where Snakemake runs): priced as private
    bare = plan.Plan(load("config/paper/dpscd_aaai21.yaml"))
    assert len(bare.config_passes(name, "sgd", "screen")) == 4 * 13 * 11


@pytest.mark.parametrize("path", [p for p in sorted(SOLVE_JOBS) if "private" not in p])
def test_no_solve_job_runs_nothing(path):
    """As configured (the paper configs' staged search), every solve job of
    every stage has a configuration to run: a chunk past a solver's
    configurations would pay a process start-up for nothing."""
    p = make(load(path))
    for job in p.jobs():
        assert job.chunk < len(p.config_passes(job.experiment, job.solver, job.stage)), job


def test_the_solve_rules_wildcards_are_the_search_modes_stages():
    """The {stage} and {after} patterns of the solve and select rules come
    from the search modes (no stage named in a rule file): every staged
    stage's folder and grid's empty one match, the fresh stage's (its own
    rule) does not; a select follows every staged stage but the confirm."""
    import re

    stage, after = plan.stage_wildcard(), plan.after_wildcard()
    folders = {f"{s}/" for s in plan.SEARCHES["staged"].solve_stages} | {""}
    assert all(re.fullmatch(stage, f) for f in folders)
    assert not re.fullmatch(stage, "fresh/") and not re.fullmatch(stage, "private/")
    assert set(after.split("|")) == set(plan.SEARCHES["staged"].solve_stages[:-1])
    config = load("config/paper/dpscd_aaai21.yaml")
    p = make(config)
    for job in p.jobs():
        assert re.fullmatch(stage, p.searches[job.experiment].folder(job.stage))


def test_workflow_path_is_from_the_workflow_and_relative_to_the_workdir(tmp_path):
    """A repo file a config names is found from any working directory, and a
    job's command names it without the submitting machine's paths."""
    base, work = tmp_path / "clone", tmp_path / "runs" / "quick"
    (base / "config").mkdir(parents=True)
    (base / "config" / "t.csv").write_text("x\n")
    work.mkdir(parents=True)
    assert plan.workflow_path("config/t.csv", str(base), str(base)) == "config/t.csv"
    rel = plan.workflow_path("config/t.csv", str(base), str(work))
    assert rel == os.path.join("..", "..", "clone", "config", "t.csv")
    assert (work / rel).read_text() == "x\n"
    assert plan.workflow_path(str(base / "config" / "t.csv"), "/elsewhere") \
        == str(base / "config" / "t.csv")
    assert plan.workflow_path(None, str(base)) is None


@pytest.mark.parametrize("path", ["config/paper/dpcd_icml22_quick.yaml",
                                  "config/paper/dpscd_aaai21.yaml",
                                  "config/paper/private_tuning_dpscd.yaml"])
def test_a_calibrate_job_reads_only_what_every_solve_job_of_its_entry_reads(path):
    """The calibrate job of a private solver entry: its params are items of
    every stage's solve spec of the entry (the penalty's without its
    strength), so a solve job's calibrate job changes only with an edit that
    reruns it anyway; entries on the same data that calibrate alike share it
    (the lambda experiments); none for a non-private solver or under search:
    private (its jobs calibrate)."""
    p = make(load(path))
    paths = set()
    for name in p.experiments:
        exp = p.experiment(name)
        for solver in sorted(exp["solvers"]):
            calibrated = p.calibration_path(name, solver)
            if not plan_facts()[plan.solver_entry(exp, solver)[0]]["private"] \
                    or p.search(name) == "private":
                assert calibrated is None
                continue
            paths.add(calibrated)
            folder, key = calibrated.rsplit("/", 1)
            assert folder == (f"results/calibrated/{exp['dataset']}/{exp['variant']}/"
                              f"{exp['problem']['loss']}")
            spec = p.calibrate_spec(key[:-len(".json")])
            for stage in p.stages(name):
                solve = p.solve_spec(name, solver, stage)
                assert spec["solver"] == solve.get("adapter", solve["solver"])
                assert all(spec[k] == solve[k] for k in ("grid", "passes", "privacy"))
                assert spec["penalty"].items() <= solve["problem"].items()
    if p.experiments_of("private"):
        assert not paths
    else:
        assert paths
    if path.endswith("dpcd_icml22_quick.yaml"):  # the lambda experiments share theirs
        assert len(paths) < sum(p.calibration_path(n, s) is not None
                                for n in p.experiments for s in p.experiment(n)["solvers"])
