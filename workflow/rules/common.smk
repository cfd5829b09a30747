# Validation, wildcard constraints and the named helpers every rule uses.
import copy
import json
import math
import os
from types import SimpleNamespace

import yaml

from snakemake.utils import validate

validate(config, "../schemas/config.schema.yaml")


def _expand_alpha_grids(experiments):
    """Experiment name -> {base, alpha or lambda_max_fraction} of the
    experiments each ``alpha_grid`` adds: ``<name>_lam<k>`` is ``<name>`` at the
    k-th strength, so every rule runs it as any other experiment."""
    groups = {}
    for name in sorted(experiments):
        grid = experiments[name].pop("alpha_grid", None)
        if not grid:
            continue
        ((key, values),) = grid.items()
        for k, value in enumerate(values):
            new = f"{name}_lam{k}"
            if new in experiments:
                raise ValueError(
                    f"config: experiments.{name}.alpha_grid: {new!r} is already an experiment"
                )
            exp = copy.deepcopy(experiments[name])
            if key == "alphas":
                exp["problem"]["alpha"] = float(value)
                setting = {"alpha": float(value)}
            else:
                exp["problem"]["lambda_max_fraction"] = float(value)
                setting = {"lambda_max_fraction": float(value)}
            experiments[new] = exp
            groups[new] = {"base": name, **setting}
    return groups


LAMBDA_GROUPS = _expand_alpha_grids(config["experiments"])

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


def _json(obj):
    """Deterministic rendering for params: Snakemake compares params as strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _experiment(name):
    exp = config["experiments"][name]
    if exp["dataset"] not in config["datasets"]:
        raise ValueError(
            f"config: experiments.{name}.dataset: unknown dataset "
            f"{exp['dataset']!r}; known: {sorted(config['datasets'])}"
        )
    return exp


for _name in config["experiments"]:
    _experiment(_name)
try:  # the registry is small; the jobs check again where dpcd is not importable (--sdm conda)
    from dpcd.data.registry import registry as _registry
except ImportError:
    _registry = None
if _registry is not None:
    for _key, _dataset in config["datasets"].items():
        if _dataset["source"] not in _registry():
            raise ValueError(
                f"config: datasets.{_key}.source: unknown registry entry "
                f"{_dataset['source']!r}; known: {sorted(_registry())}"
            )
if "summary" in config["experiments"]:
    raise ValueError(
        "config: experiments.summary: the name is reserved for the summary across experiments"
    )


# Job priorities: the warmup jobs gate every solver job, then an experiment's
# jobs go by the size of its sweep (n x p x passes summed over its solvers), so
# that on few cores the longest chains start first and the short ones fill the
# end instead of the long ones running alone after the rest.
WARMUP_PRIORITY = 100


def _dataset_size(name):
    """n x p from the config's generator params or the registry (1 if unknown)."""
    dataset = config["datasets"][name]
    entry = _registry().get(dataset["source"], {}) if _registry is not None else {}
    shape = {
        **entry.get("expected", {}),
        **entry.get("defaults", {}),
        **(dataset.get("params") or {}),
    }
    return shape.get("n_samples", 1) * shape.get("n_features", 1)


def sweep_priority(wildcards):
    exp = _experiment(wildcards.experiment)
    passes = sum(sum(solver_entry(exp, name)[2]) for name in sorted(exp["solvers"]))
    return math.log10(_dataset_size(exp["dataset"]) * max(passes, 1))


def processed_path(wildcards):
    """The preprocessed dataset an experiment optimises on."""
    exp = _experiment(wildcards.experiment)
    return f"results/data/processed/{exp['dataset']}/{exp['variant']}.npz"


def smoothness_path(wildcards):
    """Exact smoothness constants of an experiment's dataset and loss."""
    exp = _experiment(wildcards.experiment)
    return (
        f"results/smoothness/{exp['dataset']}/{exp['variant']}/"
        f"{exp['problem']['loss']}.json"
    )


def solver_entry(exp, name):
    """(solver run, grid, passes) of solver entry ``name``: a solver's own name,
    or a named variant {solver: dp_gcd, rule: gs_q, ...}; an entry's
    ``passes`` replaces the experiment's."""
    entry = dict(exp["solvers"][name])
    solver = entry.pop("solver", name)
    passes = entry.pop("passes", exp["passes"])
    return solver, entry, passes


# Solvers from outside dpcd (config algorithms): every job imports them.
if config["algorithms"]:
    os.environ.update(
        DPCD_ALGORITHMS=os.pathsep.join(
            os.path.abspath(m) if m.endswith(".py") else m for m in config["algorithms"]
        )
    )
try:  # as the registry check: the solve jobs check again where dpcd is not importable
    from dpcd.algorithms import check_solvers as _check_solvers
except ImportError:
    _check_solvers = None
if _check_solvers is not None:  # names, grids, (loss, penalty) and relation
    with open(
        os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml")
    ) as f:
        _check_solvers(config, yaml.safe_load(f)["$defs"])


def private_smoothness_inputs(wildcards):
    """The private smoothness estimate, only for solvers that use one."""
    exp = _experiment(wildcards.experiment)
    if solver_entry(exp, wildcards.solver)[0] == "dp_cd_p":
        return f"results/smoothness/private/{wildcards.experiment}.json"
    return []


def problem_params(wildcards):
    return _json(_experiment(wildcards.experiment)["problem"])


def private_smoothness_params(wildcards):
    """What the private estimate reads: budget, seeds and its share of epsilon."""
    exp = _experiment(wildcards.experiment)
    return _json(
        {
            "experiment": wildcards.experiment,
            # the estimate is replace-one whatever the experiment's relation
            "privacy": {k: v for k, v in exp["privacy"].items() if k != "neighbouring"},
            "seeds": exp["seeds"],
            "base_seed": exp["base_seed"],
            "loss": exp["problem"]["loss"],
            "smoothness_fraction": next(
                solver_entry(exp, name)[1]["smoothness_fraction"]
                for name in sorted(exp["solvers"])
                if solver_entry(exp, name)[0] == "dp_cd_p"
            ),
        }
    )


def solve_params(wildcards):
    """Everything one solver's sweep reads, and nothing of the other solvers."""
    return _json(_solve_spec(wildcards))


def _solve_spec(wildcards):
    exp = _experiment(wildcards.experiment)
    keys = ("dataset", "variant", "problem", "privacy", "seeds", "base_seed")
    spec = {key: exp[key] for key in keys}
    solver, grid, passes = solver_entry(exp, wildcards.solver)
    spec.update(
        experiment=wildcards.experiment,
        solver=wildcards.solver,
        grid=grid,
        passes=passes,
        chunks=exp["chunks"],
    )
    if solver != wildcards.solver:
        spec["adapter"] = solver  # only variants carry it: DP-CD specs are unchanged
    if exp.get("validation_split", "fixed") != "fixed":
        # only when set: the specs (and finished jobs) of fixed splits are unchanged
        spec["validation_split"] = exp["validation_split"]
    return spec


# Fresh-seed re-evaluation (aggregate.smk): in the experiment's aggregate job.
def fresh_seeds():
    return config["report"]["fresh_seeds"]


def fresh_outputs():
    """The aggregate job's fresh-seed outputs, none when report.fresh_seeds is 0."""
    if not fresh_seeds():
        return {}
    return {
        "fresh_runs": "results/fresh/{experiment}.parquet",
        "fresh_csv": "results/tables/fresh/{experiment}.csv",
        "fresh_md": "results/tables/fresh/{experiment}.md",
        "fresh_figure": report(
            "results/figures/{experiment}_rel_error_fresh.png",
            caption="../report/rel_error_fresh.rst",
            category="Fresh seeds",
        ),
    }


def fresh_params(wildcards):
    """Each solver's solve spec without its chunking, the selection rule and the
    number of fresh seeds ("" when report.fresh_seeds is 0): editing
    report.fresh_seeds reruns the aggregate jobs (whose ingestion then skips
    every solve job already in MLflow) and what reads them, and no solve job."""
    if not fresh_seeds():
        return ""
    exp = _experiment(wildcards.experiment)
    specs = {}
    for solver in sorted(exp["solvers"]):
        spec = _solve_spec(
            SimpleNamespace(experiment=wildcards.experiment, solver=solver)
        )
        del spec["chunks"]
        specs[solver] = spec
    return _json(
        {"solvers": specs, "select_by": exp["select_by"], "fresh_seeds": fresh_seeds()}
    )


# The aggregate rule's fresh-seed arguments, when report.fresh_seeds > 0.
FRESH_ARGUMENTS = (
    " --fresh-spec {params.fresh:q} --data {input.data} --smoothness {input.smoothness}"
    " --fresh-out {output.fresh_runs} --fresh-csv {output.fresh_csv}"
    " --fresh-md {output.fresh_md} --fresh-figure {output.fresh_figure}"
)


def fresh_tables():
    """Every experiment's fresh table, or none when report.fresh_seeds is 0."""
    if not fresh_seeds():
        return []
    return [
        f"results/tables/fresh/{name}.csv" for name in sorted(config["experiments"])
    ]


# Regularisation sensitivity (aggregate.smk), when some experiment has an alpha_grid.
def lambda_experiments():
    """The experiments of the lambda table: each base with its alpha_grid ones."""
    bases = {group["base"] for group in LAMBDA_GROUPS.values()}
    return sorted(bases | set(LAMBDA_GROUPS))


def lambda_fresh_tables():
    return [
        f"results/tables/fresh/{name}.csv"
        for name in lambda_experiments()
        if fresh_seeds()
    ]


def lambda_outputs():
    if not LAMBDA_GROUPS:
        return []
    return ["results/tables/lambda/sensitivity.csv"]


def mlflow_experiment_name(wildcards):
    return config["mlflow"]["experiment_prefix"] + wildcards.experiment


def chunk_results(wildcards):
    """Every solve job's result file of one experiment."""
    exp = _experiment(wildcards.experiment)
    return [
        f"results/runs/{wildcards.experiment}/{solver}/chunk{chunk}.parquet"
        for solver in sorted(exp["solvers"])
        for chunk in range(exp["chunks"])
    ]


def chunk_mlflow_runs(wildcards):
    """Every solve job's MLflow runs file of one experiment."""
    return [
        path.replace(".parquet", ".mlflow.jsonl.gz")
        for path in chunk_results(wildcards)
    ]


def solve_timings():
    """Every solve job's overhead ledger, of every experiment."""
    return [
        f"results/runs/{name}/{solver}/chunk{chunk}.timing.json"
        for name in sorted(config["experiments"])
        for solver in sorted(config["experiments"][name]["solvers"])
        for chunk in range(config["experiments"][name]["chunks"])
    ]


def aggregate_params(wildcards):
    exp = _experiment(wildcards.experiment)
    return _json({"select_by": exp["select_by"]})


def published_input():
    """The published cells to compare with (config report.published), if any."""
    path = config["report"]["published"]
    return [path] if path else []


def final_outputs():
    """Tables and figures of every experiment, and the summary across them."""
    outputs = ["results/summary.csv", "results/summary.md"]
    figures = config["report"].get("figures") or {}
    if figures:
        outputs += ["results/paper/report.md"]
        outputs += [f"results/paper/{name}.png" for name in sorted(figures)]
    for name in sorted(config["experiments"]):
        outputs += [
            f"results/tables/{name}.csv",
            f"results/tables/{name}.md",
            f"results/figures/{name}_rel_error.png",
            f"results/figures/{name}_rel_error_time.png",
            f"results/figures/{name}_solution.png",
        ]
        if fresh_seeds():
            outputs += [
                f"results/tables/fresh/{name}.csv",
                f"results/tables/fresh/{name}.md",
                f"results/figures/{name}_rel_error_fresh.png",
            ]
    if LAMBDA_GROUPS:
        outputs += lambda_outputs() + ["results/figures/lambda_sensitivity.png"]
    return outputs


# Paper report (report.smk): the cross-experiment figures of report.figures.
def paper_figures():
    return config["report"].get("figures") or {}


def paper_figure_runs(wildcards):
    """Solve tables of the experiments the figures draw from (curves, grids)."""
    names = sorted(
        {e for spec in paper_figures().values() for e in spec["experiments"]}
    )
    for name in names:
        _experiment(name)
    return [
        path
        for name in names
        for path in chunk_results(SimpleNamespace(experiment=name))
    ]


def paper_published_input():
    path = config["report"].get("published_figures")
    return [path] if path else []
