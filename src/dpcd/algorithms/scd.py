"""Non-private SCD/SDCA: sequential dual updates in random order, no scaling,
no noise (the DP-SCD paper's non-private baseline)."""
from dpcd import solvers
from dpcd.algorithms.base import (
    INT_GRID,
    Algorithm,
    Hyperparameter,
    Preparation,
    Runtime,
    run_passes,
)
from dpcd.solvers import warmup


def run(problem, config, seed, budget, private_smoothness=None):
    """Non-private SCD/SDCA: sequential dual updates in random order, no scaling, no noise."""
    result = solvers.scd(problem.X_c, problem.y, problem.datafit, problem.penalty,
                         passes=run_passes(config, budget), seed=seed, check_input=False)
    return result, None


SPEC = Algorithm(
    name="scd",
    description="Non-private SCD/SDCA (no hyperparameters to tune).",
    run=run,
    hyperparameters=(Hyperparameter("batch_size", INT_GRID),),
    penalties=("l2",),
    privacy=None,
    preparation=Preparation(smoothness=None),
    runtime=Runtime(family="dp_scd", warm=warmup.dp_scd, step_cost_ns={"dense": 8.03}),
)
