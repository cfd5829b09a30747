"""Fresh-seed re-runs (``report.fresh_seeds``): a solve stage after the
aggregation. Its jobs re-run each solver's selected configuration per
(epsilon, passes) cell, read from the experiment's table, on new seeds (a new
release each, :func:`dpcd.streams.fresh_seeds`); the ``fresh`` rule then puts
both numbers side by side. Chunked like any solve stage, so the re-runs run
in parallel under ``--cores`` and on a cluster.
"""

from collections import namedtuple

#: One solve job (:class:`dpcd.plan.Plan`'s jobs): ``stage`` is one of its
#: experiment's search's stages, or the fresh stage.
Job = namedtuple("Job", "experiment solver stage chunk")

#: The stage's name: its jobs write under ``results/runs/<experiment>/<solver>/fresh/``.
STAGE = "fresh"


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
        """The experiment's ``chunks``, never more than its cells (a cell's
        seeds share one job, as they share one seed set)."""
        return min(self.exp["chunks"], n_configs), True

    def spec(self, solver, stage):
        """The fresh seeds and the table: the rest of a fresh spec is the
        experiment's grid spec (no ``stage`` key: fresh MLflow runs are
        tagged by ``seed_set``, as before the stage had jobs)."""
        return {"seeds": self.plan.fresh_seeds, "seed_set": STAGE,
                "selection": selection_table(self.name)}

    def folder(self, stage):
        return f"{STAGE}/"

    def selection_input(self, stage):
        return selection_table(self.name)


class FreshStage:
    """The fresh stage's methods of :class:`dpcd.plan.Plan` (which gives
    ``config``, ``freshes``, :meth:`experiment`, :meth:`chunks` and :meth:`job_path`)."""

    @property
    def fresh_seeds(self):
        """``report.fresh_seeds``: 0 runs no fresh stage."""
        return self.config["report"]["fresh_seeds"]

    def fresh_spec(self, experiment):
        """What the fresh rule reads: the selection rule (its figure's curves)
        and the number of fresh seeds (its tables' header)."""
        exp = self.experiment(experiment)
        return {"select_by": exp["select_by"], "fresh_seeds": self.fresh_seeds}

    def fresh_jobs(self, experiment=None):
        """The fresh stage's solve jobs (of one experiment or of all; none
        when report.fresh_seeds is 0 or the search releases its own selection)."""
        names = self.experiments if experiment is None else [experiment]
        return [Job(name, solver, STAGE, chunk)
                for name in names if name in self.freshes
                for solver in sorted(self.experiment(name)["solvers"])
                for chunk in range(self.chunks(name, solver, STAGE))]

    def fresh_paths(self, suffix, experiment):
        """The outputs ``suffix`` of the experiment's fresh solve jobs."""
        return [self.job_path(job, suffix) for job in self.fresh_jobs(experiment)]

    def fresh_tables(self, names=None):
        """Experiments' fresh tables (all by default), none without fresh seeds."""
        names = self.experiments if names is None else names
        return [f"results/tables/fresh/{name}.csv" for name in names if name in self.freshes]

    def fresh_outputs(self):
        """The fresh rule's outputs (wildcard ``{experiment}``), none when
        report.fresh_seeds is 0; ``fresh_figure`` goes in the report."""
        if not self.fresh_seeds:
            return {}
        return {
            "mlflow": "results/mlflow/fresh/{experiment}.json",
            "fresh_runs": "results/fresh/{experiment}.parquet",
            "fresh_csv": "results/tables/fresh/{experiment}.csv",
            "fresh_md": "results/tables/fresh/{experiment}.md",
            "fresh_figure": "results/figures/{experiment}_rel_error_fresh.png",
        }

