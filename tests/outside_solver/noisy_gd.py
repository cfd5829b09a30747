"""A solver from outside dpcd, registered as an algorithm spec: noisy
proximal full-gradient descent (one Gaussian release per step).

Privacy: each step releases the mean of the records' gradients clipped to l2
norm C; replacing one record moves that mean by at most 2C/n (n public), so
the noise std is ``z * 2C/n`` with z the multiplier at which ``passes``
self-composed Gaussian releases reach (epsilon, delta) (dp-accounting, RDP or
PLD). The step ``step / beta`` reads the exact global smoothness beta of the
datafit (a non-private input, recorded on the ledger, as DP-SGD's).
"""
import dp_accounting
import numpy as np
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from noisy_gd_kernel import clipped_gradient_mean, noisy_gd

from dpcd import algorithms
from dpcd.privacy import BudgetLine, Calibration, Ledger, Mechanism


def _event(z, steps):
    return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), steps)


def _accountant(name):
    if name == "pld":
        return pld_privacy_accountant.PLDAccountant()
    return rdp_privacy_accountant.RdpAccountant()


def _steps(config):
    passes = config["passes"]
    if int(passes) != passes or passes < 1:
        raise ValueError(f"noisy_gd: passes are steps, an integer >= 1, got {passes!r}")
    return int(passes)


def calibrate(problem, config, budget):
    """The noise std of one configuration and its ledger."""
    if budget.accountant not in ("auto", "rdp", "pld"):
        raise ValueError(f"noisy_gd calibrates with 'auto', 'rdp' or 'pld', "
                         f"not {budget.accountant!r}")
    if budget.noise != "fast":
        raise ValueError("noisy_gd has no secure sampler")
    accountant = "pld" if budget.accountant == "pld" else "rdp"
    steps = _steps(config)
    z = dp_accounting.calibrate_dp_mechanism(
        lambda: _accountant(accountant), lambda z: _event(z, steps),
        budget.epsilon, budget.delta)
    achieved = _accountant(accountant).compose(_event(z, steps)).get_epsilon(budget.delta)
    sensitivity = 2.0 * config["clip"] / problem.n_samples
    ledger = Ledger(
        algorithm="noisy_gd", neighbouring="replace_one", accountant=accountant,
        epsilon_target=budget.epsilon, epsilon_achieved=float(achieved), delta=budget.delta,
        mechanisms=[Mechanism(name="clipped_mean_gradient", kind="gaussian",
                              sensitivity=sensitivity, sensitivity_norm="l2",
                              noise_multiplier=float(z), noise_scale=float(z) * sensitivity,
                              count=steps)],
        budget=[BudgetLine(group="optimisation", accountant=accountant,
                           epsilon_target=budget.epsilon, epsilon_achieved=float(achieved),
                           delta=budget.delta, dp_event=str(_event(z, steps)))],
    )
    return float(z) * sensitivity, ledger


def calibration(problem, config, budget):
    """The noise a run gets, without running it (``dpcd budget``, tests)."""
    noise_scale, ledger = calibrate(problem, config, budget)
    (mechanism,) = ledger.mechanisms
    return Calibration(mechanism.noise_multiplier, noise_scale, ledger,
                       ledger.epsilon_achieved, _steps(config))


def run(problem, config, seed, budget, private_smoothness=None):
    """Calibrate, then run the kernel on the problem's rows."""
    noise_scale, ledger = calibrate(problem, config, budget)
    result = noisy_gd(problem.X_rows, problem.y, problem.datafit, problem.penalty,
                      step=config["step"] / problem.global_smoothness, clip=config["clip"],
                      noise_scale=noise_scale, passes=_steps(config), seed=seed)
    return result, ledger.add_nonprivate_input("global_smoothness")


def warm():
    """Compile the kernel into the numba cache before parallel jobs run."""
    clipped_gradient_mean(np.ones((2, 2)), np.ones(2), 1.0, np.empty(2))


SPEC = algorithms.register(algorithms.Algorithm(
    name="noisy_gd",
    description="Noisy proximal full-gradient descent (a solver from outside dpcd).",
    run=run,
    hyperparameters=(algorithms.STEP, algorithms.CLIP),
    required=("step", "clip"),
    losses=("squares", "logistic"),
    privacy=algorithms.Privacy(calibrate=calibration, relations=("replace_one",)),
    preparation=algorithms.Preparation(smoothness="global"),
    runtime=algorithms.Runtime(family="noisy_gd", warm=warm),
))
