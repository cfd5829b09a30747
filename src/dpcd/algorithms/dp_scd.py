"""DP-SCD (Damaskinos et al. 2021): dual mini-batch DP-SCD (Algorithm 1),
seqDP-SCD (Algorithm 3, sequential updates within the batch) and primal
DP-SCD (Algorithm 2); L2 penalty, records (or, primal, columns) of norm <= 1.

Config keys: passes (epochs), clip (C), batch_size (L), sampling (optional:
"poisson" or "without_replacement", default per solver and relation:
the spec's ``sampling``, :data:`dpcd.privacy.SCD_SAMPLING`; primal uses every
record: "none"),
max_batch_size (seqDP-SCD with Poisson batches: L_max or "auto").

References
----------
G. Damaskinos, C. Mendler-Dünner, R. Guerraoui, N. Papandreou, T. Parnell.
"Differentially Private Stochastic Coordinate Descent", AAAI 2021.
"""
import math
from functools import partial

from dpcd import privacy, solvers
from dpcd.algorithms.base import (
    CLIP,
    GRID,
    LOSSES,
    Algorithm,
    Hyperparameter,
    Preparation,
    Privacy,
    Runtime,
    positive_int,
)
from dpcd.algorithms.prepare import unit_records
from dpcd.solvers import warmup

BATCH_SIZE = Hyperparameter(
    "batch_size", {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}},
    positive_int)
STEP = Hyperparameter("step", GRID, estimator=False)  # accepted, unused
SAMPLING = Hyperparameter("sampling", {
    "enum": ["poisson", "without_replacement"],
    "description": (
        "Records per batch (dual, seq; primal uses every record): Poisson with rate "
        "L/n (the default; replace-one through PLD or the zero record), or exactly L "
        "drawn without replacement (replace-one, RDP), an opt-in whose ledger carries "
        "release_model_unproven.")}, estimator=False)
MAX_BATCH_SIZE = Hyperparameter("max_batch_size", {
    "oneOf": [{"type": "integer", "minimum": 1}, {"const": "auto"}],
    "description": (
        "seq_dp_scd with sampling poisson only (default auto): L_max, the batch size "
        "Lemma 5's noise is calibrated at (the probability of a larger batch is "
        "charged to delta); auto picks the smallest L_max whose tail is at most 1 % "
        "of delta.")}, estimator=False)
HYPERPARAMETERS = (CLIP, BATCH_SIZE, STEP, SAMPLING, MAX_BATCH_SIZE)


def _sampling(config, variant):
    if variant == "primal":
        return "none"
    return config.get("sampling", privacy.SCD_SAMPLING)


def calibrate_secure(problem, config, budget, variant):
    """The calibration of one configuration of DP-SCD ``variant`` and, in
    secure mode, its grid and integer noise
    (:func:`dpcd.privacy.scd.secure_dp_scd`; None in fast mode)."""
    secure = budget.noise == "secure"
    calibrate_variant = privacy.scd.secure_dp_scd if secure else privacy.calibrate_dp_scd
    result = calibrate_variant(
        problem.n_samples, problem.n_features, int(config["batch_size"]), config["clip"],
        budget.epsilon, budget.delta, passes=config["passes"], variant=variant,
        sampling=_sampling(config, variant), accountant=budget.accountant,
        relation=budget.neighbouring,
        max_batch_size=config.get("max_batch_size"),
    )
    return (result.calibration, result) if secure else (result, None)


def calibrate(problem, config, budget, variant):
    """Noise of one configuration of DP-SCD ``variant`` ("dual": Algorithm 1,
    Lemma 1; "seq": Algorithm 3, Lemma 5; "primal": Algorithm 2, Lemma 4)."""
    return calibrate_secure(problem, config, budget, variant)[0]


# seqDP-SCD's nominal passes: about SEQ_UPDATES record updates, at most
# SEQ_MAX_PASSES passes (see nominal)
SEQ_UPDATES = 300_000
SEQ_MAX_PASSES = 30


def nominal(n_samples, n_features, loss, variant="dual"):
    """DP-SCD's nominal hyperparameters: threshold 1 (the range of a logistic
    or hinge dual variable; a standardised target's residual) and one pass
    (every pass adds its noise to the shared vector, which no later update
    removes); dual batches of about sqrt(n) records (the noise of a batch is
    shared by its updates), seq and primal batches of one record or
    coordinate (Lemmas 4 and 5: the sensitivity grows with the batch);
    seqDP-SCD takes more passes (below).
    """
    batch = max(1, round(math.sqrt(n_samples))) if variant == "dual" else 1
    passes = 1
    if variant == "seq":
        # Under the noise rule (clip scaled so the prediction noise, which
        # grows like C z sqrt(T), stays at its target) the distance a record's
        # dual variable can travel, passes * C, grows like sqrt(passes) / z:
        # more passes move seqDP-SCD further from the intercept (measured at
        # n = 10 000, p = 20, epsilon = 1, 3 seeds: median R^2 0.02 -> 0.11,
        # accuracy 0.53 -> 0.62 at 30 passes) at the cost of time; capped by updates.
        passes = max(1, min(SEQ_MAX_PASSES, round(SEQ_UPDATES / n_samples)))
    return {"clip": 1.0, "batch_size": batch, "passes": passes}


def prediction_noise(problem, config, budget, private_smoothness=None, variant="dual"):
    """Standard deviation of the noise in a prediction at the run's end.

    Dual and seq: each of the T iterations adds ``N(0, s^2)`` to every entry
    of ``v``, which no update removes, and ``theta = v / (lambda N)``: a
    record of norm <= 1 gets a prediction noise of std at most ``s sqrt(T) /
    (lambda N)``. Primal: each coordinate of ``theta`` gets ``N(0, s^2)`` at
    each of its ``passes`` updates (clipped at C, they cannot undo noise of
    scale s > C), and records have norm ``1 / sqrt(N)``: ``s sqrt(passes /
    N)``, divided by the square of :func:`primal_reach` where that is below
    1: the run then carries no signal worth its noise, and the noise costs
    R^2 linearly through its chance correlation with the target (measured
    -0.002 at 0.005), so the rule keeps it at ``tau reach^2`` (4e-4 at
    epsilon = 1): the model stays at the intercept.
    """
    calibration = calibrate(problem, config, budget, variant)
    s = float(calibration.noise_scales)
    n = problem.n_samples
    if variant == "primal":
        return s * math.sqrt(config["passes"] / n) / min(1.0, primal_reach(problem, config, s)) ** 2
    from dpcd.problems._jit import SQUARES  # numba's: loaded when a spec runs

    alpha = float(problem.penalty.params[0])
    lam = 0.5 * alpha if problem.datafit.code == SQUARES else alpha  # the kernel's
    return s * math.sqrt(calibration.steps) / (lam * n)


def primal_reach(problem, config, s):
    """How far primal DP-SCD can move a prediction, over its noise there.

    Each of the d coordinates gets about ``passes`` updates of at most C, so
    a record of norm ``1 / sqrt(N)`` moves by at most ``sqrt(d / N) passes
    C``; its noise is ``s sqrt(passes / N)``. The ratio, ``sqrt(d passes)
    C / s = sqrt(d passes) / (z S(L) / C)``, does not depend on C or N (the
    noise of Lemma 4's sensitivity, ``S(L) = 2 C sqrt(L (L + 1))``, grows
    with the reach), and with ``T = passes d / L`` releases composed at
    multiplier z it is about ``mu / (2 sqrt(L + 1))``, mu the run's Gaussian
    privacy parameter (about 0.06 at epsilon = 1, delta = 1e-8, L = 1):
    below 1, no fit of this budget moves a prediction further than its
    noise, and the best it can do is stay at the intercept.
    """
    return math.sqrt(problem.n_features * config["passes"]) * config["clip"] / s


def reach(problem, config, budget):
    """Primal DP-SCD's :func:`primal_reach` at its calibrated noise (fast
    path's calibration: both noise modes get the same decision)."""
    s = float(calibrate(problem, config, budget, "primal").noise_scales)
    return primal_reach(problem, config, s)


def run(problem, config, seed, budget, private_smoothness=None, variant="dual"):
    """DP-SCD ``variant`` with its calibration; the solver samples as the budget
    was accounted, or does not run."""
    calibration, secure = calibrate_secure(problem, config, budget, variant)
    sampling = _sampling(config, variant)
    privacy.check_sampling(calibration, sampling)
    X = problem.X_fortran if variant == "primal" else problem.X_c
    result = solvers.dp_scd(
        X, problem.y, problem.datafit, problem.penalty, clip=config["clip"],
        noise_scale=calibration.noise_scales, passes=budget.passes(config),
        batch_size=int(config["batch_size"]), seed=seed, variant=variant,
        sampling=sampling, check_input=False, secure=secure,
    )
    return result, calibration.ledger


def _spec(name, variant, description, step_cost_ns=None, losses=LOSSES, **privacy_kw):
    return Algorithm(
        name=name, description=description, run=partial(run, variant=variant),
        hyperparameters=HYPERPARAMETERS, required=("clip", "batch_size"),
        losses=losses, penalties=("l2",),
        privacy=Privacy(
            calibrate=partial(calibrate, variant=variant),
            relations=(privacy.PRIMAL_DP_SCD_RELATIONS if variant == "primal"
                       else privacy.DP_SCD_RELATIONS),
            sampling=_sampling({}, variant), secure=True, **privacy_kw),
        preparation=Preparation(smoothness=None, prepare=unit_records,
                                record_norm="columns" if variant == "primal" else "rows",
                                defaults=partial(nominal, variant=variant),
                                prediction_noise=partial(prediction_noise, variant=variant),
                                reach=reach if variant == "primal" else None),
        runtime=Runtime(family="dp_scd", warm=warmup.dp_scd, step_cost_ns=step_cost_ns or {}))


DUAL = _spec("dp_scd", "dual", "Dual mini-batch DP-SCD (Damaskinos et al. 2021, "
             "Algorithm 1); clip = C, batch_size = L.",
             step_cost_ns={"dense": 7.7}, candidate=True,
             # Poisson batches under replace-one: the PLD accountant's only
             pld_only=(("replace_one", "poisson"),))
SEQ = _spec("seq_dp_scd", "seq", (
    "seqDP-SCD (Algorithm 3, sequential updates within the batch). Lemma 5's noise "
    "grows with the batch drawn: Poisson batches are calibrated at max_batch_size (auto "
    "by default)."), step_cost_ns={"dense": 9.4},
    refusal="its Poisson batches are calibrated at a max_batch_size whose tail is "
    "charged to delta, which repeat-and-select does not account")
PRIMAL = _spec("primal_dp_scd", "primal", "Primal DP-SCD (Algorithm 2, Appendix B).",
               losses=("squares", "logistic"), candidate=True)
SPECS = (DUAL, SEQ, PRIMAL)
