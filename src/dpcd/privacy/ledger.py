"""The budget ledger: what a private run released and what it cost.

A :class:`Ledger` lists each mechanism of a run (what is released, its
sensitivity, noise multiplier and noise scale, how often, with which
sampling), the neighbouring relation, the accountant, the target and achieved
(ε, δ) and the data-dependent quantities the run used without noise.  It is a
plain value: ``to_json``/``from_dict`` round-trip exactly, and ``flat_params``
/ ``flat_metrics`` / ``flat_tags`` give the short MLflow view.

Budgets that are spent separately (e.g. private smoothness estimation, then
optimisation) are kept as separate ``budget`` lines by :meth:`Ledger.combine`;
their ε and δ add up (basic composition).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

# The noise modes (dpcd.privacy.secure), and what each mode's guarantee
# assumes: stated in every ledger.
NOISE_MODES = ("fast", "secure")
GUARANTEES = {
    "fast": ("floating-point samplers (numba/numpy) on a seeded PCG64 generator: "
             "the guarantee assumes an idealised sampler and a secret seed; "
             "a reproducible run for research, not for release"),
    "secure": ("exact discrete samplers on a keystream keyed from the OS's secure source, "
               "inputs rounded to a grid accounted in the sensitivity; seeds "
               "drawn from the OS and never recorded"),
}

# Values are JSON scalars or lists of floats (per-coordinate scales).
Number = float | list


def _jsonable(value):
    """Return ``value`` with numpy scalars/arrays turned into JSON types."""
    if isinstance(value, np.ndarray):
        return [float(v) for v in value.ravel()]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, float) for v in value):  # per-coordinate vectors: fast path
            return [float(v) for v in value]
        return [_jsonable(v) for v in value]
    return value


def _fields_dict(obj) -> dict[str, Any]:
    """A flat dataclass as a JSON-ready dict (``dataclasses.asdict`` deep-copies
    every float of a per-coordinate vector: minutes for dorothea's 88 119)."""
    return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def _summary(value) -> str:
    """Short string for an MLflow param: a scalar, or min/max of a vector."""
    if isinstance(value, list):
        if not value:
            return "[]"
        lo, hi = min(value), max(value)
        return f"{lo:.6g}" if lo == hi else f"[{lo:.6g},{hi:.6g}]"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@dataclass(frozen=True)
class Mechanism:
    """One kind of private release, repeated ``count`` times.

    Attributes
    ----------
    name : str
        What is released, e.g. ``"coordinate_gradient"``.
    kind : str
        ``"gaussian"``, ``"laplace"`` or ``"report_noisy_max"``.
    sensitivity : float or list of float
        The sensitivity the noise multiplier is relative to (per coordinate
        when a list), under ``relation``; ``noise_scale = noise_multiplier *
        sensitivity``.
    sensitivity_norm : str
        ``"l2"`` (Gaussian) or ``"l1"`` (Laplace, report-noisy-max).
    noise_multiplier : float
        Noise std (Gaussian) or Laplace scale divided by ``sensitivity``.
    noise_scale : float or list of float
        The std (Gaussian) or scale (Laplace) actually added, per coordinate
        when a list.
    count : int
        Number of releases.
    sampling : str
        ``"none"``, ``"poisson"`` or ``"without_replacement"``.
    sampling_rate : float
        Expected fraction of records used per release (1 without sampling).
    relation : str
        Neighbouring relation the sensitivity is computed under.
    group : str
        Budget line this mechanism is charged to (see :class:`Ledger`).
    note : str
        Anything needed to reread the line (e.g. which theorem).
    released : str
        What the run makes public when that differs from what the noise is
        calibrated on, e.g. ``"theta"`` for DP-SCD (noise on [α_B; v], only
        θ = v/(λN) released; docs/method/dp_scd_release.md).  Empty: the
        noisy quantity itself (ledgers written before this field read back
        with it empty).
    """

    name: str
    kind: str
    sensitivity: Number
    sensitivity_norm: str
    noise_multiplier: float
    noise_scale: Number
    count: int
    sampling: str = "none"
    sampling_rate: float = 1.0
    relation: str = "replace_one"
    group: str = "optimisation"
    note: str = ""
    released: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-serialisable form."""
        return _fields_dict(self)


@dataclass(frozen=True)
class BudgetLine:
    """(ε, δ) spent by one separately accounted group of mechanisms."""

    group: str
    accountant: str
    epsilon_target: float
    epsilon_achieved: float
    delta: float
    dp_event: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-serialisable form."""
        return _fields_dict(self)


@dataclass(frozen=True)
class Ledger:
    """Privacy budget ledger of one run (see module docstring).

    Attributes
    ----------
    algorithm : str
        Algorithm name, e.g. ``"dp_cd"``.
    neighbouring : str
        Neighbouring relation of the guarantee (``"replace_one"``,
        ``"add_or_remove_one"`` or ``"replace_special"``, the last meaning
        one record replaced by the zero record).
    accountant : str
        Accountant(s) used, e.g. ``"rdp"``, ``"pld"``, ``"paper"``,
        ``"pure+pld"`` for combined ledgers.
    epsilon_target, epsilon_achieved, delta : float
        Totals over all budget lines (basic composition).
    mechanisms : list of Mechanism
    budget : list of BudgetLine
        One line per separately accounted group; totals are their sums.
    nonprivate_inputs : list of str
        Data-dependent inputs used without noise (e.g. ``"exact_smoothness"``).
    caveats : list of str
        Reasons the stated (ε, δ) is not a guarantee, e.g. ``"invalid_bound"``
        (DP-GCD's paper calibration: report-noisy-max at Δ/ε′ over
        non-monotone scores). Empty for a valid ledger.
    noise : str
        Which samplers ran: ``"fast"`` (floating point, seeded; the guarantee
        assumes an idealised sampler and a secret seed) or ``"secure"``
        (exact discrete samplers on a grid, see :mod:`dpcd.privacy.secure`).
    selection : dict, optional
        Private hyperparameter selection (:mod:`dpcd.tuning`): the
        law of K (never K), the split and the score mechanism.
    data_split : dict, optional
        Which train/validation division of the data the release trained on
        (e.g. ``{"validation_split": "per_seed", "seed": ...}``): a
        data-independent draw, recorded so the run can be replayed; no privacy
        cost and no non-private input.
    """

    algorithm: str
    neighbouring: str
    accountant: str
    epsilon_target: float
    epsilon_achieved: float
    delta: float
    mechanisms: tuple[Mechanism, ...] = ()
    budget: tuple[BudgetLine, ...] = ()
    nonprivate_inputs: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()
    noise: str = "fast"
    selection: dict | None = None
    data_split: dict | None = None

    def __post_init__(self):
        # Accept lists from callers and from JSON; store tuples (immutable).
        object.__setattr__(self, "mechanisms", tuple(self.mechanisms))
        object.__setattr__(self, "budget", tuple(self.budget))
        object.__setattr__(
            self, "nonprivate_inputs", tuple(sorted(set(self.nonprivate_inputs)))
        )
        object.__setattr__(self, "caveats", tuple(sorted(set(self.caveats))))
        if self.noise not in GUARANTEES:
            raise ValueError(f"noise must be one of {sorted(GUARANTEES)}, got {self.noise!r}")

    # -- construction -----------------------------------------------------
    def add_nonprivate_input(self, name: str) -> "Ledger":
        """Return a copy that also records ``name`` as a non-private input."""
        if not name or "," in name:
            raise ValueError(f"nonprivate input name must be non-empty, no commas: {name!r}")
        return dataclasses.replace(
            self, nonprivate_inputs=self.nonprivate_inputs + (name,)
        )

    def with_data_split(self, division: dict | None) -> "Ledger":
        """Return a copy that records the train/validation ``division`` it ran on."""
        return self if division is None else dataclasses.replace(self, data_split=dict(division))

    @classmethod
    def combine(cls, ledgers, algorithm: str | None = None) -> "Ledger":
        """Compose ledgers spent one after the other (basic composition).

        Budget lines and mechanisms are concatenated; ε and δ add up.  All
        ledgers must state the same neighbouring relation.

        Parameters
        ----------
        ledgers : sequence of Ledger
        algorithm : str, optional
            Name of the combined run; defaults to the last ledger's.
        """
        ledgers = list(ledgers)
        if not ledgers:
            raise ValueError("ledgers: need at least one ledger to combine")
        relations = {led.neighbouring for led in ledgers}
        if len(relations) != 1:
            raise ValueError(f"ledgers: cannot combine neighbouring relations {sorted(relations)}")
        modes = {led.noise for led in ledgers}
        if len(modes) != 1:
            raise ValueError(f"ledgers: cannot combine noise modes {sorted(modes)}")
        accountants = []
        for led in ledgers:
            for acc in led.accountant.split("+"):
                if acc not in accountants:
                    accountants.append(acc)
        return cls(
            algorithm=algorithm or ledgers[-1].algorithm,
            neighbouring=ledgers[0].neighbouring,
            accountant="+".join(accountants),
            epsilon_target=float(sum(led.epsilon_target for led in ledgers)),
            epsilon_achieved=float(sum(led.epsilon_achieved for led in ledgers)),
            delta=float(sum(led.delta for led in ledgers)),
            mechanisms=[m for led in ledgers for m in led.mechanisms],
            budget=[b for led in ledgers for b in led.budget],
            nonprivate_inputs=[x for led in ledgers for x in led.nonprivate_inputs],
            caveats=[x for led in ledgers for x in led.caveats],
            noise=ledgers[0].noise,
        )

    # -- serialisation ----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (with convenience summary keys)."""
        out = {
            "algorithm": self.algorithm,
            "neighbouring": self.neighbouring,
            "accountant": self.accountant,
            "epsilon_target": float(self.epsilon_target),
            "epsilon_achieved": float(self.epsilon_achieved),
            "delta": float(self.delta),
            "mechanisms": [m.to_dict() for m in self.mechanisms],
            "budget": [b.to_dict() for b in self.budget],
            "nonprivate_inputs": list(self.nonprivate_inputs),
            "noise": self.noise,
            "noise_guarantee": GUARANTEES[self.noise],
        }
        if self.caveats:
            out["caveats"] = list(self.caveats)
        if self.selection is not None:
            out["selection"] = {k: _jsonable(v) for k, v in self.selection.items()}
        if self.data_split is not None:
            out["data_split"] = {k: _jsonable(v) for k, v in self.data_split.items()}
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """Return the ledger as JSON text (keys sorted, deterministic)."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Ledger":
        """Rebuild a ledger from :meth:`to_dict` output (extra keys ignored)."""
        names = {f.name for f in dataclasses.fields(Mechanism)}
        bnames = {f.name for f in dataclasses.fields(BudgetLine)}
        return cls(
            algorithm=data["algorithm"],
            neighbouring=data["neighbouring"],
            accountant=data["accountant"],
            epsilon_target=float(data["epsilon_target"]),
            epsilon_achieved=float(data["epsilon_achieved"]),
            delta=float(data["delta"]),
            mechanisms=[Mechanism(**{k: v for k, v in m.items() if k in names})
                        for m in data.get("mechanisms", [])],
            budget=[BudgetLine(**{k: v for k, v in b.items() if k in bnames})
                    for b in data.get("budget", [])],
            nonprivate_inputs=data.get("nonprivate_inputs", []),
            caveats=data.get("caveats", []),
            noise=data.get("noise", "fast"),
            selection=data.get("selection"),
            data_split=data.get("data_split"),
        )

    @classmethod
    def from_json(cls, text: str) -> "Ledger":
        """Rebuild a ledger from :meth:`to_json` output."""
        return cls.from_dict(json.loads(text))

    # -- MLflow views -----------------------------------------------------
    def flat_params(self) -> dict[str, str]:
        """Short ``privacy.*`` params (strings; vectors shown as [min,max]).

        At most 8 mechanisms and 4 budget lines are listed (a handful of keys
        each), so the total stays far below MLflow's 100-params-per-batch.
        The full ledger goes in the JSON artifact.
        """
        out = {
            "privacy.algorithm": self.algorithm,
            "privacy.accountant": self.accountant,
            "privacy.neighbouring": self.neighbouring,
            "privacy.epsilon_target": _summary(float(self.epsilon_target)),
            "privacy.delta": _summary(float(self.delta)),
            "privacy.nonprivate_inputs": ",".join(self.nonprivate_inputs) or "none",
            "privacy.n_mechanisms": str(len(self.mechanisms)),
            "privacy.noise": self.noise,
        }
        if self.caveats:
            out["privacy.caveats"] = ",".join(self.caveats)
        for i, m in enumerate(self.mechanisms[:8]):
            pre = f"privacy.mechanism.{i}."
            out[pre + "name"] = m.name
            out[pre + "kind"] = m.kind
            out[pre + "group"] = m.group
            out[pre + "sensitivity"] = _summary(_jsonable(m.sensitivity))
            out[pre + "noise_multiplier"] = _summary(float(m.noise_multiplier))
            out[pre + "noise_scale"] = _summary(_jsonable(m.noise_scale))
            out[pre + "count"] = str(m.count)
            out[pre + "sampling"] = m.sampling
            out[pre + "sampling_rate"] = _summary(float(m.sampling_rate))
            if m.released:
                out[pre + "released"] = m.released
        for b in self.budget[:4]:
            out[f"privacy.budget.{b.group}.accountant"] = b.accountant
        for key, value in (self.selection or {}).items():
            out[f"privacy.selection.{key}"] = _summary(_jsonable(value))
        return out

    def flat_metrics(self) -> dict[str, float]:
        """Numeric ``privacy.*`` metrics: totals and per-budget-line ε."""
        out = {
            "privacy.epsilon_target": float(self.epsilon_target),
            "privacy.epsilon_achieved": float(self.epsilon_achieved),
            "privacy.delta": float(self.delta),
        }
        for b in self.budget[:4]:
            out[f"privacy.budget.{b.group}.epsilon_achieved"] = float(b.epsilon_achieved)
            out[f"privacy.budget.{b.group}.delta"] = float(b.delta)
        for i, m in enumerate(self.mechanisms[:8]):
            out[f"privacy.mechanism.{i}.noise_multiplier"] = float(m.noise_multiplier)
        return out

    def flat_tags(self) -> dict[str, str]:
        """Tags for MLflow, e.g. ``privacy.nonprivate_inputs`` (docs/method/privacy.md)."""
        out = {
            "privacy.nonprivate_inputs": ",".join(self.nonprivate_inputs) or "none",
            "privacy.accountant": self.accountant,
            "privacy.noise": self.noise,
        }
        for caveat in self.caveats:
            out[f"privacy.{caveat}"] = "true"
        return out


def nonprivate_inputs(problem, ledger):
    """What a run read off the data without noise: the non-private inputs of
    its problem (``problem.nonprivate_inputs``: the data stage's, ``lambda_max``)
    and of its ledger (None for a non-private run), sorted and comma-separated
    (the tables' column and the runs' ``privacy.nonprivate_inputs`` tag)."""
    names = set(problem.nonprivate_inputs)
    if ledger is not None:
        names.update(ledger.nonprivate_inputs)
    return ",".join(sorted(names))


__all__ = ["BudgetLine", "Ledger", "Mechanism", "nonprivate_inputs"]
