# Paths and thin wrappers over the plan (src/dpcd/plan/) every rule uses.
import os

from snakemake.logging import logger
from snakemake.utils import validate

from dpcd import plan
from dpcd.stages.plan import plan_inputs

validate(config, "../schemas/config.schema.yaml")


def workflow_path(path):
    """A file the config names (relative: from the workflow's directory), or None."""
    return plan.workflow_path(path, workflow.basedir)


if config["algorithms"]:  # solvers from outside dpcd: every job imports them
    os.environ.update(
        DPCD_ALGORITHMS=plan.algorithm_modules(config["algorithms"], workflow.basedir)
    )

# One MLflow experiment per config experiment, named apart per config file.
_configfiles = list(workflow.overwrite_configfiles or [])
EXPERIMENT_PREFIX = plan.experiment_prefix(
    config["mlflow"]["experiment_prefix"],
    _configfiles[-1] if _configfiles else None,
    DEFAULT_CONFIGFILE,
)


# the dataset registry, the solver entries' checks and the solvers' facts
PLAN = plan.Plan(
    config,
    **plan_inputs(
        os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml")
    ),
)
if workflow.is_main_process:  # once, before any job: not again in each job
    logger.info(PLAN.cost_summary())  # core-hours: 2 cores or 200?
    if PLAN.search_summary():  # per stage of a staged search
        logger.info(PLAN.search_summary())
LAMBDA_GROUPS = PLAN.lambda_groups
WARMUP_PRIORITY = plan.WARMUP_PRIORITY
_json = plan.render
final_outputs = PLAN.final_outputs
fresh_tables = PLAN.fresh_tables
lambda_experiments = PLAN.lambda_experiments

# Jobs inherit one project-local numba cache (filled by the warmup_numba jobs), one
# calibration cache (dpcd.privacy.cache) and the tracking URI (exported wins).
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.abspath("results/.numba_cache"))
os.environ.setdefault("DPCD_CALIBRATION_CACHE", os.path.abspath("results/calibration"))
os.environ.setdefault("MLFLOW_TRACKING_URI", config["mlflow"]["tracking_uri"])


wildcard_constraints:
    dataset="[A-Za-z0-9_]+",
    variant="[A-Za-z0-9_]+",
    experiment="[A-Za-z0-9_]+",
    solver="[a-z0-9_]+",
    family="[A-Za-z0-9_]+",
    loss="[a-z]+",
    chunk="[0-9]+",
    calibration="[0-9a-f]{16}",
    stage=plan.stage_wildcard(),  # a search mode's stage folders
    after=plan.after_wildcard(),


def optional(path):
    """An input that may be absent: [path], or [] for a null setting."""
    return [path] if path else []


# Inputs and params per job, from the plan. Params read only the settings their
# stage reads, so that Snakemake reruns exactly the stages downstream of an edit.
def processed_path(w):
    exp = PLAN.experiment(w.experiment)
    return f"results/data/processed/{exp['dataset']}/{exp['variant']}.npz"


def smoothness_path(w):
    exp = PLAN.experiment(w.experiment)
    return f"results/smoothness/{exp['dataset']}/{exp['variant']}/{exp['problem']['loss']}.json"


def private_smoothness_inputs(w):
    """The private smoothness estimate, only for solvers that use one."""
    if PLAN.uses_private_smoothness(w.experiment, w.solver):
        return f"results/smoothness/private/{w.experiment}.json"
    return []


def sweep_priority(w):
    return PLAN.priority(w.experiment)


def problem_params(w):
    return _json(PLAN.experiment(w.experiment)["problem"])


def _stage(w):
    return PLAN.folder_stage(w.experiment, w.stage)


def solve_params(w):
    return _json(PLAN.solve_spec(w.experiment, w.solver, _stage(w)))


def warmup_inputs(w):
    """The warm-ups of a solve job's solvers' kernel families (of every solver
    of the experiment for a fresh job, which has no {solver})."""
    return PLAN.warmup_paths(w.experiment, w.get("solver"))


def calibration_input(w):
    """The calibrate job whose calibrations a solve job reads (private solvers)."""
    return optional(PLAN.calibration_path(w.experiment, w.solver))


def selection_input(w):
    return optional(PLAN.selection_input(w.experiment, _stage(w)))


def reused_runs(w):
    """The earlier stages' tables whose first-seed runs a solve job reuses."""
    return PLAN.reused_runs(w.experiment, w.solver, _stage(w))


def chunk_results(w, suffix=".parquet", stage="final"):
    """Result files of one experiment's stage (default: the tables' stage)."""
    return PLAN.job_paths(suffix, [w.experiment], stage)


def selected_results(w):
    """What a select job reads: the tables of the stages it ranks together."""
    stages = PLAN.select_inputs(w.experiment, w.after)
    return [path for stage in stages for path in chunk_results(w, stage=stage)]


def chunk_mlflow_runs(w):
    """Every search stage's MLflow runs files of one experiment."""
    return chunk_results(w, ".mlflow.jsonl.gz", stage=None)


def fresh_outputs():
    """The fresh rule's outputs, its tables in the report."""
    outputs = PLAN.fresh_outputs()
    kind = {"caption": "../report/table_fresh.rst", "category": "Tables"}
    for key in ("fresh_csv", "fresh_md") if outputs else ():
        outputs[key] = [report(p, **kind) for p in outputs[key]]
    return outputs


def fresh_report_outputs():
    """The fresh_report rule's outputs, none when report.fresh_seeds is 0."""
    outputs = PLAN.fresh_report_outputs()
    if outputs:
        kind = {"caption": "../report/rel_error_fresh.rst", "category": "Fresh seeds"}
        outputs["fresh_figure"] = [report(p, **kind) for p in outputs["fresh_figure"]]
    return outputs


def lambda_outputs():
    return optional(LAMBDA_GROUPS and "results/tables/lambda/sensitivity.csv")


def paper_figures():
    return config["report"].get("figures") or {}


def paper_figure_runs(w):
    """Solve tables of the experiments the figures draw from (curves, grids)."""
    return PLAN.job_paths(".parquet", PLAN.paper_figure_experiments(), "final")
