"""DP-CD with privately estimated smoothness constants (Mangold et al. 2022,
Section 5.2, Appendix F): the estimate spends ``smoothness_fraction`` of
epsilon, optimisation the rest, and the two ledger lines add up."""
import numpy as np

from dpcd import privacy, solvers
from dpcd.algorithms.base import CLIP, STEP, Algorithm, Hyperparameter
from dpcd.algorithms.dp_cd import calibrate_clipped, run_with

SMOOTHNESS_FRACTION = Hyperparameter(
    "smoothness_fraction",
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
     "description": "Share of epsilon spent on the smoothness constants."},
    default=0.1, estimator=False,
)


def run(problem, config, seed, budget, private_smoothness=None):
    """DP-CD with private smoothness constants (Section 5.2, Appendix F).

    ``private_smoothness`` holds the estimate released for this seed and its
    ledger line; optimisation gets the rest of epsilon, and both lines add up.
    """
    if private_smoothness is None:
        raise ValueError("dp_cd_p needs the private smoothness estimate of its seed")
    smoothness = np.asarray(private_smoothness["smoothness"], dtype=np.float64)
    fraction = private_smoothness["smoothness_fraction"]
    clip = solvers.coordinate_clip(smoothness, config["clip"])
    calibration, secure = calibrate_clipped(problem, config, clip,
                                            (1.0 - fraction) * budget.epsilon, budget)
    result = run_with(problem, config, seed, smoothness, clip, calibration, secure,
                      budget.passes(config))
    estimate_ledger = privacy.Ledger.from_dict(private_smoothness["ledger"])
    ledger = privacy.Ledger.combine([estimate_ledger, calibration.ledger])
    return result, ledger


SPEC = Algorithm(
    name="dp_cd_p",
    description="DP-CD with privately estimated smoothness constants (Appendix F).",
    run=run,
    hyperparameters=(STEP, CLIP, SMOOTHNESS_FRACTION),
    required=("step", "clip"),
    losses=("squares", "logistic"),
    family="dp_cd",
    relative_clip=True,
    smoothness="private",
)
