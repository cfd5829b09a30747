"""DP-CD (Mangold et al. 2022, Algorithm 1) with exact smoothness constants.

References
----------
P. Mangold, A. Bellet, J. Salmon, M. Tommasi. "Differentially Private
Coordinate Descent for Composite Empirical Risk Minimization", ICML 2022.
https://arxiv.org/abs/2110.11688
"""
import numpy as np

from dpcd import privacy, solvers
from dpcd.algorithms.base import CLIP, STEP, Algorithm, Preparation, Privacy, Runtime
from dpcd.solvers import warmup


def coordinate_clip(M, C):
    """Coordinate-wise clipping thresholds ``C_j = sqrt(M_j / tr(M)) C``.

    Section 5.1 of the paper: with these thresholds the clipped gradient has
    sensitivity at most ``2C`` in the norm ``||.||_{M~^{-1}}``, ``M~ = p M / tr M``.

    Parameters
    ----------
    M : array, shape (n_features,)
        Coordinate-wise smoothness constants (exact or private), all > 0.
    C : float
        Overall clipping threshold (``np.inf`` for no clipping).

    Returns
    -------
    clip : array, shape (n_features,)

    References
    ----------
    Mangold et al., ICML 2022, Section 5.1 (the module's reference).
    """
    from dpcd.problems import check_smoothness  # numba's: loaded when a spec runs

    M = check_smoothness(M)
    C = float(C)
    if not C > 0:
        raise ValueError(f"clipping threshold C must be > 0, got {C!r}")
    return np.sqrt(M / M.sum()) * C


def calibrate_clipped(problem, config, clip, epsilon, budget):
    """DP-CD's calibration at thresholds ``clip`` and ``epsilon``, and in secure
    mode its grid and exact sampler (shared with DP-CD-P)."""
    accountant = budget.accountant
    if budget.noise == "secure":
        accountant = privacy.secure.check_accountant(accountant)
    calibration = privacy.calibrate_dp_cd(
        problem.n_samples, problem.n_features, config["passes"], clip,
        epsilon, budget.delta, accountant=accountant, relation=budget.neighbouring,
    )
    if budget.noise != "secure":
        return calibration, None
    secure = privacy.secure.secure_dp_cd(calibration, problem.n_samples)
    return secure.calibration, secure


def run_with(problem, config, seed, smoothness, clip, calibration, secure, passes=None):
    """DP-CD's kernel at the given constants, thresholds and calibration, for
    ``passes`` (default: the configuration's)."""
    return solvers.dp_cd(
        problem.X_cols, problem.y, problem.datafit, problem.penalty,
        smoothness=smoothness, step=config["step"], clip=clip,
        noise_scales=calibration.noise_scales,
        passes=config["passes"] if passes is None else passes, seed=seed,
        check_input=False, secure=secure,
    )


def cd_noise(datafit, smoothness, step, noise_std, updates):
    """Standard deviation of the noise in a prediction after coordinate descent
    with steps ``step / M_j``, gradient noise of std ``noise_std[j]`` and
    ``updates`` updates of each coordinate (:mod:`dpcd.algorithms.defaults`).

    An update adds ``step sigma_j xi / M_j`` to w_j. When the threshold is
    below the gradients' scale (where the noise rule acts), clipping bounds
    the pull back towards the minimiser, so the noise is counted as a random
    walk: variance ``updates step^2 sigma_j^2 / M_j^2``; a standardised
    record has ``E[x_j^2] = M_j / c`` (``c`` the loss's constant of a unit
    feature), so a prediction's noise variance is
    ``updates step^2 / c sum_j sigma_j^2 / M_j``.
    """
    c = datafit.per_sample_smoothness(np.ones((1, 1)))[0, 0]
    M = np.asarray(smoothness, dtype=float)
    var = updates * float(step) ** 2 / c * np.sum(np.asarray(noise_std, dtype=float) ** 2 / M)
    return float(np.sqrt(var))


def nominal(n_samples, n_features, loss):
    """DP-CD's nominal hyperparameters: the theory's steps ``1 / M_j`` (Theorem
    3.3), a threshold of one root mean square of each feature's gradient at a
    unit residual or margin (``clip`` is relative), and 10 passes."""
    return {"step": 1.0, "clip": 1.0, "passes": 10}


def prediction_noise(problem, config, budget, private_smoothness=None):
    """:func:`cd_noise` of a DP-CD run with exact constants."""
    clip = coordinate_clip(problem.smoothness, config["clip"])
    calibration, _ = calibrate_clipped(problem, config, clip, budget.epsilon, budget)
    return cd_noise(problem.datafit, problem.smoothness, config["step"],
                    calibration.noise_scales, config["passes"])


def calibrate(problem, config, budget):
    """The noise of one DP-CD configuration (exact smoothness constants)."""
    clip = coordinate_clip(problem.smoothness, config["clip"])
    return calibrate_clipped(problem, config, clip, budget.epsilon, budget)[0]


def run(problem, config, seed, budget, private_smoothness=None):
    """DP-CD (Mangold et al. 2022, Algorithm 1) with exact smoothness constants."""
    smoothness = problem.smoothness
    clip = coordinate_clip(smoothness, config["clip"])
    calibration, secure = calibrate_clipped(problem, config, clip, budget.epsilon, budget)
    result = run_with(problem, config, seed, smoothness, clip, calibration, secure,
                      budget.passes(config))
    return result, calibration.ledger.add_nonprivate_input("exact_smoothness")


SPEC = Algorithm(
    name="dp_cd",
    description="DP-CD (Mangold et al. 2022, Algorithm 1) with exact smoothness constants.",
    run=run,
    hyperparameters=(STEP, CLIP),
    required=("step", "clip"),
    losses=("squares", "logistic"),
    privacy=Privacy(calibrate=calibrate, relations=privacy.MEAN_RELATIONS, secure=True,
                    candidate=True),
    preparation=Preparation(relative_clip=True, defaults=nominal,
                            prediction_noise=prediction_noise),
    runtime=Runtime(family="dp_cd", warm=warmup.dp_cd,
                    step_cost_ns={"dense": 1.47, "sparse": 43.9}),
)
