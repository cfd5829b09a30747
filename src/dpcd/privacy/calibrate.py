"""Per-algorithm noise calibration: (n, p, passes, clipping, ε, δ) → noise.

Each function is pure (never touches data), validates its arguments, calls
:func:`dpcd.privacy.accounting.calibrate_multiplier` (cached) and returns a
:class:`Calibration` with the noise the solver must add and the ledger the
run must log.

Neighbouring relations (``relation``; the workflow's and the estimators'
``neighbouring`` setting, docs/method/neighbouring.md): ``"replace_one"``
(one record replaced by any other; n public), ``"add_or_remove_one"`` (one
record added or removed) and ``"replace_special"`` (one record replaced by
the zero record, the DP-SCD paper's).  ``"paper"`` (or ``None``) stands for
the relation each paper calibrated its solver under (:class:`Relations`).
A solver refuses a relation it is not calibrated for, with an error naming
the setting.

Sensitivities per solver and relation (ℓ2 unless stated):

* DP-CD, DP-CD-P: coordinate gradient j is a mean over n per-sample
  coordinate gradients clipped to [−C_j, C_j]; replacing one record moves it
  by at most 2·C_j/n.  All p coordinates share one noise multiplier z and
  σ_j = z·2·C_j/n (Theorem 3.1 has the same shape).  Replace-one only: the
  mean and its noise σ_j are functions of n, so adding or removing a record
  changes the noise scale as well as the mean (not the shifted-Gaussian pair
  any accountant assumes); the zero record is not derived here.
* DP-GCD (:mod:`dpcd.privacy.gcd`): replace-one only, for the same reason.
* DP-SGD: sum of per-sample gradients clipped to ℓ2 norm C, so one record's
  contribution lies in the ball of radius C around 0.
  Add-or-remove-one or the zero record (Poisson sampling): sensitivity C.
  Replace-one: sensitivity 2·C; with Poisson sampling only the PLD accountant
  accounts it and its noise unit is the radius C (σ = z·C, see
  :func:`dpcd.privacy.accounting.sensitivity_unit`; above PLD's ε limit,
  or with ``accountant="rdp"``, unsampled Gaussians of sensitivity 2C,
  without amplification), with
  fixed-size batches without replacement the RDP accountant's unit is the
  sensitivity (σ = z·2C).
* DP-SCD (dual, Lemma 1): the [α; v] update of one mini-batch, rows of X of
  unit norm, each |ζ_i| ≤ C: one record's contribution has norm ≤ √2·C.
  Replacing a record by the zero record moves the update by at most √2·C
  (the paper's relation, ``replace_special``, Poisson sampling); replacing
  it by any record by at most 2√2·C (``replace_one``: without replacement,
  or Poisson through PLD with unit √2·C).  Not under add-or-remove-one: θ =
  v/(λN) and the dual variables are indexed by a public N.
* seqDP-SCD and primal DP-SCD (Lemmas 5, 4): 2·C·√(L(L+1)) = S(L); the
  proofs only use |ζ| ≤ C and unit norms on both datasets, so the bound holds
  under replace-one as well as for the zero record.  seqDP-SCD runs Poisson
  batches at a stated L_max (``max_batch_size``, default ``"auto"``; the
  probability of a larger batch is charged to δ): a batch holding the
  differing record moves the released state by at most S(L_max) from the
  state without it, so the zero record has sensitivity S(L_max) and
  replace-one the Poisson replace-one pair of PLD with unit S(L_max)
  (sensitivity 2·S(L_max)).  Fixed-size batches without replacement are an
  explicit opt-in whose ledger carries ``release_model_unproven``.  Primal
  (every record, q = 1) is replace-one only (public N).
* DP-SCD releases θ = v/(λN) only (α internal): docs/method/dp_scd_release.md.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpcd.privacy import accounting, cache
from dpcd.privacy.ledger import BudgetLine, Ledger, Mechanism
from dpcd.privacy.smoothness import SENSITIVITIES, smoothness_ledger
from dpcd.privacy.validation import (
    check_batch_size,
    check_choice,
    check_clip,
    check_delta,
    check_epsilon,
    check_n,
    check_passes,
    check_positive_int,
)

SAMPLINGS = ("poisson", "without_replacement")
ACCOUNTANT_CHOICES = ("auto", "rdp", "pld", "paper")
# The ``neighbouring`` setting: one relation for every solver, or each paper's own.
NEIGHBOURING = (*accounting.RELATIONS, "paper")


PUBLIC_N = ("its releases are means over a public n whose noise scale is a function of n; "
            "adding or removing a record changes the noise as well as the mean, and the "
            "zero-record relation is not derived for it")
_SCD_N = "the dual variables and theta = v/(lambda N) use a public N"


@dataclass(frozen=True)
class Relations:
    """The neighbouring relations one mechanism is calibrated under, per record
    sampling (the module docstring derives them). An algorithm spec carries its
    mechanism's (:attr:`dpcd.algorithms.Algorithm.relations`).

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


# The relations of each mechanism below. A paper's own: DP-SGD's (Abadi et
# al.'s moments accountant, the baseline of the three papers) add-or-remove-one
# with Poisson sampling; DP-SCD's the zero record with Poisson sampling;
# everything else, and any sampling without replacement, replace-one.
MEAN_RELATIONS = Relations({"*": ("replace_one",)}, PUBLIC_N)  # DP-CD, DP-CD-P, DP-GCD
DP_SGD_RELATIONS = Relations(
    {"poisson": ("add_or_remove_one", "replace_one", "replace_special"),
     "without_replacement": ("replace_one",)},
    "sampling without replacement is accounted under replace_one only")
DP_SCD_RELATIONS = Relations(  # dual and seqDP-SCD
    {"poisson": ("replace_special", "replace_one"), "without_replacement": ("replace_one",)},
    _SCD_N)
PRIMAL_DP_SCD_RELATIONS = Relations({"none": ("replace_one",)}, _SCD_N)
# The record sampling of dual and seqDP-SCD unless configured otherwise, under
# every relation: Poisson batches (seq at a stated L_max, ``max_batch_size``,
# "auto" by default), the only sampling whose theta-release is proven
# (docs/method/dp_scd_release.md).
SCD_SAMPLING = "poisson"


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


def _common(n, epsilon, delta, accountant):
    return (check_n(n), check_epsilon(epsilon), check_delta(delta),
            check_choice(accountant, "accountant", ACCOUNTANT_CHOICES))


def _budget_line(group, accountant, epsilon, achieved, delta, spec, z):
    # the event's repr goes through the cache like the calibration itself, so
    # that a job whose calibrations are cached never imports dp_accounting
    event = cache.cached("dp_event_repr", {"spec": list(spec), "z": float(z)},
                         lambda: repr(accounting.make_event(spec, z)))
    return BudgetLine(group=group, accountant=accountant, epsilon_target=epsilon,
                      epsilon_achieved=achieved, delta=delta, dp_event=event)


# ---------------------------------------------------------------- DP-CD
def theorem_3_1_multiplier(steps: int, epsilon: float, delta: float) -> float:
    """Noise multiplier of DP-CD Theorem 3.1 (valid for ε ≤ 1, δ < 1/3).

    σ_j² = 12 L_j² TK log(1/δ)/(n² ε²) with sensitivity 2 L_j/n gives
    z = σ_j/(2L_j/n) = √(3 TK log(1/δ))/ε.
    """
    return math.sqrt(3.0 * steps * math.log(1.0 / delta)) / epsilon


def dp_cd_steps(p: int, passes: float) -> int:
    """Number of coordinate updates T·K for ``passes`` passes over p coordinates."""
    return max(1, int(round(passes * p)))


def calibrate_dp_cd(n, p, passes, clip, epsilon, delta, accountant="auto",
                    relation="replace_one") -> Calibration:
    """Calibrate DP-CD (Algorithm 1 of Mangold et al. 2022).

    Parameters
    ----------
    n, p : int
        Number of records and of coordinates.
    passes : float
        Passes over the coordinates; T·K = round(passes·p) releases.
    clip : array_like, shape (p,) or scalar
        Coordinate clipping thresholds C_j.
    epsilon, delta : float
        Target budget.
    accountant : {"auto", "rdp", "pld", "paper"}
        ``"paper"`` uses Theorem 3.1's closed form (ε ≤ 1, δ < 1/3) and
        reports the ε that RDP certifies for it.
    relation : {"replace_one", "paper"}
        DP-CD releases means over a public n: replace-one only (see the
        module docstring); any other relation is refused.

    Returns
    -------
    Calibration
        ``noise_scales[j] = noise_multiplier · 2·C_j/n``.
    """
    n, epsilon, delta, accountant = _common(n, epsilon, delta, accountant)
    p = check_positive_int(p, "p")
    passes = check_passes(passes)
    clip = check_clip(clip, p)
    relation = MEAN_RELATIONS.resolve(relation, "dp_cd")
    steps = dp_cd_steps(p, passes)
    spec = ("gaussian", steps)
    if accountant == "paper":
        if epsilon > 1 or delta >= 1 / 3:
            raise ValueError("accountant: Theorem 3.1 needs epsilon <= 1 and delta < 1/3")
        z = theorem_3_1_multiplier(steps, epsilon, delta)
        achieved = accounting.epsilon_of(spec, z, delta, "rdp", relation)
        used = "paper"
    else:
        z, achieved, used = accounting.calibrate_multiplier(spec, epsilon, delta, accountant,
                                                            relation)
    sens = 2.0 * clip / n
    scales = z * sens
    mech = Mechanism(name="coordinate_gradient", kind="gaussian", sensitivity=sens.tolist(),
                     sensitivity_norm="l2", noise_multiplier=z, noise_scale=scales.tolist(),
                     count=steps, relation=relation,
                     note="mean of coordinate gradients clipped to [-C_j, C_j]")
    ledger = Ledger(algorithm="dp_cd", neighbouring=relation, accountant=used,
                    epsilon_target=epsilon, epsilon_achieved=achieved, delta=delta,
                    mechanisms=[mech],
                    budget=[_budget_line("optimisation", used, epsilon, achieved, delta, spec, z)])
    return Calibration(noise_multiplier=z, noise_scales=scales, ledger=ledger,
                       epsilon_achieved=achieved, steps=steps)


def split_smoothness_budget(epsilon: float, fraction: float = 0.1) -> tuple[float, float]:
    """Split ε into (ε′ for smoothness estimation, ε − ε′ for DP-CD)."""
    epsilon = check_epsilon(epsilon)
    if not 0 < fraction < 1:
        raise ValueError(f"smoothness_fraction must be in (0, 1), got {fraction}")
    eps_smooth = fraction * epsilon
    return eps_smooth, epsilon - eps_smooth


def calibrate_dp_cd_p(n, p, passes, clip, epsilon, delta, bounds=None,
                      smoothness_fraction=0.1, accountant="auto",
                      smoothness_sensitivity="replace_one",
                      relation="replace_one") -> Calibration:
    """Calibrate DP-CD with private smoothness constants (Appendix F).

    ``smoothness_fraction·ε`` goes to the Laplace release of the p clipped
    smoothness means (pure DP, see :mod:`dpcd.privacy.smoothness`), the rest
    to DP-CD at the same δ.  The ledger has one budget line for each; their ε
    add up to the target.  Parameters other than ``bounds`` are as in
    :func:`calibrate_dp_cd`.

    Parameters
    ----------
    bounds : array_like, shape (p,) or scalar, optional
        Public bounds b_j on the per-sample constants; needed for the
        smoothness noise scales, returned in ``extra["smoothness_scales"]``.
        Defaults to 1 (the multiplier does not depend on it).
    """
    check_choice(smoothness_sensitivity, "smoothness_sensitivity", SENSITIVITIES)
    relation = MEAN_RELATIONS.resolve(relation, "dp_cd_p")
    eps_smooth, eps_cd = split_smoothness_budget(epsilon, smoothness_fraction)
    cal = calibrate_dp_cd(n, p, passes, clip, eps_cd, delta, accountant=accountant,
                          relation=relation)
    bounds = check_clip(1.0 if bounds is None else bounds, check_positive_int(p, "p"),
                        name="bounds")
    smooth = smoothness_ledger(n, bounds, eps_smooth, smoothness_sensitivity)
    ledger = Ledger.combine([smooth, cal.ledger], algorithm="dp_cd_p")
    extra = {"smoothness_epsilon": eps_smooth,
             "smoothness_scales": np.asarray(smooth.mechanisms[0].noise_scale),
             "smoothness_noise_multiplier": smooth.mechanisms[0].noise_multiplier}
    return dataclasses.replace(cal, ledger=ledger,
                               epsilon_achieved=ledger.epsilon_achieved, extra=extra)


# ---------------------------------------------------------------- DP-SGD
def _sampled_spec(n, batch_size, steps, sampling):
    if sampling == "poisson":
        return ("poisson_gaussian", batch_size / n, steps)
    return ("wor_gaussian", n, batch_size, steps)


def _accounted_spec(spec, epsilon, relation, accountant="auto"):
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


def _sampled_calibration(spec, epsilon, delta, accountant, relation):
    if accountant == "paper":
        # DP-SGD and DP-SCD were calibrated with the moments accountant (RDP).
        accountant = "rdp"
    return accounting.calibrate_multiplier(spec, epsilon, delta, accountant, relation)


def calibrate_dp_sgd(n, batch_size, passes, clip, epsilon, delta, sampling="poisson",
                     accountant="auto", relation=None) -> Calibration:
    """Calibrate DP-SGD: per-sample ℓ2 clipping at C, sampled batches, Gaussian noise.

    Parameters
    ----------
    n, batch_size : int
        Records and (expected) batch size; q = batch_size/n.
    passes : float
        T = ceil(passes·n/batch_size) steps.
    clip : float
        ℓ2 clipping threshold C.
    sampling : {"poisson", "without_replacement"}
        Must be the sampling the solver performs.
    relation : {"replace_one", "add_or_remove_one", "replace_special", "paper"}, optional
        ``"add_or_remove_one"`` or ``"replace_special"`` (Poisson only,
        sensitivity C, noise z·C) or ``"replace_one"`` (sensitivity 2C; noise
        z·C with Poisson, accounted by PLD, whose unit is one record's
        contribution; z·2C without replacement, RDP).  None or ``"paper"``:
        add-or-remove with Poisson, replace-one without replacement.

    Returns
    -------
    Calibration
        ``noise_scales`` is the std of the noise added to the *sum* of clipped
        per-sample gradients of a batch.
    """
    n, epsilon, delta, accountant = _common(n, epsilon, delta, accountant)
    batch_size = check_batch_size(batch_size, n)
    passes = check_passes(passes)
    clip = float(check_clip(clip))
    check_choice(sampling, "sampling", SAMPLINGS)
    relation = DP_SGD_RELATIONS.resolve(relation, "dp_sgd", sampling)
    steps = int(math.ceil(passes * n / batch_size))
    spec = _accounted_spec(_sampled_spec(n, batch_size, steps, sampling), epsilon, relation,
                           accountant)
    z, achieved, used = _sampled_calibration(spec, epsilon, delta, accountant, relation)
    # one record's clipped gradient lies in the ball of radius C around 0
    sens = clip if relation in ("add_or_remove_one", "replace_special") else 2.0 * clip
    q = batch_size / n
    mech = _sampled_mechanism("clipped_gradient_sum", spec, relation, z, sens, steps, sampling,
                              q, f"per-sample l2 clipping at C={clip:g}")
    ledger = Ledger(algorithm="dp_sgd", neighbouring=relation, accountant=used,
                    epsilon_target=epsilon, epsilon_achieved=achieved, delta=delta,
                    mechanisms=[mech],
                    budget=[_budget_line("optimisation", used, epsilon, achieved, delta, spec, z)])
    return Calibration(noise_multiplier=mech.noise_multiplier, noise_scales=mech.noise_scale,
                       ledger=ledger, epsilon_achieved=achieved, steps=steps,
                       sampling=sampling, sampling_rate=q)


def _sampled_mechanism(name, spec, relation, z, sens, steps, sampling, q, note, released=""):
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


# ---------------------------------------------------------------- DP-SCD
SCD_VARIANTS = ("dual", "seq", "primal")
# With max_batch_size="auto": the smallest L_max whose tail probability is at
# most this share of delta.
SCD_TAIL_SHARE = 0.01


def dp_scd_sensitivity(clip: float, batch_size: int, variant: str, relation: str) -> float:
    """ℓ2 sensitivity of one DP-SCD mini-batch update (Lemmas 1, 4, 5).

    ``dual``: √2·C for the zero record (``replace_special``), 2√2·C under
    ``replace_one``.  ``seq``/``primal``: 2·C·√(L(L+1)) under both, with L
    the number of records (seq) or coordinates (primal) the batch holds.
    """
    check_choice(variant, "variant", SCD_VARIANTS)
    if variant == "dual":
        return (math.sqrt(2.0) if relation != "replace_one" else 2.0 * math.sqrt(2.0)) * clip
    return 2.0 * clip * math.sqrt(batch_size * (batch_size + 1.0))


def poisson_batch_tail(n: int, batch_size: int, steps: int, max_batch_size: int) -> float:
    """Probability bound that some Poisson batch holds L_max others besides a record.

    ``steps · P(Binomial(n − 1, L/n) ≥ L_max)`` (union bound): outside this
    event every batch that holds a given record holds at most L_max records,
    so Lemma 5 with L_max bounds each seqDP-SCD step
    (docs/method/dp_scd_release.md, section 4).
    """
    from scipy import stats

    tail = float(stats.binom.sf(max_batch_size - 1, n - 1, batch_size / n))
    return min(1.0, steps * tail)


def _max_batch_size(max_batch_size, n, batch_size, steps, delta):
    """L_max as an int in [L, n], ``"auto"`` resolved (see :func:`calibrate_dp_scd`)."""
    if max_batch_size == "auto":
        target = SCD_TAIL_SHARE * delta
        lo, hi = batch_size, n  # the tail is 0 at n: P(Bin(n - 1) >= n) = 0
        while lo < hi:
            mid = (lo + hi) // 2
            if poisson_batch_tail(n, batch_size, steps, mid) <= target:
                hi = mid
            else:
                lo = mid + 1
        return lo
    max_batch_size = check_positive_int(max_batch_size, "max_batch_size")
    if not batch_size <= max_batch_size <= n:
        raise ValueError(f"max_batch_size must be in [batch_size, n] = [{batch_size}, {n}], "
                         f"got {max_batch_size}")
    return max_batch_size


def calibrate_dp_scd(n, p, batch_size, clip, epsilon, delta, iterations=None, passes=None,
                     variant="dual", sampling=None, accountant="auto",
                     relation=None, max_batch_size=None) -> Calibration:
    """Calibrate DP-SCD (Damaskinos et al. 2021) and its seq/primal variants.

    The released quantity is θ = v/(λN) (``released: theta`` in the ledger);
    the noise is calibrated on the [α_B; v] (or [θ_B; v]) update as in the
    paper, with α (or v) internal state: see docs/method/dp_scd_release.md.

    Parameters
    ----------
    n, p : int
        Records N and features.
    batch_size : int
        Mini-batch size L (records for dual/seq, coordinates for primal).
    clip : float
        Update scaling bound C (Step 8).
    iterations, passes : optional
        T mini-batches; or passes, giving T = ceil(passes·n/L) (dual, seq) or
        ceil(passes·p/L) (primal).  Exactly one must be given.
    variant : {"dual", "seq", "primal"}
    sampling : {"poisson", "without_replacement", "none"}, optional
        The sampling of records the solver performs (default
        :data:`SCD_SAMPLING`: Poisson for dual and seq).  ``"poisson"``:
        the zero record (the paper's) or replace-one through PLD, both proven
        for the θ-release; ``"without_replacement"`` (exactly L records):
        replace-one, RDP only, an explicit opt-in whose ledger carries the
        caveat ``release_model_unproven`` (docs/method/dp_scd_release.md,
        section 6).  Primal touches all records every step (q = 1):
        ``"none"`` only.
    relation : {"replace_one", "replace_special", "paper"}, optional
        None or ``"paper"``: the zero record with Poisson sampling, replace-one
        otherwise.  Dual and seq with Poisson also run under
        ``"replace_one"`` (PLD only); the rest is refused (see the module
        docstring).
    max_batch_size : int or "auto", optional
        seqDP-SCD with Poisson batches only: L_max, ``"auto"`` when not
        given.  The noise follows Lemma 5 at L_max, and the probability that
        some batch holding the differing record holds more than L_max records
        (:func:`poisson_batch_tail`) is charged to δ (a budget line
        ``batch_size_tail``).  ``"auto"``: the smallest L_max whose tail is
        at most 1 % of δ.

    Returns
    -------
    Calibration
        ``noise_scales`` is the std of the Gaussian noise added to every
        entry of the concatenated [α_B; v] (or [θ_B; v]) update.

    Raises
    ------
    ValueError
        Among others, for a relation the variant and sampling are not
        calibrated under (:data:`DP_SCD_RELATIONS`), or an L_max whose tail
        probability is not below δ.
    """
    n, epsilon, delta, accountant = _common(n, epsilon, delta, accountant)
    check_choice(variant, "variant", SCD_VARIANTS)
    p = check_positive_int(p, "p")
    clip = float(check_clip(clip))
    algorithm = {"dual": "dp_scd", "seq": "seq_dp_scd", "primal": "primal_dp_scd"}[variant]
    if sampling is None:
        sampling = "none" if variant == "primal" else SCD_SAMPLING
    if variant == "primal":
        batch_size = check_positive_int(batch_size, "batch_size")
        if batch_size > p:
            raise ValueError(f"batch_size must be <= p = {p} for primal DP-SCD, got {batch_size}")
        if sampling != "none":
            raise ValueError("sampling: primal DP-SCD uses every record each step (q = 1); "
                             "sampling must be 'none'")
    else:
        batch_size = check_batch_size(batch_size, n)
        check_choice(sampling, "sampling", SAMPLINGS)
    relations = PRIMAL_DP_SCD_RELATIONS if variant == "primal" else DP_SCD_RELATIONS
    relation = relations.resolve(relation, algorithm, sampling)
    if max_batch_size is not None and not (variant == "seq" and sampling == "poisson"):
        raise ValueError("max_batch_size: only seqDP-SCD with Poisson batches has one (the "
                         f"other samplings and variants do not depend on it); got {variant} "
                         f"with sampling={sampling!r}")
    if variant == "seq" and sampling == "poisson" and max_batch_size is None:
        # Lemma 5 at the expected L does not bound the batches Poisson draws
        max_batch_size = "auto"
    if (iterations is None) == (passes is None):
        raise ValueError("iterations: give exactly one of iterations or passes")
    if iterations is not None:
        steps = check_positive_int(iterations, "iterations")
    else:
        size = p if variant == "primal" else n
        steps = int(math.ceil(check_passes(passes) * size / batch_size))
    if sampling == "none":
        spec, q = ("gaussian", steps), 1.0
    else:
        spec, q = _sampled_spec(n, batch_size, steps, sampling), batch_size / n
    sens_batch, tail, extra = batch_size, 0.0, {}
    if max_batch_size is not None:
        sens_batch = _max_batch_size(max_batch_size, n, batch_size, steps, delta)
        tail = poisson_batch_tail(n, batch_size, steps, sens_batch)
        if not tail < delta:
            raise ValueError(f"max_batch_size: L_max = {sens_batch} leaves a tail probability "
                             f"{tail:.3g} >= delta = {delta}; raise it")
        extra = {"max_batch_size": sens_batch, "delta_tail": tail}
    spec = _accounted_spec(spec, epsilon, relation)
    z, achieved, used = _sampled_calibration(spec, epsilon, delta - tail, accountant, relation)
    sens = dp_scd_sensitivity(clip, sens_batch, variant, relation)
    if variant == "seq" and sampling == "poisson" and relation == "replace_one":
        # S(L_max) bounds the shift from the state without the record, on
        # either dataset: the Poisson replace-one pair's unit (section 8)
        sens = 2.0 * sens
    lemma = {"dual": "Lemma 1", "seq": "Lemma 5", "primal": "Lemma 4"}[variant]
    note = f"{variant} DP-SCD, {lemma}, unit-norm records, C={clip:g}"
    if max_batch_size is not None:
        note += f", L_max={sens_batch} (tail {tail:.3g} charged to delta)"
    caveats = ()
    if sampling == "without_replacement":
        # fixed-size batches: a record drawn pushes another out, whose hidden
        # alpha then lags; theta-only release is not reduced to this accounting
        note += ("; theta released with alpha internal: the reduction to this accounting "
                 "is not established (docs/method/dp_scd_release.md, section 6)")
        caveats = ("release_model_unproven",)
    mech = _sampled_mechanism("minibatch_update", spec, relation, z, sens, steps, sampling, q,
                              note, released="theta")
    budget = [_budget_line("optimisation", used, epsilon, achieved, delta - tail, spec, z)]
    if max_batch_size is not None:
        budget.append(BudgetLine(group="batch_size_tail", accountant="binomial_tail",
                                 epsilon_target=0.0, epsilon_achieved=0.0, delta=tail))
    ledger = Ledger(algorithm=algorithm, neighbouring=relation, accountant=used,
                    epsilon_target=epsilon, epsilon_achieved=achieved, delta=delta,
                    mechanisms=[mech], budget=budget, caveats=caveats)
    return Calibration(noise_multiplier=mech.noise_multiplier, noise_scales=mech.noise_scale,
                       ledger=ledger, epsilon_achieved=achieved, steps=steps,
                       sampling=sampling, sampling_rate=q, extra=extra)
