"""DP-SGD calibration: per-sample ℓ2 clipping at C, sampled batches, Gaussian noise.

Sensitivity: the sum of per-sample gradients clipped to ℓ2 norm C, so one
record's contribution lies in the ball of radius C around 0.
Add-or-remove-one or the zero record (Poisson sampling): sensitivity C.
Replace-one: sensitivity 2·C; with Poisson sampling only the PLD accountant
accounts it and its noise unit is the radius C (σ = z·C, see
:func:`dpcd.privacy.accounting.sensitivity_unit`; above PLD's ε limit, or
with ``accountant="rdp"``, unsampled Gaussians of sensitivity 2C, without
amplification), with fixed-size batches without replacement the RDP
accountant's unit is the sensitivity (σ = z·2C).
"""

from __future__ import annotations

import math

from dpcd.privacy import accounting, secure
from dpcd.privacy.calibrate import (
    SAMPLINGS,
    Calibration,
    Relations,
    accounted_spec,
    budget_line,
    check_common,
    sampled_calibration,
    sampled_mechanism,
    sampled_spec,
)
from dpcd.privacy.ledger import Ledger
from dpcd.privacy.validation import check_batch_size, check_choice, check_clip, check_passes

# Its paper's relation first: Abadi et al.'s moments accountant (the baseline
# of the three papers), add-or-remove-one with Poisson sampling; sampling
# without replacement, replace-one.
DP_SGD_RELATIONS = Relations(
    {"poisson": ("add_or_remove_one", "replace_one", "replace_special"),
     "without_replacement": ("replace_one",)},
    "sampling without replacement is accounted under replace_one only")


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
    n, epsilon, delta, accountant = check_common(n, epsilon, delta, accountant)
    batch_size = check_batch_size(batch_size, n)
    passes = check_passes(passes)
    clip = float(check_clip(clip))
    check_choice(sampling, "sampling", SAMPLINGS)
    relation = DP_SGD_RELATIONS.resolve(relation, "dp_sgd", sampling)
    steps = int(math.ceil(passes * n / batch_size))
    spec = accounted_spec(sampled_spec(n, batch_size, steps, sampling), epsilon, relation,
                           accountant)
    z, achieved, used = sampled_calibration(spec, epsilon, delta, accountant, relation)
    # one record's clipped gradient lies in the ball of radius C around 0
    sens = clip if relation in ("add_or_remove_one", "replace_special") else 2.0 * clip
    q = batch_size / n
    mech = sampled_mechanism("clipped_gradient_sum", spec, relation, z, sens, steps, sampling,
                              q, f"per-sample l2 clipping at C={clip:g}")
    ledger = Ledger(algorithm="dp_sgd", neighbouring=relation, accountant=used,
                    epsilon_target=epsilon, epsilon_achieved=achieved, delta=delta,
                    mechanisms=[mech],
                    budget=[budget_line("optimisation", used, epsilon, achieved, delta, spec, z)])
    return Calibration(noise_multiplier=mech.noise_multiplier, noise_scales=mech.noise_scale,
                       ledger=ledger, epsilon_achieved=achieved, steps=steps,
                       sampling=sampling, sampling_rate=q)


def _units(n, batch_size, passes, epsilon, sampling, accountant, relation):
    """The sensitivity the calibration's multiplier is relative to, in units of
    C: one record's radius C (Poisson, add-or-remove or zero record; PLD's
    replace-one unit), or 2C (replace-one accounted without amplification)."""
    relation = DP_SGD_RELATIONS.resolve(relation, "dp_sgd", sampling)
    steps = int(math.ceil(check_passes(passes) * n / batch_size))
    spec = accounted_spec(sampled_spec(n, batch_size, steps, sampling), epsilon, relation,
                          accountant)
    sens = 1.0 if relation in ("add_or_remove_one", "replace_special") else 2.0
    return accounting.sensitivity_unit(spec, relation) * sens


def secure_dp_sgd(n, batch_size, passes, clip, epsilon, delta, dim, sampling="poisson",
                  accountant="auto", relation=None) -> secure.LatticeGaussian:
    """DP-SGD's secure calibration: per-record clipped gradients rounded to the
    grid C/m, integer sums, exact discrete Gaussian noise per coordinate
    (:func:`dpcd.privacy.secure.secure_lattice`).

    Parameters as :func:`calibrate_dp_sgd`, plus ``dim``, the coordinates of
    the iterate. Only Poisson sampling (what the secure kernel draws).

    Returns
    -------
    dpcd.privacy.secure.LatticeGaussian
        Its ``calibration.noise_scales`` is the std on the sums (``s·C/m``),
        within 1 % of the fast path's at the same target.
    """
    if sampling != "poisson":
        raise ValueError(f"noise='secure': DP-SGD samples its batches by Poisson sampling "
                         f"only, got sampling={sampling!r}")
    n, epsilon, delta, accountant = check_common(n, epsilon, delta, accountant)
    batch_size = check_batch_size(batch_size, n)
    accountant = secure.check_accountant(accountant)
    units = _units(n, batch_size, passes, epsilon, sampling, accountant, relation)

    def calibrate(eps, dlt):
        if _units(n, batch_size, passes, eps, sampling, accountant, relation) != units:
            raise ValueError(f"noise='secure': epsilon={epsilon:g} is too near the pld "
                             f"accountant's limit {accounting.PLD_MAX_EPSILON:g}")
        return calibrate_dp_sgd(n, batch_size, passes, clip, eps, dlt, sampling, accountant,
                                relation)

    # one rounded record moves the sums by its radius: records = units (1 or 2)
    return secure.secure_lattice(calibrate, epsilon, delta, clip=float(check_clip(clip)),
                                 units=units, dim=int(dim), draws_per_step=int(dim), terms=n,
                                 records=int(units))
