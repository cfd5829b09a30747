"""Non-private mini-batch SGD: DP-SGD's kernel with no noise and no clipping
(the DP-SCD paper's SGD baseline)."""
from dpcd import solvers
from dpcd.algorithms.base import STEP, Algorithm, Preparation, Runtime, run_passes
from dpcd.algorithms.dp_sgd import BATCH_SIZE
from dpcd.solvers import warmup


def run(problem, config, seed, budget, private_smoothness=None):
    """Non-private SGD: DP-SGD's kernel with no noise and no clipping.

    ``step`` is the learning rate η itself (``global_smoothness=1``), as in
    the DP-SCD paper's SGD; ``batch_size`` (default 1) is the expected batch
    of the Poisson sampling.  Works for the hinge loss (subgradient).
    """
    result = solvers.dp_sgd(
        problem.X_rows, problem.y, problem.datafit, problem.penalty,
        step=config["step"], clip=float("inf"), noise_scale=0.0, passes=run_passes(config, budget),
        seed=seed, batch_size=int(config.get("batch_size", 1)), global_smoothness=1.0,
        check_input=False,
    )
    return result, None


SPEC = Algorithm(
    name="sgd",
    description="Non-private mini-batch SGD; step = eta, batch_size = |xi|.",
    run=run,
    hyperparameters=(STEP, BATCH_SIZE),
    required=("step",),
    privacy=None,
    preparation=Preparation(smoothness=None),
    runtime=Runtime(family="dp_sgd", warm=warmup.dp_sgd, step_cost_ns={"dense": 5.82}),
)
