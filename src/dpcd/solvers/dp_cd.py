"""DP-CD: differentially private proximal coordinate descent (Algorithm 1 of [1]_).

References
----------
.. [1] P. Mangold, A. Bellet, J. Salmon, M. Tommasi. "Differentially Private
   Coordinate Descent for Composite Empirical Risk Minimization", ICML 2022.
   https://arxiv.org/abs/2110.11688
"""
import time

import numpy as np
from numba import njit

from dpcd.problems import check_smoothness, require_smooth
from dpcd.problems._jit import (
    SQUARES,
    _coordinate_gradient,
    _coordinate_gradient_csc,
    _datafit_value,
    _init_state,
    _init_state_csc,
    _noisy_coordinate_gradient,
    _penalty_value,
    _prox_1d,
    _update_state,
    _update_state_csc,
)
from dpcd.solvers.base import (
    SolverResult,
    as_feature_array,
    check_design,
    pass_checkpoints,
    spawn_generators,
)

@njit(cache=True, error_model="numpy")
def _dp_cd_kernel(sparse, X, data, indices, indptr, y, w, u, datafit_code, penalty_code,
                  penalty_params, steps, clip, noise_scales, grid, pre_noise, n_updates,
                  rng_coord,
                  rng_noise, n_inner, w_sum, start, ckpt_updates, obj, obj_last, f_reported):
    """Run ``n_updates`` DP-CD updates in place, drawing coordinates and noise.

    Parameters
    ----------
    sparse : bool
        Read the CSC arrays ``data, indices, indptr`` instead of ``X``: an
        update then costs O(nnz_j) (the gradient's zero entries are
        ``clip(0) = 0``, and only the samples of column j change state).
    X : array, shape (n_samples, n_features)
        Fortran-ordered design matrix (a (1, 1) dummy when sparse).
    data, indices, indptr : arrays
        CSC design matrix (length-1 dummies when dense).
    y : array, shape (n_samples,)
        Targets.
    w : array, shape (n_features,)
        Current iterate theta (updated in place).
    u : array, shape (n_samples,)
        Datafit state of ``w`` (residuals ``Xw - y`` or margins ``y Xw``).
    datafit_code, penalty_code : int
        Dispatch codes.
    penalty_params : array, shape (2,)
        ``[alpha, l1_ratio]``.
    steps : array, shape (n_features,)
        Coordinate steps ``gamma_j = gamma / M_j``.
    clip : array, shape (n_features,)
        Per-sample clipping thresholds ``C_j``.
    noise_scales : array, shape (n_features,)
        Noise standard deviations ``sigma_j``.
    grid : array, shape (n_features,)
        Secure mode: grid steps ``gamma_j`` (unused when ``pre_noise`` is empty).
    pre_noise : array, shape (n_updates,) or (0,)
        Secure mode: pre-drawn integer noise ``k`` (as floats, in grid steps);
        update ``t`` releases ``gamma_j (floor(g / gamma_j + 1/2) + k_t)``
        instead of ``g + sigma_j z``. Empty: the fast path.
    n_updates : int
        ``T K``, number of coordinate updates.
    rng_coord, rng_noise : numpy.random.Generator
        Streams of the coordinates (uniform in ``{0, ..., p - 1}``) and of the
        standard normal draws (noise ``eta = sigma_j z``); one draw of each per
        update, so the streams equal numpy's vectorised draws of the same
        generators.
    n_inner : int
        ``K``, updates per outer iteration for periodic averaging; 0 for the
        last iterate. ``n_updates`` is a multiple of ``K``.
    w_sum : array, shape (n_features,)
        Running ``sum_{k=1}^K theta^k`` (lazy, see ``start``).
    start : array, shape (n_features,)
        First inner index from which ``theta_j`` has held its current value.
    ckpt_updates : array of int, shape (n_ckpt,)
        Update counts after which to record the objective in ``obj[1 + c]``.
    obj, obj_last : array, shape (n_ckpt + 1,)
        Objective of the reported iterate / of theta at the checkpoints.
    f_reported : float
        Objective of the currently reported iterate (averaging only).

    Returns
    -------
    f_reported : float
    """
    n_samples = u.shape[0]
    n_features = w.shape[0]
    secure = pre_noise.shape[0] > 0
    c = 0
    for k in range(n_updates):
        j = rng_coord.integers(0, n_features)
        step = steps[j]
        if secure:  # clipped gradient rounded to the grid, plus exact integer noise
            if sparse:
                g = _coordinate_gradient_csc(datafit_code, data, indices, indptr,
                                             n_samples, y, u, j, clip[j])
            else:
                g = _coordinate_gradient(datafit_code, X, y, u, j, clip[j])
            g = grid[j] * (np.floor(g / grid[j] + 0.5) + pre_noise[k])
        # noisy (clipped) coordinate gradient, O(n_samples) or O(nnz_j)
        elif sparse:
            z = rng_noise.standard_normal()
            g = (_coordinate_gradient_csc(datafit_code, data, indices, indptr, n_samples,
                                          y, u, j, clip[j]) + noise_scales[j] * z)
        else:
            z = rng_noise.standard_normal()
            g = _noisy_coordinate_gradient(datafit_code, X, y, u, j, clip[j],
                                           noise_scales[j], z)
        old = w[j]
        new = _prox_1d(penalty_code, penalty_params, old - step * g, step)
        if new != old:
            if sparse:
                _update_state_csc(datafit_code, data, indices, indptr, y, u, j, new - old)
            else:
                _update_state(datafit_code, X, y, u, j, new - old)
            w[j] = new
            if n_inner > 0:
                # theta_j held `old` for inner indices start[j], ..., kk
                kk = k % n_inner + 1
                w_sum[j] += old * (kk - start[j])
                start[j] = kk
        if n_inner > 0 and (k + 1) % n_inner == 0:
            # bar w = (1/K) sum_{k=1}^K theta^k; restart theta from it
            for jj in range(n_features):
                w_sum[jj] += w[jj] * (n_inner + 1 - start[jj])
                w[jj] = w_sum[jj] / n_inner
                w_sum[jj] = 0.0
                start[jj] = 1
            if sparse:
                _init_state_csc(datafit_code, data, indices, indptr, y, w, u)
            else:
                _init_state(datafit_code, X, y, w, u)
            f_reported = (_datafit_value(datafit_code, u)
                          + _penalty_value(penalty_code, penalty_params, w))
        while c < ckpt_updates.shape[0] and ckpt_updates[c] == k + 1:
            f_last = (_datafit_value(datafit_code, u)
                      + _penalty_value(penalty_code, penalty_params, w))
            obj_last[1 + c] = f_last
            obj[1 + c] = f_reported if n_inner > 0 else f_last
            c += 1
    return f_reported


def n_coordinate_updates(n_features, passes):
    """``T K = max(1, round(passes * p))``: the count the calibration assumes.

    Must equal :func:`dpcd.privacy.cd.dp_cd_steps` (tested), so the
    solver never makes more releases than were accounted for.
    """
    return max(1, int(round(passes * n_features)))


def _draw_randomness(seed, n_features, n_updates):
    """The coordinates and standard normal draws of a DP-CD run, with numpy.

    The kernel draws them one by one from the same two generators
    (``SeedSequence(seed)`` spawned into coordinate and noise streams); numba's
    Generator methods give numpy's streams, so this twin lets tests replay a run.
    """
    rng_coord, rng_noise = spawn_generators(seed, 2)
    coords = rng_coord.integers(0, n_features, size=n_updates, dtype=np.int64)
    return coords, rng_noise.standard_normal(n_updates)


def dp_cd(X, y, datafit, penalty, *, smoothness, step, clip, noise_scales, passes,
          seed, averaging=False, inner_passes=None, w0=None, check_input=True,
          secure=None):
    """Differentially private proximal coordinate descent (DP-CD).

    Algorithm 1 of [1]_: at each update a coordinate ``j`` is drawn uniformly,
    the per-sample gradients ``grad_j l(w; d_i)`` are clipped to
    ``[-C_j, C_j]`` and averaged, Gaussian noise ``N(0, sigma_j^2)`` is added,
    and ``w_j <- prox_{gamma_j psi_j}(w_j - gamma_j g)`` with
    ``gamma_j = step / M_j``. One update costs O(n_samples) (residuals or
    margins are maintained); O(nnz_j) on sparse X.

    Parameters
    ----------
    X : array or scipy sparse matrix, shape (n_samples, n_features)
        Design matrix; dense input is converted once to Fortran-ordered
        float64 (pass it in that layout to avoid a copy per call), sparse
        input to CSC float64 (no copy when it already is), never densified:
        the same draws give the same iterates as the dense path up to float
        rounding, and the objective comes from the maintained state.
    y : array, shape (n_samples,)
        Targets ({-1, +1} for logistic).
    datafit : Squares or Logistic
    penalty : L1, L2, ElasticNet or NoPenalty
    smoothness : array, shape (n_features,)
        Coordinate-wise smoothness constants ``M_j > 0`` (exact or private).
    step : float
        ``gamma``; coordinate steps are ``gamma / M_j``.
    clip : float or array, shape (n_features,)
        Per-sample clipping thresholds ``C_j`` (``np.inf`` for none); see
        :func:`dpcd.algorithms.dp_cd.coordinate_clip`.
    noise_scales : float or array, shape (n_features,)
        Noise standard deviations ``sigma_j`` (e.g. from
        ``dpcd.privacy.calibrate_dp_cd``); 0 for non-private CD.
    passes : float
        Number of passes, > 0; ``T K = max(1, round(passes * n_features))``
        updates in total (fractional passes allowed, as in the DP-GCD paper's
        grids). The objective is recorded at :func:`pass_checkpoints`.
    seed : int or None
        Seed of ``numpy.random.SeedSequence``; same seed, same result bit for bit.
    averaging : bool, default=False
        If True, output the periodic average ``bar w_T`` of Algorithm 1 with
        ``K = inner_passes * n_features`` and ``T = passes / inner_passes``;
        otherwise the last iterate (as in the experiments of [1]_).
    inner_passes : int, optional
        Passes per outer iteration when averaging (default 1).
    w0 : array, shape (n_features,), optional
        Initial point (default zeros).
    check_input : bool, default=True
        Scan ``X`` for NaN/inf and check ``y``; False when the caller already
        did (a sweep validates its data once, not once per run).
    secure : dpcd.privacy.secure.SecureGaussian, optional
        Secure mode: its ``grid`` and exact integer noise (``draw``, drawn
        before the kernel runs, inside the timer) replace ``noise_scales``
        and the floating-point normals; ``seed`` then only drives the
        coordinate choices.

    Returns
    -------
    result : SolverResult
        ``objective[c]`` is the objective of the reported iterate after
        ``checkpoints[c]`` passes (with averaging: of the latest ``bar w_t``);
        ``extra`` holds ``objective_last_iterate``, ``residuals`` (squares,
        ``Xw - y``) or ``margins`` (logistic, ``y * Xw``) as maintained by the
        kernel, ``steps``, ``n_outer``/``n_inner``.

    References
    ----------
    .. [1] Mangold et al., "Differentially Private Coordinate Descent for
       Composite Empirical Risk Minimization", ICML 2022, Algorithm 1.
    """
    require_smooth(datafit, "DP-CD")
    design, y, (n_samples, n_features) = check_design(X, y, datafit, "csc", check_input)
    M = check_smoothness(smoothness)
    if M.shape != (n_features,):
        raise ValueError(f"smoothness must have shape ({n_features},), got {M.shape}")
    step = float(step)
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"step must be finite and > 0, got {step!r}")
    steps = step / M
    clip = as_feature_array(clip, n_features, "clip", allow_inf=True, positive=True)
    sigma = as_feature_array(noise_scales, n_features, "noise_scales")
    passes = float(passes)
    checkpoints = pass_checkpoints(passes)
    n_updates = n_coordinate_updates(n_features, passes)
    if averaging:
        inner_passes = 1 if inner_passes is None else int(inner_passes)
        if inner_passes < 1 or passes != int(passes) or int(passes) % inner_passes:
            raise ValueError(
                f"passes={passes:g} must be a positive multiple of inner_passes="
                f"{inner_passes} when averaging"
            )
        n_inner = inner_passes * n_features
    else:
        n_inner = 0
    # update count after which each checkpoint's objective is recorded
    ckpt_updates = np.array([n_coordinate_updates(n_features, c) for c in checkpoints[1:]],
                            dtype=np.int64)
    if w0 is None:
        w = np.zeros(n_features)
    else:
        w = np.array(w0, dtype=np.float64, copy=True)
        if w.shape != (n_features,) or not np.all(np.isfinite(w)):
            raise ValueError(f"w0 must be finite with shape ({n_features},)")

    u = np.empty(n_samples)
    if design[0]:
        _init_state_csc(datafit.code, *design[2:], y, w, u)
    else:
        _init_state(datafit.code, design[1], y, w, u)
    pcode, pparams = penalty.code, penalty.params
    f0 = _datafit_value(datafit.code, u) + _penalty_value(pcode, pparams, w)
    obj = np.empty(checkpoints.shape[0])
    obj_last = np.empty(checkpoints.shape[0])
    obj[0] = obj_last[0] = f0
    w_sum = np.zeros(n_features)
    start = np.ones(n_features, dtype=np.int64)
    grid = (np.zeros(n_features) if secure is None
            else as_feature_array(secure.grid, n_features, "grid", positive=True))
    args = (*design, y, w, u, datafit.code, pcode, pparams, steps, clip, sigma, grid)
    # compile (or load from cache) before the timer: a zero-update call
    _dp_cd_kernel(*args, np.zeros(0), 0, np.random.default_rng(0),
                  np.random.default_rng(0), n_inner, w_sum, start, ckpt_updates[:0], obj,
                  obj_last, f0)
    rng_coord, rng_noise = spawn_generators(seed, 2)
    # the timer covers drawing the coordinates and the noise, like DP-SGD's
    t0 = time.perf_counter()
    pre_noise = np.zeros(0) if secure is None else secure.draw(n_updates)
    _dp_cd_kernel(*args, pre_noise, n_updates, rng_coord, rng_noise, n_inner, w_sum,
                  start, ckpt_updates, obj, obj_last, f0)
    elapsed = time.perf_counter() - t0

    extra = {
        "objective_last_iterate": obj_last,
        "steps": steps,
        "n_inner": n_inner,
        "n_outer": int(passes) // inner_passes if n_inner else None,
        "averaging": bool(averaging),
    }
    extra["residuals" if datafit.code == SQUARES else "margins"] = u
    return SolverResult(w=w, objective=obj, n_updates=n_updates, time=elapsed,
                        extra=extra, checkpoints=checkpoints)
