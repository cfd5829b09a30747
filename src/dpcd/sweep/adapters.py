"""One function per solver: calibrate its noise, run its kernel, return its ledger.

Each adapter takes the shared :class:`~dpcd.sweep.problem.SweepProblem`, one
configuration and one seed; it is the only place where a configuration's
privacy budget meets a solver. Calibrations are cached inside
:mod:`dpcd.privacy`, so a sweep pays for each (passes, epsilon) once.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpcd import privacy, solvers
from dpcd.solvers.dp_gcd import PENALTY_NAMES


@dataclass(frozen=True)
class Budget:
    """The privacy settings of one run: target epsilon, delta, accountant."""

    epsilon: float
    delta: float
    accountant: str = "auto"


def run_cd(problem, config, seed, budget, private_smoothness=None):
    """Non-private randomized proximal CD (DP-CD's kernel, no noise, no clipping)."""
    p = problem.n_features
    result = solvers.dp_cd(
        problem.X_fortran, problem.y, problem.datafit, problem.penalty,
        smoothness=problem.smoothness, step=config["step"],
        clip=np.full(p, np.inf), noise_scales=np.zeros(p),
        passes=config["passes"], seed=seed, check_input=False,
    )
    return result, None


def run_dp_cd(problem, config, seed, budget, private_smoothness=None):
    """DP-CD (Mangold et al. 2022, Algorithm 1) with exact smoothness constants."""
    smoothness = problem.smoothness
    clip = solvers.coordinate_clip(smoothness, config["clip"])
    calibration = privacy.calibrate_dp_cd(
        problem.n_samples, problem.n_features, config["passes"], clip,
        budget.epsilon, budget.delta, accountant=budget.accountant,
    )
    result = solvers.dp_cd(
        problem.X_fortran, problem.y, problem.datafit, problem.penalty,
        smoothness=smoothness, step=config["step"], clip=clip,
        noise_scales=calibration.noise_scales, passes=config["passes"], seed=seed, check_input=False,
    )
    return result, calibration.ledger.add_nonprivate_input("exact_smoothness")


def run_dp_cd_p(problem, config, seed, budget, private_smoothness=None):
    """DP-CD with private smoothness constants (Section 5.2, Appendix F).

    ``private_smoothness`` holds the estimate released for this seed and its
    ledger line; optimisation gets the rest of epsilon, and both lines add up.
    """
    if private_smoothness is None:
        raise ValueError("dp_cd_p needs the private smoothness estimate of its seed")
    smoothness = np.asarray(private_smoothness["smoothness"], dtype=np.float64)
    fraction = private_smoothness["smoothness_fraction"]
    clip = solvers.coordinate_clip(smoothness, config["clip"])
    calibration = privacy.calibrate_dp_cd(
        problem.n_samples, problem.n_features, config["passes"], clip,
        (1.0 - fraction) * budget.epsilon, budget.delta,
        accountant=budget.accountant,
    )
    result = solvers.dp_cd(
        problem.X_fortran, problem.y, problem.datafit, problem.penalty,
        smoothness=smoothness, step=config["step"], clip=clip,
        noise_scales=calibration.noise_scales, passes=config["passes"], seed=seed, check_input=False,
    )
    estimate_ledger = privacy.Ledger.from_dict(private_smoothness["ledger"])
    ledger = privacy.Ledger.combine([estimate_ledger, calibration.ledger])
    return result, ledger


def run_dp_sgd(problem, config, seed, budget, private_smoothness=None):
    """Proximal DP-SGD with Poisson-sampled batches (the papers' baseline)."""
    batch_size = int(config.get("batch_size", 1))
    calibration = privacy.calibrate_dp_sgd(
        problem.n_samples, batch_size, config["passes"], config["clip"],
        budget.epsilon, budget.delta, accountant=budget.accountant,
    )
    result = solvers.dp_sgd(
        problem.X_c, problem.y, problem.datafit, problem.penalty,
        step=config["step"], clip=config["clip"],
        noise_scale=calibration.noise_scales, passes=config["passes"],
        seed=seed, batch_size=batch_size,
        global_smoothness=problem.global_smoothness, check_input=False,
    )
    return result, calibration.ledger.add_nonprivate_input("global_smoothness")


def calibrate_dp_gcd_config(problem, config, budget):
    """Noise of one DP-GCD configuration (Mangold et al. 2023, Theorem 4.2 / App. C).

    ``config``: ``passes`` (= iterations T, an integer), ``clip`` (C, split
    into C_j as DP-CD does) and ``rule`` (default ``"gs_r"``, the rule of the
    paper's experiments).  ``budget.accountant == "paper"`` selects the
    paper's calibration (``mode="paper"``, advanced composition), which the
    ledger's mechanism note and accountant name record.  The selection scale
    and where its noise goes depend on the rule and the penalty
    (:func:`dpcd.privacy.gcd.calibrate_dp_gcd`).
    """
    iterations = config["passes"]
    if int(iterations) != iterations or iterations < 1:
        raise ValueError(f"DP-GCD passes are iterations: an integer >= 1, got {iterations!r}")
    pcode = problem.penalty.code
    if pcode not in PENALTY_NAMES:
        raise ValueError(f"DP-GCD supports no, L1 and L2 penalties, got {problem.penalty!r}")
    clip = solvers.coordinate_clip(problem.smoothness, config["clip"])
    return privacy.calibrate_dp_gcd(
        problem.n_samples, problem.n_features, int(iterations), clip,
        budget.epsilon, budget.delta, accountant=budget.accountant,
        smoothness=problem.smoothness, rule=config.get("rule", "gs_r"),
        penalty=PENALTY_NAMES[pcode], alpha=float(problem.penalty.params[0]),
    )


def run_dp_gcd(problem, config, seed, budget, private_smoothness=None):
    """DP-GCD (Mangold et al. 2023, Algorithm 1 / Appendix C) with exact smoothness.

    One pass is one DP-GCD iteration.  Sparse ``problem.X`` is handed over as
    is (the solver walks it in CSC), dense X column-major.
    """
    calibration = calibrate_dp_gcd_config(problem, config, budget)
    X = problem.X if sp.issparse(problem.X) else problem.X_fortran
    result = solvers.dp_gcd(
        X, problem.y, problem.datafit, problem.penalty,
        smoothness=problem.smoothness, step=config["step"],
        clip=solvers.coordinate_clip(problem.smoothness, config["clip"]),
        selection_scales=calibration.extra["selection_scales"],
        noise_scales=calibration.noise_scales, iterations=int(config["passes"]),
        seed=seed, rule=config.get("rule", "gs_r"),
        selection_noise=calibration.extra["selection_noise"], check_input=False,
    )
    return result, calibration.ledger.add_nonprivate_input("exact_smoothness")


ADAPTERS = {
    "cd": run_cd,
    "dp_cd": run_dp_cd,
    "dp_cd_p": run_dp_cd_p,
    "dp_gcd": run_dp_gcd,
    "dp_sgd": run_dp_sgd,
}

# Hyperparameters that index a configuration (columns of the tidy table).
HYPERPARAMETERS = ("step", "clip", "batch_size")


def get_adapter(name):
    """Return the adapter of solver ``name`` or raise naming the known ones."""
    try:
        return ADAPTERS[name]
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; known: {sorted(ADAPTERS)}") from None
