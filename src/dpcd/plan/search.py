"""What every search mode says (:class:`Search`): its solve stages, the
configurations each stage runs per cell, on how many seeds, its chunks, what
it adds to a solve spec, its select jobs and its checks. One subclass per
mode (``grid``, ``staged``, ``private``), one instance per experiment."""

from abc import ABC, abstractmethod


class Search(ABC):
    """The search of one experiment (``experiments.<name>.search``).

    Parameters
    ----------
    plan : dpcd.plan.Plan
        The plan it belongs to (its config, solver facts and report settings).
    name : str
        The experiment's name.
    """

    #: The config value of ``search`` that selects the mode.
    mode = None
    #: The stages whose jobs the solve rule runs in a folder of their own
    #: (:meth:`folder`); the selects follow all but the last.
    solve_stages = ()
    #: Whether report.fresh_seeds re-runs its selected configurations on new seeds.
    fresh = True
    #: Whether a non-private solver's runs at two epsilons are one run (the
    #: same streams: dpcd.streams.stream_identity), so its stages run the
    #: first epsilon only.
    shares_epsilons = True
    #: The least estimated work (core-hours) of one of its solve jobs, below
    #: which the stage's chunks merge; 0: the experiment's ``chunks`` as given.
    least_job_hours = 0.0
    #: Whether its solve jobs read their noise from the calibrate stage (every
    #: event of a private solver's grid, calibrated once before they run).
    calibrated = True

    def __init__(self, plan, name):
        self.plan = plan
        self.name = name
        self.exp = plan.config["experiments"][name]

    def check(self):
        """Refuse settings the mode cannot run, naming them (before anything runs)."""

    @abstractmethod
    def stages(self):
        """The solve stages, in order; the last one's runs make the tables."""

    def folder(self, stage):
        """Where a solve job of ``stage`` writes, under its solver's folder."""
        return f"{stage}/"

    def configurations(self, solver, stage, full):
        """Configurations per (epsilon, passes) that ``stage`` runs of solver
        entry ``solver``, whose grid has ``full``."""
        return full

    def least_configurations(self, solver, stage, full):
        """At least how many configurations per (epsilon, passes) ``stage``
        runs: as many as :meth:`configurations` where a stage's are known
        before anything runs. Its chunks never outnumber them, so that no
        solve job runs nothing."""
        return self.configurations(solver, stage, full)

    def passes(self, stage, passes):
        """The passes each configuration of ``stage`` runs (the entry's ``passes``)."""
        return passes

    def seeds(self, stage):
        """The seeds each configuration of ``stage`` runs on."""
        return self.exp["seeds"]

    def reused_stages(self, stage):
        """The earlier stages whose first-seed runs ``stage``'s jobs reuse
        rather than run again (none)."""
        return ()

    def chunks(self, stage, n_configs):
        """(solve jobs of one solver's ``stage`` before ``chunk_core_hours``,
        whether ``chunk_core_hours`` may cut it further)."""
        return self.exp["chunks"], True

    def spec(self, solver, stage):
        """What ``stage`` adds to a solve spec (nothing: the specs of
        finished ``grid`` workdirs carry no stage)."""
        return {}

    def selects(self):
        """The stages a select job follows."""
        return ()

    def selection_input(self, stage):
        """The selection file a solve job of ``stage`` reads (None: none)."""
        return None

    @classmethod
    def check_all(cls, plan, names):
        """Refuse settings outside the experiments that concern the mode's
        experiments ``names`` (all of them, possibly none)."""

    @classmethod
    def summary(cls, plan, names):
        """A line logged at planning about the mode's experiments ``names``
        ("": nothing to add to the cost summary)."""
        return ""
