"""Fresh-seed re-runs (``report.fresh_seeds``): a solve stage after the
aggregation. Its jobs re-run each solver's selected configuration per
(epsilon, passes) cell, read from the experiment's table, on new seeds (a new
release each, :func:`dpcd.streams.fresh_seeds`). A job runs a chunk of the
cells of all the experiment's solvers (the ``fresh_solve`` rule): a cell's
re-runs are often tenths of a second, a job's start-up about two. One ``fresh`` job then puts
both numbers side by side for every experiment (one job: each would pay a
second of imports for less work), and one ``fresh_report`` job draws their
curves and logs it all to MLflow, beside the jobs that read the tables (its
seconds of MLflow and seaborn imports and drawing stay off their path).
Chunked like one solver's sweep (the experiment's ``chunks``, or enough for
``chunk_core_hours``), so the re-runs run in parallel under ``--cores`` and on
a cluster, but never into jobs shorter than their start-up warrants
(:attr:`Fresh.least_job_hours`).
"""

from collections import namedtuple

#: One solve job of a search stage (:meth:`dpcd.plan.Plan.jobs`).
Job = namedtuple("Job", "experiment solver stage chunk")
#: One job of the fresh stage: a chunk of the cells of all its experiment's solvers.
FreshJob = namedtuple("FreshJob", "experiment chunk")

#: The stage's name (its per-solver specs': the plan's costs and specs).
STAGE = "fresh"
#: Where a fresh job writes (its ``.parquet``, ``.mlflow.jsonl.gz`` and ``.timing.json``).
JOB_PATH = "results/fresh/{experiment}/chunk{chunk}"


#: The fresh rule's outputs per experiment: what the summary reads.
FRESH_OUTPUTS = {
    "fresh_runs": "results/fresh/{experiment}.parquet",
    "fresh_csv": "results/tables/fresh/{experiment}.csv",
    "fresh_md": "results/tables/fresh/{experiment}.md",
}

#: The fresh_report rule's outputs per experiment: the curves, and the parent
#: run the fresh runs, tables and curves were logged to.
REPORT_OUTPUTS = {
    "mlflow": "results/mlflow/fresh/{experiment}.json",
    "fresh_figure": "results/figures/{experiment}_rel_error_fresh.png",
}


def processed_data(exp):
    """The processed dataset file of the experiment ``exp`` (its config)."""
    return f"results/data/processed/{exp['dataset']}/{exp['variant']}.npz"


def selection_table(experiment):
    """The table the fresh jobs read their configurations from (the aggregation's)."""
    return f"results/tables/{experiment}.csv"


class Fresh:
    """The fresh stage of one experiment: what :class:`.search.Search` says of
    its stages, for the one stage every re-runnable search shares.

    Parameters
    ----------
    plan : dpcd.plan.Plan
    name : str
        The experiment's name.
    """

    #: Fresh seeds are drawn per cell, epsilon included: every cell runs.
    shares_epsilons = False
    #: A job starts in about 2 s (interpreter, imports, the kernels' cache) and
    #: a cell's re-runs are often a fraction of that: a fresh job carries at
    #: least 30 s of estimated work, so start-up stays a small share, and the
    #: other solvers' and experiments' jobs keep the cores busy meanwhile.
    least_job_hours = 30 / 3600

    def __init__(self, plan, name):
        self.plan = plan
        self.name = name
        self.exp = plan.config["experiments"][name]

    def configurations(self, solver, stage, full):
        """One per cell: the configuration the table selected."""
        return 1

    def passes(self, stage, passes):
        return passes

    def seeds(self, stage):
        return self.plan.fresh_seeds

    def chunks(self, stage, n_configs):
        """One per solver: the stage is chunked across the experiment's
        solvers (:meth:`dpcd.plan.cost.Costs.fresh_chunks`)."""
        return 1, False

    def spec(self, solver, stage):
        """The fresh seeds and the table: the rest of a fresh spec is the
        experiment's grid spec (no ``stage`` key: fresh MLflow runs are
        tagged by ``seed_set``, as before the stage had jobs)."""
        return {"seeds": self.plan.fresh_seeds, "seed_set": STAGE,
                "selection": selection_table(self.name)}

    def selection_input(self, stage):
        return selection_table(self.name)


class FreshStage:
    """The fresh stage's methods of :class:`dpcd.plan.Plan` (which gives
    ``config``, ``freshes``, :meth:`experiment`, :meth:`solve_spec` and
    :meth:`fresh_chunks`)."""

    @property
    def fresh_seeds(self):
        """``report.fresh_seeds``: 0 runs no fresh stage."""
        return self.config["report"]["fresh_seeds"]

    def fresh_experiments(self):
        """The experiments with a fresh stage, sorted."""
        return sorted(self.freshes)

    def fresh_spec(self):
        """What the fresh rules read: the number of fresh seeds (their tables'
        header) and each experiment's selection rule (its figure's curves)."""
        return {"fresh_seeds": self.fresh_seeds,
                "select_by": {name: self.experiment(name)["select_by"]
                              for name in self.fresh_experiments()}}

    def fresh_jobs(self, experiment=None):
        """The fresh stage's jobs (of one experiment or of all; none when
        report.fresh_seeds is 0 or the search releases its own selection)."""
        names = self.experiments if experiment is None else [experiment]
        return [FreshJob(name, chunk) for name in names if name in self.freshes
                for chunk in range(self.fresh_chunks(name))]

    def fresh_paths(self, suffix, experiment=None):
        """The outputs ``suffix`` of the fresh jobs (of one experiment or of all)."""
        return [JOB_PATH.format(**job._asdict()) + suffix for job in self.fresh_jobs(experiment)]

    def fresh_solve_spec(self, experiment):
        """The fresh_solve rule's params: every solver's fresh spec (its grid
        spec with the fresh seeds and the table, :meth:`Fresh.spec`) and the
        stage's chunks, which cut the cells of all of them together."""
        solvers = []
        for solver in sorted(self.experiment(experiment)["solvers"]):
            spec = self.solve_spec(experiment, solver, STAGE)
            del spec["chunks"]  # the stage's, below
            solvers.append(spec)
        return {"experiment": experiment, "problem": self.experiment(experiment)["problem"],
                "seed_set": STAGE, "selection": selection_table(experiment),
                "chunks": self.fresh_chunks(experiment), "solvers": solvers}

    def fresh_tables(self, names=None):
        """Experiments' fresh tables (all by default), none without fresh seeds."""
        names = self.experiments if names is None else names
        return [f"results/tables/fresh/{name}.csv" for name in names if name in self.freshes]

    def _per_experiment(self, patterns):
        """``{key: [pattern per experiment]}`` in :meth:`fresh_experiments`'
        order; empty when report.fresh_seeds is 0."""
        names = self.fresh_experiments()
        return {key: [pattern.format(experiment=name) for name in names]
                for key, pattern in patterns.items()} if names else {}

    def fresh_outputs(self):
        """The fresh rule's outputs: each experiment's fresh runs and tables."""
        return self._per_experiment(FRESH_OUTPUTS)

    def fresh_inputs(self):
        """What the fresh rule reads: the fresh solve jobs' tables and each
        experiment's table (its selection)."""
        return {"runs": self.fresh_paths(".parquet"),
                "selection": [selection_table(name) for name in self.fresh_experiments()]}

    def fresh_report_outputs(self):
        """The fresh_report rule's outputs (``fresh_figure`` goes in the report)."""
        return self._per_experiment(REPORT_OUTPUTS)

    def fresh_report_inputs(self):
        """What the fresh_report rule reads: the fresh rule's outputs, the fresh
        solve jobs' MLflow runs files, and each experiment's table (its chosen
        curves), aggregate JSON (its parent run) and processed dataset (the
        fresh runs' MLflow input: name, digest, source)."""
        names = self.fresh_experiments()
        return {**self.fresh_outputs(),
                "mlflow_runs": self.fresh_paths(".mlflow.jsonl.gz"),
                "selection": [selection_table(name) for name in names],
                "mlflow": [f"results/mlflow/{name}.json" for name in names],
                "data": [processed_data(self.experiment(name)) for name in names]}
