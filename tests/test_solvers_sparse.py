"""DP-CD and DP-SGD on scipy sparse X: same iterates as dense, never densified.

dorothea (800 x 88 119, ~1% non-zeros) is the case: DP-CD reads CSC columns
(O(nnz_j) per update), DP-SGD CSR rows (O(nnz_i) per sample, dense noise and
prox). The same seed draws the same coordinates, batches and noise as the
dense path, so the iterates agree up to the summation order.
"""
import importlib
import time
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
from dpcd.privacy import estimate_smoothness
from dpcd.problems import make_problem, objective
from dpcd.solvers import dp_cd, dp_sgd
from dpcd.solvers.base import as_design
from dpcd import algorithms
from dpcd.sweep.problem import SweepProblem

RTOL, ATOL = 1e-10, 1e-12


def _sparse_data(seed=0, n=60, p=25, density=0.2, logistic=False):
    """Sparse X with imbalanced column scales, empty rows, no empty column."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * rng.uniform(0.1, 5.0, size=p)
    X *= rng.random((n, p)) < density
    X[[3, 17, n - 1]] = 0.0  # empty rows
    X[0, ~X.any(axis=0)] = 1.0  # no empty column: every M_j > 0
    w = rng.standard_normal(p) * (rng.random(p) < 0.3)
    y = X @ w + 0.1 * rng.standard_normal(n)
    if logistic:
        y = np.where(y > 0, 1.0, -1.0)
    return X, y


PROBLEMS = [("squares", "l1", 0.05), ("squares", "l2", 0.1),
            ("logistic", "l1", 0.01), ("logistic", "l2", 0.05)]


def _cd(X, y, loss, penalty, lam, **kw):
    datafit, pen = make_problem(loss, penalty, lam)
    M = datafit.coordinate_smoothness(X.toarray() if sp.issparse(X) else X)
    args = dict(smoothness=M, step=1.0, clip=0.5, noise_scales=0.05, passes=5, seed=7)
    args.update(kw)
    return dp_cd(X, y, datafit, pen, **args)


@pytest.mark.parametrize("loss, penalty, lam", PROBLEMS)
@pytest.mark.parametrize("kw", [{}, {"averaging": True},
                                {"clip": np.inf, "noise_scales": 0.0, "passes": 2.5}],
                         ids=["private", "averaging", "cd_fractional"])
def test_dp_cd_sparse_equals_dense(loss, penalty, lam, kw):
    X, y = _sparse_data(1, logistic=loss == "logistic")
    dense = _cd(X, y, loss, penalty, lam, **kw)
    for Xs in (sp.csc_matrix(X), sp.csr_matrix(X), sp.coo_matrix(X)):
        sparse = _cd(Xs, y, loss, penalty, lam, **kw)
        np.testing.assert_allclose(sparse.w, dense.w, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(sparse.objective, dense.objective, rtol=RTOL)
        np.testing.assert_allclose(sparse.extra["objective_last_iterate"],
                                   dense.extra["objective_last_iterate"], rtol=RTOL)
        state = "residuals" if loss == "squares" else "margins"
        np.testing.assert_allclose(sparse.extra[state], dense.extra[state],
                                   rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(sparse.checkpoints, dense.checkpoints)
    assert np.count_nonzero(dense.w) > 0  # the runs moved


@pytest.mark.parametrize("loss, penalty, lam", PROBLEMS)
def test_dp_cd_sparse_objective_and_determinism(loss, penalty, lam):
    X, y = _sparse_data(2, logistic=loss == "logistic")
    Xs = sp.csc_matrix(X)
    a = _cd(Xs, y, loss, penalty, lam, passes=3)
    b = _cd(Xs, y, loss, penalty, lam, passes=3)
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.objective, b.objective)
    assert not np.array_equal(a.w, _cd(Xs, y, loss, penalty, lam, passes=3, seed=8).w)
    datafit, pen = make_problem(loss, penalty, lam)
    # the objective recorded from the maintained state is F(w) of the last iterate
    assert a.objective[-1] == pytest.approx(objective(X, y, a.w, datafit, pen), rel=1e-12)
    assert a.objective[0] == pytest.approx(objective(X, y, np.zeros(X.shape[1]),
                                                     datafit, pen), rel=1e-12)


def _sgd(X, y, loss, penalty, lam, **kw):
    datafit, pen = make_problem(loss, penalty, lam)
    args = dict(step=0.5, clip=5.0, noise_scale=0.05, passes=3, seed=11)
    args.update(kw)
    return dp_sgd(X, y, datafit, pen, **args)


@pytest.mark.parametrize("loss, penalty, lam", PROBLEMS)
@pytest.mark.parametrize("batch_size", [1, 7, 60])
def test_dp_sgd_sparse_equals_dense(loss, penalty, lam, batch_size):
    X, y = _sparse_data(3, logistic=loss == "logistic")
    passes = 2.5 * batch_size  # at least 150 steps, fractional for b = 1
    dense = _sgd(X, y, loss, penalty, lam, batch_size=batch_size, passes=passes)
    for Xs in (sp.csr_matrix(X), sp.csc_matrix(X)):
        sparse = _sgd(Xs, y, loss, penalty, lam, batch_size=batch_size, passes=passes)
        np.testing.assert_allclose(sparse.w, dense.w, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(sparse.objective, dense.objective, rtol=RTOL)
        # same sampling stream: the same records in the same steps
        np.testing.assert_array_equal(sparse.extra["inclusions"],
                                      dense.extra["inclusions"])
        # beta computed from sparse X (eigensolver) agrees with the dense one
        assert sparse.extra["global_smoothness"] == pytest.approx(
            dense.extra["global_smoothness"], rel=1e-8)
    assert np.count_nonzero(dense.w) > 0


def test_dp_sgd_sparse_objective_and_determinism():
    X, y = _sparse_data(4, logistic=True)
    Xs = sp.csr_matrix(X)
    a = _sgd(Xs, y, "logistic", "l1", 0.01, batch_size=5)
    b = _sgd(Xs, y, "logistic", "l1", 0.01, batch_size=5)
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.objective, b.objective)
    datafit, pen = make_problem("logistic", "l1", 0.01)
    assert a.objective[-1] == pytest.approx(objective(X, y, a.w, datafit, pen), rel=1e-12)


def test_dp_sgd_sparse_clips_with_sparse_row_norms():
    """One sample, q = 1, no noise: the step is -eta * clip(grad l_1) exactly."""
    X = sp.csr_matrix(np.array([[0.0, 3.0, 0.0, 4.0]]))
    y = np.array([1.0])
    datafit, pen = make_problem("squares", "none", 0.0)
    res = dp_sgd(X, y, datafit, pen, step=1.0, clip=1.0, noise_scale=0.0, passes=1,
                 seed=0, global_smoothness=1.0)
    # grad = 2 (0 - 1) x = -2 x, norm 10, clipped to norm 1: -x / 5
    np.testing.assert_allclose(res.w, [0.0, 0.6, 0.0, 0.8], rtol=1e-15)


def test_as_design_never_copies_canonical_sparse_nor_mutates_input():
    X = sp.random(30, 40, density=0.1, format="csc", random_state=0)
    design, shape = as_design(X)
    assert design[0] and design[2] is X.data and shape == (30, 40)
    csr = as_design(X, "csr")[0]
    assert csr[0] and csr[4].shape == (31,)
    # duplicates (COO) are summed in a copy; the caller's matrix is untouched
    coo = sp.coo_matrix(([1.0, 2.0], ([0, 0], [1, 1])), shape=(2, 2))
    dup = coo.tocsc(copy=True)
    dup.has_canonical_format = False
    dup.data, dup.indices, dup.indptr = (np.array([1.0, 2.0]), np.array([0, 0], np.int32),
                                         np.array([0, 0, 2], np.int32))
    design, _ = as_design(dup)
    assert design[2].tolist() == [3.0] and dup.data.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="NaN or inf"):
        dp_cd(sp.csc_matrix(np.array([[np.nan, 1.0]])), np.ones(1),
              *make_problem("squares", "l1", 0.1), smoothness=np.ones(2), step=1.0,
              clip=1.0, noise_scales=0.0, passes=1, seed=0)


def test_huge_sparse_problem_is_never_densified():
    """200 x 2 000 000 with 3 non-zeros per row: dense X would be 3.2 GB."""
    n, p, per_row = 200, 2_000_000, 3
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.choice(p, size=n * per_row, replace=False)
    X = sp.csc_matrix((rng.standard_normal(n * per_row), (rows, cols)), shape=(n, p))
    Xr = X.tocsr()
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    datafit, pen = make_problem("logistic", "l1", 1e-3)
    M = np.maximum(datafit.coordinate_smoothness(X), 1.0)  # empty columns: any M_j > 0
    dense_bytes = n * p * 8
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        cd = dp_cd(X, y, datafit, pen, smoothness=M, step=1.0, clip=1.0,
                   noise_scales=0.01, passes=0.01, seed=0, check_input=False)
        sgd = dp_sgd(Xr, y, datafit, pen, step=1.0, clip=1.0, noise_scale=0.01,
                     passes=0.05, seed=0, global_smoothness=1.0, check_input=False)
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cd.n_updates == 20_000 and sgd.n_updates == 10
    # a handful of length-p float vectors (w, steps, clip, noise, ...), no n x p
    assert peak < 16 * p * 8 < dense_bytes / 10, peak
    assert np.isfinite(cd.objective).all() and np.isfinite(sgd.objective).all()
    assert elapsed < 60  # generous: densifying alone would take longer (and 3.2 GB)


# --- through the algorithm specs and the estimators ---------------------------------
def _sweep_problem(X, y, loss, penalty, lam):
    datafit, pen = make_problem(loss, penalty, lam)
    dense = X.toarray() if sp.issparse(X) else X
    return SweepProblem(X=X, y=y, datafit=datafit, penalty=pen,
                        smoothness=datafit.coordinate_smoothness(dense),
                        global_smoothness=datafit.global_smoothness(dense),
                        max_abs=np.abs(dense).max(axis=0))


@pytest.mark.parametrize("solver, config", [
    ("cd", {"step": 1.0, "passes": 3}),
    ("dp_cd", {"step": 1.0, "clip": 1.0, "passes": 3}),
    ("dp_sgd", {"step": 0.5, "clip": 1.0, "passes": 2, "batch_size": 4}),
    ("sgd", {"step": 0.05, "passes": 2}),
])
def test_specs_run_sparse_problems_like_dense(solver, config):
    X, y = _sparse_data(5, logistic=True)
    budget = algorithms.Budget(1.0, 1e-4)
    seed = [1, 2, 3, 4]
    sparse_problem = _sweep_problem(sp.csc_matrix(X), y, "logistic", "l1", 0.01)
    run = algorithms.get(solver).run
    dense, _ = run(_sweep_problem(X, y, "logistic", "l1", 0.01), config, seed, budget)
    sparse, _ = run(sparse_problem, config, seed, budget)
    np.testing.assert_allclose(sparse.w, dense.w, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sparse.objective, dense.objective, rtol=RTOL)
    assert "X_fortran" not in vars(sparse_problem) and "X_c" not in vars(sparse_problem)


def test_private_smoothness_sparse_equals_dense():
    X, _ = _sparse_data(6)
    datafit, _ = make_problem("logistic", "l1", 0.1)
    for bound in (None, 2.0):
        dense, ld = estimate_smoothness(datafit, X, 0.5, np.random.default_rng(0), bound)
        sparse, ls = estimate_smoothness(datafit, sp.csr_matrix(X), 0.5,
                                         np.random.default_rng(0), bound)
        np.testing.assert_allclose(sparse, dense, rtol=1e-12)
        assert ls.to_dict() == ld.to_dict()


@pytest.mark.parametrize("solver, module, kw", [
    ("dp_cd", "dpcd.solvers.dp_cd", {}),
    ("dp_cd_p", "dpcd.solvers.dp_cd", {}),
    ("dp_sgd", "dpcd.solvers.dp_sgd", {"batch_size": 4, "step": 0.5}),
])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_estimators_keep_sparse_input_sparse(solver, module, kw, fit_intercept,
                                             monkeypatch):
    X, y = _sparse_data(7, logistic=True)
    params = dict(solver=solver, penalty="l1", alpha=0.01, passes=5, epsilon=10.0,
                  fit_intercept=fit_intercept, random_state=0, **kw)
    dense = DPCoordinateDescentClassifier(**params).fit(X, y)
    mod = importlib.import_module(module)
    real, seen = mod.check_design, []
    monkeypatch.setattr(mod, "check_design",
                        lambda X, *a, **k: seen.append(sp.issparse(X)) or real(X, *a, **k))
    sparse = DPCoordinateDescentClassifier(**params).fit(sp.csr_matrix(X), y)
    assert seen == [True]
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sparse.history_, dense.history_, rtol=RTOL)
    assert np.count_nonzero(dense.coef_) > 0


def test_regressor_sparse_dp_cd_matches_dense():
    X, y = _sparse_data(8)
    params = dict(solver="dp_cd", alpha=0.05, passes=5, epsilon=5.0, random_state=1)
    dense = DPCoordinateDescentRegressor(**params).fit(X, y)
    sparse = DPCoordinateDescentRegressor(**params).fit(sp.csc_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(X)), dense.predict(X),
                               rtol=1e-9, atol=1e-12)
