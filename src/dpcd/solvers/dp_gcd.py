"""DP-GCD: differentially private greedy coordinate descent ([1]_).

Algorithm 1 (smooth) and Algorithm 2 of Appendix C (proximal, with the GS-s,
GS-r and GS-q rules) of [1]_, on dense (column-major) or sparse CSC design
matrices.

References
----------
.. [1] P. Mangold, A. Bellet, J. Salmon, M. Tommasi. "High-Dimensional
   Private Empirical Risk Minimization by Greedy Coordinate Descent",
   AISTATS 2023. https://arxiv.org/abs/2207.01560
"""
import math
import time

import numpy as np
from numba import njit

from dpcd.privacy import exact, keystream
from dpcd.problems import check_smoothness
from dpcd.problems._jit import (
    FAST,
    L1,
    L2,
    NONE,
    SQUARES,
    _datafit_value,
    _exp,
    _penalty_value,
    _prox_1d,
)
from dpcd.solvers.base import SolverResult, as_design, as_feature_array, spawn_generators

RULES = {"smooth": 0, "gs_s": 1, "gs_r": 2, "gs_q": 3}
SMOOTH, GS_S, GS_R, GS_Q = 0, 1, 2, 3
PENALTY_NAMES = {NONE: "none", L1: "l1", L2: "l2"}
# where the report-noisy-max noise goes (dpcd.privacy.gcd decides)
PLACEMENTS = {"gradient": 0, "score": 1}


@njit(inline="always", error_model="numpy")
def _psi_1d(code, alpha, x):
    if code == L1:
        return alpha * abs(x)
    if code == L2:
        return 0.5 * alpha * x * x
    return 0.0


@njit(inline="always", error_model="numpy")
def _score(rule, pcode, pparams, wj, v, Mj):
    """Greedy score of coordinate j for the (noisy) gradient entry ``v``.

    Algorithm 1 (``SMOOTH``, an L2 term folded into f) or the GS-s / GS-r /
    GS-q rules of Appendix C; GS-q is scored by ``sqrt(2 * decrease)``, which
    has the rule's argmax.  With L1 at ``w_j = 0`` all three rules give
    ``max(|v| - alpha, 0) / sqrt(M_j)``; ties at 0 (flat bottom) are broken
    by ``(|v| - alpha) / sqrt(M_j)``, which keeps a maximiser of the rule and
    makes the score V-shaped (see :mod:`dpcd.privacy.gcd`).
    """
    alpha = pparams[0]
    if rule == SMOOTH:
        if pcode == L2:
            return abs(v + alpha * wj) / math.sqrt(Mj + alpha)
        return abs(v) / math.sqrt(Mj)
    if pcode == L1 and wj == 0.0:
        return (abs(v) - alpha) / math.sqrt(Mj)
    if rule == GS_S:
        # min over the subdifferential of |v + xi| / sqrt(M_j)
        if pcode == L1:
            return abs(v + (alpha if wj > 0.0 else -alpha)) / math.sqrt(Mj)
        if pcode == L2:
            return abs(v + alpha * wj) / math.sqrt(Mj)
        return abs(v) / math.sqrt(Mj)
    d = _prox_1d(pcode, pparams, wj - v / Mj, 1.0 / Mj) - wj
    if rule == GS_R:
        return math.sqrt(Mj) * abs(d)
    # GS-q: decrease = -min_a (v a + M_j a^2 / 2 + psi(w_j + a) - psi(w_j)), at a = d
    dec = -(v * d + 0.5 * Mj * d * d + _psi_1d(pcode, alpha, wj + d)
            - _psi_1d(pcode, alpha, wj))
    return math.sqrt(max(2.0 * dec, 0.0))


@njit(cache=True, error_model="numpy")
def _loss_derivatives(code, y, u, d):
    """``d_i = l'(z_i)`` from the state: ``2 u_i`` or ``-y_i / (1 + exp(u_i))``."""
    if code == SQUARES:
        for i in range(u.shape[0]):
            d[i] = 2.0 * u[i]
    else:
        for i in range(u.shape[0]):
            d[i] = -y[i] / (1.0 + _exp(u[i]))


@njit(cache=True, fastmath=FAST, error_model="numpy")
def _clipped_gradient_dense(X, d, clip, g):
    """``g_j = (1/n) sum_i clip(x_ij d_i, C_j)`` for all j: one read of X.

    Clipping each per-sample entry makes ``g`` non-linear in the state, so it
    cannot be updated incrementally after a coordinate step (unlike the
    unclipped gradient): every iteration pays this O(n p) pass.
    """
    n_samples, n_features = X.shape
    for j in range(n_features):
        c = clip[j]
        acc = 0.0
        for i in range(n_samples):
            acc += min(max(X[i, j] * d[i], -c), c)
        g[j] = acc / n_samples


@njit(cache=True, fastmath=FAST, error_model="numpy")
def _clipped_gradient_csc(data, indices, indptr, n_samples, d, clip, g):
    """Sparse CSC version of :func:`_clipped_gradient_dense`: O(nnz).

    Zero entries contribute ``clip(0) = 0``, so only stored entries are read.
    """
    for j in range(indptr.shape[0] - 1):
        c = clip[j]
        acc = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            acc += min(max(data[k] * d[indices[k]], -c), c)
        g[j] = acc / n_samples


# Secure mode: scores and gradients beyond this many grid steps are refused
# (their floating-point error, a few ulps, must stay far below one step).
GRID_LIMIT = 2.0 ** 40


@njit(cache=True, error_model="numpy")
def _secure_select(rule, pcode, pparams, w, g, M, score_grid, scale, state, noise):
    """Report-noisy-max on the lattice: ``argmax_k round(h_k(g_k)/γ_s) + K_k``
    with ``K_k`` discrete Laplace, exact ties broken uniformly (reservoir
    sampling: the i-th tie replaces the choice with probability 1/i)."""
    exact.fill_discrete_laplace(state, scale, noise)
    best = np.int64(0)
    ties = 0
    j = 0
    for k in range(w.shape[0]):
        x = _score(rule, pcode, pparams, w[k], g[k], M[k]) / score_grid
        if not abs(x) < GRID_LIMIT:
            raise ValueError("noise='secure': a DP-GCD score is too large for its grid")
        q = np.int64(math.floor(x + 0.5)) + noise[k]
        if ties == 0 or q > best:
            best, j, ties = q, k, 1
        elif q == best:
            ties += 1
            if exact.uniform_below(state, ties) == 0:
                j = k
    return j


@njit(cache=True, error_model="numpy")
def _secure_entry(g, grid, scale, state):
    """``γ·(round(g/γ) + K)``, ``K`` discrete Laplace of ``scale`` steps."""
    x = g / grid
    if not abs(x) < GRID_LIMIT:
        raise ValueError("noise='secure': a DP-GCD gradient is too large for its grid")
    return grid * (math.floor(x + 0.5) + exact.discrete_laplace(state, scale))


@njit(cache=True, error_model="numpy")
def _dp_gcd_kernel(sparse, X, data, indices, indptr, y, w, u, dcode, pcode, pparams,
                   rule, placement, M, steps, clip, select_scales, grad_scales,
                   n_iter, rng_select, rng_grad, d, g, selected, obj,
                   state, score_grid, secure_scales, grid, noise):
    """Run ``n_iter`` DP-GCD iterations in place, drawing all noise here.

    One iteration: the p clipped coordinate gradients (one O(nnz) pass over
    X), report-noisy-max over the rule's scores with ``chi_j ~ Lap(lambda'_j)``
    (inside the score's gradient, ``placement = 0``, as the paper writes it,
    or added to the score, ``placement = 1``), then
    ``w_j <- prox_{gamma_j psi_j}(w_j - gamma_j (g_j + eta))`` with
    ``eta ~ Lap(lambda_j)`` and an O(n) (O(nnz_j)) state update.

    Parameters
    ----------
    sparse : bool
        Read ``data, indices, indptr`` (CSC) instead of ``X``.
    X : array, shape (n_samples, n_features)
        Fortran-ordered design matrix (a (1, 1) dummy when sparse).
    data, indices, indptr : arrays
        CSC design matrix (length-1 dummies when dense).
    y, w, u : arrays
        Targets, iterate (in place), state (residuals or margins, in place).
    dcode, pcode : int
        Datafit and penalty codes; ``pparams = [alpha, l1_ratio]``.
    rule, placement : int
        ``SMOOTH``/``GS_S``/``GS_R``/``GS_Q``; selection-noise placement.
    M, steps, clip : arrays, shape (n_features,)
        Smoothness ``M_j`` (the scores' scale), steps ``gamma_j``, clipping
        thresholds ``C_j``.
    select_scales, grad_scales : arrays, shape (n_features,)
        Laplace scales ``lambda'_j`` and ``lambda_j``.
    n_iter : int
    rng_select, rng_grad : numpy.random.Generator
    d, g : arrays, shape (n_samples,), (n_features,)
        Work buffers (loss derivatives, clipped gradient).
    selected : array of int64, shape (n_iter,)
        Output: the coordinate chosen at each iteration.
    obj : array, shape (n_iter + 1,)
        Output: objective after each iteration (``obj[0]`` is set by the caller).
    state : array of uint64
        Secure mode (non-empty): the keystream all noise is drawn from
        (:func:`_secure_select`, :func:`_secure_entry`), on the score grid
        ``score_grid`` and the gradient grids ``grid`` with the integer
        scales ``secure_scales`` (selection, gradient); ``noise`` an int64
        buffer of shape (n_features,).  Empty: the fast path above.
    """
    n_samples = u.shape[0]
    secure = state.shape[0] > 0
    n_features = w.shape[0]
    alpha = pparams[0]
    for t in range(n_iter):
        _loss_derivatives(dcode, y, u, d)
        if sparse:
            _clipped_gradient_csc(data, indices, indptr, n_samples, d, clip, g)
        else:
            _clipped_gradient_dense(X, d, clip, g)
        if secure:
            j = _secure_select(rule, pcode, pparams, w, g, M, score_grid,
                               secure_scales[0], state, noise)
            v = _secure_entry(g[j], grid[j], secure_scales[1], state)
        else:
            # report-noisy-max: first index of the largest noisy score
            best = -np.inf
            j = 0
            for k in range(n_features):
                chi = rng_select.laplace(0.0, select_scales[k])
                if placement == 0:
                    s = _score(rule, pcode, pparams, w[k], g[k] + chi, M[k])
                else:
                    s = _score(rule, pcode, pparams, w[k], g[k], M[k]) + chi
                if s > best:
                    best = s
                    j = k
            v = g[j] + rng_grad.laplace(0.0, grad_scales[j])
        selected[t] = j
        old = w[j]
        if rule == SMOOTH:
            if pcode == L2:  # Algorithm 1 on f + alpha/2 ||w||^2
                v += alpha * old
            new = old - steps[j] * v
        else:
            new = _prox_1d(pcode, pparams, old - steps[j] * v, steps[j])
        delta = new - old
        if delta != 0.0:
            w[j] = new
            if sparse:
                for k in range(indptr[j], indptr[j + 1]):
                    i = indices[k]
                    u[i] += delta * (data[k] if dcode == SQUARES else y[i] * data[k])
            else:
                if dcode == SQUARES:
                    for i in range(n_samples):
                        u[i] += delta * X[i, j]
                else:
                    for i in range(n_samples):
                        u[i] += delta * y[i] * X[i, j]
        obj[t + 1] = _datafit_value(dcode, u) + _penalty_value(pcode, pparams, w)


def dp_gcd(X, y, datafit, penalty, *, smoothness, step, clip, selection_scales,
           noise_scales, iterations, seed, rule="gs_r", selection_noise="gradient",
           check_input=True, secure=None):
    """Differentially private (proximal) greedy coordinate descent (DP-GCD).

    From ``w = 0``, each of the ``iterations`` iterations of [1]_ (one pass
    over the data each) computes the p clipped coordinate gradients
    ``g_j = (1/n) sum_i clip(grad_j l(w; d_i), C_j)``, selects ``j`` by
    report-noisy-max over the rule's scores with ``chi_j ~ Lap(lambda'_j)``
    and updates ``w_j`` with ``g_j + Lap(lambda_j)``, step ``gamma / M_j``
    and the penalty's prox.

    Rules (``rule``):

    ``"smooth"``
        Algorithm 1: score ``|g_j + chi_j| / sqrt(M_j)``, gradient step.
        An L2 penalty is folded into the smooth objective
        ``f + alpha/2 ||w||^2`` (gradient ``g_j + alpha w_j``, constants
        ``M_j + alpha``); L1 is rejected.
    ``"gs_s"``, ``"gs_r"``, ``"gs_q"``
        Algorithm 2 (Appendix C) with the noisy GS-s, GS-r or GS-q rule and
        the proximal update.  With no penalty all three coincide with
        Algorithm 1.

    Parameters
    ----------
    X : array or scipy sparse matrix, shape (n_samples, n_features)
        Dense input is converted once to Fortran-ordered float64, sparse
        input to CSC (never densified).
    y : array, shape (n_samples,)
        Targets ({-1, +1} for logistic).
    datafit : Squares or Logistic
    penalty : NoPenalty, L1 or L2
    smoothness : array, shape (n_features,)
        Coordinate-wise smoothness constants ``M_j > 0`` of the datafit.
    step : float
        ``gamma``; coordinate steps ``gamma / M_j`` (the scores use ``M_j``
        as written in [1]_).
    clip : float or array, shape (n_features,)
        Per-sample clipping thresholds ``C_j`` (``np.inf`` for none).
    selection_scales, noise_scales : float or array, shape (n_features,)
        Laplace scales ``lambda'_j`` (selection) and ``lambda_j`` (gradient
        entry), from :func:`dpcd.privacy.calibrate_dp_gcd`; 0 for none.
    iterations : int
        ``T`` (= passes over the data).
    seed : int or None
        Seed of ``numpy.random.SeedSequence`` (streams: selection, gradient).
    rule : {"smooth", "gs_s", "gs_r", "gs_q"}, default="gs_r"
    selection_noise : {"gradient", "score"}, default="gradient"
        Where ``chi_j`` goes: inside the rule (``g_j + chi_j``, as the paper
        writes it) or added to the score; the calibration's
        ``extra["selection_noise"]`` says which its scales assume.
    check_input : bool, default=True
        Scan ``X`` for NaN/inf and check ``y``.
    secure : dpcd.privacy.secure.SecureGcd, optional
        The secure mode: the noisy max of the rounded scores and the rounded
        gradient entry with exact discrete Laplace noise from a keyed stream
        (``seed``, the scales and ``selection_noise`` are then unused).

    Returns
    -------
    result : SolverResult
        ``objective`` has length ``iterations + 1`` (after each iteration =
        pass); ``extra["selected"]`` the coordinate chosen at each
        iteration, plus ``steps``, ``rule`` and the final ``residuals`` or
        ``margins``.  ``time`` covers the whole loop, noise draws included.

    References
    ----------
    .. [1] Mangold et al., AISTATS 2023, Algorithm 1 and Appendix C.
    """
    design, (n_samples, n_features) = as_design(X)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if y.shape != (n_samples,):
        raise ValueError(f"y must have shape ({n_samples},), got {y.shape}")
    if check_input:
        values = design[2] if design[0] else design[1]
        if not np.all(np.isfinite(values)):
            raise ValueError("X contains NaN or inf")
        datafit.validate(y)
    if rule not in RULES:
        raise ValueError(f"rule must be one of {sorted(RULES)}, got {rule!r}")
    if selection_noise not in PLACEMENTS:
        raise ValueError(f"selection_noise must be one of {sorted(PLACEMENTS)}, "
                         f"got {selection_noise!r}")
    if penalty.code not in PENALTY_NAMES:
        raise ValueError(f"DP-GCD supports no, L1 and L2 penalties, got {penalty!r}")
    if rule == "smooth" and penalty.code == L1:
        raise ValueError("rule 'smooth' (Algorithm 1) needs a smooth penalty; "
                         "use 'gs_s', 'gs_r' or 'gs_q' with L1")
    M = check_smoothness(smoothness)
    if M.shape != (n_features,):
        raise ValueError(f"smoothness must have shape ({n_features},), got {M.shape}")
    step = float(step)
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"step must be finite and > 0, got {step!r}")
    alpha = float(penalty.params[0])
    steps = step / (M + alpha) if (rule == "smooth" and penalty.code == L2) else step / M
    clip = as_feature_array(clip, n_features, "clip", allow_inf=True, positive=True)
    lam_sel = as_feature_array(selection_scales, n_features, "selection_scales")
    lam = as_feature_array(noise_scales, n_features, "noise_scales")
    if int(iterations) != iterations or iterations < 0:
        raise ValueError(f"iterations must be a non-negative integer, got {iterations!r}")
    n_iter = int(iterations)

    w = np.zeros(n_features)
    u = np.zeros(n_samples) if datafit.code != SQUARES else -y.copy()  # state of w = 0
    pcode, pparams, dcode = penalty.code, penalty.params, datafit.code
    obj = np.empty(n_iter + 1)
    obj[0] = _datafit_value(dcode, u) + _penalty_value(pcode, pparams, w)
    selected = np.empty(n_iter, dtype=np.int64)
    d, g = np.empty(n_samples), np.empty(n_features)
    args = (*design, y, w, u, dcode, pcode, pparams, RULES[rule],
            PLACEMENTS[selection_noise], M, steps, clip, lam_sel, lam)
    if secure is None:
        secure_args = (np.zeros(0, dtype=np.uint64), 1.0, np.ones(2), np.ones(n_features),
                       np.zeros(0, dtype=np.int64))
    else:
        secure_args = (keystream.new_state(), float(secure.score_grid),
                       np.array([secure.selection_scale, secure.gradient_scale]),
                       as_feature_array(secure.grid, n_features, "grid", positive=True),
                       np.zeros(n_features, dtype=np.int64))
    # compile (or load from cache) before the timer: a zero-iteration call
    _dp_gcd_kernel(*args, 0, np.random.default_rng(0), np.random.default_rng(0), d, g,
                   selected, obj, *secure_args)
    rng_select, rng_grad = spawn_generators(seed, 2)
    t0 = time.perf_counter()
    _dp_gcd_kernel(*args, n_iter, rng_select, rng_grad, d, g, selected, obj, *secure_args)
    elapsed = time.perf_counter() - t0
    extra = {"selected": selected, "steps": steps, "rule": rule,
             "selection_noise": selection_noise}
    extra["residuals" if dcode == SQUARES else "margins"] = u
    return SolverResult(w=w, objective=obj, n_updates=n_iter, time=elapsed, extra=extra)
