"""Noise calibration, the generic part: (n, p, passes, clipping, ε, δ) → noise.

Each algorithm family's calibration lives in its own module: DP-CD and
DP-CD-P in :mod:`dpcd.privacy.cd`, DP-GCD in :mod:`dpcd.privacy.gcd`, DP-SGD
in :mod:`dpcd.privacy.sgd`, the DP-SCD variants in :mod:`dpcd.privacy.scd`,
each deriving its sensitivities.  Every one is pure (never touches data),
validates its arguments, calls
:func:`dpcd.privacy.accounting.calibrate_multiplier` (cached) and returns a
:class:`Calibration` with the noise the solver must add and the ledger the
run must log.  This module holds what they share: the neighbouring
:class:`Relations`, the :class:`Calibration`, and the budget line and ledger
line of a (sampled) Gaussian release.

Neighbouring relations (``relation``; the workflow's and the estimators'
``neighbouring`` setting, docs/method/neighbouring.md): ``"replace_one"``
(one record replaced by any other; n public), ``"add_or_remove_one"`` (one
record added or removed) and ``"replace_special"`` (one record replaced by
the zero record, the DP-SCD paper's).  ``"paper"`` (or ``None``) stands for
the relation each paper calibrated its solver under (:class:`Relations`).
A solver refuses a relation it is not calibrated for, with an error naming
the setting.  A release that is a mean over a public n
(:data:`MEAN_RELATIONS`: DP-CD, DP-CD-P, DP-GCD) is calibrated under
replace-one only: its noise scale is a function of n, so adding or removing
a record changes the noise as well as the mean (not the shifted-Gaussian
pair any accountant assumes), and the zero record is not derived for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpcd.privacy import accounting, cache
from dpcd.privacy.ledger import BudgetLine, Ledger, Mechanism
from dpcd.privacy.validation import check_choice, check_delta, check_epsilon, check_n

SAMPLINGS = ("poisson", "without_replacement")
ACCOUNTANT_CHOICES = ("auto", "rdp", "pld", "paper")
# The ``neighbouring`` setting: one relation for every solver, or each paper's own.
NEIGHBOURING = (*accounting.RELATIONS, "paper")


PUBLIC_N = ("its releases are means over a public n whose noise scale is a function of n; "
            "adding or removing a record changes the noise as well as the mean, and the "
            "zero-record relation is not derived for it")


@dataclass(frozen=True)
class Relations:
    """The neighbouring relations one mechanism is calibrated under, per record
    sampling (each family's module derives them). An algorithm spec carries its
    mechanism's (:attr:`dpcd.algorithms.Privacy.relations`).

    Attributes
    ----------
    by_sampling : dict
        ``{sampling: relations}``, the first of each the relation its paper
        calibrated under (``"paper"`` stands for it); ``"*"``: every sampling.
    why : str
        Why the others are refused, for the error message.
    """

    by_sampling: dict
    why: str = ""

    def supported(self, sampling: str = "none") -> tuple:
        """The relations it is calibrated under with ``sampling``."""
        if sampling in self.by_sampling:
            return tuple(self.by_sampling[sampling])
        if "*" in self.by_sampling:
            return tuple(self.by_sampling["*"])
        raise ValueError(f"sampling must be one of {sorted(self.by_sampling)}, got {sampling!r}")

    def resolve(self, relation, algorithm: str, sampling: str = "none") -> str:
        """The relation ``relation`` (a :data:`NEIGHBOURING` value or None,
        the paper's) stands for, refused unless it is calibrated under it.

        Raises
        ------
        ValueError
            Naming the ``neighbouring`` setting, the solver and the reason.
        """
        supported = self.supported(sampling)
        if relation is None or relation == "paper":
            relation = supported[0]
        check_choice(relation, "neighbouring", NEIGHBOURING)
        if relation not in supported:
            raise ValueError(
                f"neighbouring: {algorithm} (sampling {sampling!r}) is calibrated under "
                f"{' or '.join(supported)} only, got {relation!r}"
                + (f": {self.why}" if self.why else ""))
        return relation


# A paper's own relation comes first: replace-one for a mean over a public n.
MEAN_RELATIONS = Relations({"*": ("replace_one",)}, PUBLIC_N)  # DP-CD, DP-CD-P, DP-GCD


@dataclass(frozen=True)
class Calibration:
    """Noise for one private run and its ledger.

    Attributes
    ----------
    noise_multiplier : float
        Noise std (or Laplace scale) divided by the sensitivity.
    noise_scales : float or numpy.ndarray
        Std (Gaussian) or scale (Laplace) of the noise the solver adds to the
        released quantity (per coordinate when an array).
    ledger : Ledger
    epsilon_achieved : float
        ε of the whole run at ``ledger.delta`` (≤ the target).
    steps : int
        Number of private releases (iterations) the calibration assumes.
    sampling : str
        ``"none"``, ``"poisson"`` or ``"without_replacement"``.
    sampling_rate : float
        Expected batch fraction (1 without sampling).
    extra : dict
        Algorithm-specific values (e.g. DP-GCD selection scales).
    """

    noise_multiplier: float
    noise_scales: Any
    ledger: Ledger
    epsilon_achieved: float
    steps: int
    sampling: str = "none"
    sampling_rate: float = 1.0
    extra: dict = field(default_factory=dict)


def check_sampling(calibration: Calibration, sampling: str) -> None:
    """Refuse to run a solver whose sampling differs from the accounted one.

    Raises
    ------
    ValueError
        If ``sampling`` (what the solver does) is not ``calibration.sampling``.
    """
    if sampling != calibration.sampling:
        raise ValueError(
            f"sampling: solver samples {sampling!r} but the budget was accounted for "
            f"{calibration.sampling!r}"
        )


def check_common(n, epsilon, delta, accountant):
    """The arguments every calibration takes, checked."""
    return (check_n(n), check_epsilon(epsilon), check_delta(delta),
            check_choice(accountant, "accountant", ACCOUNTANT_CHOICES))


def budget_line(group, accountant, epsilon, achieved, delta, spec, z):
    """The budget line of the event ``spec`` at multiplier ``z``."""
    # the event's repr goes through the cache like the calibration itself, so
    # that a job whose calibrations are cached never imports dp_accounting
    event = cache.cached("dp_event_repr", {"spec": list(spec), "z": float(z)},
                         lambda: repr(accounting.make_event(spec, z)))
    return BudgetLine(group=group, accountant=accountant, epsilon_target=epsilon,
                      epsilon_achieved=achieved, delta=delta, dp_event=event)


# ------------------------------------------------- sampled Gaussian releases
def sampled_spec(n, batch_size, steps, sampling):
    """The accounting spec of ``steps`` Gaussian releases on batches of
    (expected) size ``batch_size`` drawn by ``sampling`` from n records."""
    if sampling == "poisson":
        return ("poisson_gaussian", batch_size / n, steps)
    return ("wor_gaussian", n, batch_size, steps)


def accounted_spec(spec, epsilon, relation, accountant="auto"):
    """``spec``, or, for a Poisson-sampled release under replace-one above
    PLD's ε limit or with ``accountant="rdp"`` (PLD being the only accountant
    of the sampled event under replace-one), the same steps as unsampled
    Gaussians of the full replace-one sensitivity: a valid bound that forgoes
    amplification by sampling (coupling the two datasets' draws, each step's
    sums differ by at most the sensitivity). The RDP form is what private
    hyperparameter search composes (:mod:`dpcd.tuning.workflow`)."""
    if (spec[0] == "poisson_gaussian" and relation == "replace_one"
            and (epsilon > accounting.PLD_MAX_EPSILON or accountant == "rdp")):
        return ("gaussian", spec[-1])
    return spec


def sampled_calibration(spec, epsilon, delta, accountant, relation):
    """:func:`dpcd.privacy.accounting.calibrate_multiplier` of a sampled
    release, ``"paper"`` standing for the papers' own accountant (RDP)."""
    if accountant == "paper":
        # DP-SGD and DP-SCD were calibrated with the moments accountant (RDP).
        accountant = "rdp"
    return accounting.calibrate_multiplier(spec, epsilon, delta, accountant, relation)


def sampled_mechanism(name, spec, relation, z, sens, steps, sampling, q, note, released=""):
    """The ledger line of a sampled Gaussian release: noise std z·unit·``sens``
    (:func:`dpcd.privacy.accounting.sensitivity_unit`), its multiplier over
    the sensitivity, and, when the two differ, the accounted event's z."""
    unit = accounting.sensitivity_unit(spec, relation)
    if spec[0] == "gaussian" and sampling != "none":
        note += ("; accounted without amplification by sampling (rdp accountant, or "
                 f"epsilon > {accounting.PLD_MAX_EPSILON:g})")
    if unit != 1.0:
        note += (f"; dp_accounting PLD REPLACE_ONE event multiplier z={z:.6g} is relative "
                 f"to one record's contribution ({unit:g} x the sensitivity)")
    return Mechanism(name=name, kind="gaussian", sensitivity=sens, sensitivity_norm="l2",
                     noise_multiplier=z * unit, noise_scale=z * unit * sens, count=steps,
                     sampling=sampling, sampling_rate=q, relation=relation, note=note,
                     released=released)
