"""Issue 14: fresh-seed re-evaluation and regularisation sensitivity (unit level)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcd.problems import lambda_max, make_problem
from dpcd.report.fresh import chosen_curves, fresh_markdown, fresh_metrics, fresh_table
from dpcd.report.lambdas import lambda_markdown, lambda_table
from dpcd.report.summary import conclusions_on_fresh, fresh_summary_markdown, lambda_summary_markdown
from dpcd.streams import (FRESH_OFFSET, config_id, fresh_seed, fresh_seeds, run_entropy,
                          run_identity, run_seed)
from dpcd.sweep import configurations
from dpcd.sweep.fresh import run_fresh, run_fresh_chunk, selected_configurations
from dpcd.sweep.problem import SweepProblem, resolve_alpha
from dpcd.sweep.run import run_chunk
from dpcd.sweep.runner import run_configurations
from dpcd.sweep.tidy import kernel_seconds, records_run
from dpcd.sweep.smoothness import private_smoothness_estimates


# --- seeds ------------------------------------------------------------------------
@given(st.integers(0, 2**31), st.integers(0, 10**6), st.integers(0, 2**31), st.integers(0, 10**6))
def test_fresh_seeds_never_equal_a_selection_seed(base_a, index_a, base_b, index_b):
    # Whatever the base seeds and indices: selection seeds are 32-bit words,
    # fresh seeds live in [2**32, 2**33).
    selection, fresh = run_seed(base_a, index_a), fresh_seed(base_b, index_b)
    assert 0 <= selection < FRESH_OFFSET <= fresh < 2 * FRESH_OFFSET
    assert selection != fresh


def test_fresh_seeds_are_distinct_reproducible_and_branch_off_the_selection_stream():
    seeds = fresh_seeds(0, 1000)
    assert len(set(seeds)) == 1000 and seeds == fresh_seeds(0, 1000)
    assert not set(seeds) & {run_seed(0, k) for k in range(1000)}
    # Not the selection seeds shifted: the low words come from another branch.
    assert [s - FRESH_OFFSET for s in seeds[:50]] != [run_seed(0, k) for k in range(50)]
    assert fresh_seeds(1, 5) != fresh_seeds(0, 5)


def test_private_smoothness_estimates_are_keyed_by_seed_experiment_and_epsilon():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    seeds = [run_seed(0, k) for k in range(2)]
    selection = private_smoothness_estimates(X, "squares", 0.1, [1.0, 2.0], seeds, "e")
    # Each estimate is drawn from SeedSequence(run_entropy(seed, identity)).
    datafit, _ = make_problem("squares", "none", 0.0)
    from dpcd import privacy

    for entry in selection["estimates"]:
        identity = run_identity("e", {"epsilon": entry["epsilon"], "smoothness_fraction": 0.1},
                                stream="private_smoothness")
        seq = np.random.SeedSequence(run_entropy(seeds[entry["seed_index"]], identity))
        expected, _ = privacy.estimate_smoothness(datafit, X, 0.1 * entry["epsilon"],
                                                  np.random.default_rng(seq))
        assert entry["smoothness"] == pytest.approx(expected.tolist(), rel=0, abs=0)
        assert entry["seed"] == seeds[entry["seed_index"]]
    again = private_smoothness_estimates(X, "squares", 0.1, [1.0, 2.0], seeds, "e")
    assert again == selection
    fresh = private_smoothness_estimates(X, "squares", 0.1, [1.0, 2.0], fresh_seeds(0, 2), "e")
    other = private_smoothness_estimates(X, "squares", 0.1, [1.0, 2.0], seeds, "e2")
    for a, b, c in zip(selection["estimates"], fresh["estimates"], other["estimates"]):
        assert a["smoothness"] != b["smoothness"] and a["smoothness"] != c["smoothness"]


def test_dp_cd_p_laplace_draws_are_independent_across_epsilon():
    """The noise of the smoothness release at epsilon 1 and 2 (same seed, same
    experiment), each divided by its scale: uncorrelated, where a shared stream
    gives the same standardised draws (correlation 1). Features of magnitude 1,
    so every mean is 1/4 of its bound and the clamp to [b/100, b] is rare."""
    rng = np.random.default_rng(1)
    n, p = 20_000, 100
    X = rng.choice([-1.0, 1.0], size=(n, p))
    estimates = private_smoothness_estimates(X, "squares", 0.1, [1.0, 2.0], [run_seed(0, 0)],
                                             "e")["estimates"]
    true = make_problem("squares", "none", 0.0)[0].coordinate_smoothness(X)
    standardised = []
    for entry in estimates:
        scale = np.asarray(entry["ledger"]["mechanisms"][0]["noise_scale"])
        bound = 4 * true  # (2 max |x_ij|)^2 times the loss constant
        noise = np.asarray(entry["smoothness"]) - true
        inside = (np.asarray(entry["smoothness"]) > 0.01 * bound) & (np.asarray(entry["smoothness"]) < bound)
        standardised.append((noise / scale, inside))
    (a, ia), (b, ib) = standardised
    keep = ia & ib
    assert keep.sum() > 90
    r = np.corrcoef(a[keep], b[keep])[0, 1]
    # independent: r ~ N(0, 1/100); 4 standard deviations
    assert abs(r) < 0.4, r


# --- running the selected configurations ---------------------------------------------
def _problem(rng, n=60, p=5, alpha=0.05):
    X = rng.standard_normal((n, p))
    y = X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n)
    datafit, penalty = make_problem("squares", "l1", alpha)
    return SweepProblem(X=X, y=y, datafit=datafit, penalty=penalty,
                        smoothness=datafit.coordinate_smoothness(X),
                        global_smoothness=datafit.global_smoothness(X),
                        max_abs=np.abs(X).max(axis=0), loss="squares", alpha=alpha)


SPEC = {
    "experiment": "e", "solver": "dp_cd", "dataset": "d", "variant": "raw",
    "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
    "privacy": {"epsilon": [1.0, 5.0], "delta": 1e-4}, "grid": {"step": [0.3, 1.0], "clip": [0.1, 1.0]},
    "passes": [2, 3], "seeds": 2, "base_seed": 0, "chunks": 1,
}


def test_selected_configurations_rebuild_the_chosen_ids_from_the_grid():
    configs = configurations("dp_cd", SPEC["grid"], SPEC["passes"], [1.0, 5.0])
    chosen = [configs[1], configs[6]]
    table = pd.DataFrame({"solver": ["dp_cd", "dp_cd", "dp_sgd"],
                          "config_id": [config_id(c) for c in chosen] + ["0123456789ab"]})
    assert selected_configurations(SPEC, table) == chosen
    bad = table.assign(solver="dp_cd")
    with pytest.raises(ValueError, match="0123456789ab.*not in its grid"):
        selected_configurations(SPEC, bad)


def test_run_fresh_runs_the_same_configurations_on_fresh_seeds_with_their_own_ledgers():
    problem = _problem(np.random.default_rng(1))
    f_star = 0.01
    runs, _ = run_chunk(SPEC, 0, problem, f_star)
    chosen = runs.groupby("config_id").first().reset_index().iloc[[0, 5]]
    table = chosen[["solver", "config_id"]]
    fresh, records, spec = run_fresh({**SPEC, "fresh_seeds": 3}, table, problem, f_star)
    assert set(fresh["config_id"]) == set(table["config_id"])
    for (cid, epsilon, passes), rows in fresh.groupby(["config_id", "epsilon", "passes"]):
        cell = {"experiment": "e", "solver": "dp_cd", "epsilon": epsilon, "passes": passes}
        assert sorted(rows["seed"].unique()) == sorted(fresh_seeds(0, 3, cell))
    # two cells, two sets of fresh seeds
    assert fresh.groupby("config_id")["seed"].apply(frozenset).nunique() == 2
    assert not set(fresh["seed"]) & set(runs["seed"])
    assert (fresh["seed_set"] == "fresh").all() and spec["seeds"] == 3
    for record in records:
        assert len(record.ledgers) == 3
        for ledger in record.ledgers:
            assert "hyperparameter_selection" in ledger.nonprivate_inputs
            assert ledger.epsilon_achieved <= record.config["epsilon"] * (1 + 1e-9)
    # The same configuration on the same seed gives the same run: the fresh
    # rows are the sweep's adapters, only the seeds differ.
    again, _, _ = run_fresh({**SPEC, "fresh_seeds": 3}, table, problem, f_star)
    pd.testing.assert_frame_equal(fresh.drop(columns="time"), again.drop(columns="time"))


def _sorted(runs):
    keys = ["solver", "config_id", "seed", "pass"]
    return runs.drop(columns="time").sort_values(keys).reset_index(drop=True)


def test_the_fresh_stage_in_chunks_runs_what_one_process_runs(tmp_path):
    """The fresh jobs (chunks of the cells of all the experiment's solvers,
    round-robin, the selection read from the table's CSV) together give
    run_fresh's rows and records for each solver, each cell once."""
    problem = _problem(np.random.default_rng(1))
    sgd = {**SPEC, "solver": "sgd", "grid": {"step": [0.01, 0.1], "batch_size": [1, 4]}}
    tables, whole = [], {}
    for spec in (SPEC, sgd):
        runs, _ = run_chunk(spec, 0, problem, 0.01)
        cells = runs.groupby(["epsilon", "passes"])["config_id"].first().reset_index()
        table = cells.assign(solver=spec["solver"])[["solver", "config_id", "epsilon", "passes"]]
        tables.append(table)
        whole[spec["solver"]] = run_fresh({**spec, "fresh_seeds": 2}, table, problem, 0.01)[:2]
    path = tmp_path / "table.csv"
    pd.concat(tables).to_csv(path, index=False)
    fresh = {"seeds": 2, "seed_set": "fresh"}
    spec = {"experiment": "e", "selection": str(path), "chunks": 3,
            "solvers": [{**SPEC, **fresh}, {**sgd, **fresh}]}
    parts = [run_fresh_chunk(spec, k, problem, 0.01) for k in range(3)]
    # 4 cells of dp_cd then 4 of sgd, round-robin: 3, 3 and 2 per job
    assert [sum(len(records) for _, _, records in part) for part in parts] == [3, 3, 2]
    assert [[each["solver"] for each, _, _ in part] for part in parts] == [["dp_cd", "sgd"]] * 3
    for solver, (runs, records) in whole.items():
        mine = [(runs, records) for part in parts for each, runs, records in part
                if each["solver"] == solver]
        chunked = pd.concat([runs for runs, _ in mine], ignore_index=True)
        pd.testing.assert_frame_equal(_sorted(chunked), _sorted(runs))
        assert sorted(r.config_id for _, part in mine for r in part) == sorted(
            r.config_id for r in records)
    # a chunk without cells: one empty table with the runs' columns
    spec["chunks"] = 9
    (each, empty, records), = run_fresh_chunk(spec, 8, problem, 0.01)
    assert empty.empty and records == [] and set(empty.columns) >= set(whole["dp_cd"][0].columns)


def test_a_non_private_solver_runs_once_for_every_epsilon():
    """run_chunk runs SCD at the first epsilon only and gives its runs to the
    others: the rows and records are those of running every epsilon (the
    streams are keyed without epsilon), with each epsilon's configuration id."""
    problem = _problem(np.random.default_rng(2))
    spec = {**SPEC, "solver": "sgd", "privacy": {"epsilon": [1.0, 5.0, 9.0], "delta": 1e-4},
            "grid": {"step": [0.01, 0.1], "batch_size": [1, 4]}}
    seeds = [run_seed(0, k) for k in range(2)]
    every = configurations("sgd", spec["grid"], spec["passes"], [1.0, 5.0, 9.0])
    expected, expected_records = run_configurations(spec, every, seeds, problem, 0.01)
    runs, records = run_chunk(spec, 0, problem, 0.01)
    pd.testing.assert_frame_equal(_sorted(runs), _sorted(expected))
    assert sorted(r.config_id for r in records) == sorted(r.config_id for r in expected_records)
    # each epsilon's rows are the first epsilon's, computed once
    by_eps = [runs[runs["epsilon"] == e].drop(columns=["epsilon", "config_id"])
              .reset_index(drop=True) for e in (1.0, 5.0, 9.0)]
    for other in by_eps[1:]:
        pd.testing.assert_frame_equal(other, by_eps[0])
    for a, b in zip(records[:8], records[8:16]):
        assert a.objective is b.objective  # one run, not two equal ones
        assert a.copy_of is None and b.copy_of == a.config_id
    # the overhead ledger counts each run's kernel time once, not once per epsilon
    assert records_run(records) == records[:8]
    assert kernel_seconds(records) == pytest.approx(sum(r.time.sum() for r in records[:8]))
    assert kernel_seconds(records) < sum(r.time.sum() for r in records)
    # a private solver still runs every epsilon
    private, _ = run_chunk(SPEC, 0, problem, 0.01)
    assert private.groupby("epsilon")["objective"].sum().nunique() == 2


def test_mlflow_runs_of_fresh_records_say_they_are_a_new_release():
    from dpcd.tracking.payload import mlflow_runs

    problem = _problem(np.random.default_rng(1))
    runs, _ = run_chunk(SPEC, 0, problem, 0.01)
    table = runs.groupby("config_id").first().reset_index().iloc[[0]][["solver", "config_id"]]
    _, records, spec = run_fresh({**SPEC, "fresh_seeds": 2}, table, problem, 0.01)
    (run,) = mlflow_runs(records, spec, problem)
    assert run["name"].endswith("-fresh")
    assert run["tags"]["dpcd.seed_set"] == "fresh" and run["tags"]["privacy.release"] == "fresh_seeds"
    assert "hyperparameter_selection" in run["tags"]["privacy.nonprivate_inputs"]
    assert '"hyperparameter_selection"' in run["artifacts"]["privacy_ledger.json"]
    assert run["params"]["seeds"] == 2


# --- tables ---------------------------------------------------------------------
def _selected():
    return pd.DataFrame({
        "solver": ["dp_cd", "dp_cd", "dp_sgd", "dp_sgd"], "epsilon": 1.0, "passes": [2, 5, 2, 5],
        "rel_error_mean": [0.04, 0.03, 0.05, 0.06], "rel_error_std": 0.01,
        "config_id": ["a1", "a2", "b1", "b2"], "neighbouring": "replace_one",
    })


def _fresh_runs(values):
    rows = []
    for cid, (solver, passes, errors) in values.items():
        for k, err in enumerate(errors):
            for step in range(passes + 1):
                rows.append({"solver": solver, "config_id": cid, "epsilon": 1.0, "passes": passes,
                             "pass": float(step), "seed_index": k, "seed": 2**32 + k,
                             "rel_error": err if step == passes else 1.0,
                             "epsilon_achieved": 0.99, "status": "done",
                             "time": (0.2 + 0.1 * k) * step / passes})
    return pd.DataFrame(rows)


def test_fresh_table_puts_both_numbers_side_by_side():
    runs = _fresh_runs({"a1": ("dp_cd", 2, [0.10, 0.14]), "a2": ("dp_cd", 5, [0.12, 0.12]),
                        "b1": ("dp_sgd", 2, [0.05, 0.07])})
    table = fresh_table(_selected(), runs)
    row = table.set_index("config_id")
    assert row.loc["a1", "rel_error_mean"] == 0.04  # selected on: unchanged
    assert row.loc["a1", "fresh_rel_error_mean"] == pytest.approx(0.12)
    assert row.loc["a1", "optimism"] == pytest.approx(3.0)
    assert row.loc["a1", "fresh_n_seeds"] == 2
    assert row.loc["a1", "fresh_time_mean"] == pytest.approx(0.25)  # last iterates' times
    assert np.isnan(row.loc["b2", "fresh_rel_error_mean"])  # no fresh runs for it
    text = fresh_markdown(table, "exp", 2)
    assert "| dp_cd | replace_one | 1 | 0.0400 / 0.1200 | 0.0300 / 0.1200 |" in text
    metrics = fresh_metrics(table)
    assert metrics["fresh_rel_error.dp_cd.eps1.passes2"] == pytest.approx(0.12)
    # best cell on the selection seeds is passes 5 for dp_cd: its fresh value
    assert metrics["fresh_best_rel_error.dp_cd"] == pytest.approx(0.12)
    assert metrics["fresh_best_rel_error.dp_sgd"] == pytest.approx(0.06)
    assert "fresh_rel_error.dp_sgd.eps1.passes5" not in metrics


def test_chosen_curves_choose_on_the_selection_numbers():
    chosen = chosen_curves(_selected()).set_index("solver")["config_id"]
    assert chosen.to_dict() == {"dp_cd": "a2", "dp_sgd": "b1"}
    chosen = chosen_curves(_selected(), "validation").set_index("solver")["config_id"]
    assert chosen.to_dict() == {"dp_cd": "a2", "dp_sgd": "b2"}


def _stacked(fresh_cd, fresh_sgd):
    table = _selected().assign(experiment="exp")
    table["fresh_rel_error_mean"] = [fresh_cd, fresh_cd, fresh_sgd, fresh_sgd]
    return table


def test_conclusions_on_fresh_seeds_flag_a_reversed_winner():
    duel, best = conclusions_on_fresh(_stacked(0.10, 0.07))
    # selected on: DP-CD wins both cells; fresh: DP-SGD does
    assert list(duel["winner_selected_on"]) == ["dp_cd", "dp_cd"]
    assert list(duel["winner_fresh"]) == ["dp_sgd", "dp_sgd"]
    assert not duel["holds"].any() and not best["holds"].any()
    text = fresh_summary_markdown(_stacked(0.10, 0.07))
    assert "the winner of 0 of 2 cells is the same on fresh seeds" in text
    assert "**no**" in text
    duel, best = conclusions_on_fresh(_stacked(0.05, 0.07))
    assert duel["holds"].all() and best["holds"].all()
    assert "the winner of 2 of 2 cells" in fresh_summary_markdown(_stacked(0.05, 0.07))
    assert fresh_summary_markdown(_selected().assign(experiment="exp")) == ""


# --- regularisation -----------------------------------------------------------------
def test_lambda_max_is_the_smallest_l1_strength_with_a_zero_solution():
    from dpcd import solvers

    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4))
    y = X @ np.array([1.0, -2.0, 0.0, 0.5]) + 0.1 * rng.standard_normal(50)
    datafit, _ = make_problem("squares", "none", 0.0)
    lam = lambda_max(X, y, datafit)
    assert lam == pytest.approx(2 * np.abs(X.T @ y).max() / 50)
    for factor, zero in ((1.001, True), (0.9, False)):
        _, penalty = make_problem("squares", "l1", factor * lam)
        w = solvers.reference_solve(X, y, datafit, penalty, tol=1e-12).w
        assert np.all(w == 0) == zero
    logistic, _ = make_problem("logistic", "none", 0.0)
    labels = np.sign(y)
    assert lambda_max(X, labels, logistic) == pytest.approx(np.abs(X.T @ labels).max() / 100)
    spec = {"loss": "squares", "penalty": "l1", "alpha": 3.0, "lambda_max_fraction": 0.25}
    assert resolve_alpha(spec, X, y) == pytest.approx((0.25 * lam, lam))
    assert resolve_alpha({"loss": "squares", "penalty": "l1", "alpha": 3.0}, X, y)[0] == 3.0


def test_lambda_table_takes_each_solvers_best_cell_per_lambda():
    base = _selected()
    low = base.assign(rel_error_mean=[0.2, 0.3, 0.1, 0.4])
    fresh = {name: t.assign(fresh_rel_error_mean=t["rel_error_mean"] * 2)
             for name, t in (("exp", base), ("exp_lam0", low))}
    references = {"exp": {"alpha": 0.1, "lambda_max": 1.0}, "exp_lam0": {"alpha": 0.01, "lambda_max": 1.0}}
    groups = {"exp_lam0": {"base": "exp", "lambda_max_fraction": 0.01}}
    table = lambda_table(groups, {"exp": base, "exp_lam0": low}, references, fresh)
    assert set(table["experiment"]) == {"exp"} and len(table) == 4
    cd = table[table.solver == "dp_cd"].set_index("alpha")
    assert cd.loc[0.1, "passes"] == 5 and cd.loc[0.1, "rel_error_mean"] == 0.03
    assert cd.loc[0.01, "passes"] == 2 and cd.loc[0.01, "fresh_rel_error_mean"] == pytest.approx(0.4)
    assert cd.loc[0.01, "lambda_fraction"] == pytest.approx(0.01)
    text = lambda_markdown(table)
    assert "| exp | 1 | 0.01 | 0.01 | 0.2000 / 0.4000 | 0.1000 / 0.2000 |" in text
    summary = lambda_summary_markdown(table)
    # fresh numbers: DP-CD 0.06 < DP-SGD 0.1 at lambda 0.1, 0.4 > 0.2 at 0.01
    assert "DP-CD ahead of DP-SGD at 1 of 2 lambdas; not at lambda = 0.01." in summary


def test_tables_are_read_back_with_config_ids_as_strings(tmp_path):
    from dpcd.report.tables import read_table

    path = tmp_path / "t.csv"
    pd.DataFrame({"solver": ["dp_cd"], "config_id": ["12e456789012"]}).to_csv(path, index=False)
    assert read_table(path)["config_id"].tolist() == ["12e456789012"]
    assert pd.read_csv(path)["config_id"].dtype.kind == "f"  # what a plain read_csv does


def test_summary_of_a_validation_experiment_takes_both_test_metrics_from_the_fresh_table():
    from dpcd.report.summary import add_fresh

    stacked = _selected().assign(experiment="exp")  # the stacked table has no held-out columns
    fresh = _selected().assign(test_metric_median=[0.8, 0.81, 0.7, 0.71],
                               fresh_test_metric_median=[0.75, 0.8, 0.7, 0.6],
                               fresh_rel_error_mean=[0.1, 0.1, 0.2, 0.2])
    table = add_fresh(stacked, {"exp": fresh})
    assert list(table["test_metric_median"]) == [0.8, 0.81, 0.7, 0.71]
    text = fresh_summary_markdown(table)
    assert "| exp | dp_cd | replace_one | 1 | 0.8 / 0.75 | 0.81 / 0.8 |" in text
    # without the selected-on metric the section is left out, not a crash
    assert "Test metric" not in fresh_summary_markdown(table.drop(columns="test_metric_median"))


def test_table_3_times_come_from_runs_timed_alone():
    """A sweep's DP-SGD times are amortised shares of a shared kernel call;
    Table 3 (and the speed-ups against the paper) take the fresh re-runs'
    times, each run timed alone, and say so; cells without fresh runs keep
    theirs and the text says they may be shares."""
    from dpcd.report.summary import solo_times, summary_markdown

    table = _stacked(0.05, 0.06).assign(time_mean=[1.0, 2.0, 5.0, 6.0], time_std=0.0,
                                        fresh_time_mean=[3.0, np.nan, 7.0, 8.0],
                                        fresh_time_std=[0.5, np.nan, 0.1, 0.1])
    solo = solo_times(table)
    assert solo["time_mean"].tolist() == [3.0, 2.0, 7.0, 8.0]
    assert solo["time_std"].tolist() == [0.5, 0.0, 0.1, 0.1]
    assert "amortised shares" in summary_markdown(solo)
    assert "each run timed alone on the fresh seeds" in summary_markdown(
        solo.assign(fresh_time_mean=[3.0, 4.0, 7.0, 8.0]))
    # tables without fresh runs are left as they are
    plain = table.drop(columns=["fresh_time_mean", "fresh_time_std"])
    assert solo_times(plain) is plain
