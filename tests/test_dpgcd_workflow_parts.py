"""DP-GCD paper plumbing (issue 10 items 4-6): fractional passes through the
sweep and report, named solver variants, sparse X without densifying, the
paper's datasets, support recovery (Table 3) and quasi-sparsity (Figure 2)."""

import json
import os

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dpcd.data import load_dataset
from dpcd.data.io import save_dataset
from dpcd.data.synthetic import generate
from dpcd.problems import make_problem
from dpcd.report.figures import quasi_sparsity_alpha
from dpcd.report.summary import compare, hyperparameters_markdown, read_published, support_markdown
from dpcd.report.tables import final_iterates, summary_table
from dpcd.solvers import reference_solve
from dpcd.solvers.base import SolverResult, pass_checkpoints
from dpcd.algorithms import Algorithm, registry
from dpcd.sweep import configurations, run_chunk
from dpcd.streams import config_id
from dpcd.sweep.problem import load_problem
from dpcd.sweep.metrics import support_counts

ROOT = os.path.join(os.path.dirname(__file__), "..")
SHARED = os.environ.get("DPCD_DATA_MIRROR") or os.path.join(ROOT, "..", "..", "shared", "data")


# --- fractional passes -----------------------------------------------------------
def test_configurations_keep_passes_as_given():
    configs = configurations("dp_cd", {"step": [1.0]}, passes=[0.001, 2, 2.5], epsilons=[1.0])
    passes = [c["passes"] for c in configs]
    assert passes == [0.001, 2, 2.5]
    assert isinstance(passes[1], int) and isinstance(passes[0], float)
    # Integer grids keep their configuration ids (DP-CD results stay valid).
    assert config_id(configs[1]) == config_id(
        {"solver": "dp_cd", "epsilon": 1.0, "passes": 2, "step": 1.0}
    )
    with pytest.raises(ValueError, match="passes"):
        configurations("dp_cd", {"step": [1.0]}, passes=[0.0], epsilons=[1.0])


def _toy_problem(tmp_path, sparse=False):
    X, y, _ = generate("sparse_lasso", {"n_samples": 40, "n_features": 8, "n_informative": 3, "seed": 3})[:3]
    if sparse:  # 1 entry in 12 kept: sparse enough to stay sparse (as_solver_input)
        i, j = np.indices(X.shape)
        X = sp.csc_matrix(np.where((i + j) % 12 == 0, X, 0.0))
    data = str(tmp_path / "d.npz")
    save_dataset(data, X, y, {"task": "regression"})
    datafit, _ = make_problem("squares", "l1", 0.1)
    dense = X.toarray() if sparse else X
    smooth = str(tmp_path / "s.json")
    with open(smooth, "w") as fh:
        json.dump({"smoothness": datafit.coordinate_smoothness(dense).tolist(),
                   "global_smoothness": datafit.global_smoothness(dense),
                   "max_abs": np.abs(dense).max(axis=0).tolist()}, fh)
    return load_problem(data, {"loss": "squares", "penalty": "l1", "alpha": 0.1}, smooth)


def _fractional_adapter(problem, config, seed, budget, private_smoothness=None):
    """Stands for a solver with fractional passes: objective 1/(1 + passes done)."""
    checkpoints = pass_checkpoints(config["passes"])
    w = np.zeros(problem.n_features)
    w[: int(config.get("step", 1))] = 1.0
    return SolverResult(w=w, objective=1.0 / (1.0 + checkpoints), n_updates=0, time=1.0,
                        checkpoints=checkpoints), None


# a private solver (streams keyed by epsilon too) registered for the test only
FRAC = Algorithm(name="frac", description="fractional passes", run=_fractional_adapter)


def _spec(solver="frac", **extra):
    return {"experiment": "e", "solver": solver, "grid": {"step": [1.0, 2.0]},
            "passes": [0.01, 2.5], "privacy": {"epsilon": 1.0}, "seeds": 2,
            "base_seed": 0, "chunks": 1, **extra}


def test_tidy_rows_take_the_pass_axis_from_the_solver(tmp_path, monkeypatch):
    monkeypatch.setitem(registry._SPECS, "frac", FRAC)
    problem = _toy_problem(tmp_path)
    table, records = run_chunk(_spec(), 0, problem, f_star=0.5, w_star=np.eye(8)[0])
    short = table[table.passes == 0.01]
    assert sorted(short["pass"].unique()) == [0.0, 0.01]
    assert sorted(table[table.passes == 2.5]["pass"].unique()) == [0.0, 1.0, 2.0, 2.5]
    last = final_iterates(table)
    assert len(last) == 2 * 2 * 2  # configurations x seeds, one row each
    assert np.allclose(last["objective"], 1.0 / (1.0 + last["passes"]))
    # Time at the fractional end is the whole run's time.
    assert np.allclose(last["time"], 1.0)
    summary = summary_table(table)
    assert sorted(summary.passes) == [0.01, 2.5]
    # step 1 sets w_0 (in w*'s support), step 2 also w_1 (not in it): ties are
    # broken by config id, either way the counts match the chosen step.
    for row in summary.itertuples():
        assert (row.nnz_correct, row.nnz_incorrect) == (1, row.step - 1)


def test_named_variant_runs_its_adapter_under_its_own_name(tmp_path, monkeypatch):
    monkeypatch.setitem(registry._SPECS, "frac", FRAC)
    problem = _toy_problem(tmp_path)
    table, _ = run_chunk(_spec("frac_rule_b", adapter="frac"), 0, problem, f_star=0.5)
    assert set(table.solver) == {"frac_rule_b"}
    assert table["nnz_correct"].isna().all()  # no w* given
    with pytest.raises(ValueError, match="unknown solver 'frac_rule_b'"):
        run_chunk(_spec("frac_rule_b"), 0, problem, f_star=0.5)


# --- sparse X --------------------------------------------------------------------
def test_sparse_problem_loads_without_densifying(tmp_path):
    problem = _toy_problem(tmp_path, sparse=True)
    assert problem.is_sparse and isinstance(problem.X_csc, sp.csc_matrix)
    assert problem.X_cols is problem.X_csc
    # rows are read by SGD: CSR, converted once and cached
    assert isinstance(problem.X_rows, sp.csr_matrix) and problem.X_rows is problem.X_rows
    assert (problem.X_rows != problem.X_csc).nnz == 0
    with pytest.raises(TypeError, match="never densified"):
        problem.X_fortran
    assert not _toy_problem(tmp_path, sparse=False).is_sparse


@pytest.mark.parametrize("loss, penalty, alpha", [("logistic", "l1", 0.02), ("squares", "l2", 0.1)])
def test_sparse_reference_matches_dense(loss, penalty, alpha):
    X, y, _, _ = generate("sparse_binary", {"n_samples": 60, "n_features": 50, "density": 0.2})
    X = X[:, np.flatnonzero(X.getnnz(axis=0))]
    if loss == "squares":
        y = np.asarray(X @ np.linspace(-1, 1, X.shape[1])).ravel()
    datafit, pen = make_problem(loss, penalty, alpha)
    sparse = reference_solve(X, y, datafit, pen)
    dense = reference_solve(X.toarray(), y, datafit, pen)
    assert sparse.extra["converged"] and dense.extra["converged"]
    assert sparse.objective[-1] == pytest.approx(dense.objective[-1], rel=1e-9)
    np.testing.assert_allclose(sparse.w, dense.w, atol=1e-6)
    assert datafit.coordinate_smoothness(X) == pytest.approx(datafit.coordinate_smoothness(X.toarray()))
    assert datafit.global_smoothness(X) == pytest.approx(datafit.global_smoothness(X.toarray()))


# --- datasets (Table 1) ----------------------------------------------------------
@pytest.mark.parametrize("source, shape", [("log1", (1000, 100)), ("log2", (1000, 100)),
                                           ("sparse_lasso", (1000, 1000)),
                                           ("mtp_standin", (4450, 202))])
def test_generated_shapes_match_table_1(source, shape):
    X, y, w_true, settings = generate(source)
    assert X.shape == shape and y.shape == (shape[0],)
    if source == "sparse_lasso":  # the config's square
        assert np.count_nonzero(w_true) == 10
    if source in ("log1", "log2"):
        assert set(np.unique(y)) == {-1.0, 1.0}
        # log-normal (0, sigma): log |w| has the generator's sigma (1 or 2).
        assert np.std(np.log(w_true)) == pytest.approx(settings["sigma"], rel=0.2)
        assert np.std(X, axis=0) == pytest.approx(np.ones(100), abs=0.1)


@pytest.mark.skipif(not os.path.isdir(os.path.join(SHARED, "dorothea")), reason="no data mirror")
def test_dorothea_and_madelon_shapes_from_the_mirror(tmp_path):
    from dpcd.data.loaders import load_raw
    from dpcd.data.preprocess import preprocess_to_file
    from dpcd.data.registry import get_entry

    raw = load_raw(get_entry("dorothea"), os.path.join(SHARED, "dorothea"))
    assert raw.X.shape == (800, 100000) and sp.issparse(raw.X)
    out = str(tmp_path / "dorothea.npz")
    preprocess_to_file(raw, "dorothea", "raw", out)
    ds = load_dataset(out)
    assert isinstance(ds.X, sp.csc_matrix) and ds.X.shape == (800, 88119)  # Table 1
    assert ds.X.nnz == 727760 and set(np.unique(ds.y)) == {-1.0, 1.0}
    raw = load_raw(get_entry("madelon"), os.path.join(SHARED, "madelon"))
    assert raw.X.shape == (2600, 500) and sorted(np.unique(raw.y)) == [-1.0, 1.0]


# --- Table 3, Figure 2 -----------------------------------------------------------
def test_support_counts_on_a_constructed_example():
    w_star = np.array([0.0, 1.0, -2.0, 0.0, 0.5])
    assert support_counts([0.0, 3.0, 0.0, 0.1, 0.0], w_star) == (1, 1)
    assert support_counts(np.zeros(5), w_star) == (0, 0)
    assert support_counts(w_star, w_star) == (3, 0)


def test_quasi_sparsity_alpha():
    w = np.array([5.0, -4, 3, 2, 1, 0.5, 0.25, 0])
    assert quasi_sparsity_alpha(w, 5) == 0.5  # five entries above 0.5
    assert quasi_sparsity_alpha(w[:3], 5) == 0.0


def test_tables_3_and_4_sit_beside_the_published_values():
    published = read_published(os.path.join(ROOT, "config", "paper", "dpgcd_aistats23_published.csv"))
    assert len(published) == 24 and published.passes.min() == 0.001
    ours = pd.DataFrame({
        "experiment": "square", "solver": ["dp_gcd", "dp_gcd", "dp_cd"],
        "passes": [2.0, 4.0, 0.01], "epsilon": 1.0,
        "rel_error_mean": [0.3, 0.4, 0.75], "rel_error_std": 0.0,
        "time_mean": 1.0, "time_std": 0.0, "config_id": ["a", "b", "c"],
        "nnz_correct": [2.0, 3.0, 0.0], "nnz_incorrect": [0.0, 1.0, 0.0],
        "step": [2.15, 1.0, 10.0], "clip": [2.92e4, 1.0, 1.82e4],
    })
    table = compare(ours, published)
    text = support_markdown(table)
    # Best DP-GCD (2 passes) beside the paper's 2 / 0 (0.35).
    assert "| square | dp_gcd | 2 / 0 (0.3) | 2 / 0 (0.35) | 0.86 |" in text
    assert "| square | dp_cd | 0 / 0 (0.75) | 0 / 0 (0.75) | 1 |" in text
    hyper = hyperparameters_markdown(table)
    # Least squares: the published clip (1.46e4, theirs half our objective) is
    # shown in our convention, twice it (the CSV's clip_to_ours).
    assert "| square | dp_gcd | 2 (2) | 2.92e+04 (2.92e+04) | 2.15 (2.15) | 1 / 1 / 1 |" in hyper
    assert "| square | dp_cd | 0.01 (0.01) | 1.82e+04 (1.82e+04) | 10 (10) | 1 / 1 / 1 |" in hyper
    # A grid without the published passes (the quick configs) still shows the
    # published cell when the published table is passed: DP-GCD at 4 passes only.
    ours4 = ours[ours.passes != 2.0].assign(rel_error_mean=[0.8, 0.75])
    table = compare(ours4, published)
    assert "| square | dp_gcd | 3 / 1 (0.8) |  |  |" in support_markdown(table)
    text = support_markdown(table, published)
    assert "| square | dp_gcd | 3 / 1 (0.8) | 2 / 0 (0.35) | 2.3 ! |" in text
    hyper = hyperparameters_markdown(table, published)
    assert "| square | dp_gcd | 4 (2) | 1 (2.92e+04) | 1 (2.15) | 2 / 3.4e-05 ! / 0.47 ! |" in hyper
    # A logistic problem's clip is compared as printed (no clip_to_ours).
    assert pd.isna(published.set_index(["experiment", "solver"]).loc[("madelon_l1", "dp_gcd"), "clip_to_ours"])


# --- the L1 problems admit Table 3 -------------------------------------------------
def _config_problem(experiment):
    """(X, y, datafit, penalty) of an experiment of the full DP-GCD config, built by
    the project's loaders and preprocessing recipes (no workflow)."""
    import yaml

    from dpcd.data.loaders import load_raw
    from dpcd.data.preprocess import RawData, apply_recipe
    from dpcd.data.registry import get_entry

    with open(os.path.join(ROOT, "config", "paper", "dpgcd_aistats23.yaml")) as fh:
        config = yaml.safe_load(fh)
    spec = config["experiments"][experiment]
    source = config["datasets"][spec["dataset"]]["source"]
    entry = get_entry(source)
    if "generator" in entry:
        X, y, _, _ = generate(source)
        raw = RawData(X, y, entry["task"], [f"x{j}" for j in range(X.shape[1])])
    else:
        folder = (entry["files"][0].get("mirror") or [{"path": source + "/"}])[0]["path"]
        if not os.path.isdir(os.path.join(SHARED, folder.split("/")[0])):
            pytest.skip("no data mirror")
        raw = load_raw(entry, os.path.join(SHARED, folder.split("/")[0]))
    parts, _ = apply_recipe(raw, spec["variant"], source)
    X, y = parts["train"]
    problem = spec["problem"]
    datafit, penalty = make_problem(problem["loss"], problem["penalty"], problem["alpha"])
    return X, y, datafit, penalty


@pytest.mark.parametrize("experiment, nnz_star", [("square", 7), ("california", 3),
                                                  ("madelon_l1", 3), ("dorothea", 72)])
def test_l1_problems_admit_table_3(experiment, nnz_star):
    """||w*||_0 is Table 3's, and DP-GCD's published row is reachable: some point
    supported on ``nnz_correct`` coordinates of supp(w*) has a relative error at most
    the published one (on raw madelon the best single coordinate gives 0.0078
    against Table 3's 0.0015 with 1 / 0 non-zeros; on raw california, lambda 3,
    two give 0.00068 against 0.00056 with 2 / 0)."""
    from itertools import combinations

    path = os.path.join(ROOT, "config", "paper", "dpgcd_aistats23_published.csv")
    published = read_published(path)
    row = published[(published.experiment == experiment) & (published.solver == "dp_gcd")].iloc[0]
    X, y, datafit, penalty = _config_problem(experiment)
    w_star = reference_solve(X, y, datafit, penalty, tol=1e-12).w
    assert np.count_nonzero(w_star) == nnz_star

    def objective(Xs, w):
        return float(np.mean(datafit.loss(y, Xs @ w))) + penalty.value(w)

    X = sp.csc_matrix(X) if sp.issparse(X) else np.asarray(X)
    f_star = objective(X, w_star)
    best = np.inf
    for subset in combinations(np.flatnonzero(w_star), int(row.nnz_correct)):
        Xs = X[:, list(subset)]
        best = min(best, objective(Xs, reference_solve(Xs, y, datafit, penalty, tol=1e-12).w))
    assert (best - f_star) / f_star <= row.rel_error_mean
