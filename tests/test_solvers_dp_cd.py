"""DP-CD: convergence without noise, clipping, noise statistics, determinism."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from dpcd.problems import make_problem, objective
from dpcd.problems._jit import (
    _coordinate_gradient,
    _init_state,
    _noisy_coordinate_gradient,
)
from dpcd.algorithms.dp_cd import coordinate_clip
from dpcd.solvers import dp_cd, reference_solve
from dpcd.solvers.dp_cd import _draw_randomness


def _data(seed=0, n=100, p=20, logistic=False):
    rng = np.random.default_rng(seed)
    # imbalanced feature scales, as in the paper's raw datasets
    X = rng.standard_normal((n, p)) * rng.uniform(0.1, 10.0, size=p)
    w_true = np.zeros(p)
    k = min(5, p)
    w_true[:k] = rng.standard_normal(k) / rng.uniform(0.1, 10.0, size=k)
    y = X @ w_true + 0.3 * rng.standard_normal(n)
    if logistic:
        y = np.where(y > 0, 1.0, -1.0)
        flip = rng.random(n) < 0.1
        y[flip] *= -1
    return X, y


CASES = [("squares", "l1", 0.1), ("logistic", "l2", 0.05),
         ("squares", "elastic_net", 0.1), ("logistic", "l1", 0.02),
         ("squares", "l2", 0.1)]


@pytest.mark.parametrize("loss, penalty, lam", CASES)
@pytest.mark.parametrize("averaging", [False, True])
def test_converges_without_noise(loss, penalty, lam, averaging):
    """sigma = 0, C = inf: plain randomized proximal CD reaches F*."""
    X, y = _data(logistic=loss == "logistic")
    datafit, pen = make_problem(loss, penalty, lam)
    f_star = reference_solve(X, y, datafit, pen).objective[-1]
    M = datafit.coordinate_smoothness(X)
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
                noise_scales=0.0, passes=1000, seed=0, averaging=averaging,
                inner_passes=5 if averaging else None)
    assert res.objective.shape == (1001,)
    assert res.n_updates == 1000 * X.shape[1]
    assert res.objective[-1] == pytest.approx(objective(X, y, res.w, datafit, pen),
                                              rel=1e-12)
    assert (res.objective[-1] - f_star) / f_star <= 1e-6
    assert res.objective[-1] >= f_star * (1 - 1e-12)


def test_averaging_reports_average_of_inner_iterates():
    """K = inner_passes * p, output bar w_T; compare against a python loop."""
    X, y = _data(n=30, p=4)
    datafit, pen = make_problem("squares", "l1", 0.1)
    M = datafit.coordinate_smoothness(X)
    sigma = np.full(4, 0.05)
    steps = 0.5 / M
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=0.5, clip=np.inf,
                noise_scales=sigma, passes=6, seed=3, averaging=True, inner_passes=3)
    coords, z = _draw_randomness(3, 4, 6 * 4)
    K = 12
    w = np.zeros(4)
    for t in range(2):
        theta = w.copy()
        acc = np.zeros(4)
        for k in range(t * K, (t + 1) * K):
            j = coords[k]
            g = datafit.gradient(X, y, theta)[j] + sigma[j] * z[k]
            theta[j] = pen.prox(np.array([theta[j] - steps[j] * g]), steps[j])[0]
            acc += theta
        w = acc / K
    np.testing.assert_allclose(res.w, w, rtol=1e-10, atol=1e-12)
    f_bar1 = res.objective[3]
    assert res.objective[1] == res.objective[0]  # bar w_0 reported until t = 1
    assert res.objective[4] == f_bar1 == res.objective[5]


def test_averaging_needs_multiple_of_inner_passes():
    X, y = _data()
    datafit, pen = make_problem("squares", "l1", 0.1)
    M = datafit.coordinate_smoothness(X)
    with pytest.raises(ValueError, match="multiple"):
        dp_cd(X, y, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
              noise_scales=0.0, passes=5, seed=0, averaging=True, inner_passes=2)


def test_zero_smoothness_column_named():
    X, y = _data()
    datafit, pen = make_problem("squares", "l1", 0.1)
    M = datafit.coordinate_smoothness(X)
    M[7] = 0.0
    with pytest.raises(ValueError, match="column 7"):
        dp_cd(X, y, datafit, pen, smoothness=M, step=1.0, clip=1.0,
              noise_scales=0.0, passes=1, seed=0)
    with pytest.raises(ValueError, match="column 7"):
        coordinate_clip(M, 1.0)


def test_coordinate_clip_formula():
    M = np.array([1.0, 4.0, 0.5, 2.5])
    C = coordinate_clip(M, 3.0)
    np.testing.assert_allclose(C, np.sqrt(M / M.sum()) * 3.0)
    # ||(C_j)_j||_{M~^{-1}} = C with M~ = p M / tr M: sensitivity 2C (Section 5.1)
    Mt = 4 * M / M.sum()
    assert np.sqrt(np.sum(C ** 2 / Mt)) == pytest.approx(3.0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), logistic=st.booleans(),
       clip=st.floats(1e-4, 1e3), j=st.integers(0, 19))
def test_clipped_coordinate_gradient(seed, logistic, clip, j):
    """|clipped mean| <= C_j and equals the numpy clipped per-sample mean."""
    X, y = _data(seed=seed % 100, logistic=logistic)
    datafit = make_problem("logistic" if logistic else "squares", "none", 0)[0]
    w = np.random.default_rng(seed).standard_normal(20)
    u = np.empty(X.shape[0])
    Xf = np.asfortranarray(X)
    _init_state(datafit.code, Xf, y, w, u)
    g = _coordinate_gradient(datafit.code, Xf, y, u, j, clip)
    per_sample = datafit.per_sample_gradients(X, y, w)[:, j]
    assert abs(g) <= clip * (1 + 1e-12)
    assert g == pytest.approx(np.clip(per_sample, -clip, clip).mean(), rel=1e-9,
                              abs=1e-12 * clip)
    assert _coordinate_gradient(datafit.code, Xf, y, u, j, np.inf) == pytest.approx(
        per_sample.mean(), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("loss", ["squares", "logistic"])
def test_noise_variance_matches_sigma(loss):
    """The noisy gradients the kernel uses have variance sigma_j^2 (chi-square).

    Draws come from the same streams as ``dp_cd`` (``_draw_randomness``); per
    coordinate, sum_k ((g_k - g_j) / sigma_j)^2 ~ chi2(m_j), tested two-sided at
    level 1e-6, and coordinate counts are tested for uniformity.
    """
    X, y = _data(p=5, logistic=loss == "logistic")
    datafit, _ = make_problem(loss, "none", 0)
    Xf = np.asfortranarray(X)
    w = np.random.default_rng(1).standard_normal(5) * 0.1
    u = np.empty(X.shape[0])
    _init_state(datafit.code, Xf, y, w, u)
    clip = np.array([0.5, 1.0, 2.0, np.inf, 0.1])
    sigma = np.array([0.1, 1.0, 3.0, 0.01, 10.0])
    passes = 4000
    coords, z = _draw_randomness(42, 5, passes * 5)
    g = np.array([_noisy_coordinate_gradient(datafit.code, Xf, y, u, j, clip[j],
                                             sigma[j], zk)
                  for j, zk in zip(coords, z)])
    exact = np.array([_coordinate_gradient(datafit.code, Xf, y, u, j, clip[j])
                      for j in range(5)])
    alpha = 1e-6
    counts = np.bincount(coords, minlength=5)
    assert stats.chisquare(counts).pvalue > alpha
    for j in range(5):
        m = counts[j]
        ss = np.sum(((g[coords == j] - exact[j]) / sigma[j]) ** 2)
        lo, hi = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], df=m)
        assert lo <= ss <= hi, (j, ss / m)


def test_kernel_uses_the_drawn_noise():
    """With C_j -> 0 the gradient vanishes and w_j = -gamma_j sigma_j sum z."""
    X, y = _data(p=6)
    datafit, pen = make_problem("squares", "none", 0)
    M = datafit.coordinate_smoothness(X)
    sigma = np.linspace(0.5, 3.0, 6)
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=0.7, clip=1e-300,
                noise_scales=sigma, passes=50, seed=9)
    coords, z = _draw_randomness(9, 6, 50 * 6)
    expected = np.array([-(0.7 / M[j]) * sigma[j] * z[coords == j].sum()
                         for j in range(6)])
    np.testing.assert_allclose(res.w, expected, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("loss", ["squares", "logistic"])
def test_determinism(loss):
    X, y = _data(logistic=loss == "logistic")
    datafit, pen = make_problem(loss, "l1", 0.05)
    M = datafit.coordinate_smoothness(X)
    kw = dict(smoothness=M, step=0.5, clip=coordinate_clip(M, 1.0),
              noise_scales=0.1 * np.sqrt(M), passes=20)
    a = dp_cd(X, y, datafit, pen, seed=123, **kw)
    b = dp_cd(np.asfortranarray(X), y, datafit, pen, seed=123, **kw)
    c = dp_cd(X, y, datafit, pen, seed=124, **kw)
    assert np.array_equal(a.w, b.w) and np.array_equal(a.objective, b.objective)
    assert not np.array_equal(a.w, c.w)


@pytest.mark.parametrize("loss", ["squares", "logistic"])
def test_state_does_not_drift(loss):
    """Residuals / margins kept in O(n) updates equal X w - y / y X w."""
    X, y = _data(n=200, p=30, logistic=loss == "logistic")
    datafit, pen = make_problem(loss, "l1", 0.01)
    M = datafit.coordinate_smoothness(X)
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=1.0,
                clip=coordinate_clip(M, 5.0), noise_scales=0.01 * np.sqrt(M),
                passes=300, seed=0)
    if loss == "squares":
        drift = np.abs(res.extra["residuals"] - (X @ res.w - y)).max()
    else:
        drift = np.abs(res.extra["margins"] - y * (X @ res.w)).max()
    assert drift <= 1e-10


def test_private_run_shapes_and_warm_start():
    X, y = _data()
    datafit, pen = make_problem("squares", "l1", 0.1)
    M = datafit.coordinate_smoothness(X)
    w0 = np.ones(20) * 0.01
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=0.3,
                clip=coordinate_clip(M, 1.0),
                noise_scales=np.full(20, 0.01), passes=3, seed=0, w0=w0)
    assert res.objective[0] == pytest.approx(objective(X, y, w0, datafit, pen))
    assert res.objective.shape == (4,) and np.all(np.isfinite(res.objective))
    assert res.time >= 0 and res.n_updates == 60
    assert np.array_equal(w0, np.ones(20) * 0.01)  # not modified


def test_check_input_false_skips_only_validation():
    """A sweep validates once; skipping the per-run scan changes no result."""
    import numpy as np

    from dpcd.problems import make_problem
    from dpcd.algorithms.dp_cd import coordinate_clip
    from dpcd.solvers import dp_cd

    rng = np.random.default_rng(3)
    X = np.asfortranarray(rng.standard_normal((40, 6)))
    y = rng.standard_normal(40)
    datafit, penalty = make_problem("squares", "l1", 0.1)
    M = datafit.coordinate_smoothness(X)
    kwargs = dict(smoothness=M, step=1.0, clip=coordinate_clip(M, 1.0),
                  noise_scales=np.full(6, 0.01), passes=3, seed=5)
    checked = dp_cd(X, y, datafit, penalty, **kwargs)
    unchecked = dp_cd(X, y, datafit, penalty, check_input=False, **kwargs)
    np.testing.assert_array_equal(checked.w, unchecked.w)
    X_bad = X.copy()
    X_bad[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"X\[2, 3\]"):
        dp_cd(X_bad, y, datafit, penalty, **kwargs)


@pytest.mark.parametrize("passes", [0.001, 0.5, 2.5, 3.0])
def test_fractional_passes_make_the_accounted_number_of_updates(passes):
    """T K = max(1, round(passes p)) updates, as calibrate_dp_cd accounts them;
    the objective is recorded after each whole pass and at the end."""
    from dpcd.privacy.cd import dp_cd_steps
    from dpcd.solvers.base import pass_checkpoints
    from dpcd.solvers.dp_cd import n_coordinate_updates

    p = 1000
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, p))
    y = rng.standard_normal(30)
    datafit, pen = make_problem("squares", "none", 0.0)
    M = datafit.coordinate_smoothness(X)
    sigma = np.full(p, 0.01)
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
                noise_scales=sigma, passes=passes, seed=4)
    assert res.n_updates == n_coordinate_updates(p, passes) == dp_cd_steps(p, passes)
    np.testing.assert_array_equal(res.passes_done, pass_checkpoints(passes))
    assert res.objective.shape == res.passes_done.shape
    # replay: exactly the drawn coordinates moved (noise makes every update move)
    coords, _ = _draw_randomness(4, p, res.n_updates)
    assert set(np.flatnonzero(res.w)) == set(coords.tolist())
    np.testing.assert_allclose(res.objective[-1], objective(X, y, res.w, datafit, pen),
                               rtol=1e-12)


def test_whole_passes_keep_one_checkpoint_per_pass():
    X, y = _data(p=6)
    datafit, pen = make_problem("squares", "l1", 0.1)
    M = datafit.coordinate_smoothness(X)
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=1.0, clip=np.inf,
                noise_scales=0.0, passes=7, seed=0)
    assert res.objective.shape == (8,)
    np.testing.assert_array_equal(res.passes_done, np.arange(8.0))


def test_in_kernel_draws_replay_with_numpy():
    """The kernel draws coordinates and noise one by one from numba Generators;
    numpy's vectorised draws of the same generators replay them exactly, so
    with C_j -> 0 each w_j is -gamma_j sigma_j times the sum of its draws."""
    X, y = _data(p=9)
    datafit, pen = make_problem("squares", "none", 0)
    M = datafit.coordinate_smoothness(X)
    sigma = np.linspace(0.5, 3.0, 9)
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=0.3, clip=1e-300,
                noise_scales=sigma, passes=2.5, seed=77)
    coords, z = _draw_randomness(77, 9, res.n_updates)
    assert res.n_updates == 22  # round(2.5 * 9)
    expected = np.array([-(0.3 / M[j]) * sigma[j] * z[coords == j].sum() for j in range(9)])
    np.testing.assert_allclose(res.w, expected, rtol=1e-12, atol=1e-300)


def test_rejects_non_positive_passes():
    X, y = _data(p=3)
    datafit, pen = make_problem("squares", "none", 0)
    M = datafit.coordinate_smoothness(X)
    for passes in (0, -1, np.nan, np.inf):
        with pytest.raises(ValueError, match="passes"):
            dp_cd(X, y, datafit, pen, smoothness=M, step=1.0, clip=1.0,
                  noise_scales=0.0, passes=passes, seed=0)
