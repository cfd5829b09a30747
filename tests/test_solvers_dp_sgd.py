"""DP-SGD: convergence without noise, Poisson sampling, noise scale, clipping."""
import math

import numpy as np
import pytest
from scipy import stats

from dpcd.problems import make_problem
from dpcd.solvers import dp_sgd, reference_solve


_MASK = (1 << 64) - 1


def _splitmix(key, c):
    """SplitMix64 output ``c`` of the stream ``key`` (Python ints, mod 2**64)."""
    z = (key + c * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _gaps(seed, q):
    """The documented sampling stream of a run seeded ``seed``: Geometric(q)
    gaps ``ceil(-log(U) / lam)``, ``U = (m + 1/2) 2**-53`` with ``m`` the top 53
    bits of SplitMix64 output ``c`` of the key of the first SeedSequence child."""
    import math

    key = int(np.random.SeedSequence(seed).spawn(2)[0].generate_state(1, np.uint64)[0])
    lam = -math.log1p(-q)
    c = 0
    while True:
        u = ((_splitmix(key, c) >> 11) + 0.5) * 2.0**-53
        yield 1 if q >= 1 else math.ceil(-math.log(u) / lam)
        c += 1


def _data(seed=0, n=80, p=10, logistic=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X @ rng.standard_normal(p) + 0.5 * rng.standard_normal(n)
    if logistic:
        y = np.where(y > 0, 1.0, -1.0)
        y[::7] *= -1
    return X, y


@pytest.mark.parametrize("loss, penalty", [("squares", "l1"), ("logistic", "l2")])
def test_full_batch_no_noise_converges(loss, penalty):
    """b = n (q = 1), sigma = 0, C = inf: proximal gradient descent with step 1/beta."""
    X, y = _data(logistic=loss == "logistic")
    datafit, pen = make_problem(loss, penalty, 0.1)
    f_star = reference_solve(X, y, datafit, pen).objective[-1]
    res = dp_sgd(X, y, datafit, pen, step=1.0, clip=np.inf, noise_scale=0.0,
                 passes=3000, seed=0, batch_size=X.shape[0])
    assert res.n_updates == 3000 and res.objective.shape == (3001,)
    assert (res.objective[-1] - f_star) / f_star <= 1e-6


def test_small_batches_decrease_objective():
    X, y = _data()
    datafit, pen = make_problem("squares", "l1", 0.1)
    f_star = reference_solve(X, y, datafit, pen).objective[-1]
    res = dp_sgd(X, y, datafit, pen, step=0.02, clip=np.inf, noise_scale=0.0,
                 passes=100, seed=0, batch_size=1)
    assert res.n_updates == 100 * 80
    assert (res.objective[-1] - f_star) / f_star < 0.05
    assert res.objective[-1] < 0.2 * res.objective[0]


def test_poisson_sampling_statistics():
    """Each (step, sample) is included independently with probability q.

    Over T steps, sample i's inclusion count is Binomial(T, q), independently
    across samples; the total is Binomial(n T, q).
    """
    n, b, passes = 200, 10.0, 200
    X, y = _data(n=n)
    datafit, pen = make_problem("squares", "l1", 0.1)
    res = dp_sgd(X, y, datafit, pen, step=0.01, clip=1.0, noise_scale=0.0,
                 passes=passes, seed=0, batch_size=b)
    n_steps, q = res.extra["n_steps"], b / n
    assert n_steps == passes * n / b and res.extra["sampling_rate"] == q
    counts = res.extra["inclusions"]
    assert counts.shape == (n,) and counts.min() >= 0
    lo, hi = stats.binom.ppf([1e-6, 1 - 1e-6], n * n_steps, q)
    assert lo <= counts.sum() <= hi
    # per-sample counts: variance T q (1 - q) (sample variance: rel. std 0.1)
    assert counts.var(ddof=1) == pytest.approx(n_steps * q * (1 - q), rel=0.4)
    assert stats.chisquare(counts).pvalue > 1e-6


def test_full_batch_includes_every_sample_every_step():
    X, y = _data(n=30)
    datafit, pen = make_problem("squares", "l1", 0.1)
    res = dp_sgd(X, y, datafit, pen, step=0.1, clip=1.0, noise_scale=0.0,
                 passes=7, seed=0, batch_size=30)
    assert np.array_equal(res.extra["inclusions"], np.full(30, 7))


def test_noise_on_the_sum_has_std_sigma():
    """X = 0: every gradient vanishes, so w_T = -eta sum_t sigma z_t / b.

    Each coordinate is N(0, T eta^2 sigma^2 / b^2): test sum of squares by chi2.
    """
    n, p = 20, 400
    X = np.zeros((n, p))
    y = np.zeros(n)
    datafit, pen = make_problem("squares", "none", 0)
    sigma, b, gamma, beta = 2.0, 4.0, 0.3, 1.5
    res = dp_sgd(X, y, datafit, pen, step=gamma, clip=1.0, noise_scale=sigma,
                 passes=3, seed=1, batch_size=b, global_smoothness=beta)
    T = math.ceil(3 * n / b)
    assert res.n_updates == T
    sd = math.sqrt(T) * (gamma / beta) * sigma / b
    ss = np.sum((res.w / sd) ** 2)
    lo, hi = stats.chi2.ppf([1e-6 / 2, 1 - 1e-6 / 2], df=p)
    assert lo <= ss <= hi


def test_clipping_bounds_each_step():
    """sigma = 0, b = 1 and tiny C: each step moves w by at most eta C |B| / b."""
    X, y = _data()
    X = X * 100.0
    datafit, pen = make_problem("squares", "none", 0)
    C = 1e-3
    res = dp_sgd(X, y, datafit, pen, step=1.0, clip=C, noise_scale=0.0, passes=1,
                 seed=0, batch_size=1)
    eta = res.extra["step_size"]
    # at most ~n selections in one pass in total (Binomial(n * T, 1/n))
    assert np.linalg.norm(res.w) <= eta * C * 3 * X.shape[0]
    assert np.linalg.norm(res.w) > 0


def test_dp_sgd_determinism():
    X, y = _data(logistic=True)
    datafit, pen = make_problem("logistic", "l2", 0.01)
    kw = dict(step=0.1, clip=1.0, noise_scale=0.5, passes=3, batch_size=4)
    a = dp_sgd(X, y, datafit, pen, seed=5, **kw)
    b = dp_sgd(np.asfortranarray(X), y, datafit, pen, seed=5, **kw)
    c = dp_sgd(X, y, datafit, pen, seed=6, **kw)
    assert np.array_equal(a.w, b.w) and np.array_equal(a.objective, b.objective)
    assert not np.array_equal(a.w, c.w)


def test_dp_sgd_bad_batch_size():
    X, y = _data()
    datafit, pen = make_problem("squares", "l1", 0.1)
    with pytest.raises(ValueError, match="batch_size"):
        dp_sgd(X, y, datafit, pen, step=0.1, clip=1.0, noise_scale=0.0, passes=1,
               seed=0, batch_size=1000)


def test_warmup_loads_the_families_asked_for():
    """A solve job loads its solver's kernel family only (each algorithm spec
    names its family and its warm); an unknown name is refused with the known
    ones."""
    from dpcd import algorithms

    assert algorithms.warmup(["dp_sgd"]) == ["dp_sgd"]
    assert algorithms.warmup(["dp_cd_p", "cd", "sgd"]) == ["dp_cd", "dp_sgd"]
    with pytest.raises(ValueError, match="unknown solver 'dp_sgdd'; known: .*'dp_gcd'"):
        algorithms.warmup(["dp_sgdd"])


def test_warmup_runs():
    from dpcd import algorithms

    # every family of the specs, and the reference stage's solvers
    assert {"dp_cd", "dp_gcd", "dp_scd", "dp_sgd", "reference"} <= set(algorithms.warmup())
    # a solve job must not compile DP-SGD's kernel beside another
    from dpcd.solvers import _dp_sgd_independent

    # the kernels of dp_sgd and of a sweep's runs (each on its own streams)
    assert _dp_sgd_independent._kernel.signatures
    assert _dp_sgd_independent._kernel_runs_inner.signatures


@pytest.mark.parametrize("passes", [0.01, 1.5, 3.0])
def test_fractional_passes(passes):
    """ceil(passes n / b) steps, as calibrate_dp_sgd accounts them; objective
    after each whole pass and at the end."""
    import math

    from dpcd.problems import objective
    from dpcd.solvers.base import pass_checkpoints

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = X @ rng.standard_normal(5)
    datafit, pen = make_problem("squares", "l2", 0.1)
    res = dp_sgd(X, y, datafit, pen, step=0.5, clip=1.0, noise_scale=0.1,
                 passes=passes, seed=1, batch_size=4)
    assert res.n_updates == math.ceil(passes * 200 / 4)
    np.testing.assert_array_equal(res.passes_done, pass_checkpoints(passes))
    np.testing.assert_allclose(res.objective[-1], objective(X, y, res.w, datafit, pen),
                               rtol=1e-10)


@pytest.mark.parametrize("batch_size, passes", [(1.0, 3.0), (7.0, 2.5), (20.0, 4.0)])
def test_sampling_is_the_documented_stream(batch_size, passes):
    """The selected (step, sample) trials are exactly those of the documented
    draw: Geometric(q) gaps ``ceil(E / lam)``, ``E`` from the run's sampling
    stream, in order. Drawing them ahead of use (to prefetch rows) must not
    change which samples are taken, nor how many."""
    n = 40
    X, y = _data(n=n)
    datafit, pen = make_problem("squares", "l2", 0.1)
    res = dp_sgd(X, y, datafit, pen, step=0.01, clip=1.0, noise_scale=1.0,
                 passes=passes, seed=11, batch_size=batch_size)
    q = batch_size / n
    gaps = _gaps(11, q)
    n_trials = res.extra["n_steps"] * n
    expected = np.zeros(n, dtype=np.int64)
    pos = next(gaps) - 1
    while pos < n_trials:
        expected[pos % n] += 1
        pos += next(gaps)
    np.testing.assert_array_equal(res.extra["inclusions"], expected)


@pytest.mark.parametrize("q", [1 / 20_640, 0.3])
def test_gaps_are_libm_geometric(q):
    """The kernels' gaps (drawn 64 at a time, with the normals' polynomial log)
    are ``ceil(-log(U) / lam)`` with libm's log, on 200 000 draws of each
    rate; and Geometric(q): the mean is 1/q and P(g > k) = (1 - q)^k."""
    from dpcd.solvers._dp_sgd_independent import fill_gaps

    key, draws = 0x5DEECE66D1234567, 200_000
    lam = -math.log1p(-q)
    got = np.empty(draws)
    fill_gaps(np.uint64(key), 0, lam, got)
    expected = [math.ceil(-math.log(((_splitmix(key, c) >> 11) + 0.5) * 2.0**-53) / lam)
                for c in range(draws)]
    np.testing.assert_array_equal(got, expected)
    # mean of Geometric(q): 1/q, std sqrt(1 - q)/q; 5 standard errors
    assert abs(got.mean() * q - 1) < 5 * math.sqrt(1 - q) / math.sqrt(draws)
    for k in (1 / q, 3 / q):  # tails: Binomial counts within 5 standard deviations
        p = (1 - q) ** math.floor(k)
        assert abs((got > math.floor(k)).sum() - draws * p) < 5 * math.sqrt(draws * p * (1 - p))


@pytest.mark.parametrize("p", [3, 8, 1001])
def test_noise_is_the_documented_stream(p):
    """X = 0 and no penalty: each step only adds noise, ``w -= eta (0 + sigma
    z_t) / b``, with ``z_t`` the normals ``t p ... t p + p - 1`` of the stream
    keyed by the run's noise SeedSequence. Replayed in numpy, bit for bit
    (odd p, short and longer than the kernel's noise buffer)."""
    from dpcd.solvers._normal import fill_normals, stream_key

    n, b, sigma, gamma, beta = 10, 2.0, 1.5, 0.3, 2.0
    X, y = np.zeros((n, p)), np.zeros(n)
    datafit, pen = make_problem("squares", "none", 0)
    res = dp_sgd(X, y, datafit, pen, step=gamma, clip=1.0, noise_scale=sigma,
                 passes=2, seed=3, batch_size=b, global_smoothness=beta)
    T, eta = res.n_updates, gamma / beta
    z = np.empty(T * p + T * p % 2)  # fill_normals draws pairs
    fill_normals(stream_key(np.random.SeedSequence(3).spawn(2)[1]), 0, z)
    w = np.zeros(p)
    for t in range(T):
        w = w - eta * ((0.0 + sigma * z[t * p:(t + 1) * p]) / b)
    np.testing.assert_array_equal(res.w, w)


@pytest.mark.parametrize("penalty, batch_size", [("l1", 1.0), ("l2", 1.0), ("l1", 3.0),
                                                  ("elastic_net", 2.0)])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_iterates_replay_the_documented_algorithm_bit_for_bit(penalty, batch_size, sparse):
    """The whole update replayed in numpy from the two documented streams:
    ``w <- prox(w - eta (sum_B clip(grad l_i(w), C) + sigma z_t) / b)``, the sum
    started at 0. At b = 1 the kernel takes empty batches and one-sample
    batches by shortcuts that skip that sum; they must give the same bits.
    Sparse X (CSR) takes its own path: a gradient sum cleared on the batch's
    rows only, summed with the noise inside the prox's pass."""
    import scipy.sparse as sps

    from dpcd.solvers._normal import fill_normals, stream_key

    n, p, gamma, beta, clip, sigma, alpha = 30, 5, 0.4, 3.0, 0.8, 0.7, 0.2
    X, y = _data(n=n, p=p)
    X = np.ascontiguousarray(np.where(np.abs(X) > 0.6, X, 0.0) if sparse else X)
    datafit, pen = make_problem("squares", penalty, alpha)
    res = dp_sgd(sps.csr_matrix(X) if sparse else X, y, datafit, pen, step=gamma,
                 clip=clip, noise_scale=sigma, passes=4, seed=5, batch_size=batch_size,
                 global_smoothness=beta)
    T, eta, q = res.n_updates, gamma / beta, batch_size / n
    noise_seq = np.random.SeedSequence(5).spawn(2)[1]
    gaps = _gaps(5, q)
    z = np.empty(T * p + T * p % 2)
    fill_normals(stream_key(noise_seq), 0, z)
    shrink, divide = {"l1": (eta * alpha, 1.0), "l2": (0.0, 1.0 + eta * alpha),
                      "elastic_net": (eta * alpha * 0.5, 1.0 + eta * alpha * 0.5)}[penalty]
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    if sparse:  # the sparse path sums each row's stored squares in order
        norms = np.array([math.sqrt(sum(v * v for v in row[row != 0])) for row in X])
    w = np.zeros(p)
    pos = next(gaps) - 1
    sizes = []
    for t in range(T):
        g = np.zeros(p)
        batch = []
        while pos < (t + 1) * n:
            batch.append(pos - t * n)
            pos += next(gaps)
        sizes.append(len(batch))
        for i in batch:
            a = X[i] * w
            if sparse:  # one sum over the row's stored entries, in order
                pred = 0.0
                for j in np.flatnonzero(X[i]):
                    pred += X[i, j] * w[j]
            else:  # the kernel's dot product: four partial sums (j mod 4)
                pred = (a[0::4].sum() + a[1::4].sum()) + (a[2::4].sum() + a[3::4].sum())
            d = 2.0 * (pred - y[i])
            if abs(d) * norms[i] > clip:
                d *= clip / (abs(d) * norms[i])
            g = g + d * X[i]
        x = w - eta * ((g + sigma * z[t * p:(t + 1) * p]) / batch_size)
        w = (np.maximum(x - shrink, 0.0) + np.minimum(x + shrink, 0.0)) / divide
    if batch_size == 1.0:
        assert {0, 1} < set(sizes)  # empty, one-sample and larger batches all occurred
    np.testing.assert_array_equal(res.w, w)


@pytest.mark.parametrize("loss, penalty, sparse, per_call", [
    ("squares", "l1", False, None), ("logistic", "l2", False, None),
    ("logistic", "l2", True, None), ("hinge", "none", False, None),
    ("squares", "elastic_net", True, None), ("logistic", "l2", False, 3)])
@pytest.mark.parametrize("inner", [False, True], ids=["runs_outer", "runs_inner"])
def test_many_runs_are_each_run_alone_bit_for_bit(loss, penalty, sparse, per_call, inner,
                                                  monkeypatch):
    """dp_sgd_many(seed=...) shares the batches and normals of one seed among its
    runs (common random numbers): each run must be exactly the run alone on that
    seed (``dp_sgd_many`` of one run) with its own settings, whatever its
    neighbours (lengths, fractional passes, inf clipping, no noise), its
    position, the number of runs (odd) and how many a kernel call takes
    (``per_call``: 7 runs in calls of 3, 3 and 1), with either kernel
    (``inner``: the runs-inner kernel takes every call, even of one run; the
    run alone always takes the runs-outer one)."""
    import scipy.sparse as sp

    import importlib

    from dpcd.solvers import dp_sgd_many

    module = importlib.import_module("dpcd.solvers.dp_sgd")  # the name is the function's
    if per_call is not None:
        monkeypatch.setattr(module, "_CALL_ENTRIES", per_call * 7)
    # the switch is read per call: dp_sgd alone below takes the runs-outer kernel
    monkeypatch.setattr(module, "_takes_inner", lambda n_runs, n_features: inner)

    X, y = _data(n=60, p=7, logistic=loss != "squares")
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.7, X, 0.0))
    datafit, pen = make_problem(loss, penalty, 0.05)
    kw = dict(seed=4, batch_size=3.0,
              global_smoothness=1.0 if loss == "hinge" else None)
    steps = [0.5, 0.01, 1.0, 0.2, 2.0, 0.05, 0.3]
    clips = [1.0, np.inf, 0.01, 10.0, 0.5, 1e3, 2.0]
    scales = [0.5, 0.0, 0.01, 3.0, 0.5, 50.0, 1.0]
    passes = [3, 1, 2.5, 3, 0.4, 2, 1.5]
    many = dp_sgd_many(X, y, datafit, pen, steps=steps, clips=clips, noise_scales=scales,
                       passes=passes, **kw)
    assert len(many) == 7
    assert sorted(r.extra["runs_in_call"] for r in many) == (
        [7] * 7 if per_call is None else [1, 3, 3, 3, 3, 3, 3])
    monkeypatch.setattr(module, "_takes_inner", lambda n_runs, n_features: False)
    for k, got in enumerate(many):
        (alone,) = dp_sgd_many(X, y, datafit, pen, steps=[steps[k]], clips=[clips[k]],
                               noise_scales=[scales[k]], passes=[passes[k]], **kw)
        np.testing.assert_array_equal(got.w, alone.w)
        np.testing.assert_array_equal(got.objective, alone.objective)
        np.testing.assert_array_equal(got.passes_done, alone.passes_done)
        assert got.n_updates == alone.n_updates
    # a different seed changes every run that moved (L1 can keep w at 0)
    monkeypatch.setattr(module, "_takes_inner", lambda n_runs, n_features: inner)
    other = dp_sgd_many(X, y, datafit, pen, steps=steps, clips=clips, noise_scales=scales,
                        passes=passes, **{**kw, "seed": 5})
    moved = [(a, b) for a, b in zip(many, other) if np.any(a.w != 0)]
    assert len(moved) >= 5 and all(not np.array_equal(a.w, b.w) for a, b in moved)


@pytest.mark.parametrize("loss", ["squares", "logistic", "hinge"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_checkpoint_objectives_of_many_runs_are_each_runs_bit_for_bit(loss, sparse):
    """The kernels' checkpoint objectives read X once per block of runs (8 dot
    products across runs per dense row): each run's value is that of the run
    evaluated alone, bit for bit, whatever the block (1, 3, 8, 11 runs, an odd
    feature count), and the objective to rounding."""
    import scipy.sparse as sps

    from dpcd.problems import objective
    from dpcd.solvers._sgd_steps import OBJECTIVE_RUNS, _objectives
    from dpcd.solvers.base import as_design

    X, y = _data(n=70, p=11, logistic=loss != "squares")
    if sparse:
        X = sps.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    datafit, pen = make_problem(loss, "elastic_net", 0.05)
    design = as_design(X, "csr")[0]
    W = np.random.default_rng(1).standard_normal((11, 11))
    assert W.shape[0] > OBJECTIVE_RUNS
    alone = np.empty(11)
    for k in range(11):
        _objectives(*design, y, W[k:k + 1], 1, datafit.code, pen.code, pen.params,
                    alone[k:k + 1])
        np.testing.assert_allclose(alone[k], objective(X, y, W[k], datafit, pen), rtol=1e-12)
    for active in (1, 3, 8, 11):
        out = np.full(11, np.nan)
        _objectives(*design, y, W, active, datafit.code, pen.code, pen.params, out)
        np.testing.assert_array_equal(out[:active], alone[:active])
        assert np.all(np.isnan(out[active:]))
