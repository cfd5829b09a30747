"""``search: staged``: screen every configuration (or the coarse lattice of
``search_stride``) on the first seed, keep the best few per cell, and confirm
them on every seed.

Its stages, in order: ``screen`` (first seed; with ``search_stride`` k > 1,
every k-th value of each geomspace axis: :mod:`.lattice`), ``refine`` (k > 1
only: the full-resolution neighbours of what the screen kept, first seed),
``promote`` (``search_fidelity`` < 1 only: whole runs of the best prefixes,
first seed) then ``confirm`` (what the last select kept, every seed). A select
job follows each stage but the last (``results/selection/<experiment>/<stage>.csv``).
The confirm runs the seeds after the first: the first seed's whole runs of
its configurations are the last select's stages' (:meth:`Staged.reused_stages`),
which its jobs read and write beside their own (one MLflow run of each).
"""

from . import lattice
from .config import solver_entry
from .lattice import CONFIRM, STAGES  # its stages, in order
from .search import Search

# The stages that run the first seed only (the confirm runs every seed).
ONE_SEED_STAGES = ("screen", "refine", "promote")
# The stages that run a prefix of each run with search_fidelity < 1.
PREFIX_STAGES = ("screen", "refine")
# How many configurations the select before a stage keeps.
KEEP = {"confirm": "search_keep", "refine": "search_refine", "promote": "search_promote"}


def selection_path(experiment, stage):
    """The select rule's output after ``stage``."""
    return f"results/selection/{experiment}/{stage}.csv"


class Staged(Search):
    """The staged search of one experiment."""

    mode = "staged"
    solve_stages = STAGES

    @property
    def fidelity(self):
        """``search_fidelity``: the fraction of each run's passes the screen
        (and refine) runs."""
        return self.exp.get("search_fidelity", 1)

    @property
    def stride(self):
        """``search_stride``: the screen's stride along the geomspace axes."""
        return self.exp.get("search_stride", 1)

    def _grids(self):
        return [solver_entry(self.exp, solver)[1] for solver in self.exp["solvers"]]

    @property
    def coarsened(self):
        """Whether the screen leaves any configuration out (some solver's
        geomspace axis has an :func:`~.lattice.axis_stride` > 1)."""
        return self.stride > 1 and any(
            lattice.axis_stride(axis, self.stride) > 1
            for grid in self._grids() for axis in lattice.geomspace_axes(grid))

    def stages(self):
        return (("screen",) + ("refine",) * self.coarsened
                + ("promote",) * (self.fidelity < 1) + ("confirm",))

    def configurations(self, solver, stage, full):
        if stage in ("confirm", "promote"):
            return min(full, self.exp[KEEP[stage]])
        if stage not in ONE_SEED_STAGES or self.stride == 1:
            return full
        grid = solver_entry(self.exp, solver)[1]
        if stage == "screen":
            return lattice.coarse_size(grid, self.stride)
        return lattice.refine_bound(grid, self.stride, self.exp["search_refine"])

    def least_configurations(self, solver, stage, full):
        """A select keeps at least its best of each (epsilon, passes), so the
        promote and the confirm run at least one configuration there, and
        the refine at least the fewest a kept lattice point's box holds
        (:func:`~.lattice.refine_least`): how many each selects is known only
        when it has run."""
        if stage in KEEP:
            least = (lattice.refine_least(solver_entry(self.exp, solver)[1], self.stride)
                     if stage == "refine" else 1)
            return min(least, self.configurations(solver, stage, full))
        return self.configurations(solver, stage, full)

    def passes(self, stage, passes):
        if stage in PREFIX_STAGES:
            return [lattice.prefix_passes(k, self.fidelity) for k in passes]
        return passes

    def seeds(self, stage):
        if stage in ONE_SEED_STAGES:
            return 1
        return self.exp["seeds"] - (stage == CONFIRM)  # the first seed ran before

    def reused_stages(self, stage):
        """The stages whose first-seed runs the confirm reuses: those its
        select ranked (whole runs: the screen and refine, or the promote)."""
        if stage != CONFIRM:
            return ()
        return self.select_inputs(self.stages()[-2])

    def spec(self, solver, stage):
        """One seed for the screen, refine and promote; the stride where it
        coarsens and the fidelity below 1 (a whole screen's spec is
        unchanged); the selection file the later stages read."""
        spec = {}
        if stage == "screen":
            spec["stage"] = stage
        if stage in ONE_SEED_STAGES:
            spec["seeds"] = 1
        if stage in PREFIX_STAGES and self.coarsened:
            spec["stride"] = self.stride
        if stage in PREFIX_STAGES and self.fidelity < 1:
            spec["fidelity"] = self.fidelity
        if stage in KEEP:
            spec.update(stage=stage, selection=self.selection_input(stage))
        if stage == CONFIRM:  # the seeds after the first; the first's runs: reused_stages'
            spec.update(seeds=self.seeds(stage), first_seed=1,
                        reused_runs=self.plan.reused_runs(self.name, solver, stage))
        return spec

    def selects(self):
        return self.stages()[:-1]

    def selection_input(self, stage):
        if stage not in KEEP:
            return None
        stages = self.stages()
        return selection_path(self.name, stages[stages.index(stage) - 1])

    def select_spec(self, after):
        """What the select after ``after`` reads: the selection rule and how
        many it keeps; ``prefix`` when it ranks prefixes (``search_fidelity``)."""
        stages = self.stages()
        following = stages[stages.index(after) + 1]
        spec = {"select_by": self.exp["select_by"], "keep": self.exp[KEEP[following]]}
        if after in PREFIX_STAGES and self.fidelity < 1:
            spec["prefix"] = True  # rank each run at its last pass, not at passes
        return spec

    def select_inputs(self, after):
        """The stages whose tables the select after ``after`` ranks together:
        those since the last change of run length (the screen and the refine
        together; the promote's whole runs alone)."""
        if after == "promote":
            return ("promote",)
        stages = self.stages()
        return stages[: stages.index(after) + 1]

    def check(self):
        """Integer counts >= 1, seeds >= 2, a fidelity in (0, 1], a promote
        that feeds the confirm, a stride with an axis to coarsen."""
        where, exp = f"config: experiments.{self.name}", self.exp
        if exp["seeds"] < 2:
            raise ValueError(
                f"{where}.seeds: search staged screens on one seed and confirms on all "
                f"seeds, so it needs seeds >= 2 (got {exp['seeds']})")
        for key in ("search_keep", "search_stride", "search_refine", "search_promote"):
            value = exp.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{where}.{key}: must be an integer >= 1, got {value!r}")
        fidelity = self.fidelity
        if isinstance(fidelity, bool) or not isinstance(fidelity, (int, float)) \
                or not 0 < fidelity <= 1:
            raise ValueError(
                f"{where}.search_fidelity: the fraction of each run's passes the screen "
                f"runs, in (0, 1], got {fidelity!r}")
        promote, keep = exp.get("search_promote", 1), exp.get("search_keep", 1)
        if fidelity < 1 and promote < keep:
            raise ValueError(
                f"{where}.search_promote: {promote} configurations promoted to whole runs "
                f"cannot give search_keep = {keep} to the confirm; set search_promote >= "
                f"search_keep")
        if self.stride > 1 and not any(int(axis["geomspace"][2]) > 2 for grid in self._grids()
                                       for axis in lattice.geomspace_axes(grid)):
            raise ValueError(
                f"{where}.search_stride: {self.stride} coarsens nothing (no solver of the "
                f"experiment has a geomspace axis of more than 2 values); set it to 1")

    @classmethod
    def summary(cls, plan, names):
        """Per stage, core-hours and configurations (of the grid's, on how
        many seeds), and the exhaustive grid's core-hours for the same
        experiments."""
        if not names:
            return ""
        searches = [plan.searches[name] for name in names]
        parts, staged = [], 0.0
        for stage in ("screen", "refine", "promote", "confirm"):
            hours = configs = 0
            for search in searches:
                if stage not in search.stages():
                    continue
                for solver in sorted(search.exp["solvers"]):
                    hours += plan.cost(search.name, solver, stage).sweep
                    configs += len(plan.config_passes(search.name, solver, stage))
            if configs:
                staged += hours
                seeds = "1 seed" if stage in ONE_SEED_STAGES else "the other seeds"
                if stage in PREFIX_STAGES and any(s.fidelity < 1 for s in searches):
                    seeds += ", a prefix of each run"
                bound = "at most " if stage == "refine" else ""
                parts.append(f"{stage} {hours:.3g} ({bound}{configs} configurations, {seeds})")
        pairs = [(s.name, solver) for s in searches for solver in s.exp["solvers"]]
        grid = sum(plan.cost(name, solver, "grid").sweep for name, solver in pairs)
        full = sum(len(plan.config_passes(name, solver, "grid")) for name, solver in pairs)
        return (f"dpcd: search staged ({len(names)} experiments): {staged:.3g} core-hours: "
                + ", ".join(parts)
                + f"; their exhaustive grid: {grid:.3g} core-hours ({full} configurations "
                "x every seed)")
