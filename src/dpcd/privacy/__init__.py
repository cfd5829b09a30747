"""Privacy accounting: the single place where (ε, δ) become noise scales.

Every solver gets its noise from one of the ``calibrate_*`` functions (one
module per algorithm family: :mod:`~dpcd.privacy.cd`,
:mod:`~dpcd.privacy.gcd`, :mod:`~dpcd.privacy.sgd`, :mod:`~dpcd.privacy.scd`;
what they share in :mod:`~dpcd.privacy.calibrate`), which describe the run's
releases as ``dp_accounting`` events, search the smallest noise meeting the
target ε at δ (RDP or PLD accountant, default the tightest valid one) and
return a :class:`Calibration` carrying the noise scales and the
:class:`Ledger` to log. See docs/method/privacy.md.
"""

from dpcd.privacy import secure
from dpcd.privacy.accounting import calibrate_multiplier, epsilon_of, make_event
from dpcd.privacy.calibrate import (
    MEAN_RELATIONS,
    NEIGHBOURING,
    Calibration,
    Relations,
    check_sampling,
)
from dpcd.privacy.cd import (
    calibrate_dp_cd,
    calibrate_dp_cd_p,
    split_smoothness_budget,
    theorem_3_1_multiplier,
)
from dpcd.privacy.gcd import calibrate_dp_gcd, theorem_4_2_scales
from dpcd.privacy.ledger import BudgetLine, Ledger, Mechanism
from dpcd.privacy.scd import (
    DP_SCD_RELATIONS,
    PRIMAL_DP_SCD_RELATIONS,
    SCD_SAMPLING,
    calibrate_dp_scd,
    dp_scd_sensitivity,
    poisson_batch_tail,
)
from dpcd.privacy.sgd import DP_SGD_RELATIONS, calibrate_dp_sgd, secure_dp_sgd
from dpcd.privacy.smoothness import (
    estimate_smoothness,
    private_smoothness,
    smoothness_ledger,
)

__all__ = [
    "DP_SCD_RELATIONS",
    "DP_SGD_RELATIONS",
    "MEAN_RELATIONS",
    "NEIGHBOURING",
    "PRIMAL_DP_SCD_RELATIONS",
    "SCD_SAMPLING",
    "Relations",
    "BudgetLine",
    "Calibration",
    "Ledger",
    "Mechanism",
    "calibrate_dp_cd",
    "calibrate_dp_cd_p",
    "calibrate_dp_gcd",
    "calibrate_dp_scd",
    "calibrate_dp_sgd",
    "calibrate_multiplier",
    "check_sampling",
    "dp_scd_sensitivity",
    "epsilon_of",
    "make_event",
    "poisson_batch_tail",
    "estimate_smoothness",
    "private_smoothness",
    "secure",
    "secure_dp_sgd",
    "smoothness_ledger",
    "split_smoothness_budget",
    "theorem_3_1_multiplier",
    "theorem_4_2_scales",
]
