"""The cost model: core-hours of each solve job from measured kernel costs,
the chunks that keep a job within ``chunk_core_hours``, priorities, and the
estimate logged before any solver starts.

A solver's measured cost of one pass over one data entry (a record x a
feature, or a non-zero of a sparse dataset) comes from its algorithm spec
(``step_cost_ns``) through the plan's solver facts.
"""

import math
from collections import namedtuple

from .config import solver_entry
from .fresh import STAGE as FRESH
from .lattice import grid_size

#: A solve job's estimated cost: core-hours of the job (``job``) and of its
#: solver's whole sweep in that stage (``sweep``), and its number of chunks.
Cost = namedtuple("Cost", "job sweep chunks")

# ns per entry-pass of a kernel without a measured cost when the plan has no
# solver facts at all (dpcd not importable where Snakemake runs): the slowest
# built-in kernel's (bench/bench_cost_model.py), so chunk_core_hours still bounds
# every job, on the high side.
UNMEASURED_NS = {"dense": 9.4, "sparse": 176}


class Costs:
    """The cost methods of :class:`dpcd.plan.Plan` (which gives ``config``,
    ``registry``, ``solver_facts``, ``freshes``, ``_priorities``, :meth:`experiment`,
    :meth:`owner`, :meth:`jobs` and :meth:`fresh_jobs`)."""

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
        """log10 of the experiment's estimated solve work in ns (:meth:`work_hours`):
        on few cores the longest chains start first and the short ones fill
        the end instead of the long ones running alone after the rest. Below
        the warm-up's priority (it gates every solve job)."""
        if experiment not in self._priorities:  # Snakemake asks once per job
            self._priorities[experiment] = math.log10(
                max(self.work_hours(experiment) * 3.6e12, 1.0))
        return self._priorities[experiment]

    def work_hours(self, experiment):
        """Estimated core-hours of an experiment's solve jobs: every stage's,
        and its fresh-seed re-runs'."""
        solvers = sorted(self.experiment(experiment)["solvers"])
        return (sum(self.cost(experiment, solver, stage).sweep
                    for stage in self.stages(experiment) for solver in solvers)
                + self.fresh_hours(experiment))

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
        density = "sparse" if self.dataset_entries(exp["dataset"])[1] else "dense"
        measured = {name: fact["step_cost_ns"][density]
                    for name, fact in (self.solver_facts or {}).items()
                    if density in (fact.get("step_cost_ns") or {})}
        slowest = max(measured.values(), default=UNMEASURED_NS[density])
        return measured.get(solver_entry(exp, solver)[0], slowest)

    def private(self, experiment, solver):
        """Whether a solver entry's algorithm is private (without solver facts:
        priced as private, on the high side)."""
        name = solver_entry(self.experiment(experiment), solver)[0]
        return (self.solver_facts or {}).get(name, {}).get("private", True)

    def config_passes(self, experiment, solver, stage="grid"):
        """The passes of each configuration the stage runs, in the sweep's
        order (epsilon, passes, then the grid's axes: dpcd.sweep.grid), the
        staged confirm's as ``search_keep`` per (epsilon, passes). A
        non-private solver runs at the first epsilon only (its runs are the
        same at every epsilon: dpcd.streams.stream_identity), except on fresh
        seeds, which are drawn per cell."""
        exp, owner = self.experiment(experiment), self.owner(experiment, stage)
        _, grid, passes = solver_entry(exp, solver)
        rest = owner.configurations(solver, stage, grid_size(grid))
        eps = exp["privacy"]["epsilon"]
        n_eps = len(eps) if isinstance(eps, (list, tuple)) else 1
        if owner.shares_epsilons and not self.private(experiment, solver):
            n_eps = 1
        return [k for _ in range(n_eps) for k in owner.passes(stage, passes) for _ in range(rest)]

    def least_configurations(self, experiment, solver, stage):
        """At least how many configurations the stage runs of a solver entry:
        :meth:`config_passes`' count where it is known before anything runs,
        fewer where a select's choice decides it
        (:meth:`.search.Search.least_configurations`)."""
        owner = self.owner(experiment, stage)
        full = grid_size(solver_entry(self.experiment(experiment), solver)[1])
        per_group = owner.configurations(solver, stage, full)
        if not per_group:
            return 0
        groups = len(self.config_passes(experiment, solver, stage)) // per_group
        return groups * owner.least_configurations(solver, stage, full)

    def _hours(self, experiment, solver, stage, passes, seeds=None):
        """Core-hours of configurations with these passes, on the stage's seeds."""
        exp = self.experiment(experiment)
        if seeds is None:
            seeds = self.owner(experiment, stage).seeds(stage)
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
        """Solve jobs of one solver's sweep: the experiment's ``chunks`` (fewer
        in a stage with a ``least_job_hours``, so that each job's estimate
        reaches it), or with ``chunk_core_hours`` set, enough (round-robin, as
        dpcd.sweep.run cuts them) that no job's estimate exceeds it. Never more
        chunks than configurations the stage is sure to run (a configuration's
        seeds run in one job, so a further chunk would start a process to run
        nothing; none in a stage without configurations, such as a refine
        without a geomspace axis): in a stage that runs what a select kept,
        the fewest it can keep (:meth:`least_configurations`), unless
        ``chunk_core_hours`` asks for more."""
        passes = self.config_passes(experiment, solver, stage)
        n_configs = len(passes)
        owner = self.owner(experiment, stage)
        chunks, sized = owner.chunks(stage, n_configs)
        if sized:  # chunks of configurations, not of a private search's seeds
            chunks = min(chunks, n_configs, max(1, self.least_configurations(
                experiment, solver, stage)))
        if owner.least_job_hours:
            work = self._hours(experiment, solver, stage, passes)
            chunks = max(1, min(chunks, math.floor(work / owner.least_job_hours)))
        bound = self.config.get("chunk_core_hours")
        if not sized or not bound:
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

    def _fresh_cells_hours(self, experiment):
        """Core-hours of each cell of an experiment's fresh stage, in the
        order its jobs cut them (solvers sorted, then the grid's order)."""
        return [self._hours(experiment, solver, FRESH, [k])
                for solver in sorted(self.experiment(experiment)["solvers"])
                for k in self.config_passes(experiment, solver, FRESH)]

    def fresh_hours(self, experiment):
        """Core-hours of an experiment's fresh-seed re-runs (its fresh solve
        jobs): each solver's selected configuration per (epsilon, passes) on
        ``report.fresh_seeds`` seeds; none for a search that releases its own
        selection (``search: private``)."""
        if experiment not in self.freshes:
            return 0.0
        return sum(self._fresh_cells_hours(experiment))

    def fresh_chunks(self, experiment):
        """Jobs of an experiment's fresh stage, which cuts the cells of all
        its solvers together (round-robin, as dpcd.sweep.fresh does): its
        ``chunks``, never more than its cells, merged until each job's
        estimate reaches the stage's ``least_job_hours``; with
        ``chunk_core_hours`` set, enough that no job's estimate exceeds it."""
        hours = self._fresh_cells_hours(experiment)
        least = self.freshes[experiment].least_job_hours
        chunks = max(1, min(self.experiment(experiment)["chunks"], len(hours),
                            math.floor(sum(hours) / least)))
        bound = self.config.get("chunk_core_hours")
        while bound and chunks < len(hours):
            largest = max(sum(hours[k::chunks]) for k in range(chunks))
            if largest <= bound:
                break
            chunks = min(len(hours), max(chunks + 1, math.ceil(chunks * largest / bound)))
        return chunks

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
        n_fresh = len(self.fresh_jobs())
        measured = ("measured kernel costs per step (the algorithm specs' step_cost_ns"
                    if self.solver_facts is not None else
                    "the slowest measured kernel cost for every solver (dpcd not "
                    "importable here")
        return (
            f"dpcd: estimated solve cost {total:.3g} core-hours in "
            f"{len(self.jobs())} solve jobs ({sizing}); largest job "
            f"{top.job:.3g} core-hours ({name}/{solver}, {stage}, "
            f"{top.chunks} chunks); from {measured}; the staged confirm as search_keep "
            f"per epsilon and passes, the refine at its most)"
            + (f"; and {fresh:.3g} core-hours of fresh-seed re-runs in {n_fresh} "
               f"fresh_solve job{'' if n_fresh == 1 else 's'} (report.fresh_seeds: "
               f"{self.fresh_seeds})" if fresh else "")
        )
