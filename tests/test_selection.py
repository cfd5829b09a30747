"""Validation selection (DP-SCD App. E) and held-out metrics, on constructed tables."""

import numpy as np
import pandas as pd
import pytest

from dpcd.report.tables import best_configurations, summary_table
from dpcd.problems.metrics import evaluate, metric_of


def _runs(metric, val, test, objective):
    """2 configurations x 3 seeds x passes 0..2 of one solver at one epsilon."""
    rows = []
    for c, cid in enumerate(["a", "b"]):
        for s in range(3):
            for k in range(3):
                last = k == 2
                rows.append({
                    "experiment": "e", "solver": "dp_sgd", "config_id": cid, "epsilon": 1.0,
                    "delta": 1e-3, "passes": 2, "seed_index": s, "seed": 10 + s, "pass": k,
                    "objective": objective[c][s], "rel_error": objective[c][s], "time": 0.1 * k,
                    "status": "done", "step": 0.1 * (c + 1), "clip": 1.0, "batch_size": 5.0,
                    "epsilon_achieved": 1.0, "nonprivate_inputs": "", "metric": metric,
                    "val_metric": val[c][s] if last else np.nan,
                    "test_metric": test[c][s] if last else np.nan,
                })
    return pd.DataFrame(rows)


def test_mse_lowest_median_wins_even_against_objective():
    # a: lower objective but higher median validation MSE (one lucky seed).
    runs = _runs("mse", val=[[0.1, 5, 5], [1, 1, 9]], test=[[1, 2, 3], [4, 5, 60]],
                 objective=[[1, 1, 1], [2, 2, 2]])
    assert best_configurations(runs)["config_id"].item() == "a"  # DP-CD rule unchanged
    assert best_configurations(runs, "validation")["config_id"].item() == "b"
    (row,) = summary_table(runs, "validation").itertuples()
    assert (row.config_id, row.test_metric_median, row.n_configs) == ("b", 5, 2)
    assert row.val_metric_median == 1 and row.metric == "mse"


def test_accuracy_highest_median_wins_and_diverged_never_selected():
    runs = _runs("accuracy", val=[[0.9, 0.5, 0.6], [0.7, 0.7, 0.1]],
                 test=[[0.9, 0.5, 0.6], [0.8, 0.7, 0.75]], objective=[[1, 1, 1], [1, 1, 1]])
    assert best_configurations(runs, "validation")["config_id"].item() == "b"
    runs.loc[runs["config_id"] == "b", "val_metric"] = np.where(
        runs.loc[runs["config_id"] == "b", "pass"] == 2, np.nan, np.nan)
    assert best_configurations(runs, "validation")["config_id"].item() == "a"


def test_validation_without_split_is_a_clear_error():
    runs = _runs("mse", [[1] * 3] * 2, [[1] * 3] * 2, [[1] * 3] * 2).drop(
        columns=["metric", "val_metric", "test_metric"])
    with pytest.raises(ValueError, match="no validation split"):
        best_configurations(runs, "validation")
    with pytest.raises(ValueError, match="unknown select_by"):
        best_configurations(runs, "test")


def test_metrics_match_sklearn():
    from sklearn.metrics import accuracy_score, mean_squared_error

    rng = np.random.default_rng(0)
    X, w = rng.standard_normal((50, 4)), rng.standard_normal(4)
    y = rng.standard_normal(50)
    assert evaluate("mse", X, y, w) == pytest.approx(mean_squared_error(y, X @ w))
    labels = np.where(rng.random(50) < 0.5, -1.0, 1.0)
    assert evaluate("accuracy", X, labels, w) == pytest.approx(
        accuracy_score(labels, np.where(X @ w >= 0, 1.0, -1.0)))
    assert np.isnan(evaluate("mse", X, y, np.full(4, np.nan)))
    assert (metric_of("squares"), metric_of("hinge")) == ("mse", "accuracy")


def test_conclusions_compare_dp_scd_with_dp_sgd_and_find_the_worst():
    from dpcd.report.paper import conclusions

    table = pd.DataFrame({
        "solver": ["dp_scd", "dp_sgd", "seq_dp_scd", "scd"], "epsilon": 1.0, "passes": 10,
        "metric": "mse", "test_metric_median": [1.0, 2.0, 3.0, 9.0]})
    (row,) = conclusions({"ridge": table}).itertuples()
    assert row.dp_scd_vs_dp_sgd and row.seq_dp_scd_worst  # scd is non-private: not counted
    table["metric"] = "accuracy"
    (row,) = conclusions({"svm": table}).itertuples()
    assert not row.dp_scd_vs_dp_sgd and not row.seq_dp_scd_worst


def test_staged_select_counts_exact_ties_once():
    """keep_best (search: staged): configurations whose criterion equals a kept
    one's to the last bit (runs that never moved from w = 0) leave with it, so
    the kept places go to distinct outcomes; fewer are kept when fewer remain."""
    from dpcd.sweep.staged import keep_best

    frames = []
    for cid, objective in (("a", 5.61), ("b", 5.61), ("c", 5.61), ("d", 5.7), ("e", 6.0)):
        one = _runs("mse", val=[[1, 1, 1]] * 2, test=[[1, 1, 1]] * 2,
                    objective=[[objective] * 3] * 2)
        frames.append(one[one["config_id"] == "a"].assign(config_id=cid))
    runs = pd.concat(frames, ignore_index=True)
    kept = keep_best(runs, "last_objective", 3)
    assert kept["config_id"].tolist() == ["a", "d", "e"]  # a: ties broken by config_id
    assert kept["rank"].tolist() == [0, 1, 2] and kept["screened"].unique().tolist() == [5]
    assert keep_best(runs[runs["config_id"].isin(["a", "b", "c"])], "last_objective",
                     3)["config_id"].tolist() == ["a"]
    # validation: the median validation metric is the criterion
    runs["val_metric"] = runs["config_id"].map({"a": 2, "b": 1, "c": 1, "d": 3, "e": 1.5}
                                               ).where(runs["val_metric"].notna())
    assert keep_best(runs, "validation", 3)["config_id"].tolist() == ["b", "e", "a"]


def test_last_checkpoints_by_position_in_a_concatenated_table():
    """Tables concatenated without a fresh index repeat their labels; each
    run's last row is still found once (the replay of a prefix screen reads
    such a table)."""
    from dpcd.report.tables import last_checkpoints

    a = pd.DataFrame({"solver": "x", "config_id": "a", "seed_index": 0,
                      "pass": [0.0, 1.0, 2.0], "v": [1, 2, 3]})
    both = pd.concat([a, a.assign(config_id="b", v=[4, 5, 6])])
    last = last_checkpoints(both)
    assert sorted(last["v"]) == [3, 6] and len(last) == 2
