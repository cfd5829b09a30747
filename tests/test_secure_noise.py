"""The secure-noise mode (issue 30 item 6): exact samplers, grid, accounting, no seed kept.

The secure samplers cannot be seeded, so the statistical tests are not
reproducible draw for draw: each threshold is set so that a correct sampler
fails it with probability at most about 1e-6 (stated per test), and the
sample sizes are large enough that a wrong pmf (e.g. a continuous sampler
rounded, or the wrong scale) fails by a wide margin.
"""
import json
import pickle

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import stats

from dpcd import privacy
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
from dpcd.privacy import accounting, secure
from dpcd.problems import make_problem
from dpcd.problems._jit import _coordinate_gradient, _init_state
from dpcd.solvers import dp_cd
from dpcd.solvers.dp_cd import _draw_randomness

ALPHA = 1e-6  # false-failure probability of each statistical check


def _pmf(kind, scale, support):
    k = np.asarray(support, dtype=np.float64)
    logp = -k ** 2 / (2 * scale ** 2) if kind == "gaussian" else -np.abs(k) / scale
    # normalise over a support wide enough that the rest is < 1e-300
    wide = np.arange(-60 * scale - 60, 60 * scale + 61)
    logz = np.logaddexp.reduce(-wide ** 2 / (2 * scale ** 2) if kind == "gaussian"
                               else -np.abs(wide) / scale)
    return np.exp(logp - logz)


@pytest.mark.parametrize("kind, scale", [("gaussian", 0.8), ("gaussian", 3.0),
                                         ("laplace", 0.7), ("laplace", 2.5)])
def test_sampler_matches_its_integer_pmf(kind, scale):
    """Chi-square goodness of fit on the integer pmf (tails pooled so that
    every bin expects >= 20 draws), at level 1e-6; plus mean and variance
    within 5 standard errors (two-sided normal tail 5.7e-7 each).  At these
    small scales the discrete pmf differs visibly from a rounded continuous
    one: rounding N(0, 0.8²) puts 0.47 on 0, the discrete Gaussian 0.50."""
    n = 100_000
    draw = secure.discrete_gaussian if kind == "gaussian" else secure.discrete_laplace
    k = draw(scale, n)
    assert k.dtype == np.int64 and k.shape == (n,)
    half = 1
    while n * _pmf(kind, scale, [half + 1])[0] >= 20:
        half += 1
    inner = np.arange(-half, half + 1)
    p_inner = _pmf(kind, scale, inner)
    tail = (1.0 - p_inner.sum()) / 2
    expected = n * np.concatenate([[tail], p_inner, [tail]])
    observed = np.concatenate([[np.sum(k < -half)],
                               [np.sum(k == v) for v in inner], [np.sum(k > half)]])
    stat = np.sum((observed - expected) ** 2 / expected)
    assert stat <= stats.chi2.isf(ALPHA, df=len(expected) - 1), stat
    wide = np.arange(-60 * int(scale) - 60, 60 * int(scale) + 61)
    p = _pmf(kind, scale, wide)
    var = np.sum(p * wide ** 2)
    fourth = np.sum(p * wide ** 4)
    assert abs(k.mean()) <= 5 * np.sqrt(var / n)
    assert abs(k.var() - var) <= 5 * np.sqrt((fourth - var ** 2) / n)


def test_large_scale_gaussian_is_normal():
    """At the scales the secure mode uses (z·1001 grid steps) the discrete
    Gaussian is N(0, s²) to within its lattice: Kolmogorov–Smirnov against the
    continuous cdf (the lattice moves the cdf by at most 1/(s√(2π)) = 4e-5,
    far below the test's 1e-6-level threshold of 0.0098 at 50 000 draws)."""
    s = 1e4
    k = secure.discrete_gaussian(s, 50_000)
    assert stats.kstest(k + 0.5, stats.norm(scale=s).cdf).pvalue > ALPHA
    assert np.all(k == np.round(k))


def test_samplers_refuse_bad_scales():
    with pytest.raises(ValueError, match="scale"):
        secure.discrete_gaussian(0.0, 3)
    with pytest.raises(ValueError, match="scale"):
        secure.discrete_laplace(np.inf, 3)
    assert secure.discrete_laplace(1.0, 0).shape == (0,)


def test_rounding_moves_by_at_most_the_grid_steps_of_the_sensitivity():
    """floor(x/γ + 1/2) is monotone and commutes with integer shifts, so
    |x − x'| ≤ mγ gives |q − q'| ≤ m (the ledger charges m + 1); np.rint
    (half to even) would not commute with shifts."""
    rng = np.random.default_rng(0)
    gamma, m = 0.37, 7
    x = rng.uniform(-50, 50, 200_000)
    x = np.concatenate([x, (np.arange(-40, 40) + 0.5) * gamma])  # exact half-way points
    d = rng.uniform(-m, m, x.size) * gamma
    q, q2 = secure.round_to_grid(x, gamma), secure.round_to_grid(x + d, gamma)
    assert np.max(np.abs(q2 - q)) <= m
    t = rng.integers(-800, 800, x.size) / 8  # exact binary fractions, halves included
    k = rng.integers(-5, 5, x.size)
    assert np.array_equal(secure.round_to_grid(t + k, 1.0), secure.round_to_grid(t, 1.0) + k)
    assert np.all(np.diff(secure.round_to_grid(np.sort(x), gamma)) >= 0)


def test_rounded_coordinate_gradient_sensitivity_on_neighbours():
    """The released integer of DP-CD's coordinate gradient moves by at most
    m + 1 grid steps when one record is replaced (by the worst records we can
    think of: huge, opposite-signed features and labels), for random iterates."""
    rng = np.random.default_rng(1)
    n, p, m = 200, 4, secure.RESOLUTION
    for loss in ("squares", "logistic"):
        datafit, _ = make_problem(loss, "none", 0)
        X = rng.standard_normal((n, p))
        y = rng.standard_normal(n) if loss == "squares" else rng.choice([-1.0, 1.0], n)
        clip = np.array([0.1, 1.0, 3.0, 0.5])
        worst = 0
        for trial in range(200):
            X2, y2 = X.copy(), y.copy()
            i = rng.integers(n)
            X2[i] = rng.choice([-1e6, 1e6], p) * rng.uniform(0, 1, p)
            y2[i] = rng.choice([-1e6, 1e6]) if loss == "squares" else -y[i]
            w = rng.standard_normal(p) * 3
            q = []
            for Xa, ya in ((X, y), (X2, y2)):
                Xf = np.asfortranarray(Xa)
                u = np.empty(n)
                _init_state(datafit.code, Xf, ya, w, u)
                grid = 2 * clip / n / m
                q.append([secure.round_to_grid(
                    _coordinate_gradient(datafit.code, Xf, ya, u, j, clip[j]), grid[j])
                    for j in range(p)])
            worst = max(worst, np.max(np.abs(np.subtract(*q))))
        assert m // 2 < worst <= m + 1


def _secure_calibration(n=1000, p=6, passes=3, epsilon=1.0, delta=1e-5):
    clip = np.linspace(0.2, 1.0, p)
    cal = privacy.calibrate_dp_cd(n, p, passes, clip, epsilon, delta, accountant="rdp")
    return cal, secure.secure_dp_cd(cal, n), clip


def test_secure_dp_cd_ledger_and_accounting_against_dp_accounting():
    """The secure ledger charges Δ_j + γ_j, its noise is z·(m + 1) grid steps,
    and dp_accounting's PLD of the *discrete* Gaussian (integer sensitivity
    m + 1) composed T times meets the target ε: the RDP calibration of the
    continuous Gaussian is valid for the discrete one (Canonne et al. 2020)."""
    n, p, passes, epsilon, delta = 1000, 6, 3, 1.0, 1e-5
    cal, sec, clip = _secure_calibration(n, p, passes, epsilon, delta)
    m = secure.RESOLUTION
    delta_j = 2 * clip / n
    np.testing.assert_allclose(sec.grid, delta_j / m, rtol=1e-15)
    mech = sec.calibration.ledger.mechanisms[0]
    assert mech.kind == "discrete_gaussian"
    np.testing.assert_allclose(mech.sensitivity, delta_j + delta_j / m, rtol=1e-15)
    assert sec.integer_scale == pytest.approx(cal.noise_multiplier * (m + 1), rel=1e-15)
    np.testing.assert_allclose(sec.calibration.noise_scales,
                               sec.integer_scale * sec.grid, rtol=1e-14)
    assert sec.calibration.ledger.noise == "secure"
    assert "discrete Gaussian" in mech.note
    steps = cal.steps
    pld = pld_lib.from_discrete_gaussian_mechanism(
        sec.integer_scale, sensitivity=m + 1, value_discretization_interval=1e-3,
        use_connect_dots=True)
    eps_discrete = pld.self_compose(steps).get_epsilon_for_delta(delta)
    assert eps_discrete <= epsilon
    assert sec.calibration.ledger.epsilon_achieved <= epsilon


@pytest.mark.parametrize("p, passes, epsilon, delta", [(6, 3, 1.0, 1e-5),
                                                       (9, 4, 0.5, 1e-6)])
def test_secure_pld_noise_within_one_percent_of_the_fast_auto(p, passes, epsilon, delta):
    """Where the fast path's "auto" calibration is PLD's, the secure noise is
    at most 1 % above it, and dp_accounting's PLD of the discrete Gaussian
    (integer sensitivity m + 1), recomputed at a 10 times finer interval,
    meets the target."""
    n, m = 1000, secure.RESOLUTION
    clip = np.linspace(0.2, 1.0, p)
    fast = privacy.calibrate_dp_cd(n, p, passes, clip, epsilon, delta)
    assert fast.ledger.accountant == "pld"
    sec = secure.secure_dp_cd(fast, n)
    ratio = np.asarray(sec.calibration.noise_scales) / fast.noise_scales
    assert np.all(ratio >= 1.0) and np.all(ratio <= 1.01), ratio
    ledger = sec.calibration.ledger
    assert ledger.accountant == "pld" and "DiscreteGaussian" in ledger.budget[0].dp_event
    pld = pld_lib.from_discrete_gaussian_mechanism(
        sec.integer_scale, sensitivity=m + 1, value_discretization_interval=1e-4,
        use_connect_dots=True)
    assert pld.self_compose(fast.steps).get_epsilon_for_delta(delta) <= epsilon
    assert ledger.epsilon_achieved <= epsilon


@pytest.mark.parametrize("s", [0.7, 2.5])
def test_discrete_gaussian_hockey_stick_grows_with_the_shift(s):
    """Canonne et al. (2020, Thm. 7) bound every shift |q − q'| ≤ Δ by the
    shift Δ: the hockey-stick divergence of (N_Z(0, s²), N_Z(d, s²)) grows
    with d at every ε (negative ones too, the whole trade-off curve), so the
    pair at Δ = m + 1 dominates each update. Exact sums over the integers."""
    k = np.arange(-int(60 * s) - 80, int(60 * s) + 81, dtype=np.float64)
    logp = -k ** 2 / (2 * s * s)
    logp -= np.logaddexp.reduce(logp)
    p0 = np.exp(logp)
    curves = []
    for d in range(1, 6):
        pd = np.roll(p0, d)  # the support's ends hold < 1e-300
        curves.append([np.sum(np.maximum(p0 - np.exp(e) * pd, 0.0))
                       for e in np.linspace(-3, 3, 61)])
    assert np.all(np.diff(np.asarray(curves), axis=0) >= -1e-15)


@pytest.mark.parametrize("s, sens", [(0.6, 1), (1.5, 2), (3.0, 1), (40.0, 41)])
def test_discrete_gaussian_renyi_divergence_below_the_continuous_one(s, sens):
    """Canonne, Kamath, Steinke (2020): D_α(N_Z(0, s²) || N_Z(Δ, s²)) ≤ αΔ²/(2s²)
    for integer Δ, which is why RDP's Gaussian event accounts the secure mode.
    Checked by summing the two pmfs over the integers."""
    k = np.arange(-int(60 * s) - 60 - sens, int(60 * s) + 61 + sens, dtype=np.float64)
    logp = -k ** 2 / (2 * s * s)
    logq = -(k - sens) ** 2 / (2 * s * s)
    logp -= np.logaddexp.reduce(logp)
    logq -= np.logaddexp.reduce(logq)
    for alpha in (1.5, 2.0, 8.0, 64.0):
        d = np.logaddexp.reduce(alpha * logp + (1 - alpha) * logq) / (alpha - 1)
        assert d <= alpha * sens ** 2 / (2 * s * s) * (1 + 1e-12)


def test_secure_smoothness_release_is_its_pure_dp_line():
    """Discrete Laplace of scale laplace_scale(z, m + 1) = 1.0001·z·(m + 1) steps,
    sensitivity m + 1 steps, on p coordinates: dp_accounting's PLD
    (DiscreteLaplaceDpEvent) gives at most ε′ at δ = 1e-12."""
    rng = np.random.default_rng(2)
    n, p, eps = 500, 5, 0.3
    X = rng.standard_normal((n, p))
    datafit, _ = make_problem("squares", "none", 0)
    M, ledger = privacy.estimate_smoothness(datafit, X, eps, rng, feature_bound=5.0,
                                            noise="secure")
    mech = ledger.mechanisms[0]
    m = secure.RESOLUTION
    bound = datafit.per_sample_smoothness(np.full((1, p), 5.0))[0]
    np.testing.assert_allclose(mech.sensitivity, bound / n * (m + 1) / m, rtol=1e-14)
    assert mech.kind == "discrete_laplace" and ledger.noise == "secure"
    t = mech.noise_scale[0] / (bound[0] / n / m)  # in grid steps, as the ledger states
    assert t == pytest.approx(1.0001 * mech.noise_multiplier * (m + 1), rel=1e-12)
    acc = pld_privacy_accountant.PLDAccountant(
        accounting.neighboring_relation("ADD_OR_REMOVE_ONE"))
    acc.compose(dp_event.DiscreteLaplaceDpEvent(1.0 / t, m + 1), p)
    assert acc.get_epsilon(1e-12) <= eps * (1 + 1e-6)
    grid = bound / n / m
    inside = (M > 0.01 * bound) & (M < bound)  # not clamped (post-processing)
    assert inside.any()
    np.testing.assert_allclose(M[inside] / grid[inside], np.round(M[inside] / grid[inside]),
                               atol=1e-6)


class _Recording(secure.SecureGaussian):
    """The real secure sampler, keeping its draws so a test can replay the run."""

    def draw(self, size):
        object.__setattr__(self, "drawn", super().draw(size))
        return self.drawn


def test_kernel_adds_the_pre_drawn_noise_on_the_grid():
    """With C_j → 0 the rounded gradient is 0, so w_j = −γ_j·grid_j·Σ k over the
    updates of j: the kernel uses the pre-drawn integers, on the grid."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 5))
    y = rng.standard_normal(40)
    datafit, pen = make_problem("squares", "none", 0)
    M = datafit.coordinate_smoothness(X)
    grid = np.linspace(0.5, 2.0, 5)
    sec = _Recording(grid=grid, integer_scale=3.0, calibration=None)
    res = dp_cd(X, y, datafit, pen, smoothness=M, step=0.7, clip=1e-300,
                noise_scales=np.ones(5), passes=20, seed=11, secure=sec)
    coords, _ = _draw_randomness(11, 5, 20 * 5)
    k = sec.drawn
    assert k.shape == (100,) and np.all(k == np.round(k)) and np.any(k != 0)
    expected = np.array([-(0.7 / M[j]) * grid[j] * k[coords == j].sum() for j in range(5)])
    np.testing.assert_allclose(res.w, expected, rtol=1e-12, atol=1e-12)


def _data(n=300, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    return X, X @ np.arange(1.0, p + 1) + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("solver", ["dp_cd", "dp_cd_p"])
def test_secure_fit_converges_at_large_epsilon(solver):
    """At ε = 1e6 with loose clipping the secure fit reaches the non-private
    Lasso (the regressor's alpha is sklearn's).
    The noise left (σ_j ≈ 1e-4 on the gradients, 3000 samples) moves the last
    iterate by ~1e-4, 20 times below the tolerance."""
    from sklearn.linear_model import Lasso

    X, y = _data(n=3000)
    model = DPCoordinateDescentRegressor(solver=solver, noise="secure", epsilon=1e6,
                                         clip=15.0, penalty="l1", alpha=0.01, passes=60,
                                         fit_intercept=False, bounds=10.0).fit(X, y)
    ref = Lasso(alpha=0.01, fit_intercept=False, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=2e-3)
    assert model.privacy_ledger_.noise == "secure"


def test_secure_fit_at_epsilon_one_has_the_calibrated_noise_scale():
    """A classifier at ε = 1 fits; with the rdp accountant its ledger's noise
    is (m + 1)/m times the fast path's, with "auto" at most 1 % above the fast
    path's "auto" (PLD of the discrete Gaussian)."""
    X, y = _data()
    labels = y > 0

    def noise(**kwargs):
        model = DPCoordinateDescentClassifier(solver="dp_cd", **kwargs).fit(X, labels)
        return model, np.asarray(model.privacy_ledger_.mechanisms[0].noise_scale)

    sec, sec_rdp = noise(noise="secure", accountant="rdp")
    fast, fast_rdp = noise(accountant="rdp", random_state=0)
    m = secure.RESOLUTION
    np.testing.assert_allclose(sec_rdp, fast_rdp * (m + 1) / m, rtol=1e-12)
    sec_auto, sec_auto_noise = noise(noise="secure")
    _, fast_auto_noise = noise(random_state=0)
    assert sec_auto.privacy_ledger_.accountant == "pld"
    ratio = sec_auto_noise / fast_auto_noise
    assert np.all(ratio >= 1.0) and np.all(ratio <= 1.01), ratio
    assert fast.privacy_ledger_.noise == "fast"
    assert "secret seed" in fast.privacy_ledger_.to_dict()["noise_guarantee"]
    assert sec.privacy_ledger_.flat_params()["privacy.noise"] == "secure"


def test_secure_mode_refuses_what_it_does_not_cover():
    X, y = _data(n=50)
    for kwargs, match in ((dict(random_state=0), "random_state must be None"),
                          (dict(noise="exact"), "noise")):
        with pytest.raises(ValueError, match=match):
            DPCoordinateDescentRegressor(**{"noise": "secure", **kwargs}).fit(X, y)


def test_fast_path_keeps_its_seeded_reproducibility():
    X, y = _data()
    a = DPCoordinateDescentRegressor(random_state=5).fit(X, y)
    b = DPCoordinateDescentRegressor(random_state=5, noise="fast").fit(X, y)
    assert np.array_equal(a.coef_, b.coef_)
    c = DPCoordinateDescentRegressor(noise="secure", bounds=10.0).fit(X, y)
    d = DPCoordinateDescentRegressor(noise="secure", bounds=10.0).fit(X, y)
    assert not np.array_equal(c.coef_, d.coef_)


def _seed_forms(entropy):
    """The entropy and every seed derived from it in a fit (as numbers and text)."""
    seq = np.random.SeedSequence(entropy)
    values = [entropy] + [int(v) for s in seq.spawn(2) for v in s.generate_state(4)]
    texts = {str(v) for v in values} | {hex(v)[2:] for v in values}
    blobs = {v.to_bytes(16, "little") for v in values if v < 1 << 128}
    return values, texts, blobs


def _record_entropy(monkeypatch):
    """Wrap the real OS source so a test sees what it drew: the list of draws."""
    drawn = []
    real = secure.secure_entropy

    def recording():
        drawn.append(real())
        return drawn[-1]

    monkeypatch.setattr(secure, "secure_entropy", recording)
    return drawn


@pytest.mark.parametrize("solver", ["dp_cd", "dp_cd_p"])
def test_no_seed_is_recorded(solver, monkeypatch, tmp_path):
    """The OS entropy a secure fit draws (recorded here by wrapping the real
    source) and the seeds derived from it appear nowhere: not in the ledger
    JSON, the estimator's attributes or its pickle, nor in an MLflow run (real
    sqlite store) logging the estimator's params and the ledger's MLflow views
    (params, tags, metrics, JSON artifact) as the workflow does."""
    drawn = _record_entropy(monkeypatch)
    X, y = _data()
    model = DPCoordinateDescentRegressor(solver=solver, noise="secure",
                                         bounds=10.0).fit(X, y)
    assert len(drawn) == 1
    values, texts, blobs = _seed_forms(drawn[0])
    ledger_json = model.privacy_ledger_.to_json()
    attributes = repr(vars(model)) + json.dumps(
        {k: (v.tolist() if isinstance(v, np.ndarray) else str(v))
         for k, v in vars(model).items()})
    pickled = pickle.dumps(model)
    for text in texts:
        assert text not in ledger_json and text not in attributes
    for blob in blobs:
        assert blob not in pickled
    for v in vars(model).values():
        assert not (isinstance(v, int) and v in values)

    from mlflow.tracking import MlflowClient

    # a client on its own store: no process-wide tracking URI is set
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.create_experiment("secure", artifact_location=str(tmp_path / "art"))
    run_id = client.create_run(exp).info.run_id
    for key, value in {**{k: str(v) for k, v in model.get_params().items()},
                       **model.privacy_ledger_.flat_params()}.items():
        client.log_param(run_id, key, value)
    for key, value in model.privacy_ledger_.flat_tags().items():
        client.set_tag(run_id, key, value)
    for key, value in model.privacy_ledger_.flat_metrics().items():
        client.log_metric(run_id, key, value)
    client.log_text(run_id, ledger_json, "ledger.json")
    client.set_terminated(run_id)
    data = client.get_run(run_id).data
    artifact = client.download_artifacts(run_id, "ledger.json", str(tmp_path))
    logged = json.dumps([data.params, data.tags, data.metrics]) + open(artifact).read()
    assert data.params["privacy.noise"] == "secure"
    assert data.params["random_state"] == "None"
    for text in texts:
        assert text not in logged


def _sweep(solver, noise, accountant="auto"):
    """A sweep chunk as the solve stage runs it, on a small problem."""
    from dpcd.sweep.problem import SweepProblem

    rng = np.random.default_rng(4)
    X = rng.standard_normal((80, 4))
    y = X @ rng.standard_normal(4) + 0.1 * rng.standard_normal(80)
    datafit, penalty = make_problem("squares", "l1", 0.05)
    problem = SweepProblem(X=X, y=y, datafit=datafit, penalty=penalty,
                           smoothness=datafit.coordinate_smoothness(X),
                           global_smoothness=datafit.global_smoothness(X),
                           max_abs=np.abs(X).max(axis=0), loss="squares", alpha=0.05)
    spec = {"experiment": "e", "solver": solver, "dataset": "d", "variant": "raw",
            "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
            "privacy": {"epsilon": [1.0, 3.0], "delta": 1e-4, "accountant": accountant,
                        "noise": noise},
            "grid": {"step": [0.5, 1.0], "clip": [1.0]}, "passes": [2], "seeds": 3,
            "base_seed": 0, "chunks": 1}
    if solver == "dp_cd_p":
        spec["grid"]["smoothness_fraction"] = [0.2]
    return spec, problem


@pytest.mark.parametrize("solver", ["dp_cd", "dp_cd_p", "dp_gcd"])
def test_workflow_secure_runs_record_no_seed(solver, monkeypatch, tmp_path):
    """``privacy.noise: secure`` in a workflow experiment: the solve stage's
    chunk (and DP-CD-P's private smoothness stage) run the secure mode; the
    OS entropy of every run (recorded here by wrapping the real source) is in
    neither the tidy table nor the MLflow runs the aggregation ingests (real
    sqlite store), whose ledgers say ``noise: secure``; the seed column holds
    -1 - seed_index."""
    from mlflow.tracking import MlflowClient

    from dpcd.sweep.run import run_chunk
    from dpcd.sweep.smoothness import private_smoothness_estimates
    from dpcd.tracking.payload import mlflow_runs
    from dpcd.tracking import log_configurations, setup_experiment

    drawn = _record_entropy(monkeypatch)
    spec, problem = _sweep(solver, "secure")
    estimates = None
    if solver == "dp_cd_p":
        from dpcd.streams import run_seed

        seeds = [run_seed(0, k) for k in range(3)]
        estimates = private_smoothness_estimates(problem.X, "squares", 0.2, [1.0, 3.0], seeds,
                                                 "e", noise="secure")
        assert all(e["ledger"]["noise"] == "secure" for e in estimates["estimates"])
    table, records = run_chunk(spec, 0, problem, 0.01, estimates)
    assert len(drawn) == 2 * 2 * 3  # one per run: configurations x seeds
    assert set(table["seed"]) == {-1, -2, -3}
    assert all(led.noise == "secure" for r in records for led in r.ledgers)
    runs = mlflow_runs(records, spec, problem)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    ids = log_configurations(setup_experiment("e"), "e/dp_cd/chunk0", runs)
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    logged = table.to_csv()
    for run_id in ids:
        data = client.get_run(run_id).data
        assert data.params["privacy.noise"] == "secure"
        logged += json.dumps([data.params, data.tags, data.metrics])
        for art in client.list_artifacts(run_id):
            logged += open(client.download_artifacts(run_id, art.path, str(tmp_path))).read()
    for entropy in drawn:
        _, texts, _ = _seed_forms(entropy)
        for text in texts:
            assert text not in logged


def test_workflow_fast_runs_are_unchanged_and_secure_refusals(monkeypatch):
    """Without ``noise`` (or with ``fast``) a chunk is today's seeded run; the
    secure mode runs DP-SGD, and refuses a solver whose spec has no secure mode."""
    import dataclasses

    from dpcd import algorithms
    from dpcd.algorithms import registry
    from dpcd.sweep.run import run_chunk

    spec, problem = _sweep("dp_cd", "fast")
    table, _ = run_chunk(spec, 0, problem, 0.01)
    del spec["privacy"]["noise"]
    again, _ = run_chunk(spec, 0, problem, 0.01)
    np.testing.assert_array_equal(table["objective"], again["objective"])
    assert (table["seed"] >= 0).all()
    spec, problem = _sweep("dp_sgd", "secure")
    spec["grid"] = {"step": [0.5], "clip": [1.0], "batch_size": [1]}
    table, records = run_chunk(spec, 0, problem, 0.01)
    assert set(table["seed"]) == {-1, -2, -3}
    assert all(led.noise == "secure" for r in records for led in r.ledgers)
    sgd = algorithms.get("dp_sgd")
    monkeypatch.setitem(registry._SPECS, "plain", dataclasses.replace(
        sgd, name="plain", privacy=dataclasses.replace(sgd.privacy, secure=False)))
    spec["solver"] = "plain"
    with pytest.raises(ValueError, match="covers solver"):
        run_chunk(spec, 0, problem, 0.01)


def _secure_release_sampler(z, m=secure.RESOLUTION):
    """The secure mode's release of a value of sensitivity 1 (grid 1/m, integer
    discrete Gaussian of scale z·(m + 1)) on the worst-case pair f(D) = 0, f(D') = 1."""
    def sample(rng, neighbour, size):  # rng unused: the secure mode is not seedable
        q = secure.round_to_grid(1.0 if neighbour else 0.0, 1.0 / m)
        return q + secure.discrete_gaussian(z * (m + 1), size)
    return sample


def test_audit_secure_gaussian_release():
    """Empirical audit of the secure release at the closed-form Gaussian multiplier
    for (1, 1e-5): its lower bound stays below the claim (alpha = 1e-6, since the
    OS-seeded draws cannot be fixed: about 0.3 seen), and a quarter of the noise
    is caught (about 2.0 seen)."""
    from dpcd.privacy import audit

    eps, delta = 1.0, 1e-5
    z = audit.gaussian_noise_multiplier(eps, delta)
    ok = audit.audit_scores(_secure_release_sampler(z), delta=delta, n_runs=50_000,
                            alpha=1e-6, epsilon_claimed=eps)
    assert ok.epsilon_lb <= eps
    bad = audit.audit_scores(_secure_release_sampler(z / 4), delta=delta, n_runs=50_000,
                             alpha=1e-6, epsilon_claimed=eps)
    assert bad.epsilon_lb > eps


def test_estimators_are_secure_by_default_and_fast_with_a_random_state():
    """``noise="auto"`` (the default): secure without ``random_state`` where
    every release of the fit has a secure mode, fast (seeded, reproducible)
    with one; the ledger says which ran."""
    X, y = _data(n=200)

    def ledger(**kwargs):
        return DPCoordinateDescentRegressor(**kwargs).fit(X, y).privacy_ledger_

    assert ledger(solver="dp_cd").noise == "secure"
    assert ledger(solver="dp_cd_p", bounds=10.0).noise == "secure"
    fast = ledger(solver="dp_cd", random_state=3)
    assert fast.noise == "fast"
    assert "for research, not for release" in fast.to_dict()["noise_guarantee"]
    # without public bounds dp_cd_p's feature-bound release has no secure mode
    assert ledger(solver="dp_cd_p").noise == (
        "secure" if secure.SECURE_FEATURE_BOUND else "fast")
