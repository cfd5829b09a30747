"""Non-private randomized proximal coordinate descent: DP-CD's kernel without
noise or clipping (the DP-CD paper's non-private baseline)."""
import numpy as np

from dpcd import solvers
from dpcd.algorithms.base import GRID, Algorithm, Hyperparameter, Runtime, run_passes
from dpcd.solvers import warmup


def run(problem, config, seed, budget, private_smoothness=None):
    """Non-private randomized proximal CD (DP-CD's kernel, no noise, no clipping)."""
    p = problem.n_features
    result = solvers.dp_cd(
        problem.X_cols, problem.y, problem.datafit, problem.penalty,
        smoothness=problem.smoothness, step=config["step"],
        clip=np.full(p, np.inf), noise_scales=np.zeros(p),
        passes=run_passes(config, budget), seed=seed, check_input=False,
    )
    return result, None


SPEC = Algorithm(
    name="cd",
    description="Non-private randomized proximal coordinate descent (steps gamma/M_j).",
    run=run,
    hyperparameters=(Hyperparameter("step", GRID, default=[1.0]),),
    losses=("squares", "logistic"),
    privacy=None,
    runtime=Runtime(family="dp_cd", warm=warmup.dp_cd),
)
