"""DP-CD with privately estimated smoothness constants (Mangold et al. 2022,
Section 5.2, Appendix F): the estimate spends ``smoothness_fraction`` of
epsilon, optimisation the rest, and the two ledger lines add up."""
import dataclasses

import numpy as np

from dpcd import privacy
from dpcd.privacy.bounds import feature_bound_ledger
from dpcd.algorithms.base import (
    CLIP,
    STEP,
    Algorithm,
    Hyperparameter,
    Preparation,
    Privacy,
    Runtime,
)
from dpcd.algorithms.dp_cd import (calibrate_clipped, cd_noise, coordinate_clip, nominal,
                                   run_with)
from dpcd.algorithms.prepare import BOUND_SHARE
from dpcd.solvers import warmup

SMOOTHNESS_FRACTION = Hyperparameter(
    "smoothness_fraction",
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
     "description": "Share of epsilon spent on the smoothness constants (search "
                    "private: of each candidate's training budget)."},
    default=0.1, estimator=False,
)


def run(problem, config, seed, budget, private_smoothness=None):
    """DP-CD with private smoothness constants (Section 5.2, Appendix F).

    ``private_smoothness`` holds the estimate released for this seed (in a
    private search: for this candidate, from its own stream,
    :func:`dpcd.tuning.workflow.candidate_smoothness`) and its ledger line;
    optimisation gets the rest of epsilon, and both lines add up (a private
    search composes them in RDP instead, :mod:`dpcd.tuning.candidates`).
    """
    if private_smoothness is None:
        raise ValueError("dp_cd_p needs the private smoothness estimate of its seed")
    smoothness = np.asarray(private_smoothness["smoothness"], dtype=np.float64)
    fraction = private_smoothness["smoothness_fraction"]
    clip = coordinate_clip(smoothness, config["clip"])
    calibration, secure = calibrate_clipped(problem, config, clip,
                                            (1.0 - fraction) * budget.epsilon, budget)
    result = run_with(problem, config, seed, smoothness, clip, calibration, secure,
                      budget.passes(config))
    estimate_ledger = privacy.Ledger.from_dict(private_smoothness["ledger"])
    ledger = privacy.Ledger.combine([estimate_ledger, calibration.ledger], algorithm="dp_cd_p")
    return result, ledger


def prediction_noise(problem, config, budget, private_smoothness):
    """:func:`~dpcd.algorithms.dp_cd.cd_noise` of the run at its released
    constants and its share of epsilon."""
    smoothness = np.asarray(private_smoothness["smoothness"], dtype=np.float64)
    fraction = private_smoothness["smoothness_fraction"]
    clip = coordinate_clip(smoothness, config["clip"])
    calibration, _ = calibrate_clipped(problem, config, clip,
                                       (1.0 - fraction) * budget.epsilon, budget)
    return cd_noise(problem.datafit, smoothness, config["step"], calibration.noise_scales,
                    config["passes"])


def calibrate(problem, config, budget, smoothness_count=None, private_bound=False):
    """The ledger a run at ``budget`` gets, without data: the smoothness
    release at ``smoothness_fraction * epsilon`` (pure DP, noise multiplier
    ``count / eps`` per constant, :func:`dpcd.privacy.smoothness_ledger`) and
    DP-CD's steps at ``(1 - smoothness_fraction) * epsilon``, the same
    arithmetic as :func:`run` and the estimators, so the noise multipliers are
    the run's bit for bit (they depend on no constant: thresholds are probed
    at unit smoothness).

    ``smoothness_count``: constants released (default every coordinate; the
    estimators' intercept is public). ``private_bound``: a feature bound is
    released first with ``BOUND_SHARE`` of the smoothness share, as the estimators do
    without public ``bounds`` (:mod:`dpcd.privacy.bounds`).
    """
    fraction = config.get("smoothness_fraction", SMOOTHNESS_FRACTION.default)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
            or not 0 < fraction < 1:
        raise ValueError(f"smoothness_fraction must be in (0, 1), got {fraction!r}")
    p = problem.n_features
    clip = coordinate_clip(np.ones(p), config["clip"])
    calibration, _ = calibrate_clipped(problem, config, clip,
                                       (1.0 - fraction) * budget.epsilon, budget)
    eps_smooth = fraction * budget.epsilon
    ledgers = []
    if private_bound:
        eps_bound = BOUND_SHARE * eps_smooth
        eps_smooth = eps_smooth - eps_bound
        ledgers.append(feature_bound_ledger(problem.n_samples, eps_bound))
    count = p if smoothness_count is None else int(smoothness_count)
    ledgers.append(privacy.smoothness_ledger(problem.n_samples, np.ones(count), eps_smooth))
    # secure: the same pure-DP lines, released on a grid by the run (their
    # discrete noise is never below the continuous one's, privacy.secure)
    ledgers = [dataclasses.replace(led, noise=budget.noise) for led in ledgers]
    ledger = privacy.Ledger.combine(ledgers + [calibration.ledger], algorithm="dp_cd_p")
    return dataclasses.replace(calibration, ledger=ledger,
                               epsilon_achieved=ledger.epsilon_achieved)


SPEC = Algorithm(
    name="dp_cd_p",
    description="DP-CD with privately estimated smoothness constants (Appendix F).",
    run=run,
    hyperparameters=(STEP, CLIP, SMOOTHNESS_FRACTION),
    required=("step", "clip"),
    losses=("squares", "logistic"),
    # each candidate releases its own smoothness estimate, composed into its
    # event (dpcd.tuning.candidates), not the per-seed estimate of the grid runs
    privacy=Privacy(calibrate=calibrate, relations=privacy.MEAN_RELATIONS, secure=True,
                    candidate=True),
    preparation=Preparation(smoothness="private", relative_clip=True, defaults=nominal,
                            prediction_noise=prediction_noise),
    runtime=Runtime(family="dp_cd", warm=warmup.dp_cd, step_cost_ns={"dense": 1.85}),
)
