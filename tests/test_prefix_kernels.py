"""Truncated runs are prefixes of full runs (what a multi-fidelity screen relies on).

A run calibrated for P passes (its noise scale fixed by P) whose kernel is
called for e < P passes must be exactly the first e passes of the full run:
the same batches, the same noise, the same iterates and the same objective
checkpoints up to pass e. The kernels consume their streams in order (DP-SGD's
counter-based gaps and normals, DP-SCD's sampling Generator and normals), never
in amounts that depend on the total passes; these tests would catch a kernel
that did. Checked for DP-SGD (both independent-stream kernels, dense and
sparse, alone and sharing a call with the full run), non-private SGD (the same
kernel without noise or clipping) and dual / seqDP-SCD.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from dpcd.problems import make_problem
from dpcd.solvers import dp_scd, dp_sgd, dp_sgd_many

_MASK = (1 << 64) - 1
FULL = 4.0
TRUNCATED = (1.0, 2.0, 2.5)


def _splitmix(key, c):
    z = (key + c * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _data(n=40, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, X @ rng.standard_normal(p) + 0.3 * rng.standard_normal(n)


def _replay(X, y, seed, b, eta, clip, sigma, alpha, n_steps):
    """The documented DP-SGD (squares, L2) from the run's two streams, for
    ``n_steps`` steps: the iterate after every step and each step's batch."""
    import math

    from dpcd.solvers._normal import fill_normals, stream_key

    n, p = X.shape
    sample_seq, noise_seq = np.random.SeedSequence(seed).spawn(2)
    key = int(sample_seq.generate_state(1, np.uint64)[0])
    lam, counter = -math.log1p(-b / n), 0

    def gap():
        nonlocal counter
        u = ((_splitmix(key, counter) >> 11) + 0.5) * 2.0**-53
        counter += 1
        return math.ceil(-math.log(u) / lam)

    z = np.empty(n_steps * p + n_steps * p % 2)
    fill_normals(stream_key(noise_seq), 0, z)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    w, iterates, batches = np.zeros(p), [], []
    pos = gap() - 1
    for t in range(n_steps):
        g, batch = np.zeros(p), []
        while pos < (t + 1) * n:
            batch.append(pos - t * n)
            pos += gap()
        for i in batch:
            acc = [0.0] * 4  # the kernel's partial sums: j mod 4, the tail in the first
            for j in range(p):
                acc[j % 4 if j < p - p % 4 else 0] += X[i, j] * w[j]
            pred = (acc[0] + acc[1]) + (acc[2] + acc[3])
            d = 2.0 * (pred - y[i])
            if abs(d) * norms[i] > clip:
                d *= clip / (abs(d) * norms[i])
            g = g + d * X[i]
        x = w - eta * ((g + sigma * z[t * p:(t + 1) * p]) / b)
        w = (np.maximum(x, 0.0) + np.minimum(x, 0.0)) / (1.0 + eta * alpha)
        iterates.append(w)
        batches.append(batch)
    return iterates, batches


def _steps(passes, n, b):
    import math

    return math.ceil(passes * n / b)


def test_dp_sgd_truncated_run_replays_the_full_runs_first_passes():
    """dp_sgd for e < P passes with the noise of P: its iterate is the full
    run's (replayed from the documented streams) after ceil(e n / b) steps,
    its inclusions are the first steps' batches, and its objectives are the
    full run's first checkpoints (every whole pass, bit for bit)."""
    X, y = _data()
    n, b, gamma, beta, clip, sigma, alpha = X.shape[0], 3.0, 0.5, 2.0, 0.6, 0.8, 0.1
    datafit, pen = make_problem("squares", "l2", alpha)
    kw = dict(step=gamma, clip=clip, noise_scale=sigma, seed=21, batch_size=b,
              global_smoothness=beta)
    full = dp_sgd(X, y, datafit, pen, passes=FULL, **kw)
    iterates, batches = _replay(X, y, 21, b, gamma / beta, clip, sigma, alpha,
                                _steps(FULL, n, b))
    np.testing.assert_array_equal(full.w, iterates[-1])
    for e in TRUNCATED:
        part = dp_sgd(X, y, datafit, pen, passes=e, **kw)
        T = _steps(e, n, b)
        assert part.n_updates == T
        np.testing.assert_array_equal(part.w, iterates[T - 1])
        counts = np.bincount(np.concatenate([np.array(s, dtype=np.int64)
                                             for s in batches[:T]]), minlength=n)
        np.testing.assert_array_equal(part.extra["inclusions"], counts)
        whole = int(e) + 1  # checkpoints 0, 1, ..., floor(e)
        np.testing.assert_array_equal(part.objective[:whole], full.objective[:whole])


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("inner", [False, True], ids=["runs_outer", "runs_inner"])
def test_dp_sgd_many_truncated_runs_are_prefixes(sparse, inner, monkeypatch):
    """Runs of one seed and one noise scale, truncated at e passes, in a call
    with the full run and with other runs (either kernel): each truncated run's
    iterate is that of the full run's stream after its steps (the full run
    replayed alone for e passes is that prefix: checked above), and its
    objectives are the full run's first checkpoints, bit for bit."""
    import dpcd.solvers._dp_sgd_independent as independent

    monkeypatch.setattr(independent, "takes_inner", lambda n_runs, n_features: inner)
    X, y = _data(n=50, p=7, seed=1)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.3, X, 0.0))
    datafit, pen = make_problem("logistic" if sparse else "squares", "l2", 0.05)
    if sparse:
        y = np.where(y > 0, 1.0, -1.0)
    passes = [FULL, *TRUNCATED, 3.0]
    seeds = [[5, 1]] * (1 + len(TRUNCATED)) + [[6, 1]]
    kw = dict(steps=[0.4] * 4 + [0.1], clips=[0.7] * 4 + [2.0], noise_scales=[0.9] * 4 + [0.3],
              batch_size=2.0, global_smoothness=1.5)
    many = dp_sgd_many(X, y, datafit, pen, passes=passes, seeds=seeds, **kw)
    full = many[0]
    for e, part in zip(TRUNCATED, many[1:]):
        whole = int(e) + 1
        np.testing.assert_array_equal(part.objective[:whole], full.objective[:whole])
        (alone,) = dp_sgd_many(X, y, datafit, pen, passes=[e], seeds=[[5, 1]],
                               **{k: v[:1] if isinstance(v, list) else v
                                  for k, v in kw.items()})
        np.testing.assert_array_equal(part.w, alone.w)
        np.testing.assert_array_equal(part.objective, alone.objective)


def test_sgd_truncated_run_is_a_prefix():
    """Non-private SGD (no clipping, no noise: the sgd algorithm's call) for e
    passes: the full run's first checkpoints, and at e = P its iterate."""
    X, y = _data(n=60, p=5, seed=2)
    datafit, pen = make_problem("squares", "l2", 0.01)
    kw = dict(step=0.05, clip=np.inf, noise_scale=0.0, seed=8, batch_size=4,
              global_smoothness=1.0)
    full = dp_sgd(X, y, datafit, pen, passes=FULL, **kw)
    for e in TRUNCATED:
        part = dp_sgd(X, y, datafit, pen, passes=e, **kw)
        whole = int(e) + 1
        np.testing.assert_array_equal(part.objective[:whole], full.objective[:whole])
        assert part.objective[-1] != full.objective[-1]  # it did stop early


@pytest.mark.parametrize("variant", ["dual", "seq"])
def test_dp_scd_truncated_run_is_a_prefix(variant):
    """Dual and seqDP-SCD (Poisson batches) for e < P passes with P's noise:
    the full run's first batches (sizes) and first objective checkpoints, bit
    for bit; at e = 2 (a whole pass) its final objective is the full run's
    objective at pass 2."""
    X, y = _data(n=60, p=5, seed=3)
    datafit, pen = make_problem("squares", "l2", 0.1)
    kw = dict(clip=0.5, noise_scale=0.4, batch_size=4, seed=13, variant=variant)
    full = dp_scd(X, y, datafit, pen, passes=FULL, **kw)
    for e in TRUNCATED:
        part = dp_scd(X, y, datafit, pen, passes=e, **kw)
        T = part.n_updates
        np.testing.assert_array_equal(part.extra["batch_sizes"],
                                      full.extra["batch_sizes"][:T])
        whole = int(e) + 1
        np.testing.assert_array_equal(part.objective[:whole], full.objective[:whole])
