"""``search: private``: per selection seed, a random number K of candidates
drawn from the grid, each a private run with a noisy score, the best released
under dp_accounting's repeat-and-select accounting (one stage, ``private``,
one solve job per solver entry and selection seed)."""

import math

from . import lattice
from .config import solver_entry
from .search import Search

# Its settings' defaults (the schema's, tested equal) and the distributions of
# K that dp_accounting's RepeatAndSelectDpEvent accounts.
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
# Why a solver without candidacy in its spec facts cannot be a candidate.
NOT_A_CANDIDATE = "it is not a private solver with an RDP account of its release"


def _number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float))


class Private(Search):
    """The private search of one experiment."""

    mode = "private"
    fresh = False  # it releases the selected model itself
    calibrated = False  # each candidate's budget is drawn in its own job

    @property
    def settings(self):
        """``search_private``, defaults filled in."""
        return {**PRIVATE_DEFAULTS, **(self.exp.get("search_private") or {})}

    def stages(self):
        return ("private",)

    def configurations(self, solver, stage, full):
        """K candidates on average, one search per selection seed."""
        settings = self.settings
        return math.ceil(settings["mean"]) * settings["selection_seeds"]

    def seeds(self, stage):
        return 1

    def chunks(self, stage, n_configs):
        """Chunk k runs the searches of selection seed k."""
        return self.settings["selection_seeds"], False

    def spec(self, solver, stage):
        settings = {**self.settings, "select_by": self.exp["select_by"]}
        if not settings["score_clip_from_data"]:  # only when set: finished jobs unchanged
            del settings["score_clip_from_data"]
        return {"stage": stage, "search_private": settings}

    def check(self):
        """Refuse a private search that cannot run, naming the setting."""
        where, exp = f"config: experiments.{self.name}", self.exp
        unknown = sorted(set(exp.get("search_private") or {}) - set(PRIVATE_DEFAULTS))
        if unknown:
            raise ValueError(f"{where}.search_private: unknown settings {unknown}; "
                             f"known: {sorted(PRIVATE_DEFAULTS)}")
        self._check_settings(f"{where}.search_private", self.settings)
        if exp.get("validation_split", "fixed") != "fixed":
            raise ValueError(f"{where}.validation_split: search private scores candidates "
                             f"on the fixed split (per_seed redraws it per run seed)")
        if self.plan.fresh_seeds:
            raise ValueError(
                f"{where}.search: private releases the selected model itself (no fresh "
                f"re-run of a configuration chosen on the data): set report.fresh_seeds "
                f"to 0, or run the private experiments from a config of their own")
        for solver in sorted(exp["solvers"]):
            self._check_candidate(f"{where}.solvers.{solver}", *solver_entry(exp, solver))

    @classmethod
    def check_all(cls, plan, names):
        if plan.private_baseline() and not names:
            raise ValueError(
                "config: report.private_baseline: compares search private experiments "
                "with their baseline, but no experiment has search: private")

    @staticmethod
    def _check_settings(where, settings):
        mean, dist, shape = settings["mean"], settings["distribution"], settings["shape"]
        if not _number(mean) or not math.isfinite(mean) or mean < 1:
            raise ValueError(f"{where}.mean: the mean number of candidates must be a finite "
                             f"number >= 1 (dp_accounting's repeat-and-select bounds need "
                             f"it), got {mean!r}")
        if dist not in PRIVATE_DISTRIBUTIONS:
            raise ValueError(f"{where}.distribution: unknown distribution {dist!r}; "
                             f"known: {list(PRIVATE_DISTRIBUTIONS)}")
        if dist == "negative_binomial":
            if not _number(shape) or not 0 < shape < math.inf:
                raise ValueError(f"{where}.shape: distribution negative_binomial needs a "
                                 f"shape in (0, inf), got {shape!r}")
        elif shape is not None:
            raise ValueError(f"{where}.shape: only distribution negative_binomial takes a "
                             f"shape ({dist} fixes it), got {shape!r}")
        f = settings["score_fraction"]
        if not _number(f) or not 0 < f < 1:
            raise ValueError(f"{where}.score_fraction: must be in (0, 1) (the share of "
                             f"epsilon the score's noise may spend), got {f!r}")
        clip = settings["score_clip"]
        if clip is not None and (not _number(clip) or not 0 < clip < math.inf):
            raise ValueError(f"{where}.score_clip: must be a finite number > 0 or null, "
                             f"got {clip!r}")
        if not isinstance(settings["score_clip_from_data"], bool):
            raise ValueError(f"{where}.score_clip_from_data: true or false, "
                             f"got {settings['score_clip_from_data']!r}")
        if settings["score_noise"] not in ("laplace", "gaussian"):
            raise ValueError(f"{where}.score_noise: laplace or gaussian, "
                             f"got {settings['score_noise']!r}")
        seeds = settings["selection_seeds"]
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise ValueError(f"{where}.selection_seeds: an integer >= 1, got {seeds!r}")

    def _check_candidate(self, where, kind, grid, passes):
        """A candidate's solver can be one, under a relation and sampling
        repeat-and-select accounts (its spec's facts; unchecked here without
        them: the job checks again), and the grid gives at least two
        configurations per cell."""
        facts = self.plan.solver_facts
        if facts is not None:
            fact = facts.get(kind, {})
            if not fact.get("private_candidate"):
                candidates = sorted(name for name, other in facts.items()
                                    if other.get("private_candidate"))
                reason = fact.get("private_refusal") or (
                    f"{NOT_A_CANDIDATE} (candidates: {', '.join(candidates)})")
                raise ValueError(f"{where}: {kind} cannot be a private-search candidate: "
                                 f"{reason}")
            relation = self.exp["privacy"].get("neighbouring", "replace_one")
            _check_rdp(where, kind, fact, relation, grid.get("sampling", fact.get("sampling")))
        n = lattice.grid_size(grid)
        if n < 2:
            raise ValueError(
                f"{where}: the grid has {n} configuration per epsilon and passes; search "
                f"private selects among >= 2 (each search draws from the configurations "
                f"of one epsilon and one passes)")


def _check_rdp(where, kind, fact, relation, sampling):
    """Refuse a (relation, sampling) under which only PLD accounts the
    solver's release (its spec's ``pld_only``), naming the settings that RDP
    accounts instead (its spec's ``relations``)."""
    pld_only = fact.get("pld_only", [])
    if [relation, sampling] not in pld_only:
        return
    relations = fact.get("relations", {})
    others = [f"sampling: {other}" for other, rels in relations.items()
              if other not in (sampling, "*") and relation in rels
              and [relation, other] not in pld_only]
    others += [f"privacy.neighbouring: {other}" for other in relations.get(sampling, [])
               if other != relation and [other, sampling] not in pld_only]
    raise ValueError(f"{where}: {kind}'s {sampling} sampling under {relation} is accounted by "
                     "PLD only and repeat-and-select needs RDP"
                     + (f": set {' or '.join(others)}" if others else ""))


def private_compare_inputs(plan, baseline):
    """What private_compare reads: the private experiments' tables and released
    runs here, the baseline's fresh tables and fresh runs."""
    base = baseline.rstrip("/")
    names = plan.experiments_of(Private.mode)
    return {
        "tables": [f"results/tables/{name}.csv" for name in names],
        "runs": [plan.job_path(job, ".parquet") for name in names for job in plan.jobs(name)],
        "baseline_tables": [f"{base}/results/tables/fresh/{name}.csv" for name in names],
        "baseline_runs": [f"{base}/results/fresh/{name}.parquet" for name in names],
    }
