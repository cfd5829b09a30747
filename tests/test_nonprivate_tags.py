"""Issue 30, item 5: data-dependent choices are tagged, and refusals that read
the data (or claims that are not bounds) are gone or tagged.

Each run's ledger lists what was read off the data without noise
(``nonprivate_inputs``, hence the MLflow tag ``privacy.nonprivate_inputs``):
lambda set as a fraction of lambda_max(X, y), dropped all-zero columns, Adult's
category set and most-frequent-category drop. DP-GCD's paper calibration
carries the caveat ``invalid_bound`` (tag ``privacy.invalid_bound``) and the
estimators refuse it unless asked for by name.
"""
import json

import numpy as np
import pytest

from dpcd.estimators import DPCoordinateDescentRegressor
from dpcd.data import save_dataset
from dpcd.data.preprocess import RawData, apply_recipe
from dpcd.privacy import Ledger
from dpcd.problems import make_problem
from dpcd.sweep.problem import load_problem
from dpcd.sweep.run import run_chunk
from dpcd.tracking.payload import mlflow_runs
from test_data_loaders import _raw
from test_data_formats import adult_files


def _files(tmp_path, X, y, meta=None):
    data = str(tmp_path / "d.npz")
    save_dataset(data, X, y, {"task": "regression", **(meta or {})})
    datafit, _ = make_problem("squares", "l1", 0.1)
    smooth = str(tmp_path / "s.json")
    with open(smooth, "w") as fh:
        json.dump({"smoothness": datafit.coordinate_smoothness(X).tolist(),
                   "global_smoothness": datafit.global_smoothness(X),
                   "max_abs": np.abs(X).max(axis=0).tolist()}, fh)
    return data, smooth


def _spec(problem, solver="dp_cd", grid=None, accountant="auto"):
    return {"experiment": "e", "solver": solver, "dataset": "d", "variant": "raw",
            "problem": problem, "privacy": {"epsilon": 1.0, "delta": 1e-3,
                                            "accountant": accountant},
            "grid": grid or {"step": [0.5], "clip": [1.0]}, "passes": [2], "seeds": 2,
            "base_seed": 0, "chunks": 1}


@pytest.mark.parametrize("fraction", [None, 0.1])
def test_lambda_as_a_fraction_of_lambda_max_is_in_every_ledger_and_tag(tmp_path, fraction):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    y = X @ rng.standard_normal(4)
    data, smooth = _files(tmp_path, X, y, {"nonprivate_inputs": ["standardisation"]})
    spec_problem = ({"loss": "squares", "penalty": "l1", "alpha": 0.1} if fraction is None
                    else {"loss": "squares", "penalty": "l1", "lambda_max_fraction": fraction})
    problem = load_problem(data, spec_problem, smooth)
    spec = _spec(spec_problem)
    runs, records = run_chunk(spec, 0, problem, 0.01)
    for ledger in records[0].ledgers:
        assert ("lambda_max" in ledger.nonprivate_inputs) == (fraction is not None)
        # the data stage's inputs are in the ledger too, not only in the table
        assert {"standardisation", "exact_smoothness"} <= set(ledger.nonprivate_inputs)
    (run,) = mlflow_runs(records, spec, problem)
    tag = run["tags"]["privacy.nonprivate_inputs"].split(",")
    assert ("lambda_max" in tag) == (fraction is not None)
    assert ('"lambda_max"' in run["artifacts"]["privacy_ledger.json"]) == (fraction is not None)
    assert set(runs["nonprivate_inputs"].iloc[0].split(",")) == set(tag)


def test_dropping_all_zero_columns_is_a_nonprivate_input():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 4))
    raw = RawData(X, X[:, 0], "regression", ["a", "b", "c", "d"])
    _, meta = apply_recipe(raw, "raw", "toy")
    assert "column_drop" not in meta["nonprivate_inputs"]
    X[:, 2] = 0.0
    parts, meta = apply_recipe(RawData(X, X[:, 0], "regression", ["a", "b", "c", "d"]),
                               "raw", "toy")
    assert parts["train"][0].shape[1] == 3
    assert "column_drop" in meta["nonprivate_inputs"]


@pytest.mark.parametrize("name, dropped", [("adult", False), ("adult_dpscd", True)])
def test_adults_category_set_and_most_frequent_drop_are_nonprivate_inputs(tmp_path, name,
                                                                          dropped):
    data, test = adult_files()
    raw = _raw(tmp_path, name, {"adult.data": data, "adult.test": test})
    assert {"categorical_imputation", "category_set"} <= set(raw.nonprivate_inputs)
    assert ("most_frequent_category_drop" in raw.nonprivate_inputs) == dropped


@pytest.mark.parametrize("bound", [None, 3.0])
def test_dp_cd_p_accepts_an_all_zero_column(bound):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (200, 4))
    y = X @ np.array([1.0, -2.0, 0.0, 0.5])
    X[:, 2] = 0.0
    model = DPCoordinateDescentRegressor(solver="dp_cd_p", epsilon=5.0, bounds=bound,
                                         random_state=0).fit(X, y)
    assert np.all(np.isfinite(model.coef_))
    # no public bound: one is released privately, nothing is read off the data
    assert model.privacy_ledger_.nonprivate_inputs == ()
    # exact constants (dp_cd) and none (dp_sgd): accepted too, never named (issue 31)
    DPCoordinateDescentRegressor(solver="dp_cd", random_state=0).fit(X, y)
    DPCoordinateDescentRegressor(solver="dp_sgd", random_state=0).fit(X, y)
    DPCoordinateDescentRegressor(solver="dp_cd_p").fit(np.zeros((20, 2)), np.ones(20))


def test_dp_gcd_paper_calibration_is_refused_unless_asked_for_and_then_tagged():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 5))
    y = X @ rng.standard_normal(5)
    with pytest.raises(ValueError, match="not a valid bound"):
        DPCoordinateDescentRegressor(solver="dp_gcd", accountant="paper").fit(X, y)
    with pytest.raises(ValueError, match="DP-GCD's paper"):
        DPCoordinateDescentRegressor(solver="dp_cd", accountant="paper_invalid_bound").fit(X, y)
    model = DPCoordinateDescentRegressor(solver="dp_gcd", accountant="paper_invalid_bound",
                                         random_state=0).fit(X, y)
    ledger = model.privacy_ledger_
    assert ledger.caveats == ("invalid_bound",)
    assert ledger.flat_tags()["privacy.invalid_bound"] == "true"
    assert Ledger.from_dict(ledger.to_dict()) == ledger
    assert Ledger.combine([ledger, ledger]).caveats == ("invalid_bound",)
    valid = DPCoordinateDescentRegressor(solver="dp_gcd", random_state=0).fit(X, y)
    assert valid.privacy_ledger_.caveats == ()
    assert "privacy.invalid_bound" not in valid.privacy_ledger_.flat_tags()
    # dp_cd's paper accountant (Theorem 3.1, a valid bound) is not refused
    DPCoordinateDescentRegressor(solver="dp_cd", accountant="paper", random_state=0).fit(X, y)


@pytest.mark.parametrize("accountant", ["paper", "auto"])
def test_workflow_runs_dp_gcd_paper_calibration_tagged_invalid_bound(tmp_path, accountant):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y = X @ rng.standard_normal(5)
    data, smooth = _files(tmp_path, X, y)
    spec_problem = {"loss": "squares", "penalty": "l1", "alpha": 0.1}
    problem = load_problem(data, spec_problem, smooth)
    spec = _spec(spec_problem, "dp_gcd", {"step": [0.5], "clip": [1.0]}, accountant)
    _, records = run_chunk(spec, 0, problem, 0.01)
    (run,) = mlflow_runs(records, spec, problem)
    invalid = accountant == "paper"
    assert all(("invalid_bound" in led.caveats) == invalid for led in records[0].ledgers)
    assert (run["tags"].get("privacy.invalid_bound") == "true") == invalid
    assert ('"invalid_bound"' in run["artifacts"]["privacy_ledger.json"]) == invalid
