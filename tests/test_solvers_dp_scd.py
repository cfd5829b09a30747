"""DP-SCD (Damaskinos et al. 2021): dual, seq and primal kernels.

Convergence to scikit-learn's solutions with noise off, per-batch
sensitivities on neighbouring datasets against Lemmas 1, 4, 5, noise against
the ledger, Poisson batch sizes, determinism.
"""
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.svm import LinearSVC

from dpcd.privacy import calibrate_dp_scd
from dpcd.privacy.scd import dp_scd_sensitivity
from dpcd.problems import Hinge, make_problem, objective
from dpcd.problems._jit import HINGE, LOGISTIC, SQUARES
from dpcd.solvers import dp_cd, dp_scd, reference_solve, scd
from dpcd.solvers._normal import fill_normals, stream_key
from dpcd.solvers.dp_scd import (
    _dual_kernel,
    _primal_kernel,
    dual_objective,
    duality_gap_scd,
    scd_iterations,
)

LAM = 0.01


def _unit_rows(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n, p = 150, 6
    X = _unit_rows(rng.standard_normal((n, p)))
    w0 = rng.standard_normal(p)
    y_reg = X @ w0 + 0.1 * rng.standard_normal(n)
    y_cls = np.sign(X @ w0 + 0.3 * rng.standard_normal(n))
    return X, y_reg, y_cls


def _sklearn_solution(loss, X, y, lam):
    """The same objective solved by scikit-learn (no intercept).

    dpcd: (1/n) sum l + (lam/2)||w||^2 with l = (z - y)^2 for squares, so
    Ridge(alpha = lam n / 2); logistic and hinge: C = 1 / (lam n).
    """
    n = X.shape[0]
    if loss == "squares":
        return Ridge(alpha=lam * n / 2, fit_intercept=False, tol=1e-12).fit(X, y).coef_
    if loss == "logistic":
        return LogisticRegression(C=1 / (lam * n), fit_intercept=False, tol=1e-12,
                                  max_iter=10_000).fit(X, y).coef_.ravel()
    return LinearSVC(C=1 / (lam * n), loss="hinge", fit_intercept=False, tol=1e-12,
                     max_iter=1_000_000).fit(X, y).coef_.ravel()


# ------------------------------------------------------------ convergence
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("loss", ["squares", "logistic", "hinge"])
@pytest.mark.parametrize("variant,sampling,batch", [
    ("dual", "poisson", 10), ("dual", "without_replacement", 10),
    ("seq", "poisson", 10), ("seq", "without_replacement", 1)])
def test_noise_free_converges_to_sklearn(data, loss, variant, sampling, batch):
    X, y_reg, y_cls = data
    y = y_reg if loss == "squares" else y_cls
    datafit, penalty = make_problem(loss, "l2", LAM)
    res = dp_scd(X, y, datafit, penalty, clip=np.inf, noise_scale=0.0, passes=400,
                 batch_size=batch, seed=1, variant=variant, sampling=sampling)
    gap = duality_gap_scd(X, y, res.extra["alpha"], datafit, penalty)
    # hinge: independent batch updates converge more slowly (sublinear dual)
    assert 0 <= gap < (1e-6 if loss == "hinge" else 1e-9) or abs(gap) < 1e-12
    # noise-free: v is exactly X^T alpha, up to rounding
    np.testing.assert_allclose(res.extra["v"], X.T @ res.extra["alpha"], atol=1e-10)
    ref = _sklearn_solution(loss, X, y, LAM)
    if loss == "hinge":
        # liblinear stops short on the hinge loss (ConvergenceWarning): by
        # lam-strong convexity ||w - w*||^2 <= 2 (P(w) - D(alpha)) / lam for both
        d = dual_objective(X, y, res.extra["alpha"], datafit, penalty)
        gap_ref = objective(X, y, ref, datafit, penalty) - d
        assert np.linalg.norm(res.w - ref) <= math.sqrt(2 * max(gap, 0) / LAM) \
            + math.sqrt(2 * max(gap_ref, 0) / LAM) + 1e-9
    else:
        np.testing.assert_allclose(res.w, ref, atol=1e-7)
    f_ref = objective(X, y, ref, datafit, penalty)
    # weak duality: P(w) - F* <= gap
    assert res.objective[-1] <= f_ref + max(gap, 0.0) + 1e-12
    assert res.objective[-1] == pytest.approx(objective(X, y, res.w, datafit, penalty),
                                              rel=1e-12)


@pytest.mark.parametrize("loss", ["squares", "logistic", "hinge"])
def test_duality_gap_decreases_to_zero(data, loss):
    X, y_reg, y_cls = data
    y = y_reg if loss == "squares" else y_cls
    datafit, penalty = make_problem(loss, "l2", LAM)
    gaps = [duality_gap_scd(X, y, scd(X, y, datafit, penalty, passes=P, seed=3)
                            .extra["alpha"], datafit, penalty) for P in (1, 10, 200)]
    assert gaps[0] > 1e-3
    assert gaps[1] < gaps[0]
    assert abs(gaps[2]) < 1e-10
    # weak duality at the start
    assert dual_objective(X, y, np.zeros(len(y)), datafit, penalty) <= \
        objective(X, y, np.zeros(X.shape[1]), datafit, penalty)


@pytest.mark.parametrize("loss", ["squares", "logistic"])
def test_primal_noise_free_converges(data, loss):
    X, y_reg, y_cls = data
    y = y_reg if loss == "squares" else y_cls
    datafit, penalty = make_problem(loss, "l2", LAM)
    res = dp_scd(np.asfortranarray(X), y, datafit, penalty, clip=np.inf, noise_scale=0.0,
                 passes=3000, batch_size=2, seed=0, variant="primal", sampling="none")
    np.testing.assert_allclose(res.w, _sklearn_solution(loss, X, y, LAM), atol=1e-7)
    np.testing.assert_allclose(res.extra["v"], X @ res.w, atol=1e-10)


def test_ridge_objective_is_twice_the_papers(data):
    """dpcd's squares objective is 2x the paper's (1/2 loss) with lambda = alpha/2."""
    X, y, _ = data
    datafit, penalty = make_problem("squares", "l2", LAM)
    res = scd(X, y, datafit, penalty, passes=300, seed=0)
    theta = res.w
    paper = np.mean(0.5 * (X @ theta - y) ** 2) + 0.5 * (LAM / 2) * theta @ theta
    assert res.objective[-1] == pytest.approx(2 * paper, rel=1e-12)
    assert res.extra["lam"] == LAM / 2
    # theta = v / (lambda N) with the paper's lambda
    np.testing.assert_allclose(theta, res.extra["v"] / (LAM / 2 * len(y)))
    # the reference solver (dpcd's objective) has the same minimiser
    np.testing.assert_allclose(theta, reference_solve(X, y, datafit, penalty).w, atol=1e-8)


def test_scaling_bounds_every_update(data):
    """Step 8: with C small every |zeta| <= C, so ||alpha||_inf <= (#times sampled) C."""
    X, y, _ = data
    datafit, penalty = make_problem("squares", "l2", LAM)
    C = 1e-3
    res = dp_scd(X, y, datafit, penalty, clip=C, noise_scale=0.0, passes=1,
                 batch_size=len(y), seed=0, sampling="without_replacement")
    # one iteration with the whole data set: each alpha_j moved once, by at most C
    assert res.extra["n_iter"] == 1
    assert np.max(np.abs(res.extra["alpha"])) <= C * (1 + 1e-12)
    assert np.max(np.abs(res.extra["alpha"])) == pytest.approx(C)


# ------------------------------------------------------------ sensitivity
# noise key and buffers for direct kernel calls with noise_scale = 0 (unused)
_NO_NOISE_STREAM = (np.uint64(0), np.empty(2), np.empty(64))
# the kernels' secure arguments in fast mode (an empty keystream)
_FAST = (np.zeros(0, np.uint64), 1.0, 1.0, np.zeros(0, np.int64))


def _one_dual_batch(X, y, alpha, v, code, batch, clip, sequential, seed):
    """[alpha; v] update of one batch: all records, without replacement, no noise."""
    n, p = X.shape
    a = alpha.copy()
    vv = v.copy()
    _dual_kernel(np.ascontiguousarray(X), y, a, vv, code, LAM, LAM, clip, 0.0, batch, 1,
                 sequential, 1, np.random.default_rng(seed), *_NO_NOISE_STREAM,
                 np.empty(n, np.int64), np.zeros(p), np.arange(n, dtype=np.int64),
                 np.zeros(1, np.int64), np.einsum("ij,ij->i", X, X), np.empty((0, p)),
                 np.empty(0, np.int64), np.empty(1), *_FAST, np.empty(0))
    return np.concatenate([a - alpha, vv - v])


def _state(rng, n, p, y, code):
    alpha = 0.5 * rng.standard_normal(n)
    if code != SQUARES:
        alpha = y * rng.uniform(0, 1, n)
    return alpha, rng.standard_normal(p)


@pytest.mark.parametrize("code,relation", [(SQUARES, "replace_one"),
                                           (LOGISTIC, "replace_one"),
                                           (HINGE, "replace_one"),
                                           (SQUARES, "replace_special"),
                                           (LOGISTIC, "replace_special"),
                                           (HINGE, "replace_special")])
def test_lemma_1_dual_sensitivity(code, relation):
    """Replace one record of the batch; same batch, same state: ||diff|| <= Lemma 1."""
    rng = np.random.default_rng(7)
    n, p, L, C = 30, 5, 8, 0.3
    bound = dp_scd_sensitivity(C, L, "dual", relation)
    worst = 0.0
    for trial in range(200):
        X = _unit_rows(rng.standard_normal((n, p)))
        y = np.sign(rng.standard_normal(n)) if code != SQUARES else 3 * rng.standard_normal(n)
        alpha, v = _state(rng, n, p, y, code)
        # the batch is drawn from the seed only (data independent)
        seed = int(rng.integers(1 << 30))
        d = _one_dual_batch(X, y, alpha, v, code, L, C, False, seed)
        X2, y2 = X.copy(), y.copy()
        k = int(rng.integers(n))
        if relation == "replace_one":
            X2[k] = _unit_rows(rng.standard_normal((1, p)))[0]
            y2[k] = -y[k] if code != SQUARES else 3 * rng.standard_normal()
        else:  # the paper's zero record
            X2[k] = 0.0
            y2[k] = y[k] if code != SQUARES else 0.0
        d2 = _one_dual_batch(X2, y2, alpha, v, code, L, C, False, seed)
        diff = np.linalg.norm(d - d2)
        assert diff <= bound * (1 + 1e-12)
        # independent updates: every other record's update is identical
        others = np.arange(n) != k
        assert np.array_equal(d[:n][others], d2[:n][others])
        worst = max(worst, diff)
    # the difference comes from record k only: it is 0 when k is not sampled and
    # otherwise reaches a good fraction of the bound
    assert worst > 0.5 * bound


def test_lemma_1_bound_is_attained():
    """Same x, labels pushing zeta to +C and -C: ||diff|| = 2 sqrt(2) C (replace-one);
    the zero record (zeta' = 0 at alpha_k = 0) gives sqrt(2) C."""
    rng = np.random.default_rng(1)
    n, p, C = 10, 4, 0.2
    L = n
    X = _unit_rows(rng.standard_normal((n, p)))
    y = rng.standard_normal(n)
    alpha, v = np.zeros(n), np.zeros(p)
    k = 3
    y[k] = 50.0
    d = _one_dual_batch(X, y, alpha, v, SQUARES, L, C, False, 0)
    y2 = y.copy()
    y2[k] = -50.0
    d2 = _one_dual_batch(X, y2, alpha, v, SQUARES, L, C, False, 0)
    assert np.linalg.norm(d - d2) == pytest.approx(
        dp_scd_sensitivity(C, L, "dual", "replace_one"), rel=1e-12)
    X3, y3 = X.copy(), y.copy()
    X3[k] = 0.0
    y3[k] = 0.0
    d3 = _one_dual_batch(X3, y3, alpha, v, SQUARES, L, C, False, 0)
    assert np.linalg.norm(d - d3) == pytest.approx(
        dp_scd_sensitivity(C, L, "dual", "replace_special"), rel=1e-12)


def test_lemma_5_seq_sensitivity():
    """seqDP-SCD: one record changes the later updates of the batch; within Lemma 5.

    (For ridge the later updates partly compensate the change, so we could not
    build a case beyond the dual's 2 sqrt(2) C: Lemma 5 is a worst case.)"""
    rng = np.random.default_rng(2)
    n, p, C = 12, 3, 0.5
    L = n
    bound5 = dp_scd_sensitivity(C, L, "seq", "replace_one")
    bound1 = dp_scd_sensitivity(C, L, "dual", "replace_one")
    worst = 0.0
    worst_others = 0.0
    for trial in range(20):
        X = _unit_rows(rng.standard_normal((n, p)))
        # nearly identical records: a change in one update moves the later ones
        X = _unit_rows(X[:1] + 0.05 * X)
        y = 0.3 * rng.standard_normal(n)
        alpha, v = np.zeros(n), np.zeros(p)
        seed = int(rng.integers(1 << 30))
        d = _one_dual_batch(X, y, alpha, v, SQUARES, L, C, True, seed)
        for k in range(n):
            y2 = y.copy()
            y2[k] = 3.0
            X2 = X.copy()
            X2[k] = -X[k]
            d2 = _one_dual_batch(X2, y2, alpha, v, SQUARES, L, C, True, seed)
            diff = np.linalg.norm(d - d2)
            assert diff <= bound5
            worst = max(worst, diff)
            others = np.arange(n) != k
            worst_others = max(worst_others, np.linalg.norm((d - d2)[:n][others]))
    # correlated updates: the other records' updates move by up to about C
    assert worst_others > 0.5 * C
    assert bound1 < bound5


def _one_primal_batch(X, y, theta, v, code, L, C, seed):
    n, p = X.shape
    t = theta.copy()
    vv = v.copy()
    _primal_kernel(np.asfortranarray(X), y, t, vv, code, LAM, LAM, C, 0.0, L, 1,
                   np.random.default_rng(seed), *_NO_NOISE_STREAM,
                   np.arange(p, dtype=np.int64), np.empty(n), np.empty(p),
                   np.einsum("ij,ij->j", X, X), np.empty(0, np.int64), np.empty(1), *_FAST)
    return np.concatenate([t - theta, vv - v])


@pytest.mark.parametrize("code", [SQUARES, LOGISTIC])
def test_lemma_4_primal_sensitivity(code):
    """Replace one record (columns of norm <= 1 on both datasets): <= 2C sqrt(L(L+1))."""
    rng = np.random.default_rng(3)
    n, p, L, C = 40, 6, 4, 0.2
    bound = dp_scd_sensitivity(C, L, "primal", "replace_one")
    worst = 0.0
    for trial in range(100):
        X = _unit_rows(rng.standard_normal((n, p))) / np.sqrt(n)
        y = np.sign(rng.standard_normal(n)) if code == LOGISTIC else rng.standard_normal(n)
        theta = rng.standard_normal(p)
        v = X @ theta
        seed = int(rng.integers(1 << 30))
        d = _one_primal_batch(X, y, theta, v, code, L, C, seed)
        k = int(rng.integers(n))
        X2, y2 = X.copy(), y.copy()
        X2[k] = -X[k]
        y2[k] = -y[k]
        assert np.linalg.norm(X2, axis=0).max() <= 1
        d2 = _one_primal_batch(X2, y2, theta, v, code, L, C, seed)
        diff = np.linalg.norm(d - d2)
        assert diff <= bound
        worst = max(worst, diff)
    assert worst > 0


# ------------------------------------------------------------ noise and sampling
@pytest.mark.parametrize("variant", ["dual", "seq"])
def test_noise_matches_ledger(variant):
    """One iteration with every record: [alpha; v] noisy minus noise-free is N(0, s^2)."""
    rng = np.random.default_rng(4)
    n, p, C = 400, 300, 0.1
    X = _unit_rows(rng.standard_normal((n, p)))
    y = rng.standard_normal(n)
    datafit, penalty = make_problem("squares", "l2", LAM)
    cal = calibrate_dp_scd(n, p, n, C, 1.0, 1e-3, passes=1, variant=variant,
                           sampling="without_replacement")
    s = cal.noise_scales
    assert s == pytest.approx(cal.ledger.mechanisms[0].noise_scale)
    assert cal.ledger.mechanisms[0].sensitivity == dp_scd_sensitivity(
        C, n, variant, "replace_one")
    kw = dict(clip=C, passes=1, batch_size=n, seed=5, variant=variant,
              sampling="without_replacement")
    noisy = dp_scd(X, y, datafit, penalty, noise_scale=s, return_dual=True, **kw)
    clean = dp_scd(X, y, datafit, penalty, noise_scale=0.0, **kw)
    assert noisy.extra["n_iter"] == cal.steps == 1
    # alpha is internal state: a private run hands it back only when asked
    assert "alpha" not in dp_scd(X, y, datafit, penalty, noise_scale=s, **kw).extra
    e = np.concatenate([noisy.extra["alpha"] - clean.extra["alpha"],
                        noisy.extra["v"] - clean.extra["v"]])
    # 700 draws: the sample std is within 10% of s (about 4 standard errors)
    assert np.std(e) == pytest.approx(s, rel=0.1)
    assert abs(np.mean(e)) < 4 * s / np.sqrt(e.size)
    assert stats.kstest(e / s, "norm").pvalue > 1e-3
    # and it is the documented stream: the batch's n normals (on alpha, in
    # batch order, which is a permutation here) then p more on v
    z = s * _noise_stream(5, n + p)
    np.testing.assert_allclose(np.sort(e[:n]), np.sort(z[:n]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(e[n:], z[n:], rtol=0, atol=1e-12)


def _noise_stream(seed, size):
    """The first ``size`` normals of a run's noise stream."""
    z = np.empty(size + size % 2)
    fill_normals(stream_key(np.random.SeedSequence(seed).spawn(2)[1]), 0, z)
    return z[:size]


def test_primal_noise_matches_ledger():
    rng = np.random.default_rng(6)
    n, p, C = 600, 10, 0.1
    X = _unit_rows(rng.standard_normal((n, p))) / np.sqrt(n)
    y = rng.standard_normal(n)
    datafit, penalty = make_problem("squares", "l2", LAM)
    cal = calibrate_dp_scd(n, p, p, C, 1.0, 1e-3, passes=1, variant="primal")
    kw = dict(clip=C, passes=1, batch_size=p, seed=5, variant="primal", sampling="none")
    noisy = dp_scd(np.asfortranarray(X), y, datafit, penalty, noise_scale=cal.noise_scales,
                   **kw)
    clean = dp_scd(np.asfortranarray(X), y, datafit, penalty, noise_scale=0.0, **kw)
    e = np.concatenate([noisy.w - clean.w, noisy.extra["v"] - clean.extra["v"]])
    assert np.std(e) == pytest.approx(cal.noise_scales, rel=0.1)
    # the documented stream: p normals on theta (every coordinate, permuted), n on v
    z = cal.noise_scales * _noise_stream(5, p + n)
    np.testing.assert_allclose(np.sort(e[:p]), np.sort(z[:p]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(e[p:], z[p:], rtol=0, atol=1e-12)


def test_poisson_batch_sizes_are_binomial():
    rng = np.random.default_rng(8)
    n, p, L = 1000, 3, 50
    X = _unit_rows(rng.standard_normal((n, p)))
    y = rng.standard_normal(n)
    datafit, penalty = make_problem("squares", "l2", LAM)
    res = dp_scd(X, y, datafit, penalty, clip=1.0, noise_scale=0.0, passes=20,
                 batch_size=L, seed=9)
    b = res.extra["batch_sizes"]
    T = scd_iterations(n, p, L, 20, "dual")
    assert b.shape == (T,) == (400,)
    q = L / n
    mean, var = n * q, n * q * (1 - q)
    assert abs(b.mean() - mean) < 4 * math.sqrt(var / T)
    # variance: (T - 1) s^2 / var ~ chi2(T - 1), two-sided 1e-3 quantiles
    chi = (T - 1) * b.var(ddof=1) / var
    assert stats.chi2.ppf(5e-4, T - 1) < chi < stats.chi2.ppf(1 - 5e-4, T - 1)
    # without replacement: exactly L every time
    res = dp_scd(X, y, datafit, penalty, clip=1.0, noise_scale=0.0, passes=2,
                 batch_size=L, seed=9, sampling="without_replacement")
    assert np.all(res.extra["batch_sizes"] == L)


def test_iterations_match_calibration():
    n, p = 1000, 20
    for variant, L, passes in [("dual", 64, 3), ("seq", 7, 2.5), ("primal", 3, 4)]:
        cal = calibrate_dp_scd(n, p, L, 1.0, 1.0, 1e-3, passes=passes, variant=variant)
        assert scd_iterations(n, p, L, passes, variant) == cal.steps


def test_fractional_passes_checkpoints(data):
    X, y, _ = data
    datafit, penalty = make_problem("squares", "l2", LAM)
    res = dp_scd(X, y, datafit, penalty, clip=1.0, noise_scale=0.0, passes=2.5,
                 batch_size=20, seed=0)
    np.testing.assert_array_equal(res.passes_done, [0, 1, 2, 2.5])
    assert res.extra["n_iter"] == math.ceil(2.5 * len(y) / 20)
    assert np.all(np.diff(res.objective) < 0)


@pytest.mark.parametrize("variant,sampling", [("dual", "poisson"),
                                              ("seq", "without_replacement"),
                                              ("primal", "none")])
def test_deterministic_bit_for_bit(data, variant, sampling):
    X, _, y = data
    Xn = X / np.sqrt(len(y)) if variant == "primal" else X
    datafit, penalty = make_problem("logistic", "l2", LAM)
    kw = dict(clip=0.5, noise_scale=0.3, passes=3, batch_size=3 if variant == "primal"
              else 15, variant=variant, sampling=sampling)
    a = dp_scd(Xn, y, datafit, penalty, seed=11, **kw)
    b = dp_scd(Xn, y, datafit, penalty, seed=11, **kw)
    c = dp_scd(Xn, y, datafit, penalty, seed=12, **kw)
    assert np.array_equal(a.w, b.w) and np.array_equal(a.objective, b.objective)
    assert not np.array_equal(a.w, c.w)


# ------------------------------------------------------------ input checks
def test_refuses_rows_of_norm_above_one_when_private(data):
    X, y, _ = data
    datafit, penalty = make_problem("squares", "l2", LAM)
    X2 = X.copy()
    X2[4] *= 1.5
    with pytest.raises(ValueError, match="row 4 of X has l2 norm 1.5"):
        dp_scd(X2, y, datafit, penalty, clip=1.0, noise_scale=0.1, passes=1,
               batch_size=10, seed=0)
    # non-private runs (SCD baseline) accept any rows
    scd(X2, y, datafit, penalty, passes=1, seed=0)
    with pytest.raises(ValueError, match="column 0 of X has l2 norm"):
        dp_scd(X, y, datafit, penalty, clip=1.0, noise_scale=0.1, passes=1,
               batch_size=2, seed=0, variant="primal", sampling="none")


def test_argument_errors(data):
    X, y, yc = data
    datafit, penalty = make_problem("squares", "l2", LAM)
    kw = dict(clip=1.0, noise_scale=0.0, passes=1, seed=0)
    with pytest.raises(ValueError, match="L2-regularised"):
        dp_scd(X, y, datafit, make_problem("squares", "l1", LAM)[1], batch_size=5, **kw)
    with pytest.raises(ValueError, match="batch_size"):
        dp_scd(X, y, datafit, penalty, batch_size=len(y) + 1, **kw)
    with pytest.raises(ValueError, match="sampling"):
        dp_scd(X, y, datafit, penalty, batch_size=5, sampling="shuffle", **kw)
    with pytest.raises(ValueError, match="sampling must be 'none'"):
        dp_scd(X, y, datafit, penalty, batch_size=2, variant="primal", **kw)
    with pytest.raises(ValueError, match="hinge"):
        dp_scd(X, yc, Hinge(), penalty, batch_size=2, variant="primal", sampling="none",
               **kw)
    with pytest.raises(ValueError, match="labels must be -1 or \\+1"):
        dp_scd(X, y, Hinge(), penalty, batch_size=5, **kw)


def test_dp_cd_refuses_hinge(data):
    X, _, y = data
    datafit, penalty = make_problem("hinge", "l2", LAM)
    with pytest.raises(ValueError, match="DP-CD needs a smooth datafit"):
        dp_cd(X, y, datafit, penalty, smoothness=np.ones(X.shape[1]), step=1.0, clip=1.0,
              noise_scales=0.0, passes=1, seed=0)
    with pytest.raises(ValueError, match="not smooth"):
        datafit.coordinate_smoothness(X)


def test_hinge_datafit():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 3))
    y = np.sign(rng.standard_normal(40))
    w = rng.standard_normal(3)
    hinge = make_problem("hinge", "l2", LAM)[0]
    z = X @ w
    assert hinge.value(X, y, w) == pytest.approx(np.mean(np.maximum(0, 1 - y * z)))
    # the subgradient is -y where the margin is below 1
    np.testing.assert_array_equal(hinge.raw_grad(y, z), np.where(y * z < 1, -y, 0.0))
    # Fenchel-Young >= 0 for feasible duals, 0 at a = l'(z), +inf outside [0, 1]
    for s in (rng.uniform(0, 1, 40), np.where(y * z < 1, 1.0, 0.0)):
        assert hinge.fenchel_young(y, z, -y * s) >= -1e-12
    assert hinge.fenchel_young(y, z, hinge.raw_grad(y, z)) == pytest.approx(0, abs=1e-12)
    assert hinge.fenchel_young(y, z, -y * 1.5) == np.inf
    with pytest.raises(ValueError, match="not twice differentiable"):
        hinge.raw_hessian(y, z)


@pytest.mark.parametrize("code", [SQUARES, LOGISTIC, HINGE])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n, p", [(150, 6), (1003, 90)])
def test_initial_objective_is_the_objective_at_zero_bit_for_bit(code, order, n, p):
    """The objective at θ = 0 is taken without reading X (every margin is 0):
    the bits of the row-wise pass over X, on C- and F-ordered X (dual and
    primal layouts), every loss, and y with zeros (whose residual's sign
    differs)."""
    from dpcd.solvers.dp_scd import _initial_objective, _objective

    rng = np.random.default_rng(n)
    X = np.asarray(_unit_rows(rng.standard_normal((n, p))), order=order)
    y = rng.standard_normal(n) if code == SQUARES else np.sign(rng.standard_normal(n))
    y[::5] = 0.0 if code == SQUARES else y[::5]
    got = _initial_objective(X, y, code, 0.3)
    assert got == _objective(X, y, np.zeros(p), code, 0.3)
    assert got == _objective(-X, y, np.zeros(p), code, 0.3)  # margins -0.0
