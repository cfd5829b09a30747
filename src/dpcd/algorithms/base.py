"""What an algorithm declares: :class:`Algorithm` with its :class:`Privacy`,
:class:`Preparation` and :class:`Runtime` records, its :class:`Hyperparameter` s,
and the :class:`Budget` a run is given.

An algorithm spec is the one place that knows a solver as the workflow and the
estimators see it (benchopt's "a solver is one file", skglm's "a solver
declares what it needs"): its name, its hyperparameters with their validators
and defaults, the (loss, penalty) pairs it supports, the kernel family the
warm-up compiles, how it calibrates its noise (through :mod:`dpcd.privacy`)
and how it runs (its kernel in :mod:`dpcd.solvers`).
"""
import numbers
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from dpcd.algorithms.prepare import smooth, unit_records
from dpcd.privacy.calibrate import NEIGHBOURING, Relations
from dpcd.privacy.validation import check_choice

LOSSES = ("squares", "logistic", "hinge")
PENALTIES = ("l1", "l2", "elastic_net", "none")
# the JSON schema of a hyperparameter grid, defined once in the config schema
GRID = {"$ref": "#/$defs/grid"}
INT_GRID = {"type": "array", "items": {"type": "integer", "minimum": 1}}


@dataclass(frozen=True)
class Budget:
    """The privacy settings of one run: target epsilon, delta, accountant and
    neighbouring relation (``"paper"``: each solver's paper's own) and noise
    mode (``"secure"``: see :mod:`dpcd.privacy.secure`); and how much of the
    run to go through (:attr:`prefix`)."""

    epsilon: float
    delta: float
    accountant: str = "auto"
    neighbouring: str = "replace_one"
    noise: str = "fast"
    # The passes the kernel runs, None: all of the configuration's. A prefix
    # (the staged search's multi-fidelity screen, ``search_fidelity``) is the
    # whole run's first passes: the noise stays calibrated for every pass.
    prefix: Optional[float] = None

    def passes(self, config):
        """The passes a run of ``config`` goes through: ``config["passes"]``,
        or its first :attr:`prefix`."""
        passes = config["passes"]
        return passes if self.prefix is None else min(passes, self.prefix)


def run_passes(config, budget):
    """The passes a run of ``config`` goes through: :meth:`Budget.passes`, or
    the configuration's without a budget (a non-private run given none)."""
    return config["passes"] if budget is None else budget.passes(config)


def positive_number(value, name):
    """``value`` as float; a finite number > 0 (not a bool)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and value > 0
    if not ok or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def positive_int(value, name):
    """``value`` as int; an integer >= 1 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or int(value) != value or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def choice(*choices):
    """A validator accepting one of ``choices``."""
    def check(value, name):
        return check_choice(value, name, choices)
    return check


@dataclass(frozen=True)
class Hyperparameter:
    """One hyperparameter of an algorithm.

    Attributes
    ----------
    name : str
        The config key (workflow grid) and the estimator's attribute.
    schema : dict
        JSON schema of its workflow value (a grid: a list or a geomspace).
    validate : callable, optional
        ``validate(value, name) -> value`` for one value (the estimators');
        raises ``ValueError`` naming ``name``.
    default : object, optional
        The workflow default (written into the config schema).
    estimator : bool, default=True
        Whether the estimators pass it to the run (False: a workflow-only knob).
    """

    name: str
    schema: dict
    validate: Optional[Callable] = None
    default: object = None
    estimator: bool = True

    @property
    def is_column(self):
        """A numeric grid: a column of the tidy tables."""
        return self.schema == GRID or (
            self.schema.get("type") == "array"
            and self.schema.get("items", {}).get("type") in ("number", "integer"))

    def grid_schema(self):
        """Its property in the config schema."""
        schema = dict(self.schema)
        if self.default is not None:
            schema["default"] = self.default
        return schema


STEP = Hyperparameter("step", GRID, positive_number)
CLIP = Hyperparameter("clip", GRID, positive_number)
BATCH_SIZE = Hyperparameter("batch_size", INT_GRID, positive_int)


@dataclass(frozen=True)
class Privacy:
    """How a private algorithm releases under a budget: read by the privacy
    checks, the private search, the workflow planner and the estimators (as
    dp-accounting describes a mechanism by a small event, not one wide record).

    Attributes
    ----------
    calibrate : callable, optional
        ``calibrate(problem, config, budget) -> Calibration``: the noise a run
        gets, without running it (tests, ``dpcd budget``, the private search).
    relations : dpcd.privacy.Relations or tuple of str, optional
        The neighbouring relations its calibration holds under, per record
        sampling (its mechanism's, e.g. :data:`dpcd.privacy.MEAN_RELATIONS`);
        a tuple: these under every sampling, the first its paper's. None: no
        relation is refused before the run (its calibration decides).
    sampling : str
        The record sampling it performs unless its ``sampling``
        hyperparameter says otherwise (``"none"``: every record, each step).
    secure : bool
        Whether it runs in the secure noise mode (``noise="secure"``: exact
        integer noise on a grid, :mod:`dpcd.privacy.secure`); the others are
        refused in that mode.
    candidate : bool
        Whether its runs can be candidates of the workflow's private search
        (``search: private``: an RDP account of its release that
        repeat-and-select composes).
    refusal : str, optional
        Why it cannot be a candidate, for the error message.
    pld_only : tuple of (relation, sampling)
        Where only the PLD accountant accounts its release: refused as a
        private-search candidate (repeat-and-select composes RDP) when the
        workflow plans.
    paper_bound_invalid : bool
        Its paper's calibration reports an epsilon that is not a valid bound
        (DP-GCD): refused unless asked for as ``"paper_invalid_bound"``.
    """

    calibrate: Optional[Callable] = None
    relations: object = None
    sampling: str = "none"
    secure: bool = False
    candidate: bool = False
    refusal: Optional[str] = None
    pld_only: tuple = ()
    paper_bound_invalid: bool = False

    def __post_init__(self):
        if isinstance(self.relations, (tuple, list)):
            object.__setattr__(self, "relations", Relations({"*": tuple(self.relations)}))


@dataclass(frozen=True)
class Preparation:
    """What the estimators build from the data before a run
    (:mod:`dpcd.algorithms.prepare`).

    Attributes
    ----------
    smoothness : {"coordinate", "private", "global", None}
        Exact coordinate constants M_j, privately released ones (DP-CD-P), the
        global beta as well, or none.
    record_norm : {None, "rows", "columns"}
        Records (rows) or columns of norm <= 1 that the calibration assumes:
        the estimators scale them (DP-SCD).
    relative_clip : bool
        ``clip`` is relative to each feature's root mean square.
    prepare : callable, optional
        ``prepare(spec, X, y, fit) -> Prepared``: the problem and configuration
        an estimator's fit hands to ``run``. Default:
        :func:`~dpcd.algorithms.prepare.unit_records` with a ``record_norm``,
        else :func:`~dpcd.algorithms.prepare.smooth` (constants as
        ``smoothness`` says, thresholds as ``relative_clip`` says).
    defaults : callable, optional
        ``defaults(n_samples, n_features, loss) -> dict``: the nominal value
        of each hyperparameter an estimator leaves at ``"auto"``
        (:mod:`dpcd.algorithms.defaults`), ``passes`` included.
    prediction_noise : callable, optional
        ``prediction_noise(problem, config, budget, private_smoothness) ->
        float``: the standard deviation the run's calibrated noise adds to a
        prediction of a standardised record, proportional to ``clip``; the
        estimators' ``clip="auto"`` scales the threshold by it
        (:func:`dpcd.algorithms.defaults.resolve_clip`).
    reach : callable, optional
        ``reach(problem, config, budget) -> float``: how far the run can move
        a prediction, over its noise there, whatever ``clip``; below 1 an
        estimator's default falls back to the zero model
        (:func:`dpcd.algorithms.defaults.falls_back`).
    """

    smoothness: Optional[str] = "coordinate"
    record_norm: Optional[str] = None
    relative_clip: bool = False
    prepare: Optional[Callable] = None
    defaults: Optional[Callable] = None
    prediction_noise: Optional[Callable] = None
    reach: Optional[Callable] = None

    def __post_init__(self):
        if self.prepare is None:
            object.__setattr__(self, "prepare", unit_records if self.record_norm else smooth)


@dataclass(frozen=True)
class Runtime:
    """How its kernels run in a workflow job.

    Attributes
    ----------
    family : str, optional
        The family of its kernels: algorithms of one family share their
        kernels, warmed once.
    warm : callable, optional
        ``warm()`` compiles (or loads from the numba cache) its family's
        kernels, before parallel jobs run (:func:`dpcd.algorithms.warmup`).
    run_many : callable, optional
        ``run_many(problem, configs, seeds, budgets)``: several configurations
        of one seed in shared kernel calls, each bit for bit the run alone.
    step_cost_ns : dict, optional
        Measured ns of one pass over one data entry (a record x a feature, or
        a non-zero of a sparse dataset), ``{"dense": ns, "sparse": ns}``
        (either optional): the workflow planner's cost model (unmeasured: the
        slowest measured solver's). ``python bench/bench_cost_model.py``
        (2026-11-25, the slowest loss of the paper configs, one core of the
        2-core development machine under load, so on the high side; sparse:
        dorothea's shape, whose noise is drawn per feature).
    """

    family: Optional[str] = None
    warm: Optional[Callable] = None
    run_many: Optional[Callable] = None
    step_cost_ns: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Algorithm:
    """The spec of one algorithm (see :mod:`dpcd.algorithms`): what it solves
    and takes, how it runs, and three small records each read by one part of
    the house (:class:`Privacy`, :class:`Preparation`, :class:`Runtime`).

    Attributes
    ----------
    name : str
        Its name in configs, tables, MLflow and the estimators' ``solver``.
    description : str
        One line for the config schema and the docs.
    run : callable
        ``run(problem, config, seed, budget, private_smoothness=None) ->
        (SolverResult, Ledger or None)``: calibrates the noise for ``budget``
        (a :class:`Budget`), runs the kernel on the
        :class:`~dpcd.algorithms.problem.SweepProblem` ``problem`` with the
        configuration ``config`` (its hyperparameters and ``passes``) and the
        entropy ``seed``, and returns the result and its ledger (None when
        nothing private is released), every non-private input recorded on it.
    hyperparameters : tuple of Hyperparameter
        Its grid (``passes`` is every algorithm's, not listed).
    required : tuple of str
        Hyperparameters a config must give.
    check : callable, optional
        ``check(config, problem)``: cross-hyperparameter checks of one
        configuration (``problem``: a dict of ``loss``, ``penalty``,
        ``n_samples``, ``n_features``); raises ``ValueError``.
    losses, penalties : tuple of str
        The (loss, penalty) pairs it supports (their product).
    schema : dict, optional
        Extra keywords of its config-schema entry (``if``/``then``).
    privacy : Privacy or None
        How it releases under a budget (default: a private algorithm that
        states nothing more); None: a non-private algorithm (the estimators
        refuse it; the sweep runs it once for all epsilons).
    preparation : Preparation
        What the estimators compute from the data for it.
    runtime : Runtime
        Its kernels' family, warm-up, shared runs and cost.
    """

    name: str
    description: str
    run: Callable
    hyperparameters: tuple = ()
    required: tuple = ()
    check: Optional[Callable] = None
    losses: tuple = LOSSES
    penalties: tuple = PENALTIES
    schema: dict = field(default_factory=dict)
    privacy: Optional[Privacy] = Privacy()
    preparation: Preparation = Preparation()
    runtime: Runtime = Runtime()

    def __post_init__(self):
        for name, kind in (("privacy", Privacy), ("preparation", Preparation),
                           ("runtime", Runtime)):
            value = getattr(self, name)
            if not isinstance(value, kind) and not (name == "privacy" and value is None):
                raise TypeError(f"algorithm {self.name!r}: {name} must be a "
                                f"dpcd.algorithms.{kind.__name__}, got {value!r}")
        if self.preparation.smoothness == "private" and not any(
                hp.name == "smoothness_fraction" for hp in self.hyperparameters):
            # the workflow routes the private estimate to the entries that have one
            raise ValueError(f"algorithm {self.name!r}: smoothness='private' needs the "
                             "hyperparameter smoothness_fraction (its share of epsilon)")

    @property
    def private(self):
        """Whether it releases under a budget (it has a :attr:`privacy` record)."""
        return self.privacy is not None

    def hyperparameter(self, name):
        """The :class:`Hyperparameter` ``name`` (KeyError if it has none)."""
        for hp in self.hyperparameters:
            if hp.name == name:
                return hp
        raise KeyError(name)

    def supports(self, loss, penalty):
        """Whether it solves the (loss, penalty) problem."""
        return loss in self.losses and penalty in self.penalties

    def check_problem(self, loss, penalty):
        """Refuse a (loss, penalty) pair it does not support, naming what it does."""
        if loss not in self.losses:
            raise ValueError(f"loss must be {_either(self.losses)} for solver "
                             f"{self.name!r} (the losses it supports), got {loss!r}")
        if penalty not in self.penalties:
            raise ValueError(f"penalty must be {_either(self.penalties)} for solver "
                             f"{self.name!r} (the penalties it supports), got {penalty!r}")

    def check_neighbouring(self, relation, samplings=None):
        """Refuse, before anything runs, a relation it cannot be calibrated
        under with any of ``samplings`` (one value, a list, or None: its
        privacy record's ``sampling``). A non-private algorithm accepts every
        relation."""
        check_choice(relation, "neighbouring", NEIGHBOURING)
        if not self.private or self.privacy.relations is None:
            return
        if samplings is None:
            samplings = [self.privacy.sampling]
        for sampling in [samplings] if isinstance(samplings, str) else samplings:
            self.privacy.relations.resolve(relation, self.name, sampling)

    def paper_relation(self):
        """The relation its paper calibrated it under, with its own sampling
        (replace-one when it states none)."""
        if not self.private or self.privacy.relations is None:
            return "replace_one"
        return self.privacy.relations.supported(self.privacy.sampling)[0]

    def grid_schema(self):
        """Its entry of ``experiments.<name>.solvers`` in the config schema."""
        properties = {hp.name: hp.grid_schema() for hp in self.hyperparameters}
        properties["passes"] = {"$ref": "#/$defs/passes"}
        schema = {"type": "object", "description": self.description,
                  "additionalProperties": False}
        if self.required:
            schema["required"] = list(self.required)
        schema["properties"] = properties
        schema.update(self.schema)
        return schema


def _either(names):
    names = [repr(name) for name in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
