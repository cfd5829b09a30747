"""One function per solver: calibrate its noise, run its kernel, return its ledger.

Each adapter takes the shared :class:`~dpcd.sweep.problem.SweepProblem`, one
configuration and one seed; it is the only place where a configuration's
privacy budget meets a solver. Calibrations are cached inside
:mod:`dpcd.privacy`, so a sweep pays for each (passes, epsilon) once.
"""

from dataclasses import dataclass

import numpy as np

from dpcd import privacy, solvers


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
        problem.X_cols, problem.y, problem.datafit, problem.penalty,
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
        problem.X_cols, problem.y, problem.datafit, problem.penalty,
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
        problem.X_cols, problem.y, problem.datafit, problem.penalty,
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
        problem.X_rows, problem.y, problem.datafit, problem.penalty,
        step=config["step"], clip=config["clip"],
        noise_scale=calibration.noise_scales, passes=config["passes"],
        seed=seed, batch_size=batch_size,
        global_smoothness=problem.global_smoothness, check_input=False,
    )
    return result, calibration.ledger.add_nonprivate_input("global_smoothness")


ADAPTERS = {
    "cd": run_cd,
    "dp_cd": run_dp_cd,
    "dp_cd_p": run_dp_cd_p,
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
