"""Proximal DP-SGD with Poisson-sampled batches (the DP-CD and DP-GCD papers'
baseline), calibrated under the budget's relation (sensitivity C, or 2C
replace-one)."""
import math

import numpy as np

from dpcd import privacy, solvers
from dpcd.algorithms.base import (
    CLIP,
    INT_GRID,
    STEP,
    Algorithm,
    Hyperparameter,
    Preparation,
    Privacy,
    Runtime,
    positive_int,
)
from dpcd.algorithms.defaults import SGD_STEPS_PER_PASS
from dpcd.solvers import warmup

BATCH_SIZE = Hyperparameter("batch_size", INT_GRID, positive_int, default=[1])


def check(config, problem):
    """The expected batch is at most the data."""
    if config.get("batch_size", 1) > problem["n_samples"]:
        raise ValueError(f"batch_size must be <= n_samples = {problem['n_samples']}, "
                         f"got {config['batch_size']!r}")


def calibrate(problem, config, budget):
    """The noise of one DP-SGD configuration (secure mode: its lattice's)."""
    if budget.noise == "secure":
        return secure_calibration(problem, config, budget).calibration
    return privacy.calibrate_dp_sgd(
        problem.n_samples, int(config.get("batch_size", 1)), config["passes"],
        config["clip"], budget.epsilon, budget.delta, accountant=budget.accountant,
        relation=budget.neighbouring)


def secure_calibration(problem, config, budget):
    """The secure mode's grid, integer noise scale and ledger
    (:func:`dpcd.privacy.secure_dp_sgd`)."""
    return privacy.secure_dp_sgd(
        problem.n_samples, int(config.get("batch_size", 1)), config["passes"],
        config["clip"], budget.epsilon, budget.delta, problem.n_features,
        accountant=budget.accountant, relation=budget.neighbouring)


def nominal(n_samples, n_features, loss):
    """DP-SGD's nominal hyperparameters: the step ``1 / beta`` of smooth
    gradient descent, threshold 1, 10 passes of about
    :data:`~dpcd.algorithms.defaults.SGD_STEPS_PER_PASS` steps each (batches
    of ``n / 20``: a batch's noise is averaged over its records, and fewer,
    larger steps pay for less of it)."""
    batch = max(1, math.ceil(n_samples / SGD_STEPS_PER_PASS))
    return {"step": 1.0, "clip": 1.0, "batch_size": batch, "passes": 10}


def prediction_noise(problem, config, budget, private_smoothness=None):
    """Standard deviation of the noise in a prediction after a DP-SGD run.

    Each of the T steps adds ``eta sigma xi / b`` (``eta = step / beta``,
    ``sigma`` the std on the clipped sum, ``b`` the expected batch) to every
    coordinate. When the threshold is below the gradients' scale (where the
    noise rule acts), clipping bounds the pull back, so the noise is counted
    as a random walk: a standardised record (d coordinates of mean square 1,
    intercept included) gets a prediction noise of variance
    ``T d (eta sigma / b)^2``.
    """
    calibration = calibrate(problem, config, budget)
    beta = 1.0 if problem.global_smoothness is None else problem.global_smoothness
    b = float(config.get("batch_size", 1))
    per_step = float(config["step"]) / beta * float(calibration.noise_scales) / b
    return float(np.sqrt(calibration.steps * problem.n_features) * per_step)


def run(problem, config, seed, budget, private_smoothness=None):
    """Proximal DP-SGD with Poisson-sampled batches (the papers' baseline),
    calibrated under ``budget.neighbouring`` (sensitivity C, or 2C replace-one)."""
    return run_many(problem, [config], [seed], [budget])[0]


def run_many(problem, configs, seeds, budgets):
    """:func:`run` for several configurations, ``seeds[k]`` the seed of
    ``configs[k]``: kernel calls per batch size (:func:`dpcd.solvers.dp_sgd_many`
    with one seed per run: no shared draws), each run bit for bit the run
    alone; its ``time`` is an amortised share of the call.

    Returns
    -------
    list of (SolverResult, Ledger)
        In the order of ``configs``.
    """
    out = [None] * len(configs)
    by_batch = {}
    for index, config in enumerate(configs):
        key = (int(config.get("batch_size", 1)), budgets[index].noise)
        by_batch.setdefault(key, []).append(index)
    # hinge has no smoothness constant: the step is the learning rate itself
    beta = 1.0 if problem.global_smoothness is None else problem.global_smoothness
    for (batch_size, noise), indices in by_batch.items():
        lattices = ([secure_calibration(problem, configs[i], budgets[i]) for i in indices]
                    if noise == "secure" else None)
        calibrations = [
            privacy.calibrate_dp_sgd(
                problem.n_samples, batch_size, configs[i]["passes"], configs[i]["clip"],
                budgets[i].epsilon, budgets[i].delta, accountant=budgets[i].accountant,
                relation=budgets[i].neighbouring)
            for i in indices] if lattices is None else [
                lattice.calibration for lattice in lattices]
        results = solvers.dp_sgd_many(
            problem.X_rows, problem.y, problem.datafit, problem.penalty,
            steps=[configs[i]["step"] for i in indices],
            clips=[configs[i]["clip"] for i in indices],
            noise_scales=[c.noise_scales for c in calibrations],
            passes=[budgets[i].passes(configs[i]) for i in indices],
            seeds=[seeds[i] for i in indices], batch_size=batch_size,
            global_smoothness=beta, check_input=False, secure=lattices,
        )
        for i, result, calibration in zip(indices, results, calibrations):
            ledger = calibration.ledger
            if problem.global_smoothness is not None:
                ledger = ledger.add_nonprivate_input("global_smoothness")
            out[i] = (result, ledger)
    return out


SPEC = Algorithm(
    name="dp_sgd",
    description="Proximal DP-SGD, step gamma/beta, Poisson-sampled batches.",
    run=run,
    hyperparameters=(STEP, CLIP, BATCH_SIZE),
    required=("step", "clip"),
    check=check,
    privacy=Privacy(calibrate=calibrate, relations=privacy.DP_SGD_RELATIONS,
                    sampling="poisson", candidate=True, secure=True),
    preparation=Preparation(smoothness="global", defaults=nominal,
                            prediction_noise=prediction_noise),
    runtime=Runtime(family="dp_sgd", warm=warmup.dp_sgd, run_many=run_many,
                    step_cost_ns={"dense": 5.1, "sparse": 176}),
)
