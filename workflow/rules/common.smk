# Paths and thin wrappers over the plan (src/dpcd/plan/) every rule uses.
import os

import yaml

from snakemake.logging import logger
from snakemake.utils import validate

validate(config, "../schemas/config.schema.yaml")


include: "plan.smk"


if config["algorithms"]:  # solvers from outside dpcd: every job imports them
    os.environ.update(DPCD_ALGORITHMS=plan.algorithm_modules(config["algorithms"]))
try:  # the jobs check again where dpcd is not importable (--sdm conda)
    from dpcd.algorithms import check_solvers, plan_facts
    from dpcd.data.registry import registry as _registry

    with open(
        os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml")
    ) as f:
        _defs = yaml.safe_load(f)["$defs"]
    _check_solvers = lambda c: check_solvers(c, _defs)  # names, grids, pairs, relation
    _facts = plan_facts()  # step costs, private-search candidacy
except ImportError:
    _registry = _check_solvers = _facts = None
PLAN = plan.Plan(config, _registry and _registry(), _check_solvers, _facts)
if workflow.is_main_process:  # once, before any job: not again in each job
    logger.info(PLAN.cost_summary())  # core-hours: 2 cores or 200?
    if PLAN.search_summary():  # search: staged, per stage
        logger.info(PLAN.search_summary())
LAMBDA_GROUPS = PLAN.lambda_groups
WARMUP_PRIORITY = plan.WARMUP_PRIORITY
_json = plan.render

# Jobs inherit these: one project-local numba cache (filled once by
# warmup_numba), one calibration cache (each distinct noise calibration is
# computed once per workflow, by whichever job asks first; see
# dpcd.privacy.cache) and the tracking URI (MLFLOW_TRACKING_URI wins when
# exported).
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.abspath("results/.numba_cache"))
os.environ.setdefault("DPCD_CALIBRATION_CACHE", os.path.abspath("results/calibration"))
os.environ.setdefault("MLFLOW_TRACKING_URI", config["mlflow"]["tracking_uri"])


wildcard_constraints:
    dataset="[A-Za-z0-9_]+",
    variant="[A-Za-z0-9_]+",
    experiment="[A-Za-z0-9_]+",
    solver="[a-z0-9_]+",
    loss="[a-z]+",
    chunk="[0-9]+",
    stage="(screen/|refine/|promote/|confirm/)?",
    after="screen|refine|promote",


def processed_path(wildcards):
    """The preprocessed dataset an experiment optimises on."""
    exp = PLAN.experiment(wildcards.experiment)
    return f"results/data/processed/{exp['dataset']}/{exp['variant']}.npz"


def smoothness_path(wildcards):
    """Exact smoothness constants of an experiment's dataset and loss."""
    exp = PLAN.experiment(wildcards.experiment)
    return (
        f"results/smoothness/{exp['dataset']}/{exp['variant']}/"
        f"{exp['problem']['loss']}.json"
    )


def private_smoothness_inputs(wildcards):
    """The private smoothness estimate, only for solvers that use one."""
    if PLAN.uses_private_smoothness(wildcards.experiment, wildcards.solver):
        return f"results/smoothness/private/{wildcards.experiment}.json"
    return []


# Per job, from the plan. Params read only the settings their stage reads, so
# that Snakemake reruns exactly the stages downstream of an edit.
sweep_priority = lambda w: PLAN.priority(w.experiment)
problem_params = lambda w: _json(PLAN.experiment(w.experiment)["problem"])
private_smoothness_params = lambda w: _json(PLAN.private_smoothness_spec(w.experiment))
solve_params = lambda w: _json(PLAN.solve_spec(w.experiment, w.solver, _stage(w)))
select_params = lambda w: _json(PLAN.select_spec(w.experiment, w.after))
_stage = lambda w: w.stage[:-1] or "grid"  # "screen/" -> "screen"
selection_input = lambda w: _optional(PLAN.selection_input(w.experiment, _stage(w)))
aggregate_params = lambda w: _json(PLAN.aggregate_spec(w.experiment))
mlflow_experiment_name = lambda w: config["mlflow"]["experiment_prefix"] + w.experiment
fresh_params = lambda w: _json(PLAN.fresh_spec(w.experiment)) if fresh_seeds() else ""


# Lists the rules read (the plan builds them). Fresh-seed re-evaluation
# (report.fresh_seeds) runs in the experiment's aggregate job; the lambda table
# exists when some experiment has an alpha_grid.
fresh_seeds = lambda: PLAN.fresh_seeds
lambda_experiments = PLAN.lambda_experiments
lambda_fresh_tables = lambda: fresh_tables(PLAN.lambda_experiments())
lambda_outputs = lambda: _optional(
    LAMBDA_GROUPS and "results/tables/lambda/sensitivity.csv"
)
final_outputs = PLAN.final_outputs
paper_figures = lambda: config["report"].get("figures") or {}
published_input = lambda: _optional(config["report"]["published"])
paper_published_input = lambda: _optional(config["report"].get("published_figures"))
_optional = lambda path: [path] if path else []
fresh_outputs = lambda: {  # the aggregate job's, none when report.fresh_seeds is 0
    name: _fresh_figure(path) if name == "fresh_figure" else path
    for name, path in PLAN.fresh_outputs().items()
}
_fresh_figure = lambda path: report(
    path, caption="../report/rel_error_fresh.rst", category="Fresh seeds"
)


def fresh_tables(names=None):
    """Experiments' fresh tables (all by default), none when report.fresh_seeds is 0."""
    names = PLAN.experiments if names is None else names
    return [f"results/tables/fresh/{name}.csv" for name in names if fresh_seeds()]


def chunk_results(wildcards, suffix=".parquet", stage="final"):
    """Result files of one experiment's stage (default: the tables' stage)."""
    jobs = PLAN.jobs(wildcards.experiment, stage)
    return [PLAN.job_path(job, suffix) for job in jobs]


def selected_results(wildcards):
    """What a select job of a staged search reads: the tables of the stages
    it ranks together (screen and refine; the promote's alone)."""
    return [
        path
        for stage in PLAN.select_inputs(wildcards.experiment, wildcards.after)
        for path in chunk_results(wildcards, stage=stage)
    ]


def chunk_mlflow_runs(wildcards):
    """Every solve job's MLflow runs file of one experiment, of every stage."""
    return chunk_results(wildcards, ".mlflow.jsonl.gz", stage=None)


def solve_timings():
    """Every solve job's overhead ledger, of every experiment."""
    return [PLAN.job_path(job, ".timing.json") for job in PLAN.jobs()]


def paper_figure_runs(wildcards):
    """Solve tables of the experiments the figures draw from (curves, grids)."""
    return [
        PLAN.job_path(job, ".parquet")
        for name in PLAN.paper_figure_experiments()
        for job in PLAN.jobs(name, "final")
    ]
