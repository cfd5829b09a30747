"""DP-CD and DP-CD-P calibration (Mangold et al. 2022, Theorem 3.1, Appendix F).

Sensitivity: coordinate gradient j is a mean over n per-sample coordinate
gradients clipped to [−C_j, C_j]; replacing one record moves it by at most
2·C_j/n.  All p coordinates share one noise multiplier z and
σ_j = z·2·C_j/n (Theorem 3.1 has the same shape).  Replace-one only
(:data:`dpcd.privacy.calibrate.MEAN_RELATIONS`).  DP-CD-P first releases the
smoothness constants with a share of ε (:mod:`dpcd.privacy.smoothness`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpcd.privacy import accounting
from dpcd.privacy.calibrate import MEAN_RELATIONS, Calibration, budget_line, check_common
from dpcd.privacy.ledger import Ledger, Mechanism
from dpcd.privacy.smoothness import SENSITIVITIES, smoothness_ledger
from dpcd.privacy.validation import (
    check_choice,
    check_clip,
    check_epsilon,
    check_passes,
    check_positive_int,
)


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
        DP-CD releases means over a public n: replace-one only (see
        :mod:`dpcd.privacy.calibrate`); any other relation is refused.

    Returns
    -------
    Calibration
        ``noise_scales[j] = noise_multiplier · 2·C_j/n``.
    """
    n, epsilon, delta, accountant = check_common(n, epsilon, delta, accountant)
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
                    budget=[budget_line("optimisation", used, epsilon, achieved, delta, spec, z)])
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
