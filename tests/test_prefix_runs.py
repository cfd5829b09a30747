"""The staged search's multi-fidelity screen (``search_fidelity``) runs a
prefix of each run: for every built-in algorithm, the run stopped after e of
its P passes is the whole run's first e passes (the same draws, the noise
calibrated for all P), through the sweep's own code (its ``run_many`` too)."""
import numpy as np
import pytest

from dpcd import algorithms
from dpcd.plan import prefix_passes
from dpcd.problems import make_problem
from dpcd.sweep.grid import configurations
from dpcd.streams import run_seed
from dpcd.sweep.problem import SweepProblem, smoothness_constants
from dpcd.sweep.runner import run_configurations
from dpcd.sweep.smoothness import private_smoothness_estimates

PASSES = 4
FIDELITY = 0.5  # 2 of the 4 passes


def _problem(loss):
    rng = np.random.default_rng(3)
    n, p = 240, 6
    X = rng.standard_normal((n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X /= np.linalg.norm(X, axis=0).max()  # columns of norm <= 1 (primal DP-SCD's Lemma 4)
    y = X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n)
    if loss != "squares":
        y = np.where(y > 0, 1.0, -1.0)
    penalty, alpha = "l2", 0.01
    datafit, pen = make_problem(loss, penalty, alpha)
    c = smoothness_constants(X, loss)
    return SweepProblem(
        X=X, y=y, datafit=datafit, penalty=pen, smoothness=np.asarray(c["smoothness"]),
        global_smoothness=c["global_smoothness"], max_abs=c["max_abs"], loss=loss,
        alpha=alpha, X_val=X[:60], y_val=y[:60], X_test=X[:60], y_test=y[:60],
    )


GRIDS = {
    "clip": [0.5, 5.0], "step": [0.3], "batch_size": [4], "smoothness_fraction": 0.1,
}


def _grid(spec):
    names = {hp.name for hp in spec.hyperparameters}
    return {k: v for k, v in GRIDS.items() if k in names}


@pytest.mark.parametrize("name", algorithms.names(builtin=True))
def test_a_prefix_run_is_the_whole_runs_first_passes(name):
    spec = algorithms.get(name)
    loss = "squares" if "squares" in spec.losses else spec.losses[0]
    problem = _problem(loss)
    grid = _grid(spec)
    solve = {"experiment": "prefix", "solver": name, "grid": grid, "passes": [PASSES],
             "privacy": {"epsilon": 1.0, "delta": 1e-5}, "seeds": 2, "base_seed": 0,
             "chunks": 1, "dataset": "d", "variant": "raw",
             "problem": {"loss": loss, "penalty": "l2", "alpha": 0.01}}
    configs = configurations(name, grid, [PASSES], [1.0])
    seeds = [run_seed(0, k) for k in range(2)]
    estimates = None
    if name == "dp_cd_p":
        estimates = private_smoothness_estimates(problem.X, loss, 0.1, [1.0], seeds, "prefix")
    whole, _ = run_configurations(solve, configs, seeds, problem, 1.0, estimates)
    part, records = run_configurations(dict(solve, fidelity=FIDELITY), configs, seeds,
                                       problem, 1.0, estimates)
    ran = prefix_passes(PASSES, FIDELITY)
    assert ran == 2
    assert part["pass"].max() == ran and whole["pass"].max() == PASSES
    # the passes column keeps the configuration's: the selection groups by it
    assert (part["passes"] == PASSES).all()
    first = whole[whole["pass"] <= ran].reset_index(drop=True)
    assert list(part["config_id"]) == list(first["config_id"])
    for col in ("seed", "pass", "objective", "epsilon_achieved"):  # NaN: not private
        np.testing.assert_array_equal(part[col].to_numpy(float), first[col].to_numpy(float))
    assert np.isfinite(part["objective"]).all()
    if spec.private:  # the ledger is the whole run's: calibrated for every pass
        for record in records:
            assert all(ledger.epsilon_achieved <= 1.0 + 1e-9 for ledger in record.ledgers)


@pytest.mark.parametrize("passes, fidelity, ran", [
    (50, 0.04, 2), (50, 0.02, 1), (10, 0.04, 1), (10, 0.25, 3), (3, 0.5, 2), (1, 0.1, 1),
    (50, 1, 50), (0.5, 0.5, 0.25),
])
def test_prefix_passes_are_whole_and_at_least_one(passes, fidelity, ran):
    assert prefix_passes(passes, fidelity) == ran
