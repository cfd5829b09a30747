"""The plan of one configuration (:class:`Plan`): the solve jobs, their
specs (the rules' params) and paths, and the workflow's outputs.

The solve specs are the solve rule's params: Snakemake reruns a job when its
params string changes, so these strings are a contract with every finished
workdir.
"""

import hashlib

from .checks import check_plan
from .config import expand_lambda_grids, render, solver_entry
from .cost import Costs
from .fresh import STAGE as FRESH, Fresh, FreshStage, Job
from .grid import Grid
from .private import Private, private_compare_inputs
from .staged import Staged

#: The search modes, by their config value (``experiments.<name>.search``).
SEARCHES = {search.mode: search for search in (Grid, Staged, Private)}


def stage_wildcard():
    """The pattern of the solve rule's ``{stage}``: the folder of a mode's
    solve stage, or nothing (``search: grid``, the paths of finished workdirs)."""
    folders = [f"{stage}/" for search in SEARCHES.values() for stage in search.solve_stages]
    return f"({'|'.join(folders)})?"


def after_wildcard():
    """The pattern of the select rule's ``{after}``: a stage a select follows."""
    return "|".join(stage for search in SEARCHES.values() for stage in search.solve_stages[:-1])

# Warm-up jobs gate every solver job: they go first.
WARMUP_PRIORITY = 100



class Plan(Costs, FreshStage):
    """The workflow's plan for one configuration.

    Parameters
    ----------
    config : dict
        The validated configuration (schema defaults filled in). Its
        experiments are replaced by their ``alpha_grid`` expansion.
    registry : dict, optional
        ``dpcd.data.registry.registry()``, when importable: checks dataset
        sources and gives dataset shapes for the cost model (chunks, priorities).
    check_solvers : callable, optional
        ``check_solvers(config)``, when dpcd is importable: every solver entry
        checked against its algorithm's spec (``dpcd.algorithms.check_solvers``:
        name, grid, (loss, penalty), neighbouring relation).
    solver_facts : dict, optional
        Solver name -> what the planner reads of its algorithm spec
        (``dpcd.algorithms.plan_facts()``, when importable): ``step_cost_ns``
        (``{"dense": ns, "sparse": ns}``, either optional), ``private_candidate``
        and ``private_refusal``. Without it the cost model prices every solver
        at the slowest built-in kernel's cost and private-search candidacy is
        left to the jobs.
    """

    def __init__(self, config, registry=None, check_solvers=None, solver_facts=None):
        self.config = config
        config["experiments"], self.lambda_groups = expand_lambda_grids(
            config["experiments"]
        )
        if config.get("search"):  # one setting for the whole run (profiles, --config)
            for exp in config["experiments"].values():
                exp["search"] = config["search"]
        self.registry = registry
        self.solver_facts = solver_facts
        check_plan(self, SEARCHES, check_solvers)
        self.searches = {name: SEARCHES[exp.get("search", "grid")](self, name)
                         for name, exp in config["experiments"].items()}
        # the fresh stage of every experiment whose search re-runs its selection
        self.freshes = {name: Fresh(self, name) for name, search in self.searches.items()
                        if search.fresh and self.fresh_seeds}
        self._priorities = {}  # per experiment (Costs.priority)
        self._calibrations = {}  # calibrate job's key: its spec (calibration_path)

    # -- experiments -------------------------------------------------------
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

    @property
    def experiments(self):
        """Experiment names, sorted."""
        return sorted(self.config["experiments"])

    def search(self, experiment):
        """The experiment's search mode (``grid``, ``staged``, ``private``)."""
        return self.searches[experiment].mode

    def experiments_of(self, mode):
        """The experiments searched by ``mode``, sorted."""
        return [name for name in self.experiments if self.search(name) == mode]

    def stages(self, experiment):
        """The experiment's solve stages, in order."""
        return self.searches[experiment].stages()

    def owner(self, experiment, stage):
        """What answers for ``stage`` of the experiment (configurations,
        seeds, chunks, spec, folder): its search, or the fresh stage."""
        if stage == FRESH:
            return self.freshes[experiment]
        return self.searches[experiment]

    def folder_stage(self, experiment, folder):
        """The solve stage whose jobs write in ``folder`` (the solve rule's
        ``{stage}``: :meth:`.search.Search.folder`)."""
        search = self.searches[experiment]
        return next(stage for stage in search.stages() if search.folder(stage) == folder)

    def final_stage(self, experiment):
        """The stage whose runs make the experiment's tables."""
        return self.stages(experiment)[-1]

    # -- specs (the rules' params) ----------------------------------------
    def solve_spec(self, experiment, solver, stage="grid"):
        """Everything one solver's sweep reads in one stage, and nothing of
        the other solvers (what the stage adds: :meth:`.search.Search.spec`)."""
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
        spec.update(self.owner(experiment, stage).spec(solver, stage))
        return spec

    def calibration_path(self, experiment, solver):
        """The calibrate job's output that the solve jobs of solver entry
        ``solver`` read, or None: a non-private solver (by its facts), or a
        search whose jobs calibrate their own budgets
        (:attr:`.search.Search.calibrated`). It is named by what its events
        depend on (:meth:`calibrate_spec`), so the entries of every
        experiment on the same data that calibrate alike share one job, an
        edit that changes the events gives a new file (and job), and no
        edit rewrites a file that other solve jobs read."""
        exp = self.experiment(experiment)
        facts = (self.solver_facts or {}).get(solver_entry(exp, solver)[0])
        if not self.searches[experiment].calibrated or (facts and not facts["private"]):
            return None
        spec = self._calibrate_spec(experiment, solver)
        key = hashlib.sha256(render(spec).encode()).hexdigest()[:16]
        self._calibrations[key] = spec
        return (f"results/calibrated/{exp['dataset']}/{exp['variant']}/"
                f"{exp['problem']['loss']}/{key}.json")

    def warmup_paths(self, experiment, solver=None):
        """The warm-up jobs' markers that a job of solver entry ``solver``
        waits for (of every entry of the experiment if None: a fresh job):
        one per kernel family of its solvers (their facts' ``family``; none
        for a solver with no kernels to warm). A marker is named by its family
        alone, so a config compiles only its solvers' families, and adding or
        removing an experiment changes no other job's inputs."""
        exp = self.experiment(experiment)
        families = set()
        for entry in [solver] if solver else exp["solvers"]:
            name = solver_entry(exp, entry)[0]
            facts = self.solver_facts[name] if self.solver_facts else {"family": name}
            families.add(facts["family"])
        return [f"results/.numba_cache/warmup_{family}.done"
                for family in sorted(families - {None})]

    def calibrate_spec(self, key):
        """What the calibrate job of output ``key`` reads (:meth:`calibration_path`)."""
        if key not in self._calibrations:  # a job of its own (a cluster's): plan them all
            for name in self.experiments:
                for solver in self.experiment(name)["solvers"]:
                    self.calibration_path(name, solver)
        return self._calibrations[key]

    def _calibrate_spec(self, experiment, solver):
        # keys of every stage's solve spec of the entry (so its solve jobs
        # rerun whenever it changes), and of those only what the events read:
        # the algorithm, its grid and passes, the privacy settings and the
        # penalty (not its strength: the noise multipliers do not read it)
        spec = self.solve_spec(experiment, solver, self.stages(experiment)[0])
        problem = spec["problem"]
        return {"solver": spec.get("adapter", spec["solver"]), "grid": spec["grid"],
                "passes": spec["passes"], "privacy": spec["privacy"],
                "penalty": {key: problem[key] for key in ("loss", "penalty", "l1_ratio")
                            if key in problem}}

    def selects(self, experiment):
        """The stages a select job follows (its output: the selection file)."""
        return self.searches[experiment].selects()

    def select_spec(self, experiment, after="screen"):
        """What the select rule after stage ``after`` reads."""
        return self.searches[experiment].select_spec(after)

    def select_inputs(self, experiment, after):
        """The stages whose tables the select after ``after`` ranks together."""
        return self.searches[experiment].select_inputs(after)

    def selection_input(self, experiment, stage):
        """The selection file a solve job of ``stage`` reads (None: none)."""
        return self.owner(experiment, stage).selection_input(stage)

    def reused_runs(self, experiment, solver, stage):
        """The tables of one solver's earlier stages whose first-seed runs a
        solve job of ``stage`` reuses (:meth:`.search.Search.reused_stages`)."""
        return [self.job_path(job, ".parquet")
                for reused in self.searches[experiment].reused_stages(stage)
                for job in self.jobs(experiment, reused) if job.solver == solver]

    def uses_private_smoothness(self, experiment, solver):
        """Whether the solver's jobs read the experiment's private smoothness
        estimate: its entry has a ``smoothness_fraction`` (the hyperparameter
        of every algorithm spec with ``smoothness="private"``, filled in by the
        schema's default), so that the job graph is planned without dpcd."""
        return "smoothness_fraction" in solver_entry(self.experiment(experiment), solver)[1]

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

    def search_summary(self):
        """What each search mode adds to the cost summary at planning
        (the staged search: per stage); empty when nothing."""
        return "\n".join(filter(None, (
            search.summary(self, self.experiments_of(mode)) for mode, search in SEARCHES.items())))

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

    def job_path(self, job, suffix):
        """A solve job's output: ``results/runs/<experiment>/<solver>/<stage
        folder>chunk<k><suffix>`` (:meth:`.search.Search.folder`)."""
        folder = self.owner(job.experiment, job.stage).folder(job.stage)
        return f"results/runs/{job.experiment}/{job.solver}/{folder}chunk{job.chunk}{suffix}"

    def job_paths(self, suffix, experiments=None, stage=None):
        """The outputs ``suffix`` of the solve jobs of ``experiments`` (all by
        default), of one stage or of all (:meth:`jobs`)."""
        names = self.experiments if experiments is None else experiments
        return [self.job_path(job, suffix) for name in names for job in self.jobs(name, stage)]

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
        """What private_compare reads (:func:`.private.private_compare_inputs`)."""
        return private_compare_inputs(self, self.private_baseline())

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
