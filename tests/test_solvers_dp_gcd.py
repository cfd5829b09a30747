"""DP-GCD: convergence without noise, numpy reference, selection and noise laws."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from sklearn.linear_model import Lasso, LogisticRegression

from dpcd.privacy import calibrate_dp_gcd
from dpcd.privacy.gcd import noisy_max_win_probability
from dpcd.problems import make_problem, objective
from dpcd.algorithms.dp_cd import coordinate_clip
from dpcd.solvers import dp_gcd, reference_solve

RULES = ["smooth", "gs_s", "gs_r", "gs_q"]


def _data(seed=0, n=60, p=8, logistic=False, density=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * rng.uniform(0.3, 3.0, size=p)
    if density is not None:
        X *= rng.random((n, p)) < density
        X[0] = np.where(X[0] == 0, 1.0, X[0])  # no empty column
    w_true = np.zeros(p)
    w_true[:min(3, p)] = [2.0, -1.0, 0.5][:min(3, p)]
    y = X @ w_true + 0.3 * rng.standard_normal(n)
    if logistic:
        y = np.where(y > 0, 1.0, -1.0)
        y[rng.random(n) < 0.1] *= -1
    return X, y


def _prox(pen, x, step):
    return float(pen.prox(np.array([x]), step)[0])


def _psi(pen, x):
    return float(pen.value(np.array([x])))


def _numpy_gcd(X, y, datafit, pen, M, step, clip, rule, T, lam_sel=0.0, lam=0.0,
               rng_pair=None, placement="gradient"):
    """Plain numpy DP-GCD: full clipped gradient from scratch, paper's rules."""
    n, p = X.shape
    w = np.zeros(p)
    alpha = float(pen.params[0])
    name = type(pen).__name__
    sel = []
    for _ in range(T):
        z = X @ w
        dl = 2 * (z - y) if datafit.code == 0 else -y / (1 + np.exp(y * z))
        g = np.clip(X * dl[:, None], -clip, clip).mean(axis=0)
        chi = (rng_pair[0].laplace(0.0, np.broadcast_to(lam_sel, (p,)))
               if rng_pair else np.zeros(p))
        scores = np.empty(p)
        for j in range(p):
            v = g[j] + chi[j] if placement == "gradient" else g[j]
            if rule == "smooth":
                scores[j] = (abs(v + alpha * w[j]) / np.sqrt(M[j] + alpha) if name == "L2"
                             else abs(v) / np.sqrt(M[j]))
            elif name == "L1" and w[j] == 0:
                scores[j] = (abs(v) - alpha) / np.sqrt(M[j])
            elif rule == "gs_s":
                xi = {"L1": alpha * np.sign(w[j]), "L2": alpha * w[j]}.get(name, 0.0)
                scores[j] = abs(v + xi) / np.sqrt(M[j])
            else:
                a = _prox(pen, w[j] - v / M[j], 1 / M[j]) - w[j]
                if rule == "gs_r":
                    scores[j] = np.sqrt(M[j]) * abs(a)
                else:
                    dec = -(v * a + M[j] * a * a / 2 + _psi(pen, w[j] + a) - _psi(pen, w[j]))
                    scores[j] = np.sqrt(max(2 * dec, 0.0))
            if placement == "score":
                scores[j] += chi[j]
        j = int(np.argmax(scores))
        sel.append(j)
        v = g[j] + (rng_pair[1].laplace(0.0, np.broadcast_to(lam, (p,))[j])
                    if rng_pair else 0.0)
        if rule == "smooth":
            if name == "L2":
                w[j] -= step / (M[j] + alpha) * (v + alpha * w[j])
            else:
                w[j] -= step / M[j] * v
        else:
            w[j] = _prox(pen, w[j] - step / M[j] * v, step / M[j])
    return w, sel


PROBLEMS = [("squares", "l1", 0.1), ("squares", "l2", 0.1), ("logistic", "l1", 0.02),
            ("logistic", "l2", 0.05), ("squares", "none", 0.0)]


@pytest.mark.parametrize("loss, penalty, lam", PROBLEMS)
@pytest.mark.parametrize("rule", RULES)
def test_noise_off_reaches_optimum(loss, penalty, lam, rule):
    if rule == "smooth" and penalty == "l1":
        pytest.skip("Algorithm 1 needs a smooth penalty")
    X, y = _data(logistic=loss == "logistic")
    datafit, pen = make_problem(loss, penalty, lam)
    f_star = reference_solve(X, y, datafit, pen).objective[-1]
    M = datafit.coordinate_smoothness(X)
    res = dp_gcd(X, y, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
                 selection_scales=0.0, noise_scales=0.0, iterations=3000, seed=0,
                 rule=rule)
    assert res.objective.shape == (3001,)
    assert res.objective[-1] == pytest.approx(objective(X, y, res.w, datafit, pen),
                                              rel=1e-10)
    assert (res.objective[-1] - f_star) / f_star <= 1e-8
    # greedy without noise never increases the objective (steps 1/M_j)
    assert np.all(np.diff(res.objective) <= 1e-12 * abs(f_star))


def test_noise_off_matches_sklearn():
    """Objective scaling: our (1/n)||Xw - y||^2 + a||w||_1 is Lasso(alpha=a/2)."""
    X, y = _data(p=6)
    datafit, pen = make_problem("squares", "l1", 0.2)
    M = datafit.coordinate_smoothness(X)
    res = dp_gcd(X, y, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
                 selection_scales=0.0, noise_scales=0.0, iterations=3000, seed=0)
    sk = Lasso(alpha=0.1, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y)
    np.testing.assert_allclose(res.w, sk.coef_, atol=1e-6)
    Xl, yl = _data(p=6, logistic=True)
    datafit, pen = make_problem("logistic", "l2", 0.05)
    M = datafit.coordinate_smoothness(Xl)
    res = dp_gcd(Xl, yl, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
                 selection_scales=0.0, noise_scales=0.0, iterations=3000, seed=0,
                 rule="smooth")
    sk = LogisticRegression(C=1 / (0.05 * len(yl)), fit_intercept=False, tol=1e-12,
                            max_iter=10_000).fit(Xl, yl)
    np.testing.assert_allclose(res.w, sk.coef_[0], atol=1e-6)


@pytest.mark.parametrize("loss, penalty, lam", PROBLEMS[:4])
@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("noise", [False, True])
def test_matches_numpy_reference(loss, penalty, lam, rule, noise):
    """Same iterates and selections as a plain numpy loop (clipping on)."""
    if rule == "smooth" and penalty == "l1":
        pytest.skip("Algorithm 1 needs a smooth penalty")
    X, y = _data(n=30, p=6, logistic=loss == "logistic")
    datafit, pen = make_problem(loss, penalty, lam)
    M = datafit.coordinate_smoothness(X)
    clip = coordinate_clip(M, 2.0)
    lam_sel, lam_g = (0.05, 0.02) if noise else (0.0, 0.0)
    for placement in ("gradient", "score"):
        res = dp_gcd(X, y, datafit, pen, smoothness=M, step=0.7, clip=clip,
                     selection_scales=lam_sel, noise_scales=lam_g, iterations=40, seed=3,
                     rule=rule, selection_noise=placement)
        rngs = None
        if noise:
            ss = np.random.SeedSequence(3).spawn(2)
            rngs = (np.random.default_rng(ss[0]), np.random.default_rng(ss[1]))
        w, sel = _numpy_gcd(X, y, datafit, pen, M, 0.7, clip, rule, 40, lam_sel, lam_g,
                            rngs, placement)
        assert res.extra["selected"].tolist() == sel
        np.testing.assert_allclose(res.w, w, rtol=1e-10, atol=1e-13)


def test_unambiguous_argmax_is_selected():
    """Noise off: the first step takes the coordinate with the largest |g_j|/sqrt(M_j)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 10))
    y = 5.0 * X[:, 7] + 0.01 * rng.standard_normal(50)
    datafit, pen = make_problem("squares", "l1", 0.01)
    M = datafit.coordinate_smoothness(X)
    for rule in ("gs_s", "gs_r", "gs_q"):
        res = dp_gcd(X, y, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
                     selection_scales=0.0, noise_scales=0.0, iterations=3, seed=0,
                     rule=rule)
        assert res.extra["selected"][0] == 7
        assert np.flatnonzero(res.w).tolist() == [7] or res.extra["selected"][1] != 7


def test_selection_frequencies_match_noisy_max():
    """Two coordinates, w = 0, one iteration: P[select 0] at the ledger's scales."""
    n = 40
    X = np.zeros((n, 2))
    X[:20, 0] = 1.0
    X[20:, 1] = 2.0
    y = np.concatenate([np.full(20, 0.3), np.full(20, -0.12)])
    datafit, pen = make_problem("squares", "none", 0.0)
    M = datafit.coordinate_smoothness(X)
    clip = np.array([0.4, 0.8])
    cal = calibrate_dp_gcd(n, 2, 1, clip, 1.0, 1e-3, smoothness=M)
    lam_sel = cal.extra["selection_scales"]
    g = np.clip(X * (-2 * y)[:, None], -clip, clip).mean(axis=0)
    # score |g_j + chi_j| / sqrt(M_j): compare |g_0 + chi_0| sqrt(M_1/M_0) with |g_1 + chi_1|
    r = np.sqrt(M[1] / M[0])
    p0 = noisy_max_win_probability(g[0] * r, g[1], lam_sel[0] * r, lam_sel[1])
    assert 0.7 < p0 < 0.9  # informative: neither a coin flip nor certain
    m = 12_000
    hits = 0
    for s in range(m):
        res = dp_gcd(X, y, datafit, pen, smoothness=M, step=1.0, clip=clip,
                     selection_scales=lam_sel, noise_scales=cal.noise_scales,
                     iterations=1, seed=s, check_input=False)
        hits += res.extra["selected"][0] == 0
    # binomial standard error ~ 0.0045; 4.5 sigma
    assert hits / m == pytest.approx(p0, abs=4.5 * np.sqrt(p0 * (1 - p0) / m))


def test_gradient_noise_is_laplace():
    """Update noise: w_j^1 = -(gamma/M_j)(g_j + eta), eta ~ Lap(lambda_j) (KS test)."""
    X, y = _data(n=20, p=1)
    datafit, pen = make_problem("squares", "none", 0.0)
    M = datafit.coordinate_smoothness(X)
    g = 2 * np.mean(X[:, 0] * -y)
    lam = 0.3
    etas = np.array([
        -dp_gcd(X, y, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
                selection_scales=0.1, noise_scales=lam, iterations=1, seed=s,
                check_input=False).w[0] * M[0] - g
        for s in range(3000)])
    assert stats.kstest(etas, stats.laplace(scale=lam).cdf).pvalue > 1e-3
    assert stats.kstest(etas, stats.laplace(scale=1.3 * lam).cdf).pvalue < 1e-6


@pytest.mark.parametrize("loss", ["squares", "logistic"])
@pytest.mark.parametrize("rule", ["gs_r", "gs_q", "smooth"])
def test_sparse_and_dense_give_same_iterates(loss, rule):
    X, y = _data(n=80, p=30, logistic=loss == "logistic", density=0.1)
    datafit, pen = make_problem(loss, "l2" if rule == "smooth" else "l1", 0.01)
    M = datafit.coordinate_smoothness(X)
    kw = dict(smoothness=M, step=1.0, clip=coordinate_clip(M, 1.0),
              selection_scales=0.01, noise_scales=0.01, iterations=50, seed=7, rule=rule)
    dense = dp_gcd(X, y, datafit, pen, **kw)
    for fmt in (sp.csc_matrix, sp.csr_matrix):
        sparse = dp_gcd(fmt(X), y, datafit, pen, **kw)
        assert sparse.extra["selected"].tolist() == dense.extra["selected"].tolist()
        # summation order differs (SIMD over all rows vs stored entries)
        np.testing.assert_allclose(sparse.w, dense.w, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(sparse.objective, dense.objective, rtol=1e-12)


def test_determinism_bit_for_bit():
    X, y = _data(logistic=True)
    datafit, pen = make_problem("logistic", "l1", 0.01)
    M = datafit.coordinate_smoothness(X)
    kw = dict(smoothness=M, step=1.0, clip=1.0, selection_scales=0.05,
              noise_scales=0.05, iterations=30, seed=11)
    a = dp_gcd(X, y, datafit, pen, **kw)
    b = dp_gcd(X, y, datafit, pen, **kw)
    assert a.w.tobytes() == b.w.tobytes()
    assert a.objective.tobytes() == b.objective.tobytes()
    c = dp_gcd(X, y, datafit, pen, **{**kw, "seed": 12})
    assert c.w.tobytes() != a.w.tobytes()


def test_bad_arguments():
    X, y = _data()
    datafit, pen = make_problem("squares", "l1", 0.1)
    M = datafit.coordinate_smoothness(X)
    kw = dict(smoothness=M, step=1.0, clip=1.0, selection_scales=0.0,
              noise_scales=0.0, iterations=2, seed=0)
    with pytest.raises(ValueError, match="smooth penalty"):
        dp_gcd(X, y, datafit, pen, **kw, rule="smooth")
    with pytest.raises(ValueError, match="rule must be one of"):
        dp_gcd(X, y, datafit, pen, **kw, rule="gs_x")
    _, en = make_problem("squares", "elastic_net", 0.1)
    with pytest.raises(ValueError, match="no, L1 and L2"):
        dp_gcd(X, y, datafit, en, **kw)
    with pytest.raises(ValueError, match="iterations"):
        dp_gcd(X, y, datafit, pen, **{**kw, "iterations": 1.5})


@pytest.mark.parametrize("accountant", ["auto", "paper"])
@pytest.mark.parametrize("penalty, rule, placement", [
    ("l1", "gs_r", "score"), ("l1", "gs_s", "gradient"), ("l2", "smooth", "gradient")])
def test_adapter_dense_and_sparse(accountant, penalty, rule, placement):
    from dpcd.algorithms import Budget, get
    from dpcd.algorithms.dp_gcd import calibrate as calibrate_dp_gcd_config
    from dpcd.sweep.problem import SweepProblem

    X, y = _data(n=80, p=30, logistic=True, density=0.2)
    datafit, pen = make_problem("logistic", penalty, 0.01)
    M = datafit.coordinate_smoothness(X)
    config = {"passes": 5, "step": 1.0, "clip": 1.0, "rule": rule}
    budget = Budget(1.0, 1e-4, accountant)
    runs = []
    for design in (X, sp.csc_matrix(X)):
        problem = SweepProblem(X=design, y=y, datafit=datafit, penalty=pen, smoothness=M,
                               global_smoothness=np.nan, max_abs=np.abs(X).max(axis=0))
        result, ledger = get("dp_gcd").run(problem, config, [1, 2], budget)
        runs.append(result)
        assert list(ledger.nonprivate_inputs) == ["exact_smoothness"]
        assert ledger.epsilon_achieved <= 1.0
        cal = calibrate_dp_gcd_config(problem, config, budget)
        expected = "gradient" if accountant == "paper" else placement
        assert cal.extra["selection_noise"] == result.extra["selection_noise"] == expected
        note = ledger.mechanisms[0].note
        assert ("mode=paper" in note) == (accountant == "paper")
    assert runs[0].extra["selected"].tolist() == runs[1].extra["selected"].tolist()
    np.testing.assert_allclose(runs[0].w, runs[1].w, rtol=1e-12, atol=1e-15)
    assert runs[0].objective.shape == (6,)


def test_warmup_compiles_dp_gcd():
    from dpcd import algorithms

    assert algorithms.warmup(["dp_gcd"]) == ["dp_gcd"]
