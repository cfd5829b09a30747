"""Hyperparameter defaults derived from the problem (the estimators' ``"auto"``).

An estimator hyperparameter left at ``"auto"`` takes the value its spec
derives from public quantities: the data's shape, the loss, ε and δ, and,
for the clipping threshold, the noise the accountant calibrates for them.

1. **Nominal values** (``spec.preparation.defaults(n_samples, n_features,
   loss)``): the step its theory gives (``1 / M_j`` per coordinate,
   ``1 / beta`` for DP-SGD), batch sizes and iteration counts from the
   shape (DP-SGD: about :data:`SGD_STEPS_PER_PASS` steps a pass; DP-GCD: two
   greedy iterations per coordinate; DP-SCD: one pass).
2. **The noise rule** (:func:`resolve_clip`): the clipping threshold is
   every solver's lever on both its noise and its progress. The spec's
   ``preparation.prediction_noise(problem, config, budget,
   private_smoothness)`` gives the standard deviation that the calibrated
   noise adds to a prediction ``x^T w`` of a standardised record by the end
   of the run (each model's derivation is in its spec; where clipping binds
   the noise is a random walk); it is proportional to the threshold. The
   threshold is the nominal one, scaled down until that standard deviation
   is at most :data:`TAU` (in units of a standardised target, or of a
   margin).

Where n·ε is large the rule leaves the nominal threshold alone. Where the
noise must dominate, it shrinks the threshold, so that every update, noise
included, is small: the fit stays near its starting point, the zero model,
and predicts the intercept's value (the mean of a standardised target) as a
shrinkage estimator would, instead of a noisy model far from it. This costs
no privacy: the rule reads only n, p, ε, δ and the hyperparameters, and the
calibration it reads is the one the run pays for. What it assumes (features
and target standardised) is checked on public information only, with a
warning (:mod:`dpcd.estimators.warnings`).
"""

import dataclasses
import math

AUTO = "auto"

# Target standard deviation of the noise in a prediction, per loss: a tenth
# of a standardised target's (at most about 0.01 of R^2 lost to noise); half
# a unit of margin for classifiers, whose accuracy barely moves with it
# (0.1 cost 2 to 3 points of accuracy on the defaults suite's problem at
# n = 10 000, epsilon = 1; 0.5 none).
TAU = {"squares": 0.1, "logistic": 0.5, "hinge": 0.5}

# DP-SGD: expected batch such that one pass is about this many steps.
SGD_STEPS_PER_PASS = 20


# Share of epsilon that a classifier whose default falls back (falls_back)
# spends on the count of its positive labels (dpcd.privacy.labels), so that
# its intercept predicts the majority class; the run gets the rest. At
# epsilon = 1 the count's noise has a standard deviation of 28 records.
LABEL_SHARE = 0.05


# The nominal values of a spec that derives none (a solver registered from
# outside): the estimators' fixed defaults before they were derived.
FIXED = {"step": 1.0, "clip": 1.0, "batch_size": 1, "passes": 10}


def nominal(spec, n_samples, n_features, loss):
    """The spec's nominal hyperparameters (``spec.preparation.defaults``), over
    :data:`FIXED`."""
    derive = spec.preparation.defaults
    derived = {} if derive is None else derive(n_samples, n_features, loss)
    return {**FIXED, **derived}


def is_auto(value):
    """Whether a hyperparameter value asks for its derived default."""
    return isinstance(value, str) and value == AUTO


def prediction_noise(spec, problem, config, budget, private_smoothness=None):
    """The spec's ``prediction_noise`` at ``config``, from the fast path's
    calibration (so both noise modes get the same threshold)."""
    fast = dataclasses.replace(budget, noise="fast")
    return float(spec.preparation.prediction_noise(problem, config, fast, private_smoothness))


def target(problem):
    """:data:`TAU` of the problem's loss."""
    return TAU[problem.datafit.name]


def resolve_clip(spec, problem, config, budget, private_smoothness=None, tau=None):
    """``config`` with its threshold scaled so that the prediction noise is at
    most ``tau`` (the nominal threshold when it already is).

    Parameters
    ----------
    spec : Algorithm
        Its ``prediction_noise`` gives the noise's standard deviation at
        ``config`` (proportional to ``config["clip"]``).
    problem, config, budget, private_smoothness
        As the spec's ``run`` takes them.
    tau : float, optional
        Default: :func:`target`.

    Returns
    -------
    config : dict
        A copy; ``clip`` multiplied by ``min(1, tau / noise)``.
    noise : float
        The prediction noise at the nominal threshold.
    """
    tau = target(problem) if tau is None else tau
    noise = prediction_noise(spec, problem, config, budget, private_smoothness)
    config = dict(config)
    if noise > tau:
        config["clip"] = config["clip"] * (tau / noise)
    return config, noise


def falls_back(spec, problem, config, budget):
    """Whether the spec's run can carry no signal worth its noise at this
    budget (its ``preparation.reach`` below 1, from the fast path's
    calibration: public quantities only). The noise rule then keeps the
    default at the zero model; a classifier's intercept comes from a private
    count of its labels (:data:`LABEL_SHARE`)."""
    reach = spec.preparation.reach
    if reach is None:
        return False
    fast = dataclasses.replace(budget, noise="fast")
    value = float(reach(problem, config, fast))
    return math.isfinite(value) and value < 1.0


def label_epsilon(spec, problem, config, budget, loss, fit_intercept, clip_auto):
    """ε a fit spends on a private count of its labels, or 0: a classifier
    with an intercept and ``clip="auto"`` whose run falls back to the zero
    model (:func:`falls_back`, at the full budget) releases it with
    :data:`LABEL_SHARE` of ε (:mod:`dpcd.privacy.labels`, replace-one, n
    public) so that it predicts the majority class; the run gets the rest.
    Public quantities only, so a private search accounts it from the same
    call."""
    if loss == "squares" or not fit_intercept or not clip_auto \
            or budget.neighbouring not in ("replace_one", "paper") \
            or not falls_back(spec, problem, config, budget):
        return 0.0
    return LABEL_SHARE * budget.epsilon
