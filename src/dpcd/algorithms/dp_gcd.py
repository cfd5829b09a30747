"""DP-GCD: private greedy coordinate descent (Mangold et al. 2023, Algorithm 1;
the proximal GS-r / GS-s / GS-q rules of Appendix C).

References
----------
P. Mangold, A. Bellet, J. Salmon, M. Tommasi. "High-Dimensional Private
Empirical Risk Minimization by Greedy Coordinate Descent", AISTATS 2023.
https://arxiv.org/abs/2207.01560
"""
import numpy as np

from dpcd import privacy, solvers
from dpcd.algorithms.base import (
    CLIP,
    STEP,
    Algorithm,
    Hyperparameter,
    Preparation,
    Privacy,
    Runtime,
    choice,
)
from dpcd.algorithms.dp_cd import cd_noise, coordinate_clip
from dpcd.lazy import issparse
from dpcd.solvers import warmup

# "smooth": Algorithm 1 with L2 folded into the smooth part (estimators only)
RULES = ("gs_r", "gs_s", "gs_q", "smooth")
RULE = Hyperparameter("rule", {"$ref": "#/$defs/gcd_rule"}, choice(*RULES))


def check(config, problem):
    """Algorithm 1's rule needs a smooth penalty."""
    if config.get("rule") == "smooth" and problem["penalty"] == "l1":
        raise ValueError("rule='smooth' (Algorithm 1) needs penalty 'l2' or "
                         "'none'; use 'gs_r', 'gs_s' or 'gs_q' with 'l1'")


def calibrate(problem, config, budget):
    """Noise of one DP-GCD configuration (Mangold et al. 2023, Theorem 4.2 / App. C).

    ``config``: ``passes`` (= iterations T, an integer), ``clip`` (C, split
    into C_j as DP-CD does) and ``rule`` (default ``"gs_r"``, the rule of the
    paper's experiments).  ``budget.accountant == "paper"`` selects the
    paper's calibration (``mode="paper"``, advanced composition), which the
    ledger's mechanism note and accountant name record.  The selection scale
    and where its noise goes depend on the rule and the penalty
    (:func:`dpcd.privacy.gcd.calibrate_dp_gcd`).
    """
    return _calibrate(problem, config, budget)[0]


def _calibrate(problem, config, budget):
    """The calibration, and in secure mode its grids and integer scales."""
    iterations = config["passes"]
    if int(iterations) != iterations or iterations < 1:
        raise ValueError(f"DP-GCD passes are iterations: an integer >= 1, got {iterations!r}")
    from dpcd.solvers.dp_gcd import PENALTY_NAMES  # the kernels' module: loaded when run

    pcode = problem.penalty.code
    if pcode not in PENALTY_NAMES:
        raise ValueError(f"DP-GCD supports no, L1 and L2 penalties, got {problem.penalty!r}")
    clip = coordinate_clip(problem.smoothness, config["clip"])
    secure = budget.noise == "secure"
    accountant = budget.accountant
    if secure:
        accountant = privacy.secure.check_accountant(accountant)
    calibration = privacy.calibrate_dp_gcd(
        problem.n_samples, problem.n_features, int(iterations), clip,
        budget.epsilon, budget.delta, accountant=accountant,
        smoothness=problem.smoothness, rule=config.get("rule", "gs_r"),
        penalty=PENALTY_NAMES[pcode], alpha=float(problem.penalty.params[0]),
        relation=budget.neighbouring,
        resolution=privacy.secure.RESOLUTION if secure else 0,
    )
    if not secure:
        return calibration, None
    sec = privacy.secure.secure_dp_gcd(calibration, problem.n_samples)
    return sec.calibration, sec


def nominal(n_samples, n_features, loss):
    """DP-GCD's nominal hyperparameters: steps ``1 / M_j``, DP-CD's relative
    threshold, and two greedy iterations per coordinate (intercept included),
    at most :data:`MAX_ITERATIONS` (its noise grows with the iterations, and
    a sparse solution needs fewer)."""
    return {"step": 1.0, "clip": 1.0, "passes": min(2 * (n_features + 1), MAX_ITERATIONS)}


MAX_ITERATIONS = 200


def prediction_noise(problem, config, budget, private_smoothness=None):
    """:func:`~dpcd.algorithms.dp_cd.cd_noise` of the Laplace gradient noise
    (variance ``2 lambda_j^2``) of T greedy updates, ``T / p`` per coordinate
    on average (the selection's noise is not counted)."""
    calibration = calibrate(problem, config, budget)
    scales = np.broadcast_to(np.asarray(calibration.noise_scales, dtype=float),
                             problem.smoothness.shape)
    return cd_noise(problem.datafit, problem.smoothness, config["step"],
                    np.sqrt(2.0) * scales, int(config["passes"]) / problem.n_features)


def run(problem, config, seed, budget, private_smoothness=None):
    """DP-GCD (Mangold et al. 2023, Algorithm 1 / Appendix C) with exact smoothness.

    One pass is one DP-GCD iteration.  Sparse ``problem.X`` is handed over as
    is (the solver walks it in CSC), dense X column-major.
    """
    calibration, secure = _calibrate(problem, config, budget)
    X = problem.X if issparse(problem.X) else problem.X_fortran
    result = solvers.dp_gcd(
        X, problem.y, problem.datafit, problem.penalty,
        smoothness=problem.smoothness, step=config["step"],
        clip=coordinate_clip(problem.smoothness, config["clip"]),
        selection_scales=calibration.extra["selection_scales"],
        noise_scales=calibration.noise_scales, iterations=int(budget.passes(config)),
        seed=seed, rule=config.get("rule", "gs_r"),
        selection_noise=calibration.extra["selection_noise"], check_input=False,
        secure=secure,
    )
    return result, calibration.ledger.add_nonprivate_input("exact_smoothness")


SPEC = Algorithm(
    name="dp_gcd",
    description="DP-GCD (Mangold et al. 2023, Algorithm 1; proximal rules of Appendix C).",
    run=run,
    hyperparameters=(STEP, CLIP, RULE),
    required=("step", "clip"),
    check=check,
    losses=("squares", "logistic"),
    penalties=("l1", "l2", "none"),
    privacy=Privacy(calibrate=calibrate, relations=privacy.MEAN_RELATIONS, secure=True,
                    candidate=True, paper_bound_invalid=True),
    preparation=Preparation(relative_clip=True, defaults=nominal,
                            prediction_noise=prediction_noise),
    runtime=Runtime(family="dp_gcd", warm=warmup.dp_gcd,
                    step_cost_ns={"dense": 0.745, "sparse": 20.5}),
)
