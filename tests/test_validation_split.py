"""``validation_split: per_seed``: the DP-SCD reference code's hold-out, redrawn per run seed.

The rule (:func:`dpcd.sweep.problem.validation_rows`) depends on the seed and
the pool's size only; each run's problem (:func:`redraw_validation`) keeps the
pool's rows and the fixed split's sizes; a sweep's validation and test metrics
are each seed's own; the runs say which split they used, and the split adds no
non-private input (selecting on validation is ``hyperparameter_selection``).
"""
import numpy as np
import pandas as pd
import pytest

from dpcd.algorithms import Budget, get
from dpcd.problems import make_problem
from dpcd.sweep.fresh import run_fresh
from dpcd.streams import config_id, fresh_cell, fresh_seeds, run_entropy, run_seed
from dpcd.problems.metrics import evaluate
from dpcd.sweep.problem import (
    SeedProblems,
    SweepProblem,
    redraw_validation,
    validation_rows,
)
from dpcd.streams import stream_identity
from dpcd.sweep.runner import run_configurations
from dpcd.tracking.payload import mlflow_runs


def test_rows_deterministic_per_seed_and_different_across_seeds():
    train, val = validation_rows(1000, 7)
    again = validation_rows(1000, 7)
    np.testing.assert_array_equal(train, again[0])
    np.testing.assert_array_equal(val, again[1])
    others = [validation_rows(1000, seed)[1] for seed in range(8, 18)]
    assert all(not np.array_equal(val, other) for other in others)
    # two hold-outs of 250 of 1000 rows share about 1/4 of their rows, not all
    overlap = np.mean([np.intersect1d(val, other).size / val.size for other in others])
    assert 0.15 < overlap < 0.35


@pytest.mark.parametrize("n_pool", [4, 5, 1001, 46_372])
def test_rows_sizes_and_partition(n_pool):
    train, val = validation_rows(n_pool, 3)
    # scikit-learn's train_test_split(test_size=0.25): ceil(0.25 n) held out
    assert val.size == int(np.ceil(0.25 * n_pool))
    assert train.size + val.size == n_pool
    np.testing.assert_array_equal(np.sort(np.concatenate([train, val])), np.arange(n_pool))
    assert np.all(np.diff(train) > 0) and np.all(np.diff(val) > 0)


def test_rows_are_uniform_over_seeds():
    """Each row is held out with probability 1/4 (the rule is a uniform subset)."""
    counts = np.zeros(40)
    for seed in range(2000):
        counts[validation_rows(40, seed)[1]] += 1
    assert np.all(np.abs(counts / 2000 - 0.25) < 0.05)


def _problem(rng, n=120, n_val=40, p=5, loss="logistic"):
    X = rng.standard_normal((n + n_val, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.standard_normal(p)
    y = np.where(X @ w + 0.3 * rng.standard_normal(n + n_val) > 0, 1.0, -1.0)
    datafit, penalty = make_problem(loss, "l2", 1e-3)
    return SweepProblem(X=X[:n], y=y[:n], datafit=datafit, penalty=penalty,
                        smoothness=np.full(p, 0.25), global_smoothness=0.25,
                        max_abs=np.abs(X[:n]).max(axis=0), loss=loss,
                        X_val=X[n:], y_val=y[n:], X_test=X[:30], y_test=y[:30],
                        alpha=1e-3, nonprivate_inputs=["maxabs_scaling"])


def _row_set(X, y):
    return {tuple(row) + (label,) for row, label in zip(np.round(X, 12), y)}


def test_redrawn_problem_keeps_the_pool_and_the_sizes():
    problem = _problem(np.random.default_rng(0))
    pool = _row_set(problem.X, problem.y) | _row_set(problem.X_val, problem.y_val)
    seen = []
    for seed in (1, 2):
        redrawn = redraw_validation(problem, seed)
        assert redrawn.X.shape == problem.X.shape and redrawn.X_val.shape == problem.X_val.shape
        train, val = _row_set(redrawn.X, redrawn.y), _row_set(redrawn.X_val, redrawn.y_val)
        assert train | val == pool and not train & val
        # the test set, the constants and the problem are the file's
        assert redrawn.X_test is problem.X_test and redrawn.datafit is problem.datafit
        seen.append(val)
    assert seen[0] != seen[1]


def test_no_validation_split_is_refused():
    problem = _problem(np.random.default_rng(0))
    problem.X_val = problem.y_val = None
    with pytest.raises(ValueError, match="per_seed needs a variant with a validation split"):
        SeedProblems(problem, [1, 2], "per_seed")
    with pytest.raises(ValueError, match="validation_split must be one of"):
        SeedProblems(problem, [1, 2], "per_run")


SPEC = {"experiment": "e", "solver": "dp_scd", "dataset": "d", "variant": "maxabs_unitnorm",
        "problem": {"loss": "logistic", "penalty": "l2", "alpha": 1e-3},
        "privacy": {"epsilon": [1.0], "delta": 1e-3}, "seeds": 3, "base_seed": 0}
CONFIGS = [{"solver": "dp_scd", "epsilon": 1.0, "passes": 2, "clip": 0.5, "batch_size": 20}]


def _sweep(problem, validation_split):
    spec = {**SPEC, **({"validation_split": validation_split}
                       if validation_split != "fixed" else {})}
    seeds = [run_seed(0, k) for k in range(3)]
    table, records = run_configurations(spec, CONFIGS, seeds, problem, f_star=0.5)
    return spec, seeds, table, records


def test_sweep_metrics_are_each_seeds_own_holdout():
    problem = _problem(np.random.default_rng(1))
    spec, seeds, table, records = _sweep(problem, "per_seed")
    last = table[table["pass"] == 2].sort_values("seed_index")
    # re-run each seed on its own redrawn problem: same iterate, metrics on its hold-out
    for k, seed in enumerate(seeds):
        redrawn = redraw_validation(problem, seed)
        entropy = run_entropy(seed, stream_identity(spec["experiment"], CONFIGS[0]))  # the sweep's streams
        result, _ = get("dp_scd").run(redrawn, CONFIGS[0], entropy, Budget(1.0, 1e-3))
        assert last["val_metric"].iloc[k] == evaluate("accuracy", redrawn.X_val,
                                                     redrawn.y_val, result.w)
        assert last["test_metric"].iloc[k] == evaluate("accuracy", problem.X_test,
                                                      problem.y_test, result.w)
        assert last["objective"].iloc[k] == result.objective[-1]
    # the fixed split is the problem as loaded: other iterates, other validation rows
    _, _, fixed, _ = _sweep(problem, "fixed")
    assert not np.array_equal(fixed["objective"].to_numpy(), table["objective"].to_numpy())


def test_runs_say_which_split_and_add_no_nonprivate_input():
    problem = _problem(np.random.default_rng(2))
    for split in ("fixed", "per_seed"):
        spec, _, table, records = _sweep(problem, split)
        (run,) = mlflow_runs(records, spec, problem)
        assert run["tags"].get("dpcd.validation_split") == (None if split == "fixed"
                                                            else "per_seed")
        # the split is data-independent: the non-private inputs are the data stage's
        assert run["tags"]["privacy.nonprivate_inputs"] == "maxabs_scaling"
        assert set(table["nonprivate_inputs"]) == {"maxabs_scaling"}


def test_each_run_records_its_division_in_ledger_and_params():
    """The seed of the division: the data file's split seed (fixed), each run seed
    (per_seed), in every seed's ledger and in the configuration's MLflow params."""
    problem = _problem(np.random.default_rng(3))
    problem.split_seed = 11
    for split in ("fixed", "per_seed"):
        spec, seeds, table, records = _sweep(problem, split)
        (record,) = records
        (run,) = mlflow_runs(records, spec, problem)
        assert run["params"]["validation_split"] == split
        recorded = [ledger.data_split for ledger in record.ledgers]
        if split == "fixed":
            assert recorded == [{"validation_split": "fixed", "seed": 11}] * 3
            assert run["params"]["validation_split_seed"] == "11"
        else:
            assert [d["seed"] for d in recorded] == seeds
            assert run["params"]["validation_split_seed"] == ",".join(map(str, seeds))
            n_val = redraw_validation(problem, seeds[0]).y_val.size
            assert {(d["n_train"], d["n_val"]) for d in recorded} == {(120, n_val)}
            # the recorded seed replays the hold-out
            for division in recorded:
                assert validation_rows(160, division["seed"])[1].size == division["n_val"]
        # the artifact says it too (one ledger per seed when they differ)
        assert '"data_split"' in run["artifacts"]["privacy_ledger.json"]
        assert "validation" not in run["tags"]["privacy.nonprivate_inputs"]


def test_redraw_keeps_constants_and_unit_rows():
    """What was computed from the data before the division is the same object for
    every seed, and every redrawn training row keeps norm 1 (DP-SCD's sensitivity)."""
    problem = _problem(np.random.default_rng(4))
    problems = SeedProblems(problem, [run_seed(0, k) for k in range(4)], "per_seed")
    for k in range(4):
        redrawn = problems(k)
        for name in ("smoothness", "global_smoothness", "max_abs", "nonprivate_inputs",
                     "penalty", "alpha", "split_seed"):
            assert getattr(redrawn, name) is getattr(problem, name)
        np.testing.assert_allclose(np.linalg.norm(redrawn.X, axis=1), 1.0, rtol=1e-12)
        assert problems(k) is redrawn  # kept across the sweep's configurations
    assert SeedProblems(problem, [1], "fixed")(0) is problem


def test_fresh_reruns_redraw_their_own_holdout():
    """A fresh re-run (per_seed) holds out its fresh seed's rows, not a selection seed's."""
    problem = _problem(np.random.default_rng(5))
    spec = {**SPEC, "validation_split": "per_seed", "chunks": 1, "passes": [2],
            "grid": {"clip": [0.5], "batch_size": [20]}}
    table = pd.DataFrame({"solver": ["dp_scd"], "config_id": [config_id(CONFIGS[0])]})
    runs, records, run_spec = run_fresh({**spec, "fresh_seeds": 2}, table, problem, 0.5)
    seeds = fresh_seeds(0, 2, fresh_cell("e", CONFIGS[0]))
    (record,) = records
    assert [ledger.data_split["seed"] for ledger in record.ledgers] == seeds
    assert "hyperparameter_selection" in record.ledgers[0].nonprivate_inputs
    last = runs[runs["pass"] == 2].sort_values("seed_index")
    for k, seed in enumerate(seeds):
        redrawn = redraw_validation(problem, seed)
        entropy = run_entropy(seed, stream_identity(spec["experiment"], CONFIGS[0]))
        result, _ = get("dp_scd").run(redrawn, CONFIGS[0], entropy, Budget(1.0, 1e-3))
        assert last["val_metric"].iloc[k] == evaluate("accuracy", redrawn.X_val,
                                                     redrawn.y_val, result.w)
    (run,) = mlflow_runs(records, run_spec, problem)
    assert run["params"]["validation_split_seed"] == ",".join(map(str, seeds))


def test_private_smoothness_estimate_is_refused_with_per_seed():
    """DP-CD-P's estimate is drawn on the file's training rows: not each seed's."""
    problem = _problem(np.random.default_rng(6), loss="squares")
    problem.y = problem.X @ np.ones(5)
    problem.y_val = problem.X_val @ np.ones(5)
    spec = {**SPEC, "solver": "dp_cd_p", "validation_split": "per_seed"}
    with pytest.raises(ValueError, match="per_seed with dp_cd_p.*validation_split: fixed"):
        run_configurations(spec, [], [1], problem, 0.5, private_estimates={"estimates": []})
