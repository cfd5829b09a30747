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

from dpcd.solvers._normal import new_stream, take_normals
from dpcd.solvers import _dp_sgd_independent as independent
from dpcd.solvers import _dp_sgd_secure
from dpcd.solvers._prefetch import prefetch, prefetch_row
from dpcd.solvers._sgd_steps import (_add_clipped_gradient, _clipped_derivative, _dot_row,
                                     _objectives, _prox_form, _prox_step,
                                     _prox_update, _prox_update_sum)
from dpcd.solvers.base import SolverResult, check_design, pass_checkpoints, spawn_generators


# The kernels below run K configurations at once (rows of W) on common random
# numbers: runs of one seed that differ only in step, clipping threshold, noise
# scale or length share their sampled batches and their standard normals; one
# draw of each then serves all K (dp_sgd_many(seed=...)). Such runs are not
# independent releases, so sweeps and dp_sgd use the independent-streams
# kernel of dpcd.solvers._dp_sgd_independent instead (dp_sgd_many(seeds=...)).
# Each configuration's arithmetic is that of a run alone of the same seed, in
# the same order (tested).


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


@njit(inline="always")
def _next_trial(full, lam, rng_sample, last):
    """Global index (step-major) of the selected trial after ``last``: the
    next one when every sample is selected, else ``last`` + a Geometric(q) gap."""
    if full:
        return last + 1
    return last + int(np.ceil(rng_sample.standard_exponential() / lam))


@njit(inline="always")
def _first_trials(sparse, X, y, row_norms, inclusions, q, rng_sample):
    """Start the sampling: the first ``_AHEAD`` selected trials (their rows
    prefetched). Returns ``(full, lam, ahead, last, head, pos)``: every sample
    selected or not, the Geometric gaps' rate, the global indices of the next
    selected (step, sample) trials in order, the last of them, the slot of the
    next one and the next one itself."""
    full = q >= 1.0
    lam = 0.0 if full else -np.log1p(-q)
    ahead = np.empty(_AHEAD, dtype=np.int64)
    last = -1
    for a in range(_AHEAD):
        last = _next_trial(full, lam, rng_sample, last)
        ahead[a] = last
        if not sparse:
            _prefetch_row(X, y, row_norms, inclusions, last % y.shape[0])
    return full, lam, ahead, last, 0, ahead[0]


@njit(inline="always")
def _advance(sparse, X, y, row_norms, inclusions, full, lam, rng_sample, ahead, head, last):
    """The trial at ``ahead[head]`` is used: draw the one ``_AHEAD`` later in
    its slot (prefetching its row); returns ``(last, head, pos)`` with ``pos``
    the next trial to process."""
    last = _next_trial(full, lam, rng_sample, last)
    ahead[head] = last
    if not sparse:
        _prefetch_row(X, y, row_norms, inclusions, last % y.shape[0])
    head = (head + 1) & (_AHEAD - 1)
    return last, head, ahead[head]


@njit(cache=True, error_model="numpy")
def _dp_sgd_kernel(sparse, X, data, indices, indptr, y, W, datafit_code, penalty_code,
                   penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
                   n_steps, rng_sample, noise_key, noise_buf, grad, noise, inclusions,
                   checkpoints, obj):
    """Run DP-SGD on the K rows of ``W`` in place, drawing the sampling and
    the noise once for all of them.

    Poisson sampling: over the ``n_steps[0] * n_samples`` Bernoulli(q) trials
    (step-major), the gaps between successes are i.i.d. Geometric(q), so the
    selected (step, sample) pairs are found in O(selected) draws without
    touching unselected samples. A gap is drawn as ``ceil(E / lam)`` with
    ``E ~ Exp(1)`` and ``lam = -log(1 - q)``: ``P(gap > k) = exp(-k lam) =
    (1 - q)^k``, exactly Geometric(q), 5x cheaper than ``rng.geometric``.
    The next ``_AHEAD`` selected trials are drawn ahead (same gaps, same
    order, so the same iterates) and their rows prefetched: once X outgrows
    the caches a random row otherwise costs a full memory round trip.

    Configuration k runs the first ``n_steps[k]`` steps of these streams; the
    configurations are sorted by decreasing ``n_steps``, so those still
    running at step t are a prefix ``0 .. active - 1``.

    Parameters
    ----------
    sparse : bool
        Read the CSR arrays ``data, indices, indptr`` instead of ``X``: a
        sample's prediction and gradient then cost O(nnz_i K); the noise and
        the prox stay dense, O(n_features K) per step.
    X : array, shape (n_samples, n_features)
        C-ordered design matrix (rows are read; a (1, 1) dummy when sparse).
    data, indices, indptr : arrays
        CSR design matrix (length-1 dummies when dense).
    y : array, shape (n_samples,)
        Targets.
    W : array, shape (K, n_features)
        Iterates, one row per configuration (updated in place).
    datafit_code, penalty_code : int
        Dispatch codes.
    penalty_params : array, shape (2,)
        ``[alpha, l1_ratio]``.
    steps, clips, noise_scales : arrays, shape (K,)
        Step ``gamma / beta``, L2 clipping threshold ``C`` of per-sample
        gradients and ``sigma``, std of the Gaussian noise added to the
        clipped *sum*, per configuration.
    batch_size : float
        Expected batch size ``b`` (the sum is divided by ``b``).
    row_norms : array, shape (n_samples,)
        ``||x_i||_2``.
    q : float
        Sampling rate ``b / n_samples``.
    n_steps : array of int64, shape (K,)
        Steps of each configuration, non-increasing.
    rng_sample : numpy.random.Generator
        Stream of the sampling (advanced in place).
    noise_key : uint64
        Key of the noise stream (:mod:`dpcd.solvers._normal`): the noise of
        step ``t`` is its normals ``t n_features, ..., (t + 1) n_features - 1``.
    noise_buf : array, shape (even,)
        Work buffer of the noise stream.
    grad : array, shape (K, n_features)
        Work buffer of the clipped sums; all zero on entry (the sparse path
        keeps it zero off the rows it touches).
    noise : array, shape (n_features,)
        Work buffer.
    inclusions : array, shape (n_samples,)
        Incremented by the number of steps each sample is selected in (over
        the longest configuration's steps).
    checkpoints : array, shape (n_ckpt,)
        Increasing step counts after which to record the objective of the
        configurations still running, in ``obj[:, 1 + c]``.
    obj : array, shape (K, n_ckpt + 1)
        Objectives at the checkpoints.
    """
    n_samples = y.shape[0]
    n_features = W.shape[1]
    rows = np.empty(n_samples, dtype=np.int64)  # the rows of a step's batch
    full, lam, ahead, last, head, pos = _first_trials(sparse, X, y, row_norms, inclusions, q,
                                                      rng_sample)
    c = 0
    active = n_steps.shape[0]
    noise_start = -noise_buf.shape[0]  # the buffer starts empty
    total = n_steps[0] if active > 0 else 0
    for t in range(total):
        while n_steps[active - 1] <= t:
            active -= 1
        first = t * n_samples
        # The noise is drawn a vectorised buffer at a time, once for all K.
        noise_start = take_normals(noise_key, noise_buf, noise_start, t * n_features, noise)
        one = not sparse and pos < first + n_samples <= ahead[(head + 1) & (_AHEAD - 1)]
        if pos >= first + n_samples:
            # an empty batch (a third of the steps at b = 1): the noise alone
            for k in range(active):
                _prox_update_sum(W[k], None, noise_scales[k], noise, steps[k], penalty_code,
                                 penalty_params, batch_size)
        elif one:
            # one sample (most non-empty batches at b = 1): its clipped gradient
            # goes straight into the update. The same bits as a sum started at 0:
            # 0 + x = x but for the sign of a zero, which the prox's max + min
            # turns into +0 either way (tested against a numpy replay)
            i = pos - first
            inclusions[i] += 1
            for k in range(active):
                w, v, scale = W[k], grad[k], noise_scales[k]
                pred = _dot_row(X, i, w)
                d = _clipped_derivative(datafit_code, y[i], pred, row_norms[i], clips[k])
                for j in range(n_features):
                    v[j] = d * X[i, j] + scale * noise[j]
                _prox_update(w, v, steps[k], penalty_code, penalty_params, batch_size)
        else:
            # Sparse: grad is zero off the rows of the batch (it starts zero and
            # those entries are zeroed again after the update): O(nnz), not
            # O(n_features), to clear it
            if not sparse:
                for k in range(active):
                    for j in range(n_features):
                        grad[k, j] = 0.0
            # sum of clipped per-sample gradients: O(|B| n_features K)
            n_rows = 0
            while pos < first + n_samples:
                i = pos - first
                inclusions[i] += 1
                rows[n_rows] = i
                n_rows += 1
                for k in range(active):
                    w, g = W[k], grad[k]
                    _add_clipped_gradient(sparse, X, data, indices, indptr, y, i, w, g,
                                          datafit_code, row_norms[i], clips[k])
                last, head, pos = _advance(sparse, X, y, row_norms, inclusions, full, lam,
                                           rng_sample, ahead, head, last)
            # the sum plus N(0, sigma^2 I), then the prox: O(n_features K)
            for k in range(active):
                _prox_update_sum(W[k], grad[k], noise_scales[k], noise, steps[k],
                                 penalty_code, penalty_params, batch_size)
            if sparse:
                for r in range(n_rows):
                    i = rows[r]
                    for k in range(active):
                        g = grad[k]
                        for s in range(indptr[i], indptr[i + 1]):
                            g[indices[s]] = 0.0
        if one:
            last, head, pos = _advance(sparse, X, y, row_norms, inclusions, full, lam,
                                       rng_sample, ahead, head, last)
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            _objectives(sparse, X, data, indices, indptr, y, W, active, datafit_code,
                        penalty_code, penalty_params, obj[:, 1 + c])
            c += 1



# The kernel above keeps each run's iterate contiguous (runs outer): the fastest
# for a run alone. For many runs the one below stores the iterates transposed,
# (n_features, K), and loops over the runs innermost, so that the K dot
# products, clips and prox updates of a step vectorise across runs; each run's
# arithmetic is the same, in the same order (same bits, tested).
# bench/bench_dp_sgd_many.py, K = 50, ns per run-step, runs outer -> inner in
# the same run: 93 -> 22 (california shape), 114 -> 40 (electricity), 1 660 ->
# 1 549 (1000 x 1000). For one run it is 10 % (8 features) to 2x (1000
# features) slower, hence the switch (_takes_inner).


@njit(inline="always", error_model="numpy")
def _predict_runs(sparse, X, data, indices, indptr, i, WT, active, acc, pred):
    """``pred[k] = x_i . WT[:, k]`` for the first ``active`` runs, each in the
    order of :func:`_predict` (four partial sums j mod 4 when dense, one sum in
    storage order when sparse); ``acc`` is a (4, K) work buffer."""
    if sparse:
        for k in range(active):
            pred[k] = 0.0
        for s in range(indptr[i], indptr[i + 1]):
            x, w = data[s], WT[indices[s]]
            for k in range(active):
                pred[k] += x * w[k]
        return
    n_features = WT.shape[0]
    a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
    for k in range(active):
        a0[k] = a1[k] = a2[k] = a3[k] = 0.0
    stop = n_features - n_features % 4
    for j in range(0, stop, 4):
        x0, x1, x2, x3 = X[i, j], X[i, j + 1], X[i, j + 2], X[i, j + 3]
        w0, w1, w2, w3 = WT[j], WT[j + 1], WT[j + 2], WT[j + 3]
        for k in range(active):
            a0[k] += x0 * w0[k]
            a1[k] += x1 * w1[k]
            a2[k] += x2 * w2[k]
            a3[k] += x3 * w3[k]
    for j in range(stop, n_features):
        x0, w0 = X[i, j], WT[j]
        for k in range(active):
            a0[k] += x0 * w0[k]
    for k in range(active):
        pred[k] = (a0[k] + a1[k]) + (a2[k] + a3[k])


@njit(cache=True, error_model="numpy")
def _dp_sgd_kernel_runs_inner(sparse, X, data, indices, indptr, y, WT, datafit_code,
                              penalty_code, penalty_params, steps, clips, noise_scales,
                              batch_size, row_norms, q, n_steps, rng_sample, noise_key,
                              noise_buf, G, noise, inclusions, checkpoints, obj):
    """:func:`_dp_sgd_kernel` on transposed iterates ``WT``, shape (n_features, K),
    and gradient sums ``G`` of the same shape: the same draws, the same
    arithmetic per run, the loops over runs innermost. Other parameters are
    those of :func:`_dp_sgd_kernel`."""
    n_samples = y.shape[0]
    n_features, n_runs = WT.shape
    shrink, divide = np.empty(n_runs), np.empty(n_runs)
    plain = batch_size == 1.0
    for k in range(n_runs):
        shrink[k], divide[k] = _prox_form(penalty_code, penalty_params, steps[k])
        plain = plain and divide[k] == 1.0
    acc = np.empty((4, n_runs))
    pred, d = np.empty(n_runs), np.empty(n_runs)
    full, lam, ahead, last, head, pos = _first_trials(sparse, X, y, row_norms, inclusions, q,
                                                      rng_sample)
    c = 0
    active = n_steps.shape[0]
    noise_start = -noise_buf.shape[0]
    total = n_steps[0] if active > 0 else 0
    for t in range(total):
        while n_steps[active - 1] <= t:
            active -= 1
        first = t * n_samples
        noise_start = take_normals(noise_key, noise_buf, noise_start, t * n_features, noise)
        one = not sparse and pos < first + n_samples <= ahead[(head + 1) & (_AHEAD - 1)]
        if pos >= first + n_samples:  # an empty batch: the noise alone
            for j in range(n_features):
                w, z = WT[j], noise[j]
                for k in range(active):
                    w[k] = _prox_step(w[k], noise_scales[k] * z, steps[k], shrink[k],
                                      divide[k], batch_size, plain)
        elif one:  # one sample: its clipped gradient straight into the update
            i = pos - first
            inclusions[i] += 1
            _predict_runs(sparse, X, data, indices, indptr, i, WT, active, acc, pred)
            for k in range(active):
                d[k] = _clipped_derivative(datafit_code, y[i], pred[k], row_norms[i], clips[k])
            for j in range(n_features):
                w, x, z = WT[j], X[i, j], noise[j]
                for k in range(active):
                    w[k] = _prox_step(w[k], d[k] * x + noise_scales[k] * z, steps[k],
                                      shrink[k], divide[k], batch_size, plain)
        else:
            for j in range(n_features):
                for k in range(active):
                    G[j, k] = 0.0
            while pos < first + n_samples:
                i = pos - first
                inclusions[i] += 1
                _predict_runs(sparse, X, data, indices, indptr, i, WT, active, acc, pred)
                for k in range(active):
                    d[k] = _clipped_derivative(datafit_code, y[i], pred[k], row_norms[i],
                                               clips[k])
                if sparse:
                    for s in range(indptr[i], indptr[i + 1]):
                        g, x = G[indices[s]], data[s]
                        for k in range(active):
                            g[k] += d[k] * x
                else:
                    for j in range(n_features):
                        g, x = G[j], X[i, j]
                        for k in range(active):
                            g[k] += d[k] * x
                last, head, pos = _advance(sparse, X, y, row_norms, inclusions, full, lam,
                                           rng_sample, ahead, head, last)
            for j in range(n_features):
                w, g, z = WT[j], G[j], noise[j]
                for k in range(active):
                    w[k] = _prox_step(w[k], g[k] + noise_scales[k] * z, steps[k], shrink[k],
                                      divide[k], batch_size, plain)
        if one:
            last, head, pos = _advance(sparse, X, y, row_norms, inclusions, full, lam,
                                       rng_sample, ahead, head, last)
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            _objectives(sparse, X, data, indices, indptr, y,
                        np.ascontiguousarray(WT[:, :active].T), active, datafit_code,
                        penalty_code, penalty_params, obj[:, 1 + c])
            c += 1

def dp_sgd(X, y, datafit, penalty, *, step, clip, noise_scale, passes, seed,
           batch_size=1, global_smoothness=None, check_input=True, secure=None):
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
    seed : int, sequence of int or None
        Seed of ``numpy.random.SeedSequence``, spawned into the sampling and
        noise streams (:mod:`dpcd.solvers._dp_sgd_independent`).
    batch_size : float, default=1
        Expected batch size ``b``.
    global_smoothness : float, optional
        ``beta``; default ``datafit.global_smoothness(X)``.
    check_input : bool, default=True
        Scan ``X`` for NaN/inf and check ``y``; False when the caller already
        did (a sweep validates its data once, not once per run).
    secure : dpcd.privacy.secure.LatticeGaussian, optional
        The secure mode (:mod:`dpcd.solvers._dp_sgd_secure`): batches,
        rounding to ``secure.grid`` and exact discrete Gaussian noise of
        ``secure.integer_scale`` grid steps, all from a keystream keyed by
        the OS; ``noise_scale`` and ``seed`` are then unused.

    Returns
    -------
    result : SolverResult
        ``objective[c]`` is ``F(w)`` after ``checkpoints[c]`` passes (at step
        ``ceil(checkpoints[c] n / b)``; see :func:`pass_checkpoints`).
        ``extra`` holds ``n_steps``, ``step_size``, ``global_smoothness``,
        ``sampling_rate``, ``runs_in_call`` (1) and ``inclusions`` (steps
        each sample was selected in). ``time`` covers sampling, noise and
        updates. :func:`dp_sgd_many` runs several settings in shared kernel calls.

    References
    ----------
    .. [1] Abadi et al., CCS 2016; Mangold et al., ICML 2022, Appendix G.1.
    """
    (result,) = dp_sgd_many(
        X, y, datafit, penalty, steps=[step], clips=[clip], noise_scales=[noise_scale],
        passes=[passes], seeds=[seed], batch_size=batch_size,
        global_smoothness=global_smoothness, check_input=check_input, _inclusions=True,
        secure=None if secure is None else [secure])
    return result


def dp_sgd_many(X, y, datafit, penalty, *, steps, clips, noise_scales, passes, seed=None,
                seeds=None, batch_size=1, global_smoothness=None, check_input=True,
                _inclusions=False, secure=None):
    """K runs of :func:`dp_sgd` in shared kernel calls.

    With ``seeds`` (one per run; what a sweep passes): each run draws its
    batches and noise from its own streams and only the kernel call is
    shared (:mod:`dpcd.solvers._dp_sgd_independent`); run k's result is bit
    for bit ``dp_sgd(..., step=steps[k], clip=clips[k],
    noise_scale=noise_scales[k], passes=passes[k], seed=seeds[k])``, and
    runs are independent releases.

    With ``seed`` (one for all; common random numbers, for benchmarks and
    comparisons that want them): runs with the same seed and batch size draw
    the same batches and the same standard normals (run k takes the first
    ``ceil(passes[k] n / b)`` steps of both streams); only their steps,
    clipping thresholds, noise scales and lengths differ. This draws each
    batch and each noise vector once per kernel call and updates the
    iterates of the call's runs together (at most ``_CALL_ENTRIES /
    n_features`` runs a call, so that they stay in cache). Such runs are
    **not** independent releases: two of them that differ only in sigma
    reveal their shared noise, hence the clipped gradients.

    Parameters
    ----------
    X, y, datafit, penalty, batch_size, global_smoothness, check_input
        As for :func:`dp_sgd`.
    steps, clips, noise_scales, passes : array-like, shape (K,)
        Per run, as the scalars of :func:`dp_sgd`.
    seed : int or None
        One ``SeedSequence`` seed shared by the runs (common random numbers).
    seeds : sequence, length K, optional
        One ``SeedSequence`` seed (int or list of int) per run; exclusive
        with ``seed``.
    secure : sequence of dpcd.privacy.secure.LatticeGaussian, length K, optional
        The secure mode of each run (see :func:`dp_sgd`): each run alone in
        its kernel call, on its own keystream; seeds unused.

    Returns
    -------
    results : list of SolverResult
        One per run, in the order given. ``time`` is the kernel time of the
        shared call split in proportion to each run's steps (an amortised
        share, not the time of the run alone); ``extra["runs_in_call"]`` is
        the number of runs that shared it.
        ``extra["inclusions"]`` is only given by :func:`dp_sgd`.
    """
    design, y, (n_samples, n_features) = check_design(X, y, datafit, "csr", check_input)
    beta = (datafit.global_smoothness(X) if global_smoothness is None
            else float(global_smoothness))
    if not (np.isfinite(beta) and beta > 0):
        raise ValueError(f"global smoothness must be finite and > 0, got {beta!r}")
    steps = np.asarray(steps, dtype=np.float64).ravel()
    n_runs = steps.shape[0]
    clips, noise_scales = (np.broadcast_to(np.asarray(v, dtype=np.float64).ravel(), n_runs)
                           for v in (clips, noise_scales))
    passes = np.broadcast_to(np.asarray(passes, dtype=np.float64).ravel(), n_runs)
    if not (n_runs and np.all(np.isfinite(steps)) and np.all(steps > 0)):
        raise ValueError(f"steps must be finite and > 0, got {steps!r}")
    if not np.all(clips > 0):
        raise ValueError(f"clip must be > 0, got {clips!r}")
    if not (np.all(np.isfinite(noise_scales)) and np.all(noise_scales >= 0)):
        raise ValueError(f"noise_scale must be finite and >= 0, got {noise_scales!r}")
    batch_size = float(batch_size)
    if not 0 < batch_size <= n_samples:
        raise ValueError(f"batch_size must be in (0, n_samples={n_samples}], "
                         f"got {batch_size!r}")
    checkpoints = [pass_checkpoints(p) for p in passes]
    q = batch_size / n_samples
    # checkpoint c (checkpoints[c] passes) after step ceil(c n / b)
    ckpt_steps = [np.array([math.ceil(c * n_samples / batch_size) for c in ckpts[1:]],
                           dtype=np.int64) for ckpts in checkpoints]
    n_steps = np.array([math.ceil(p * n_samples / batch_size) for p in passes], dtype=np.int64)
    if design[0]:  # sum of squares over each row's stored entries: O(nnz)
        data, indptr = design[2], design[4]
        row_norms = np.sqrt(np.bincount(np.repeat(np.arange(n_samples), np.diff(indptr)),
                                        weights=data * data, minlength=n_samples))
    else:
        row_norms = np.sqrt(np.einsum("ij,ij->i", design[1], design[1]))
    # longest runs first: the runs still going at any step are a prefix. Every
    # step sweeps the iterates and their gradient sums: a call takes at most
    # _CALL_ENTRIES of each, so that they stay in the L2 cache.
    if secure is not None:
        if len(secure) != n_runs:
            raise ValueError(f"give one secure calibration per run ({n_runs}), "
                             f"got {len(secure)}")
        return [_secure_result(design, y, n_features, datafit, penalty, steps[k] / beta,
                               clips[k], batch_size, row_norms, q, n_steps[k],
                               ckpt_steps[k], checkpoints[k], secure[k], beta, _inclusions)
                for k in range(n_runs)]
    order = np.argsort(-n_steps, kind="stable")
    per_call = max(1, _CALL_ENTRIES // n_features)
    if seeds is not None:
        if seed is not None or len(seeds) != n_runs:
            raise ValueError(f"give either seed or one seed per run ({n_runs}), "
                             f"got seed={seed!r} and {len(seeds)} seeds")
        per_call = min(per_call, independent.RUNS_PER_CALL)
    results = [None] * n_runs
    for start in range(0, n_runs, per_call):
        runs = order[start:start + per_call]
        union = np.unique(np.concatenate([ckpt_steps[k] for k in runs]))
        call = (_run_together, seed) if seeds is None else (
            independent.run_independent, [seeds[k] for k in runs])
        W, obj, inclusions, elapsed = call[0](
            design, y, n_features, datafit.code, penalty.code, penalty.params, steps[runs] / beta,
            clips[runs], noise_scales[runs], batch_size, row_norms, q, n_steps[runs], union,
            call[1])
        for slot, k in enumerate(runs):
            columns = np.concatenate([[0], 1 + np.searchsorted(union, ckpt_steps[k])])
            extra = {
                "n_steps": int(n_steps[k]),
                "step_size": steps[k] / beta,
                "global_smoothness": beta,
                "sampling_rate": q,
                "runs_in_call": len(runs),
            }
            if _inclusions:
                extra["inclusions"] = inclusions
            results[k] = SolverResult(
                w=W[slot].copy(), objective=obj[slot, columns], n_updates=int(n_steps[k]),
                time=elapsed * n_steps[k] / max(1, n_steps[runs].sum()), extra=extra,
                checkpoints=checkpoints[k])
    return results


def _secure_result(design, y, n_features, datafit, penalty, eta, clip, batch_size, row_norms,
                   q, n_steps, ckpt_steps, checkpoints, lattice, beta, inclusions):
    """One secure run (:mod:`dpcd.solvers._dp_sgd_secure`) as a SolverResult."""
    w, obj, counts, elapsed = _dp_sgd_secure.run_secure(
        design, y, n_features, datafit.code, penalty.code, penalty.params, eta, clip,
        batch_size, row_norms, q, n_steps, ckpt_steps, lattice)
    extra = {"n_steps": int(n_steps), "step_size": eta, "global_smoothness": beta,
             "sampling_rate": q, "runs_in_call": 1}
    if inclusions:
        extra["inclusions"] = counts
    return SolverResult(w=w.copy(), objective=obj, n_updates=int(n_steps), time=elapsed,
                        extra=extra, checkpoints=checkpoints)


# iterate entries (runs x features) per kernel call: 256 KB of iterates and
# as much of gradient sums, within a 512 KB L2
_CALL_ENTRIES = 1 << 15
# Calls of at least this many runs take the runs-inner kernel (same bits): from
# 16 runs it is as fast or faster on every shape measured (parity at 1000 dense
# features, 2.8-4x at 8). With few features it wins from a few runs: outer/inner
# time at 2 passes, 3 / 5 / 10 runs, was 1.3 / 1.7 / 2.7 at 8 features,
# 1.05 / 1.4 / 2.1 at 16, 0.9 / 1.1 / 1.5 at 32, 0.74 / 0.85 / 1.13 at 64 and
# below 1 up to 16 runs from 128 on (dp_sgd_many at n x p = 200 000, best of 3;
# bench/bench_dp_sgd_many.py K prints both kernels on the paper's shapes).
_INNER_MIN_RUNS = 16


def _takes_inner(n_runs, n_features):
    """Whether a call of ``n_runs`` runs takes the runs-inner kernel: from about
    one run per 8 features, at least 3, at most :data:`_INNER_MIN_RUNS`."""
    return n_runs >= min(_INNER_MIN_RUNS, max(3, n_features // 8))


def _run_together(design, y, n_features, dcode, pcode, pparams, etas, clips, noise_scales,
                  batch_size, row_norms, q, n_steps, checkpoints, seed):
    """One kernel call on runs sorted by decreasing ``n_steps``; returns the
    iterates, objectives, inclusion counts and the kernel's seconds."""
    n_runs = n_steps.shape[0]
    obj = np.full((n_runs, checkpoints.shape[0] + 1), np.nan)
    # every run starts at w = 0: one evaluation serves all
    _objectives(*design, y, np.zeros((1, n_features)), 1, dcode, pcode, pparams, obj[:, 0])
    obj[:, 0] = obj[0, 0]
    rng_sample, rng_noise = spawn_generators(seed, 2)
    noise_key, noise_buf = new_stream(rng_noise)
    inner = _takes_inner(n_runs, n_features)
    kernel = _dp_sgd_kernel_runs_inner if inner else _dp_sgd_kernel
    shape = (n_features, n_runs) if inner else (n_runs, n_features)
    W = np.zeros(shape)
    args = (*design, y, W, dcode, pcode, pparams, etas, clips, noise_scales, batch_size,
            row_norms, q)
    work = (np.zeros(shape), np.empty(n_features), np.zeros(y.shape[0], dtype=np.int64))
    # compile (or load from cache) before the timer: a zero-step call
    kernel(*args, np.zeros(n_runs, np.int64), np.random.default_rng(0), noise_key, noise_buf,
           *work, checkpoints, obj)
    # the timer covers the whole algorithm: sampling, noise and updates
    t0 = time.perf_counter()
    kernel(*args, n_steps, rng_sample, noise_key, noise_buf, *work, checkpoints, obj)
    elapsed = time.perf_counter() - t0
    return (W.T if inner else W), obj, work[2], elapsed
