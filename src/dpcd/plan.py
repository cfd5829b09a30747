"""Workflow planning: what the Snakemake rules run, as plain data.

The Snakefile loads this module by path (standard library and yaml only), so
it plans the same jobs whether or not ``dpcd`` is importable in Snakemake's
own interpreter (``--sdm conda``). It knows no solver: a solver entry is
``{solver: name, <hyperparameter grids>...}`` and only the names the workflow
routes on (``dp_cd_p`` reads the private smoothness estimate) appear here.

A :class:`Plan` holds the validated configuration (``alpha_grid`` expanded)
and answers the rules' questions: the solve specs (the solve rule's params:
Snakemake reruns a job when its params string changes, so these strings are a
contract with every finished workdir), the one job list, priorities and the
final outputs.
"""

import copy
import json
import math
import os
from collections import namedtuple

# Registry entries generated from a seed rather than downloaded
# (tests/test_plan.py checks this matches dpcd.data.registry).
GENERATED_SOURCES = (
    "log1",
    "log2",
    "mtp_standin",
    "sparse_binary",
    "sparse_lasso",
    "yearpredictionmsd_standin",
)

# Warm-up jobs gate every solver job: they go first.
WARMUP_PRIORITY = 100

# The solver whose jobs also read the experiment's private smoothness estimate.
PRIVATE_SMOOTHNESS_SOLVER = "dp_cd_p"

#: One solve job. ``stage``: ``grid`` (every configuration on every seed) or,
#: for ``search: staged``, ``screen`` (every configuration on the first seed;
#: with ``search_stride`` k > 1, those of the coarse lattice: every k-th value
#: of each geomspace axis), ``refine`` (with k > 1 only: the full-resolution
#: neighbours of the configurations the screen kept, on the first seed) then
#: ``confirm`` (the configurations the last select kept, on every seed).
Job = namedtuple("Job", "experiment solver stage chunk")

# The solve stages of each search, in order; the last one's runs make the tables.
SEARCH_STAGES = {"grid": ("grid",), "staged": ("screen", "confirm"), "private": ("private",)}

# search: private (issue 29): its settings' defaults (the schema's, tested equal)
# and the distributions of K dp_accounting's RepeatAndSelectDpEvent accounts.
PRIVATE_DEFAULTS = {
    "mean": 10.0,
    "distribution": "geometric",
    "shape": None,
    "score_fraction": 0.1,
    "score_clip": None,
    "score_clip_from_data": False,
    "score_noise": "laplace",
    "selection_seeds": 10,
}
PRIVATE_DISTRIBUTIONS = ("poisson", "geometric", "logarithmic", "negative_binomial")
# The solvers whose runs can be candidates (dpcd.sweep.private_run checks each
# candidate's accounted event again when it runs), and why the others cannot.
# dp_cd_p: each candidate releases its own smoothness estimate, composed into
# its event (dpcd.sweep.candidate), not the per-seed estimate of the grid runs.
PRIVATE_CANDIDATES = ("dp_cd", "dp_cd_p", "dp_gcd", "dp_scd", "dp_sgd", "primal_dp_scd")
PRIVATE_REFUSED = {
    "seq_dp_scd": "its Poisson batches are calibrated at a max_batch_size whose tail "
    "is charged to delta, which repeat-and-select does not account",
}

# The stages that run the first seed only (the others run every seed).
ONE_SEED_STAGES = ("screen", "refine", "promote")
# The stages that run a prefix of each run with search_fidelity < 1.
PREFIX_STAGES = ("screen", "refine")

# Measured cost of one pass over one data entry (a record x a feature, or a
# non-zero of a sparse dataset), in ns, per solver: the slowest loss of the
# paper configs, a block of configurations as the sweep runs them, one core.
# `python bench/bench_cost_model.py`, 2026-11-25, on the 2-core development
# machine under load (so on the high side). Sparse: dorothea's shape (its noise
# is drawn per feature, so the cost per non-zero holds for that shape only).
STEP_COST_NS = {
    "dense": {
        "dp_cd": 1.47,
        "dp_cd_p": 1.85,
        "dp_gcd": 0.745,
        "dp_scd": 7.7,
        "dp_sgd": 5.1,
        "scd": 8.03,
        "seq_dp_scd": 9.4,
        "sgd": 5.82,
    },
    "sparse": {"dp_cd": 43.9, "dp_gcd": 20.5, "dp_sgd": 176},
}

#: A solve job's estimated cost: core-hours of the job (``job``) and of its
#: solver's whole sweep in that stage (``sweep``), and its number of chunks.
Cost = namedtuple("Cost", "job sweep chunks")


def render(obj):
    """Deterministic JSON for params: Snakemake compares params as strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


# The widest spacing of a staged screen's lattice, in decades: a geomspace
# axis finer than that is coarsened by search_stride at most up to it (a
# stride of 3 takes every 3rd of DP-CD's 100 thresholds over 9 decades, every
# 2nd of its 10 steps over 3; DP-SGD's 10 steps over 6 decades are not
# strided). Replayed from exhaustive DP-CD runs (docs/method/search.md): a
# lattice 2 or 3 decades apart missed the grid's best in 11-13 of 100 cells
# (a bump in the objective between the F(0) plateau of tiny thresholds and the
# best valley), 1 decade apart in 4 of 20, 0.67 decades apart in none of 20.
LATTICE_DECADES = 0.7


def axis_stride(entry, stride):
    """The stride of a staged screen along one geomspace axis
    ``{"geomspace": [start, stop, num]}``: ``stride``, at most what keeps the
    lattice's spacing within :data:`LATTICE_DECADES` (1 on an axis with fewer
    than 3 values or spaced wider)."""
    start, stop, num = entry["geomspace"]
    num = int(num)
    if num < 3:
        return 1
    decades = abs(math.log10(stop / start)) / (num - 1)
    return max(1, min(stride, int(LATTICE_DECADES / decades + 1e-9)))


def prefix_passes(passes, fidelity):
    """The passes a multi-fidelity screen runs of a configuration's ``passes``
    (``search_fidelity``): the fraction ``fidelity`` of them, rounded to whole
    passes (at least one) when ``passes`` is whole; all of them at 1."""
    if fidelity >= 1:
        return passes
    if float(passes).is_integer():
        return min(passes, max(1, int(fidelity * passes + 0.5)))
    return fidelity * passes


def coarse_indices(num, stride):
    """Positions on an axis of ``num`` values that a coarse lattice of stride
    ``stride`` keeps: every ``stride``-th, the last always included (the
    screen of ``search_stride``; dpcd.sweep.search uses the same)."""
    kept = list(range(0, num, stride))
    return kept if kept[-1] == num - 1 else kept + [num - 1]


def expand_lambda_grids(experiments):
    """Expand each experiment's ``alpha_grid`` into experiments of their own.

    Parameters
    ----------
    experiments : dict
        The config's experiments (not modified).

    Returns
    -------
    experiments : dict
        The same experiments without ``alpha_grid``, followed by
        ``<name>_lam<k>``: ``<name>`` at the k-th strength.
    groups : dict
        ``<name>_lam<k>`` -> ``{"base": name, "alpha" or "lambda_max_fraction": value}``.
    """
    experiments = copy.deepcopy(experiments)
    groups = {}
    for name in sorted(experiments):
        grid = experiments[name].pop("alpha_grid", None)
        if not grid:
            continue
        ((key, values),) = grid.items()
        setting = "alpha" if key == "alphas" else "lambda_max_fraction"
        for k, value in enumerate(values):
            new = f"{name}_lam{k}"
            if new in experiments:
                raise ValueError(
                    f"config: experiments.{name}.alpha_grid: {new!r} is already an experiment"
                )
            exp = copy.deepcopy(experiments[name])
            exp["problem"][setting] = float(value)
            experiments[new] = exp
            groups[new] = {"base": name, setting: float(value)}
    return experiments, groups


def algorithm_modules(modules):
    """``DPCD_ALGORITHMS`` for the config's ``algorithms`` (solvers from outside
    dpcd, which every job imports): ``.py`` paths made absolute, joined by
    ``os.pathsep``."""
    return os.pathsep.join(os.path.abspath(m) if m.endswith(".py") else m for m in modules)


def solver_entry(exp, name):
    """(solver, grid, passes) of solver entry ``name`` of experiment ``exp``.

    An entry is a solver's own name or a named variant ``{solver: dp_gcd,
    rule: gs_q, ...}``; an entry's ``passes`` replaces the experiment's.
    """
    entry = dict(exp["solvers"][name])
    solver = entry.pop("solver", name)
    passes = entry.pop("passes", exp["passes"])
    return solver, entry, passes


def grid_size(grid):
    """Configurations of a solver entry's grid (axes: lists and geomspaces;
    scalars are constants), per epsilon and passes."""
    size = 1
    for value in grid.values():
        if isinstance(value, dict):
            size *= int(value["geomspace"][2])
        elif isinstance(value, list):
            size *= len(value)
    return size


def data_spec(datasets, key, stage):
    """The params of data stage ``stage`` (generate, download, preprocess) for
    dataset ``key``: only the settings that stage reads."""
    if key not in datasets:
        raise ValueError(f"unknown dataset key {key!r}; configured: {sorted(datasets)}")
    dataset = datasets[key]
    if stage == "generate":
        return {"source": dataset["source"], "params": dataset.get("params") or {}}
    if stage == "download":
        return {"source": dataset["source"]}
    return {"source": dataset["source"], "split_seed": dataset.get("split_seed", 0)}


def raw_path(datasets, key):
    """The raw stage's output for a dataset: generated file or download manifest."""
    spec = data_spec(datasets, key, "download")
    if spec["source"] in GENERATED_SOURCES:
        return f"results/data/raw/{key}/generated.npz"
    return f"results/data/raw/{key}/manifest.json"


class Plan:
    """The workflow's plan for one configuration.

    Parameters
    ----------
    config : dict
        The validated configuration (schema defaults filled in). Its
        experiments are replaced by their ``alpha_grid`` expansion.
    registry : dict, optional
        ``dpcd.data.registry.registry()``, when importable: checks dataset
        sources and gives dataset shapes for priorities.
    check_solvers : callable, optional
        ``check_solvers(config)``, when dpcd is importable: every solver entry
        checked against its algorithm's spec (``dpcd.algorithms.check_solvers``:
        name, grid, (loss, penalty), neighbouring relation).
    """

    def __init__(self, config, registry=None, check_solvers=None):
        self.config = config
        config["experiments"], self.lambda_groups = expand_lambda_grids(
            config["experiments"]
        )
        if config.get("search"):  # one setting for the whole run (profiles, --config)
            for exp in config["experiments"].values():
                exp["search"] = config["search"]
        self.registry = registry
        self._check(check_solvers)

    # -- checks ----------------------------------------------------------
    def _check(self, check_solvers):
        config = self.config
        for name in config["experiments"]:
            self.experiment(name)
        if "summary" in config["experiments"]:
            raise ValueError(
                "config: experiments.summary: the name is reserved for the summary "
                "across experiments"
            )
        for name, exp in config["experiments"].items():
            search = exp.get("search", "grid")
            if search not in SEARCH_STAGES:
                raise ValueError(
                    f"config: experiments.{name}.search: unknown value {search!r}; "
                    f"known: {sorted(SEARCH_STAGES)}"
                )
            if search == "private":
                self._check_private(name, exp)
            if search == "staged" and exp["seeds"] < 2:
                raise ValueError(
                    f"config: experiments.{name}.seeds: search staged screens on one "
                    f"seed and confirms on all seeds, so it needs seeds >= 2 "
                    f"(got {exp['seeds']})"
                )
            if search == "staged":
                self._check_coarse_to_fine(name, exp)
        if config["report"].get("private_baseline") and not any(
                exp.get("search", "grid") == "private" for exp in config["experiments"].values()):
            raise ValueError(
                "config: report.private_baseline: compares search private experiments "
                "with their baseline, but no experiment has search: private")
        if self.registry is not None:
            for key, dataset in config["datasets"].items():
                if dataset["source"] not in self.registry:
                    raise ValueError(
                        f"config: datasets.{key}.source: unknown registry entry "
                        f"{dataset['source']!r}; known: {sorted(self.registry)}"
                    )
        if check_solvers is not None:
            check_solvers(config)

    def _check_coarse_to_fine(self, name, exp):
        """A staged search's counts are integers >= 1, and a stride > 1 has a
        geomspace axis to coarsen."""
        for key in ("search_keep", "search_stride", "search_refine", "search_promote"):
            value = exp.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"config: experiments.{name}.{key}: must be an integer >= 1, got {value!r}"
                )
        fidelity = exp.get("search_fidelity", 1)
        if isinstance(fidelity, bool) or not isinstance(fidelity, (int, float)) \
                or not 0 < fidelity <= 1:
            raise ValueError(
                f"config: experiments.{name}.search_fidelity: the fraction of each "
                f"run's passes the screen runs, in (0, 1], got {fidelity!r}"
            )
        if fidelity < 1 and exp.get("search_promote", 1) < exp.get("search_keep", 1):
            raise ValueError(
                f"config: experiments.{name}.search_promote: "
                f"{exp.get('search_promote', 1)} configurations promoted to whole runs "
                f"cannot give search_keep = {exp.get('search_keep', 1)} to the confirm; "
                f"set search_promote >= search_keep"
            )
        stride = exp.get("search_stride", 1)
        axes = [int(v["geomspace"][2]) for solver in exp["solvers"]
                for v in solver_entry(exp, solver)[1].values() if isinstance(v, dict)]
        if stride > 1 and not any(num > 2 for num in axes):
            raise ValueError(
                f"config: experiments.{name}.search_stride: {stride} coarsens nothing "
                f"(no solver of the experiment has a geomspace axis of more than 2 "
                f"values); set it to 1"
            )

    def experiment(self, name):
        """The experiment's config entry, its dataset checked."""
        config = self.config
        exp = config["experiments"][name]
        if exp["dataset"] not in config["datasets"]:
            raise ValueError(
                f"config: experiments.{name}.dataset: unknown dataset "
                f"{exp['dataset']!r}; known: {sorted(config['datasets'])}"
            )
        return exp

    def private_settings(self, name):
        """``search_private`` of experiment ``name``, defaults filled in."""
        given = self.config["experiments"][name].get("search_private") or {}
        return {**PRIVATE_DEFAULTS, **given}

    def _check_private(self, name, exp):
        """Refuse a ``search: private`` experiment that cannot run, before
        anything runs, naming the setting (see :data:`PRIVATE_REFUSED`)."""
        where = f"config: experiments.{name}"
        given = exp.get("search_private") or {}
        unknown = sorted(set(given) - set(PRIVATE_DEFAULTS))
        if unknown:
            raise ValueError(f"{where}.search_private: unknown settings {unknown}; "
                             f"known: {sorted(PRIVATE_DEFAULTS)}")
        settings = self.private_settings(name)
        mean, dist, shape = settings["mean"], settings["distribution"], settings["shape"]
        if isinstance(mean, bool) or not isinstance(mean, (int, float)) \
                or not math.isfinite(mean) or mean < 1:
            raise ValueError(f"{where}.search_private.mean: the mean number of candidates "
                             f"must be a finite number >= 1 (dp_accounting's "
                             f"repeat-and-select bounds need it), got {mean!r}")
        if dist not in PRIVATE_DISTRIBUTIONS:
            raise ValueError(f"{where}.search_private.distribution: unknown distribution "
                             f"{dist!r}; known: {list(PRIVATE_DISTRIBUTIONS)}")
        if dist == "negative_binomial":
            if isinstance(shape, bool) or not isinstance(shape, (int, float)) \
                    or not 0 < shape < math.inf:
                raise ValueError(f"{where}.search_private.shape: distribution "
                                 f"negative_binomial needs a shape in (0, inf), got {shape!r}")
        elif shape is not None:
            raise ValueError(f"{where}.search_private.shape: only distribution "
                             f"negative_binomial takes a shape ({dist} fixes it), got {shape!r}")
        f = settings["score_fraction"]
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f < 1:
            raise ValueError(f"{where}.search_private.score_fraction: must be in (0, 1) "
                             f"(the share of epsilon the score's noise may spend), got {f!r}")
        clip = settings["score_clip"]
        if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float))
                                 or not 0 < clip < math.inf):
            raise ValueError(f"{where}.search_private.score_clip: must be a finite number "
                             f"> 0 or null, got {clip!r}")
        if not isinstance(settings["score_clip_from_data"], bool):
            raise ValueError(f"{where}.search_private.score_clip_from_data: true or false, "
                             f"got {settings['score_clip_from_data']!r}")
        if settings["score_noise"] not in ("laplace", "gaussian"):
            raise ValueError(f"{where}.search_private.score_noise: laplace or gaussian, "
                             f"got {settings['score_noise']!r}")
        seeds = settings["selection_seeds"]
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise ValueError(f"{where}.search_private.selection_seeds: an integer >= 1, "
                             f"got {seeds!r}")
        if exp.get("validation_split", "fixed") != "fixed":
            raise ValueError(f"{where}.validation_split: search private scores candidates "
                             f"on the fixed split (per_seed redraws it per run seed)")
        if self.config["report"].get("fresh_seeds"):
            raise ValueError(
                f"{where}.search: private releases the selected model itself (no fresh "
                f"re-run of a configuration chosen on the data): set report.fresh_seeds "
                f"to 0, or run the private experiments from a config of their own")
        for solver in sorted(exp["solvers"]):
            kind, grid, passes = solver_entry(exp, solver)
            if kind in PRIVATE_REFUSED or kind not in PRIVATE_CANDIDATES:
                reason = PRIVATE_REFUSED.get(
                    kind, "it is not a private solver with an RDP account of its release"
                    f" (candidates: {', '.join(PRIVATE_CANDIDATES)})")
                raise ValueError(f"{where}.solvers.{solver}: {kind} cannot be a "
                                 f"private-search candidate: {reason}")
            relation = exp["privacy"].get("neighbouring", "replace_one")
            if kind == "dp_scd" and relation == "replace_one" \
                    and grid.get("sampling") != "without_replacement":
                raise ValueError(
                    f"{where}.solvers.{solver}: dp_scd's Poisson batches under "
                    f"replace_one are accounted by PLD only and repeat-and-select needs "
                    f"RDP: set sampling: without_replacement (RDP under replace_one) or "
                    f"privacy.neighbouring: replace_special")
            n = grid_size(grid)
            if n < 2:
                raise ValueError(
                    f"{where}.solvers.{solver}: the grid has {n} configuration per epsilon "
                    f"and passes; search private selects among >= 2 (each search draws "
                    f"from the configurations of one epsilon and one passes)")

    @property
    def experiments(self):
        """Experiment names, sorted."""
        return sorted(self.config["experiments"])

    # -- specs (the rules' params) ----------------------------------------
    def solve_spec(self, experiment, solver, stage="grid"):
        """Everything one solver's sweep reads, and nothing of the other solvers.

        A ``grid`` spec carries no stage (the specs of finished workdirs are
        unchanged); ``screen`` runs the first seed only, ``confirm`` the
        configurations of the selection file on every seed.
        """
        exp = self.experiment(experiment)
        keys = ("dataset", "variant", "problem", "privacy", "seeds", "base_seed")
        spec = {key: exp[key] for key in keys}
        name, grid, passes = solver_entry(exp, solver)
        spec.update(
            experiment=experiment,
            solver=solver,
            grid=grid,
            passes=passes,
            chunks=self.chunks(experiment, solver, stage),
        )
        if name != solver:
            spec["adapter"] = name  # only variants carry it: DP-CD specs are unchanged
        if exp.get("validation_split", "fixed") != "fixed":
            # only when set: the specs (and finished jobs) of fixed splits are unchanged
            spec["validation_split"] = exp["validation_split"]
        if stage == "private":  # one job per selection seed
            settings = {**self.private_settings(experiment), "select_by": exp["select_by"]}
            if not settings["score_clip_from_data"]:  # only when set: finished jobs unchanged
                del settings["score_clip_from_data"]
            spec.update(stage=stage, search_private=settings)
        if stage in ("screen", "confirm"):
            spec.update(stage=stage)
        spec.update(self.coarse_to_fine_spec(experiment, stage))
        return spec

    def search(self, experiment):
        return self.experiment(experiment).get("search", "grid")

    def stages(self, experiment):
        """The experiment's solve stages, in order (``refine`` after the
        screen when ``search_stride`` coarsens some axis: :meth:`coarsened`)."""
        stages = SEARCH_STAGES[self.search(experiment)]
        if self.coarsened(experiment):
            stages = stages[:1] + ("refine",) + stages[1:]
        if self.fidelity(experiment) < 1:
            stages = stages[:-1] + ("promote",) + stages[-1:]
        return stages

    def fidelity(self, experiment):
        """``search_fidelity``: the fraction of each run's passes the staged
        screen (and refine) runs; 1 (whole runs) unless staged."""
        exp = self.experiment(experiment)
        return exp.get("search_fidelity", 1) if self.search(experiment) == "staged" else 1

    def final_stage(self, experiment):
        """The stage whose runs make the experiment's tables."""
        return self.stages(experiment)[-1]

    @staticmethod
    def selection_path(experiment, stage="screen"):
        """The select rule's output after ``stage``."""
        return f"results/selection/{experiment}/{stage}.csv"

    def select_spec(self, experiment, after="screen"):
        """What the select rule after stage ``after`` reads: the selection rule
        and how many it keeps (``search_refine`` before a refine,
        ``search_promote`` before a promote, ``search_keep`` before the
        confirm); ``prefix`` when it ranks prefixes (``search_fidelity``)."""
        exp = self.experiment(experiment)
        stages = self.stages(experiment)
        following = stages[stages.index(after) + 1]
        key = {"confirm": "search_keep", "refine": "search_refine", "promote": "search_promote"}
        spec = {"select_by": exp["select_by"], "keep": exp[key[following]]}
        if after in PREFIX_STAGES and self.fidelity(experiment) < 1:
            spec["prefix"] = True  # rank each run at its last pass, not at passes
        return spec

    def select_inputs(self, experiment, after):
        """The stages whose tables the select after ``after`` ranks together:
        those since the last change of run length (the screen and the refine
        together; the promote's whole runs alone)."""
        if after == "promote":
            return ("promote",)
        stages = self.stages(experiment)
        return stages[: stages.index(after) + 1]

    def private_experiments(self):
        return [name for name in self.experiments if self.search(name) == "private"]

    def private_baseline(self):
        """``report.private_baseline``: the working directory of the same
        experiments tuned on the data, or None."""
        return self.config["report"].get("private_baseline")

    def private_compare_outputs(self):
        """The private_compare rule's outputs (none without a baseline)."""
        if not self.private_baseline():
            return []
        return ["results/private_tuning.csv", "results/private_tuning_conclusions.csv",
                "results/private_tuning.md"]

    def private_compare_inputs(self):
        """What private_compare reads: the private experiments' tables and
        released runs here, the baseline's fresh tables and fresh runs."""
        base = self.private_baseline().rstrip("/")
        names = self.private_experiments()
        return {
            "tables": [f"results/tables/{name}.csv" for name in names],
            "runs": [self.job_path(job, ".parquet") for name in names
                     for job in self.jobs(name)],
            "baseline_tables": [f"{base}/results/tables/fresh/{name}.csv" for name in names],
            "baseline_runs": [f"{base}/results/fresh/{name}.parquet" for name in names],
        }

    def staged_experiments(self):
        return [name for name in self.experiments if self.search(name) == "staged"]

    # -- coarse-to-fine (search: staged, search_stride > 1) -----------------
    def search_stride(self, experiment):
        """The screen's stride along the geomspace axes (1: every configuration)."""
        exp = self.experiment(experiment)
        return exp.get("search_stride", 1) if self.search(experiment) == "staged" else 1

    def coarse_to_fine_spec(self, experiment, stage):
        """What a staged solve spec adds to its stage: one seed for the screen
        and the refine, the stride where it coarsens (a whole screen's spec is
        unchanged), the selection file the refine and the confirm read."""
        spec = {}
        if stage in ONE_SEED_STAGES:
            spec["seeds"] = 1
        stride = self.search_stride(experiment)
        if stage in PREFIX_STAGES and self.coarsened(experiment):
            spec.update(stride=stride)
        if stage in PREFIX_STAGES and self.fidelity(experiment) < 1:
            spec.update(fidelity=self.fidelity(experiment))
        if stage in ("refine", "promote", "confirm"):
            stages = self.stages(experiment)
            spec.update(stage=stage,
                        selection=self.selection_path(experiment, stages[stages.index(stage) - 1]))
        return spec

    def selects(self, experiment):
        """The stages a select job follows (its output: :meth:`selection_path`)."""
        return self.stages(experiment)[:-1] if self.search(experiment) == "staged" else ()

    def selection_input(self, experiment, stage):
        """The selection file a solve job of ``stage`` reads (None: none)."""
        return self.coarse_to_fine_spec(experiment, stage).get("selection")

    def stage_configurations(self, experiment, solver, stage, full):
        """Configurations per (epsilon, passes) that ``stage`` runs of a solver
        whose grid has ``full`` (at most that many for the refine: the boxes of
        its kept configurations overlap, or reach past the grid's ends)."""
        exp = self.experiment(experiment)
        if stage == "confirm":
            return min(full, exp["search_keep"])
        if stage == "promote":
            return min(full, exp["search_promote"])
        stride = self.search_stride(experiment)
        if stage not in ONE_SEED_STAGES or stride == 1:
            return full
        axes = [(int(v["geomspace"][2]), axis_stride(v, stride))
                for v in solver_entry(exp, solver)[1].values() if isinstance(v, dict)]
        other = full // math.prod(num for num, _ in axes) if axes else full
        coarse = other * math.prod(len(coarse_indices(num, k)) for num, k in axes)
        if stage == "screen":
            return coarse
        box = math.prod(min(2 * k - 1, num) for num, k in axes)
        return min(full - coarse, exp["search_refine"] * (box - 1))

    def coarsened(self, experiment):
        """Whether the staged screen of an experiment leaves any configuration
        out (some solver's geomspace axis has an :func:`axis_stride` > 1)."""
        exp = self.experiment(experiment)
        stride = self.search_stride(experiment)
        return stride > 1 and any(
            axis_stride(v, stride) > 1 for solver in exp["solvers"]
            for v in solver_entry(exp, solver)[1].values() if isinstance(v, dict))

    def search_summary(self):
        """The staged search's estimate, logged at planning beside
        :meth:`cost_summary`: per stage, core-hours and configurations (of the
        grid's, on how many seeds), and the exhaustive grid's core-hours for
        the same experiments. Empty when no experiment is staged."""
        names = self.staged_experiments()
        if not names:
            return ""
        parts, staged = [], 0.0
        for stage in ("screen", "refine", "promote", "confirm"):
            hours = configs = 0
            for name in names:
                if stage not in self.stages(name):
                    continue
                for solver in sorted(self.experiment(name)["solvers"]):
                    hours += self.cost(name, solver, stage).sweep
                    configs += len(self.config_passes(name, solver, stage))
            if configs:
                staged += hours
                seeds = "1 seed" if stage in ONE_SEED_STAGES else "every seed"
                if stage in PREFIX_STAGES and any(self.fidelity(n) < 1 for n in names):
                    seeds += ", a prefix of each run"
                bound = "at most " if stage == "refine" else ""
                parts.append(f"{stage} {hours:.3g} ({bound}{configs} configurations, {seeds})")
        grid = sum(self.cost(name, solver, "grid").sweep for name in names
                   for solver in self.experiment(name)["solvers"])
        full = sum(len(self.config_passes(name, solver, "grid")) for name in names
                   for solver in self.experiment(name)["solvers"])
        return (f"dpcd: search staged ({len(names)} experiments): {staged:.3g} core-hours: "
                + ", ".join(parts)
                + f"; their exhaustive grid: {grid:.3g} core-hours ({full} configurations "
                "x every seed)")

    def uses_private_smoothness(self, experiment, solver):
        exp = self.experiment(experiment)
        return solver_entry(exp, solver)[0] == PRIVATE_SMOOTHNESS_SOLVER

    def private_smoothness_spec(self, experiment):
        """What the private estimate reads: budget, seeds and its share of epsilon."""
        exp = self.experiment(experiment)
        fraction = next(
            solver_entry(exp, name)[1]["smoothness_fraction"]
            for name in sorted(exp["solvers"])
            if self.uses_private_smoothness(experiment, name)
        )
        return {
            "experiment": experiment,
            # the estimate is replace-one whatever the experiment's relation
            "privacy": {k: v for k, v in exp["privacy"].items() if k != "neighbouring"},
            "seeds": exp["seeds"],
            "base_seed": exp["base_seed"],
            "loss": exp["problem"]["loss"],
            "smoothness_fraction": fraction,
        }

    def aggregate_spec(self, experiment):
        return {"select_by": self.experiment(experiment)["select_by"]}

    @property
    def fresh_seeds(self):
        return self.config["report"]["fresh_seeds"]

    def fresh_outputs(self):
        """The aggregate job's fresh-seed outputs (wildcard ``{experiment}``),
        none when report.fresh_seeds is 0; ``fresh_figure`` goes in the report."""
        if not self.fresh_seeds:
            return {}
        return {
            "fresh_runs": "results/fresh/{experiment}.parquet",
            "fresh_csv": "results/tables/fresh/{experiment}.csv",
            "fresh_md": "results/tables/fresh/{experiment}.md",
            "fresh_figure": "results/figures/{experiment}_rel_error_fresh.png",
        }

    def fresh_spec(self, experiment):
        """Each solver's solve spec without its chunking, the selection rule and
        the number of fresh seeds (None when report.fresh_seeds is 0): editing
        report.fresh_seeds reruns the aggregate jobs and no solve job."""
        if not self.fresh_seeds:
            return None
        exp = self.experiment(experiment)
        specs = {}
        for solver in sorted(exp["solvers"]):
            spec = self.solve_spec(experiment, solver)
            del spec["chunks"]
            specs[solver] = spec
        return {
            "solvers": specs,
            "select_by": exp["select_by"],
            "fresh_seeds": self.fresh_seeds,
        }

    # -- priorities --------------------------------------------------------
    def dataset_size(self, name):
        """n x p from the config's generator params or the registry (1 if unknown)."""
        dataset = self.config["datasets"][name]
        entry = (self.registry or {}).get(dataset["source"], {})
        shape = {
            **entry.get("expected", {}),
            **entry.get("defaults", {}),
            **(dataset.get("params") or {}),
        }
        return shape.get("n_samples", 1) * shape.get("n_features", 1)

    def priority(self, experiment):
        """log10 of the sweep's size (n x p x passes summed over its solvers):
        on few cores the longest chains start first and the short ones fill
        the end instead of the long ones running alone after the rest."""
        exp = self.experiment(experiment)
        passes = sum(sum(solver_entry(exp, name)[2]) for name in sorted(exp["solvers"]))
        return math.log10(self.dataset_size(exp["dataset"]) * max(passes, 1))

    # -- cost (cluster sizing) ---------------------------------------------
    def dataset_entries(self, name):
        """(entries one pass reads, sparse?): the registry's ``nnz`` when it
        gives one (a sparse dataset), else n x p."""
        dataset = self.config["datasets"][name]
        entry = (self.registry or {}).get(dataset["source"], {})
        nnz = entry.get("expected", {}).get("nnz")
        return (nnz, True) if nnz else (self.dataset_size(name), False)

    def step_cost_ns(self, experiment, solver):
        """ns per entry-pass of a solver entry on its experiment's dataset (a
        solver without a measured cost: the slowest measured one)."""
        exp = self.experiment(experiment)
        _, sparse = self.dataset_entries(exp["dataset"])
        table = STEP_COST_NS["sparse" if sparse else "dense"]
        return table.get(solver_entry(exp, solver)[0], max(table.values()))

    def config_passes(self, experiment, solver, stage="grid"):
        """The passes of each configuration the stage runs, in the sweep's
        order (epsilon, passes, then the grid's axes: dpcd.sweep.grid), the
        confirm stage's as ``search_keep`` per (epsilon, passes)."""
        exp = self.experiment(experiment)
        _, grid, passes = solver_entry(exp, solver)
        eps = exp["privacy"]["epsilon"]
        n_eps = len(eps) if isinstance(eps, (list, tuple)) else 1
        rest = 1
        for value in grid.values():
            if isinstance(value, dict):
                rest *= int(value["geomspace"][2])
            elif isinstance(value, list):
                rest *= len(value)
        rest = self.stage_configurations(experiment, solver, stage, rest)
        if stage == "fresh":  # the aggregate's re-run of each cell's selection
            rest = 1
        if stage == "private":  # K candidates on average, one search per selection seed
            settings = self.private_settings(experiment)
            rest = math.ceil(settings["mean"]) * settings["selection_seeds"]
        if stage in PREFIX_STAGES:  # the passes they run (search_fidelity)
            passes = [prefix_passes(k, self.fidelity(experiment)) for k in passes]
        return [k for _ in range(n_eps) for k in passes for _ in range(rest)]

    def _hours(self, experiment, solver, stage, passes):
        """Core-hours of configurations with these passes, on the stage's seeds."""
        exp = self.experiment(experiment)
        seeds = 1 if stage in ONE_SEED_STAGES + ("private",) else exp["seeds"]
        if stage == "fresh":
            seeds = self.fresh_seeds
        entries, _ = self.dataset_entries(exp["dataset"])
        ns = self.step_cost_ns(experiment, solver) * entries * seeds * sum(passes)
        return ns / 3.6e12

    def _largest_chunk(self, experiment, solver, stage, chunks):
        passes = self.config_passes(experiment, solver, stage)
        return max(
            (self._hours(experiment, solver, stage, passes[k::chunks]) for k in range(chunks)),
            default=0.0,  # a refine without jobs
        )

    def chunks(self, experiment, solver, stage="grid"):
        """Solve jobs of one solver's sweep: the experiment's ``chunks``, or with
        ``chunk_core_hours`` set, enough (round-robin, as dpcd.sweep.grid cuts
        them) that no job's estimate exceeds it; never more chunks than
        configurations for the bound (a configuration's seeds run in one job)."""
        if stage == "private":  # chunk k runs the searches of selection seed k
            return self.private_settings(experiment)["selection_seeds"]
        chunks = self.experiment(experiment)["chunks"]
        bound = self.config.get("chunk_core_hours")
        n_configs = len(self.config_passes(experiment, solver, stage))
        if stage == "refine":  # no job for a solver without a geomspace axis
            chunks = min(chunks, n_configs)
        if not bound:
            return chunks
        while chunks < n_configs:
            largest = self._largest_chunk(experiment, solver, stage, chunks)
            if largest <= bound:
                break
            chunks = min(n_configs, max(chunks + 1, math.ceil(chunks * largest / bound)))
        return chunks

    def cost(self, experiment, solver, stage="grid"):
        """The estimated :class:`Cost` of one solver's sweep in one stage."""
        chunks = self.chunks(experiment, solver, stage)
        passes = self.config_passes(experiment, solver, stage)
        return Cost(
            job=self._largest_chunk(experiment, solver, stage, chunks),
            sweep=self._hours(experiment, solver, stage, passes),
            chunks=chunks,
        )

    def cost_summary(self):
        """The estimate the workflow logs before any solver starts: core-hours
        of every solve job together and of the largest one."""
        costs = {
            (name, solver, stage): self.cost(name, solver, stage)
            for name in self.experiments
            for stage in self.stages(name)
            for solver in sorted(self.experiment(name)["solvers"])
        }
        total = sum(c.sweep for c in costs.values())
        (name, solver, stage), top = max(costs.items(), key=lambda kv: kv[1].job)
        bound = self.config.get("chunk_core_hours")
        sizing = f"chunk_core_hours: {bound}" if bound else "chunks as configured"
        fresh = sum(self.fresh_hours(name) for name in self.experiments)
        return (
            f"dpcd: estimated solve cost {total:.3g} core-hours in "
            f"{len(self.jobs())} solve jobs ({sizing}); largest job "
            f"{top.job:.3g} core-hours ({name}/{solver}, {stage}, "
            f"{top.chunks} chunks); from measured kernel costs per step "
            f"(dpcd.plan.STEP_COST_NS; the staged confirm as search_keep per "
            f"epsilon and passes, the refine at its most)"
            + (f"; and {fresh:.3g} core-hours of fresh-seed re-runs in the "
               f"aggregate jobs (report.fresh_seeds: {self.fresh_seeds})" if fresh else "")
        )

    def fresh_hours(self, experiment):
        """Core-hours of an experiment's fresh-seed re-runs (its aggregate
        job): each solver's selected configuration per (epsilon, passes) on
        ``report.fresh_seeds`` seeds; none under ``search: private``."""
        if not self.fresh_seeds or self.search(experiment) == "private":
            return 0.0
        return sum(self._hours(experiment, solver, "fresh",
                               self.config_passes(experiment, solver, "fresh"))
                   for solver in self.experiment(experiment)["solvers"])

    # -- jobs and outputs --------------------------------------------------
    def jobs(self, experiment=None, stage=None):
        """The solve jobs (of one experiment or of all; of one stage or of
        all), in a fixed order. ``stage="final"``: each experiment's last."""
        names = self.experiments if experiment is None else [experiment]
        return [
            Job(name, solver, each, chunk)
            for name in names
            for each in self.stages(name)
            if stage is None
            or each == stage
            or (stage == "final" and each == self.final_stage(name))
            for solver in sorted(self.experiment(name)["solvers"])
            for chunk in range(self.chunks(name, solver, each))
        ]

    @staticmethod
    def job_path(job, suffix):
        """A solve job's output: ``results/runs/<experiment>/<solver>/chunk<k>``
        (grid: the paths of finished workdirs) or ``.../<stage>/chunk<k>``."""
        stage = "" if job.stage == "grid" else f"{job.stage}/"
        return f"results/runs/{job.experiment}/{job.solver}/{stage}chunk{job.chunk}{suffix}"

    def lambda_experiments(self):
        """The experiments of the lambda table: each base with its alpha_grid ones."""
        bases = {group["base"] for group in self.lambda_groups.values()}
        return sorted(bases | set(self.lambda_groups))

    def paper_figure_experiments(self):
        """The experiments report.figures draws from (curves, grids)."""
        figures = self.config["report"].get("figures") or {}
        names = sorted({e for spec in figures.values() for e in spec["experiments"]})
        for name in names:
            self.experiment(name)
        return names

    def final_outputs(self):
        """Tables and figures of every experiment, and the summary across them."""
        outputs = ["results/summary.csv", "results/summary.md"] + self.private_compare_outputs()
        figures = self.config["report"].get("figures") or {}
        if figures:
            outputs += ["results/paper/report.md"]
            outputs += [f"results/paper/{name}.png" for name in sorted(figures)]
        for name in self.experiments:
            outputs += [
                f"results/tables/{name}.csv",
                f"results/tables/{name}.md",
                f"results/figures/{name}_rel_error.png",
                f"results/figures/{name}_rel_error_time.png",
                f"results/figures/{name}_solution.png",
            ]
            if self.fresh_seeds:
                outputs += [
                    f"results/tables/fresh/{name}.csv",
                    f"results/tables/fresh/{name}.md",
                    f"results/figures/{name}_rel_error_fresh.png",
                ]
        if self.lambda_groups:
            outputs += [
                "results/tables/lambda/sensitivity.csv",
                "results/figures/lambda_sensitivity.png",
            ]
        return outputs
