"""Secure mode of the solvers beyond DP-CD: DP-GCD's report-noisy-max on the lattice.

Streams keyed by a fixed key (``keystream.state_from_key``) make the
statistical checks reproducible; each states its false-failure probability.
"""
import itertools

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import stats

from dpcd.estimators import DPCoordinateDescentRegressor
from dpcd.privacy import audit, exact, keystream, secure
from dpcd.privacy.gcd import calibrate_dp_gcd, gcd_epsilon
from dpcd.problems import make_problem
from dpcd.problems._jit import L1, NONE
from dpcd.solvers.dp_gcd import GS_R, SMOOTH, _clipped_gradient_dense, _score, _secure_select

M_RES = secure.RESOLUTION


def _state(seed):
    return keystream.state_from_key(seed.to_bytes(32, "little"))


def _noisy_max_probabilities(q, t, half=40):
    """Exact P[j selected] of argmax_j q_j + K_j, K_j discrete Laplace(t),
    exact ties broken uniformly: enumerated over K in [−half, half]^p."""
    k = np.arange(-half, half + 1)
    pmf = np.exp(-np.abs(k) / t)
    pmf /= pmf.sum()
    p = len(q)
    grids = np.meshgrid(*([k] * p), indexing="ij")
    weight = np.ones_like(grids[0], dtype=np.float64)
    for g in np.meshgrid(*([pmf] * p), indexing="ij"):
        weight = weight * g
    noisy = np.stack([qj + g for qj, g in zip(q, grids)])
    top = noisy == noisy.max(axis=0)
    share = top / top.sum(axis=0)
    return np.array([np.sum(weight * share[j]) for j in range(p)])


def test_lattice_noisy_max_with_uniform_ties_is_eps_dp():
    """Integer scores moving by at most D = 1 each way (every neighbouring
    pattern around two bases, one with ties), discrete Laplace of scale
    t = 2D/ε′: each selection probability moves by at most e^{ε′} (exact
    enumeration; the truncation at ±40 leaves < 1e-8 of mass)."""
    eps_step, D = 1.0, 1
    t = 2 * D / eps_step
    worst = 0.0
    for base in ([0, 0, 1], [0, 2, 3]):
        p_d = _noisy_max_probabilities(base, t)
        for shift in itertools.product(range(-D, D + 1), repeat=3):
            p_n = _noisy_max_probabilities(np.add(base, shift), t)
            worst = max(worst, np.max(np.abs(np.log(p_d / p_n))))
    assert worst <= eps_step + 1e-6, worst
    assert worst > 0.5 * eps_step  # the pairs are not trivially far from the bound


def test_secure_select_breaks_exact_ties_uniformly():
    """Equal scores and noise of scale 2⁻¹⁰ (zero but with probability
    2·e^{−1024}): every coordinate ties, and the selection must be uniform
    over the 5 (χ² at level 1e-6 on 20 000 draws from a keyed stream)."""
    p, n = 5, 20_000
    w, g, M = np.zeros(p), np.full(p, 0.3), np.ones(p)
    pparams = np.array([0.0, 0.0])
    state, noise = _state(1), np.zeros(p, dtype=np.int64)
    picks = np.array([_secure_select(SMOOTH, NONE, pparams, w, g, M, 1e-3, 2.0 ** -10,
                                     state, noise) for _ in range(n)])
    counts = np.bincount(picks, minlength=p)
    stat = np.sum((counts - n / p) ** 2 / (n / p))
    assert stat <= stats.chi2.isf(1e-6, df=p - 1), counts


def test_secure_scores_and_gradients_move_by_at_most_m_plus_one_steps():
    """On neighbouring datasets (one row replaced by an extreme one) the
    rounded GS-r scores (L1 penalty, w ≠ 0 and w = 0) and the rounded clipped
    gradients move by at most m + 1 grid steps, the charged sensitivity."""
    rng = np.random.default_rng(4)
    n, p = 300, 6
    X = rng.standard_normal((n, p))
    y = np.sign(rng.standard_normal(n))
    Xp = X.copy()
    Xp[0] = 50 * np.sign(rng.standard_normal(p))
    datafit, pen = make_problem("logistic", "l1", 0.01)
    M = datafit.coordinate_smoothness(X)
    clip = 0.5 * np.sqrt(M / M.sum())
    cal = calibrate_dp_gcd(n, p, 5, clip, 1.0, 1e-5, smoothness=M, rule="gs_r",
                           penalty="l1", alpha=0.01, resolution=M_RES)
    sec = secure.secure_dp_gcd(cal, n)
    w = np.array([0.3, -0.2, 0.0, 0.0, 1.0, 0.0])
    worst_score, worst_grad = 0.0, 0.0
    for _ in range(20):
        u = rng.standard_normal(n)  # margins of some iterate
        grads = []
        for data in (X, Xp):
            d = -y / (1.0 + np.exp(u))
            g = np.empty(p)
            _clipped_gradient_dense(np.asfortranarray(data), d, clip, g)
            grads.append(g)
        for j in range(p):
            h = [_score(GS_R, L1, pen.params, w[j], g[j], M[j]) for g in grads]
            q = secure.round_to_grid(np.array(h), sec.score_grid)
            worst_score = max(worst_score, abs(q[0] - q[1]))
            qg = secure.round_to_grid(np.array([g[j] for g in grads]), sec.grid[j])
            worst_grad = max(worst_grad, abs(qg[0] - qg[1]))
    assert 0 < worst_score <= M_RES + 1 and 0 < worst_grad <= M_RES + 1


@pytest.mark.parametrize("iterations, epsilon, delta", [(10, 1.0, 1e-5), (50, 3.0, 1e-6)])
def test_secure_dp_gcd_accounting_against_dp_accounting(iterations, epsilon, delta):
    """The secure per-step ε′ (discrete Laplace gradient entries, integer
    sensitivity m + 1) keeps the noise at most 1 % above the fast "auto"
    calibration's, and dp_accounting's PLD of randomized response (the
    selection) and the discrete Laplace, at a 10 times finer interval,
    meets the target."""
    n, p = 1000, 8
    clip, M = np.linspace(0.2, 1.0, p), np.linspace(0.5, 2.0, p)
    kwargs = dict(smoothness=M, rule="gs_r", penalty="l2", alpha=0.1)
    fast = calibrate_dp_gcd(n, p, iterations, clip, epsilon, delta, **kwargs)
    cal = calibrate_dp_gcd(n, p, iterations, clip, epsilon, delta, resolution=M_RES,
                           **kwargs)
    sec = secure.secure_dp_gcd(cal, n)
    eps_step = cal.extra["epsilon_per_step"]
    ratio = fast.extra["epsilon_per_step"] / eps_step * (M_RES + 1) / M_RES
    assert 1.0 <= ratio <= 1.01, ratio
    np.testing.assert_allclose(sec.calibration.noise_scales,
                               (M_RES + 1) * sec.grid / eps_step, rtol=1e-12)
    # the secure selection noise, in score units, against the fast one's: the
    # V-shaped scores κ_j|g_j + χ_j| carry κ_j λ′_j = 2 s/ε′ of noise
    kappa = np.sqrt(M) / (M + 0.1)
    np.testing.assert_allclose(sec.calibration.extra["selection_scales"] / (
        kappa * fast.extra["selection_scales"]), ratio, rtol=1e-9)
    interval = 1e-4
    rr = pld_lib.from_randomized_response(2 / (1 + np.exp(eps_step)), 2,
                                          value_discretization_interval=interval)
    lap = pld_lib.from_discrete_laplace_mechanism(
        eps_step / (M_RES + 1), sensitivity=M_RES + 1, value_discretization_interval=interval)
    eps = rr.self_compose(iterations).compose(lap.self_compose(iterations)) \
        .get_epsilon_for_delta(delta)
    assert eps <= epsilon * (1 + 1e-9)
    assert gcd_epsilon(eps_step, iterations, delta, cal.extra["composition"],
                       M_RES + 1) <= epsilon
    assert sec.calibration.ledger.noise == "secure"
    assert [m.kind for m in sec.calibration.ledger.mechanisms] == [
        "discrete_report_noisy_max", "discrete_laplace"]


def _lattice_selection_sampler(u, u_prime, scale, score_grid, seed):
    """The secure selection on two score vectors (rounded to ``score_grid``,
    discrete Laplace of ``scale`` grid steps from a keyed stream, ties broken
    uniformly by random priorities, which is the same law)."""
    state = _state(seed)

    def sample(rng, neighbour, size):
        q = secure.round_to_grid(np.asarray(u_prime if neighbour else u), score_grid)
        noise = np.empty(size * q.size, dtype=np.int64)
        exact.fill_discrete_laplace(state, scale, noise)
        noisy = q + noise.reshape(size, q.size) + rng.random((size, q.size))
        return (np.argmax(noisy, axis=1) == 0).astype(float)
    return sample


def test_audit_secure_dp_gcd_selection():
    """The fast twin's audit (tests/test_privacy_audit.py, one iteration, two
    coordinates, Δ = 0.2 moving the two scores apart) on the secure
    selection: below its claim ε′ at the calibrated scale, caught at half of
    it (95 % Clopper-Pearson bounds, 10⁶ runs per side)."""
    n, p = 10, 2
    clip = np.array([1.0, 1.0])
    cal = calibrate_dp_gcd(n=n, p=p, iterations=1, clip=clip, epsilon=2.0, delta=1e-5,
                           resolution=M_RES)
    sec = secure.secure_dp_gcd(cal, n)
    eps_step = cal.extra["epsilon_per_step"]
    u, u_prime = [0.4, 0.8], [0.2, 1.0]  # |g| scores with κ = 1, s = Δ = 0.2
    for factor, passes in ((1.0, True), (0.5, False)):
        res = audit.audit_scores(
            _lattice_selection_sampler(u, u_prime, factor * sec.selection_scale,
                                       sec.score_grid, seed=7),
            delta=0.0, n_runs=1_000_000, seed=0, thresholds=np.array([0.5]),
            epsilon_claimed=eps_step)
        assert (res.epsilon_lb < eps_step) == passes, res.epsilon_lb


def test_secure_dp_gcd_fit():
    """A default secure fit (no random_state) of DP-GCD: its ledger says
    secure, and at a large ε it reaches the fast fit's objective."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 6))
    y = X @ np.arange(1.0, 7.0) + 0.1 * rng.standard_normal(400)
    kwargs = dict(solver="dp_gcd", passes=30, penalty="l1", alpha=0.01, epsilon=1e3,
                  clip=10.0, accountant="rdp")
    sec = DPCoordinateDescentRegressor(**kwargs).fit(X, y)
    fast = DPCoordinateDescentRegressor(random_state=0, **kwargs).fit(X, y)
    assert sec.privacy_ledger_.noise == "secure" and fast.privacy_ledger_.noise == "fast"
    assert sec.history_[-1] == pytest.approx(fast.history_[-1], rel=0.05)
    assert sec.history_[-1] < 0.1 * sec.history_[0]
