"""DP-SGD baseline: proximal SGD with per-sample clipping and Poisson sampling.

References
----------
.. [1] M. Abadi et al. "Deep Learning with Differential Privacy", CCS 2016.
.. [2] P. Mangold, A. Bellet, J. Salmon, M. Tommasi. "Differentially Private
   Coordinate Descent for Composite Empirical Risk Minimization", ICML 2022,
   Appendix G.1 (step ``gamma / beta``, L2 clipping).
"""
import math
import time

import numpy as np
from numba import njit

from dpcd.problems._jit import HINGE, SQUARES, _penalty_value, _prox_1d
from dpcd.solvers._normal import new_stream, take_normals
from dpcd.solvers._prefetch import prefetch, prefetch_row
from dpcd.solvers.base import SolverResult, check_design, pass_checkpoints, spawn_generators


@njit(cache=True, error_model="numpy")
def _full_objective(sparse, X, data, indices, indptr, y, w, datafit_code, penalty_code,
                    penalty_params):
    """``F(w)`` with a row-wise pass over C-ordered X, O(n_samples n_features),
    or over CSR ``(data, indices, indptr)``, O(nnz + n_features)."""
    n_samples = y.shape[0]
    n_features = w.shape[0]
    acc = 0.0
    for i in range(n_samples):
        z = 0.0
        if sparse:
            for k in range(indptr[i], indptr[i + 1]):
                z += data[k] * w[indices[k]]
        else:
            for j in range(n_features):
                z += X[i, j] * w[j]
        if datafit_code == 0:
            r = z - y[i]
            acc += r * r
        elif datafit_code == HINGE:
            acc += max(0.0, 1.0 - y[i] * z)
        else:
            m = y[i] * z
            if m > 0:
                acc += np.log1p(np.exp(-m))
            else:
                acc += -m + np.log1p(np.exp(m))
    return acc / n_samples + _penalty_value(penalty_code, penalty_params, w)


# selected samples drawn (and their rows prefetched) ahead of use; a power of 2
_AHEAD = 8


@njit(inline="always")
def _prefetch_row(X, y, row_norms, inclusions, i):
    """Prefetch what processing sample ``i`` reads: its row, label, norm and
    inclusion counter."""
    prefetch_row(X, i)
    prefetch(y, i)
    prefetch(row_norms, i)
    prefetch(inclusions, i)


@njit(cache=True, error_model="numpy")
def _dp_sgd_kernel(sparse, X, data, indices, indptr, y, w, datafit_code, penalty_code,
                   penalty_params, step, clip, noise_scale, batch_size, row_norms, q,
                   n_steps, rng_sample, noise_key, noise_buf, grad, noise, inclusions,
                   checkpoints, obj):
    """Run ``n_steps`` DP-SGD steps in place, drawing the sampling and the noise.

    Poisson sampling: over the ``n_steps * n_samples`` Bernoulli(q) trials
    (step-major), the gaps between successes are i.i.d. Geometric(q), so the
    selected (step, sample) pairs are found in O(selected) draws without
    touching unselected samples. A gap is drawn as ``ceil(E / lam)`` with
    ``E ~ Exp(1)`` and ``lam = -log(1 - q)``: ``P(gap > k) = exp(-k lam) =
    (1 - q)^k``, exactly Geometric(q), 5x cheaper than ``rng.geometric``.
    The next ``_AHEAD`` selected trials are drawn ahead (same gaps, same
    order, so the same iterates) and their rows prefetched: once X outgrows
    the caches a random row otherwise costs a full memory round trip.

    Parameters
    ----------
    sparse : bool
        Read the CSR arrays ``data, indices, indptr`` instead of ``X``: a
        sample's prediction and gradient then cost O(nnz_i); the noise and the
        prox stay dense, O(n_features) per step.
    X : array, shape (n_samples, n_features)
        C-ordered design matrix (rows are read; a (1, 1) dummy when sparse).
    data, indices, indptr : arrays
        CSR design matrix (length-1 dummies when dense).
    y : array, shape (n_samples,)
        Targets.
    w : array, shape (n_features,)
        Iterate (updated in place).
    datafit_code, penalty_code : int
        Dispatch codes.
    penalty_params : array, shape (2,)
        ``[alpha, l1_ratio]``.
    step : float
        Step ``gamma / beta``.
    clip : float
        L2 clipping threshold ``C`` of per-sample gradients.
    noise_scale : float
        ``sigma``, std of the Gaussian noise added to the clipped *sum*.
    batch_size : float
        Expected batch size ``b`` (the sum is divided by ``b``).
    row_norms : array, shape (n_samples,)
        ``||x_i||_2``.
    q : float
        Sampling rate ``b / n_samples``.
    n_steps : int
        Number of steps.
    rng_sample : numpy.random.Generator
        Stream of the sampling (advanced in place).
    noise_key : uint64
        Key of the noise stream (:mod:`dpcd.solvers._normal`): the noise of
        step ``t`` is its normals ``t n_features, ..., (t + 1) n_features - 1``.
    noise_buf : array, shape (even,)
        Work buffer of the noise stream.
    grad, noise : array, shape (n_features,)
        Work buffers.
    inclusions : array, shape (n_samples,)
        Incremented by the number of steps each sample is selected in.
    checkpoints : array, shape (n_ckpt,)
        Step counts after which to record the objective in ``obj[1 + c]``.
    obj : array, shape (n_ckpt + 1,)
        Objective at the checkpoints.
    """
    n_samples = y.shape[0]
    n_features = w.shape[0]
    full = q >= 1.0
    lam = 0.0 if full else -np.log1p(-q)
    # global indices of the next _AHEAD selected (step, sample) trials, in order
    ahead = np.empty(_AHEAD, dtype=np.int64)
    last = -1
    for k in range(_AHEAD):
        last += 1 if full else int(np.ceil(rng_sample.standard_exponential() / lam))
        ahead[k] = last
        if not sparse:
            _prefetch_row(X, y, row_norms, inclusions, last % n_samples)
    head = 0
    pos = ahead[0]
    c = 0
    noise_start = -noise_buf.shape[0]  # the buffer starts empty
    for t in range(n_steps):
        for j in range(n_features):
            grad[j] = 0.0
        # sum of clipped per-sample gradients: O(|B| n_features)
        first = t * n_samples
        while pos < first + n_samples:
            i = pos - first
            inclusions[i] += 1
            pred = 0.0
            if sparse:
                for k in range(indptr[i], indptr[i + 1]):
                    pred += data[k] * w[indices[k]]
            else:
                for j in range(n_features):
                    pred += X[i, j] * w[j]
            # l'(pred) with libm's exp, not the vectorisable polynomial the
            # coordinate kernels use: one exp per step sits on the critical
            # path, where latency counts (135 vs 165 ns per step on Electricity)
            if datafit_code == SQUARES:
                d = 2.0 * (pred - y[i])
            elif datafit_code == HINGE:
                # subgradient of max(0, 1 - y z)
                d = -y[i] if y[i] * pred < 1.0 else 0.0
            else:
                d = -y[i] / (1.0 + np.exp(y[i] * pred))
            # ||grad l_i|| = |l'(z_i)| ||x_i||; clip to norm C
            norm = abs(d) * row_norms[i]
            if norm > clip:
                d *= clip / norm
            if sparse:
                for k in range(indptr[i], indptr[i + 1]):
                    grad[indices[k]] += d * data[k]
            else:
                for j in range(n_features):
                    grad[j] += d * X[i, j]
            last += 1 if full else int(np.ceil(rng_sample.standard_exponential() / lam))
            ahead[head] = last
            if not sparse:
                _prefetch_row(X, y, row_norms, inclusions, last % n_samples)
            head = (head + 1) & (_AHEAD - 1)
            pos = ahead[head]
        # g = (sum + N(0, sigma^2 I)) / b; proximal step: O(n_features).
        # The noise is drawn a vectorised buffer at a time, apart from the prox.
        noise_start = take_normals(noise_key, noise_buf, noise_start, t * n_features, noise)
        for j in range(n_features):
            g = (grad[j] + noise_scale * noise[j]) / batch_size
            w[j] = _prox_1d(penalty_code, penalty_params, w[j] - step * g, step)
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            obj[1 + c] = _full_objective(sparse, X, data, indices, indptr, y, w,
                                         datafit_code, penalty_code, penalty_params)
            c += 1


def dp_sgd(X, y, datafit, penalty, *, step, clip, noise_scale, passes, seed,
           batch_size=1, global_smoothness=None, check_input=True):
    """Proximal DP-SGD with per-sample L2 clipping and Poisson sampling.

    Each step samples every record independently with probability
    ``q = batch_size / n_samples`` and updates
    ``w <- prox_{eta psi}(w - eta g)`` with ``eta = step / beta`` and
    ``g = (sum_{i in B} clip(grad l_i(w), C) + N(0, sigma^2 I)) / batch_size``.
    A step costs O(|B| n_features + n_features), O(sum_{i in B} nnz_i +
    n_features) on sparse X.

    Parameters
    ----------
    X : array or scipy sparse matrix, shape (n_samples, n_features)
        Design matrix; dense input is converted once to C-ordered float64
        (rows are read, so pass it C-ordered to avoid a copy), sparse input to
        CSR float64 (pass CSR to avoid a conversion per call), never
        densified: same draws, same iterates as the dense path up to float
        rounding.
    y : array, shape (n_samples,)
        Targets ({-1, +1} for logistic).
    datafit : Squares or Logistic
    penalty : L1, L2, ElasticNet or NoPenalty
    step : float
        ``gamma``; the step size is ``gamma / beta``.
    clip : float
        L2 clipping threshold ``C`` (``np.inf`` for none).
    noise_scale : float
        ``sigma``, standard deviation of the noise on the clipped sum (e.g.
        ``z * C`` for noise multiplier ``z``).
    passes : float
        Number of passes, > 0; ``T = ceil(passes * n_samples / batch_size)``
        steps (the count :func:`dpcd.privacy.calibrate_dp_sgd` assumes).
    seed : int or None
        Seed of ``numpy.random.SeedSequence`` (streams: sampling, noise).
    batch_size : float, default=1
        Expected batch size ``b``.
    global_smoothness : float, optional
        ``beta``; default ``datafit.global_smoothness(X)``.
    check_input : bool, default=True
        Scan ``X`` for NaN/inf and check ``y``; False when the caller already
        did (a sweep validates its data once, not once per run).

    Returns
    -------
    result : SolverResult
        ``objective[c]`` is ``F(w)`` after ``checkpoints[c]`` passes (at step
        ``ceil(checkpoints[c] n / b)``; see :func:`pass_checkpoints`).
        ``extra`` holds ``n_steps``, ``step_size``, ``global_smoothness``,
        ``sampling_rate`` and ``inclusions`` (steps each sample was selected
        in). ``time`` covers sampling, noise and updates.

    References
    ----------
    .. [1] Abadi et al., CCS 2016; Mangold et al., ICML 2022, Appendix G.1.
    """
    design, y, (n_samples, n_features) = check_design(X, y, datafit, "csr", check_input)
    beta = (datafit.global_smoothness(X) if global_smoothness is None
            else float(global_smoothness))
    if not (np.isfinite(beta) and beta > 0):
        raise ValueError(f"global smoothness must be finite and > 0, got {beta!r}")
    step = float(step)
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"step must be finite and > 0, got {step!r}")
    clip = float(clip)
    if not clip > 0:
        raise ValueError(f"clip must be > 0, got {clip!r}")
    noise_scale = float(noise_scale)
    if not (np.isfinite(noise_scale) and noise_scale >= 0):
        raise ValueError(f"noise_scale must be finite and >= 0, got {noise_scale!r}")
    batch_size = float(batch_size)
    if not 0 < batch_size <= n_samples:
        raise ValueError(f"batch_size must be in (0, n_samples={n_samples}], "
                         f"got {batch_size!r}")
    checkpoints = pass_checkpoints(passes)
    q = batch_size / n_samples
    eta = step / beta
    n_steps = math.ceil(passes * n_samples / batch_size)
    # checkpoint c (checkpoints[c] passes) after step ceil(c n / b)
    ckpts = np.array([math.ceil(c * n_samples / batch_size) for c in checkpoints[1:]],
                     dtype=np.int64)
    n_ckpt = ckpts.shape[0]

    w = np.zeros(n_features)
    if design[0]:  # sum of squares over each row's stored entries: O(nnz)
        data, indptr = design[2], design[4]
        row_norms = np.sqrt(np.bincount(np.repeat(np.arange(n_samples), np.diff(indptr)),
                                        weights=data * data, minlength=n_samples))
    else:
        row_norms = np.sqrt(np.einsum("ij,ij->i", design[1], design[1]))
    grad = np.zeros(n_features)
    pcode, pparams, dcode = penalty.code, penalty.params, datafit.code
    obj = np.empty(n_ckpt + 1)
    obj[0] = _full_objective(*design, y, w, dcode, pcode, pparams)
    rng_sample, rng_noise = spawn_generators(seed, 2)
    noise_key, noise_buf = new_stream(rng_noise)
    args = (*design, y, w, dcode, pcode, pparams, eta, clip, noise_scale, batch_size,
            row_norms, q)
    # compile (or load from cache) before the timer: a zero-step call
    inclusions = np.zeros(n_samples, dtype=np.int64)
    noise = np.empty(n_features)
    _dp_sgd_kernel(*args, 0, np.random.default_rng(0), noise_key, noise_buf, grad,
                   noise, inclusions, np.empty(0, np.int64), obj)
    # the timer covers the whole algorithm: sampling, noise and updates
    t0 = time.perf_counter()
    _dp_sgd_kernel(*args, n_steps, rng_sample, noise_key, noise_buf, grad, noise,
                   inclusions, ckpts, obj)
    elapsed = time.perf_counter() - t0

    extra = {
        "n_steps": n_steps,
        "step_size": eta,
        "global_smoothness": beta,
        "sampling_rate": q,
        "inclusions": inclusions,
    }
    return SolverResult(w=w, objective=obj, n_updates=n_steps, time=elapsed,
                        extra=extra, checkpoints=checkpoints)
