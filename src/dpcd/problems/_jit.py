"""Numba helpers that dispatch on the integer ``code`` of datafits and penalties.

Datafits and penalties are plain Python classes (see :mod:`dpcd.problems.datafits`
and :mod:`dpcd.problems.penalties`); jitclasses cannot be cached on disk
(numba/numba#4830), so the compiled kernels receive an integer ``code`` plus a
small float array ``params`` and branch here. Adding a datafit or a penalty is
one class and one branch in each helper below.

Kernels keep a per-sample *state* vector ``u`` of length ``n_samples`` so that a
coordinate update costs O(n_samples):

- squares: ``u = Xw - y`` (residuals), loss ``u_i ** 2``;
- logistic: ``u = y * Xw`` (margins), loss ``log(1 + exp(-u_i))``.

Small scalar helpers (``_prox_1d``, ``_exp``) are inlined
into the kernels at numba-IR level (``inline="always"``) so that the per-step
cost of DP-SGD and the SIMD loops of DP-CD are not dominated by calls.

Notes
-----
numba's cache does not track helpers defined in other files. Where
``NUMBA_CACHE_DIR`` is set (the workflow, the Makefile), ``dpcd`` names its
subdirectory for the package's sources, so an edit here starts a fresh cache;
without it (numba's ``__pycache__`` beside the sources), clear the solvers'
``__pycache__`` directories after editing this module.
"""
import numpy as np
from llvmlite import ir
from numba import float64, int64, njit
from numba.extending import intrinsic

# Kernels are compiled with error_model="numpy" (no ZeroDivisionError branch
# in divisions, which blocks SIMD) and, for reductions over samples, fastmath
# "reassoc"/"nsz" so the sums vectorise. Results are bit-identical from run to
# run on one machine; the summation order (hence the last bits) may differ
# between CPUs with different vector widths.
FAST = {"reassoc", "nsz"}
# The logistic coordinate-gradient loop (n exps per coordinate update, the bulk
# of DP-CD's time on logistic losses) also lets LLVM contract a * b + c into
# FMAs: the exp polynomial is a Horner chain, so contraction roughly halves its
# instructions (measured ~1.4x faster loop on AVX2). Confined to
# that loop and to the objective (_datafit_value); no "nnan"/"ninf" since
# clip_j may be inf.
FAST_FMA = {"reassoc", "nsz", "contract"}

# datafit codes
SQUARES = 0
LOGISTIC = 1
# hinge is not smooth: only the dual DP-SCD kernels and (DP-)SGD read it
HINGE = 2

# penalty codes
NONE = 0
L1 = 1
L2 = 2
ELASTIC_NET = 3

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93145751953125e-1
_LN2_LO = 1.42860682030941723212e-6


@intrinsic
def _bits_to_double(typingctx, bits):
    """Reinterpret the 64 bits of an int64 as a float64."""
    sig = float64(int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@njit(inline="always", error_model="numpy")
def _exp(x):
    """``exp(x)`` in plain arithmetic so that loops calling it vectorise.

    ``x = k ln 2 + r`` with ``|r| <= ln(2) / 2`` (Cody-Waite), ``exp(r)`` by its
    degree-13 Taylor polynomial (truncation < 1e-17), times ``2^k`` built from
    its bits. Within 1 ulp of libm on [-708, 709] (tested); x is clamped to
    that range (``exp(-708) ~ 3e-308``, ``exp(709) ~ 8e307``). Inlined into
    reductions compiled with fastmath "reassoc", the two-part Cody-Waite
    reduction may be merged into one multiplication by ln 2 (relative error at
    most ``|k| * 2e-17``).
    """
    x = min(max(x, -708.0), 709.0)
    # nearest integer to x / ln 2 (llvm.floor: immune to fastmath reassociation)
    kf = np.floor(x * _LOG2E + 0.5)
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    k = int64(kf)
    return p * _bits_to_double((k + 1023) << 52)


@njit(inline="always", error_model="numpy")
def _log1p_small(t):
    """``log(1 + t)`` for ``t`` in [0, 1]: ``2 atanh(s)``, ``s = t / (2 + t) <= 1/3``.

    Odd series ``2 (s + s^3/3 + ... + s^37/37)``; truncation < 1e-19.
    """
    s = t / (2.0 + t)
    s2 = s * s
    p = 1.0 / 37.0
    p = p * s2 + 1.0 / 35.0
    p = p * s2 + 1.0 / 33.0
    p = p * s2 + 1.0 / 31.0
    p = p * s2 + 1.0 / 29.0
    p = p * s2 + 1.0 / 27.0
    p = p * s2 + 1.0 / 25.0
    p = p * s2 + 1.0 / 23.0
    p = p * s2 + 1.0 / 21.0
    p = p * s2 + 1.0 / 19.0
    p = p * s2 + 1.0 / 17.0
    p = p * s2 + 1.0 / 15.0
    p = p * s2 + 1.0 / 13.0
    p = p * s2 + 1.0 / 11.0
    p = p * s2 + 1.0 / 9.0
    p = p * s2 + 1.0 / 7.0
    p = p * s2 + 1.0 / 5.0
    p = p * s2 + 1.0 / 3.0
    p = p * s2 + 1.0
    return 2.0 * s * p


@njit(cache=True, error_model="numpy")
def _init_state(code, X, y, w, u):
    """Fill ``u`` with the datafit state of ``w``.

    Parameters
    ----------
    code : int
        Datafit code.
    X : array, shape (n_samples, n_features)
        Design matrix.
    y : array, shape (n_samples,)
        Targets.
    w : array, shape (n_features,)
        Coefficients.
    u : array, shape (n_samples,)
        Output: residuals ``Xw - y`` (squares) or margins ``y * Xw`` (logistic).
    """
    n_samples, n_features = X.shape
    for i in range(n_samples):
        u[i] = 0.0
    # column-wise accumulation: u = Xw, contiguous for Fortran-ordered X
    for j in range(n_features):
        wj = w[j]
        if wj != 0.0:
            for i in range(n_samples):
                u[i] += wj * X[i, j]
    if code == SQUARES:
        for i in range(n_samples):
            u[i] -= y[i]
    else:
        for i in range(n_samples):
            u[i] *= y[i]


@njit(inline="always", error_model="numpy")
def _logistic_loss(m):
    """``log(1 + exp(-m)) = max(-m, 0) + log1p(exp(-|m|))`` without overflow."""
    return max(-m, 0.0) + _log1p_small(_exp(-abs(m)))


@njit(cache=True, error_model="numpy")
def _loss_scalar(code, u_i):
    """Loss of one sample from its state (residual or margin)."""
    if code == SQUARES:
        return u_i * u_i
    return _logistic_loss(u_i)


@njit(cache=True, fastmath=FAST_FMA, error_model="numpy")
def _datafit_value(code, u):
    """Mean loss ``f(w) = (1/n) sum_i l(u_i)`` from the state ``u``.

    DP-CD evaluates it once per pass: on logistic losses n exps and n log1p
    polynomials, hence FMA contraction as in the coordinate gradient.
    """
    n_samples = u.shape[0]
    acc = 0.0
    if code == SQUARES:
        for i in range(n_samples):
            acc += u[i] * u[i]
    else:
        for i in range(n_samples):
            acc += _logistic_loss(u[i])
    return acc / n_samples


@njit(cache=True, fastmath=FAST, error_model="numpy")
def _coordinate_gradient(code, X, y, u, j, clip_j):
    """Mean of the per-sample j-th gradient entries, each clipped to [-C_j, C_j].

    ``(1/n) sum_i clip(x_ij * l'(z_i), C_j)``; with ``clip_j = inf`` this is
    ``grad_j f(w)``. Costs O(n_samples).
    """
    n_samples = X.shape[0]
    acc = 0.0
    if code == SQUARES:
        if clip_j == np.inf:
            for i in range(n_samples):
                acc += X[i, j] * u[i]
            return 2.0 * acc / n_samples
        # clip(2 x_ij u_i, C_j) = 2 clip(x_ij u_i, C_j / 2)
        half = 0.5 * clip_j
        for i in range(n_samples):
            g = X[i, j] * u[i]
            g = min(max(g, -half), half)
            acc += g
        return 2.0 * acc / n_samples
    return _logistic_coordinate_gradient(X, y, u, j, clip_j)


@njit(cache=True, fastmath=FAST_FMA, error_model="numpy")
def _logistic_coordinate_gradient(X, y, u, j, clip_j):
    """Logistic case of :func:`_coordinate_gradient`, one SIMD pass over column j.

    ``(1/n) sum_i clip(-x_ij y_i / (1 + exp(u_i)), C_j)``: exp (inlined
    polynomial), division, clipping and the sum in one loop that LLVM
    vectorises (packed ymm FMAs/divisions on AVX2). Within ~1e-13 of a float64
    numpy reference relative to ``mean_i |clipped term_i|`` (tested).
    """
    n_samples = X.shape[0]
    acc = 0.0
    for i in range(n_samples):
        g = -X[i, j] * y[i] / (1.0 + _exp(u[i]))
        acc += min(max(g, -clip_j), clip_j)
    return acc / n_samples


@njit(cache=True, error_model="numpy")
def _noisy_coordinate_gradient(code, X, y, u, j, clip_j, sigma_j, z):
    """Clipped coordinate gradient plus Gaussian noise ``sigma_j * z``.

    Parameters
    ----------
    code : int
        Datafit code.
    X : array, shape (n_samples, n_features)
        Design matrix (Fortran-ordered for speed).
    y : array, shape (n_samples,)
        Targets.
    u : array, shape (n_samples,)
        Datafit state (residuals or margins) of the current iterate.
    j : int
        Coordinate.
    clip_j : float
        Per-sample clipping threshold C_j (``inf`` for none).
    sigma_j : float
        Noise standard deviation.
    z : float
        A standard normal draw.

    Returns
    -------
    g : float
        ``(1/n) sum_i clip(grad_j l(w; d_i), C_j) + sigma_j z`` (line 5-7 of
        Algorithm 1 in Mangold et al. 2022).
    """
    return _coordinate_gradient(code, X, y, u, j, clip_j) + sigma_j * z


@njit(cache=True, error_model="numpy")
def _update_state(code, X, y, u, j, delta):
    """Update the state after ``w_j += delta``: O(n_samples)."""
    n_samples = X.shape[0]
    if code == SQUARES:
        for i in range(n_samples):
            u[i] += delta * X[i, j]
    else:
        for i in range(n_samples):
            u[i] += delta * y[i] * X[i, j]


@njit(cache=True, error_model="numpy")
def _init_state_csc(code, data, indices, indptr, y, w, u):
    """:func:`_init_state` for a CSC design matrix ``(data, indices, indptr)``: O(nnz)."""
    for i in range(u.shape[0]):
        u[i] = 0.0
    for j in range(w.shape[0]):
        if w[j] != 0.0:
            for k in range(indptr[j], indptr[j + 1]):
                u[indices[k]] += w[j] * data[k]
    for i in range(u.shape[0]):
        if code == SQUARES:
            u[i] -= y[i]
        else:
            u[i] *= y[i]


@njit(cache=True, fastmath=FAST, error_model="numpy")
def _coordinate_gradient_csc(code, data, indices, indptr, n_samples, y, u, j, clip_j):
    """:func:`_coordinate_gradient` for CSC X: O(nnz_j).

    A zero ``x_ij`` gives the per-sample entry ``clip(0, C_j) = 0``, so only
    the stored entries of column j are read; the mean still divides by
    ``n_samples``. Same per-entry arithmetic as the dense loops, so dense and
    sparse agree up to the summation order.
    """
    acc = 0.0
    if code == SQUARES:
        half = 0.5 * clip_j
        for k in range(indptr[j], indptr[j + 1]):
            acc += min(max(data[k] * u[indices[k]], -half), half)
        return 2.0 * acc / n_samples
    for k in range(indptr[j], indptr[j + 1]):
        i = indices[k]
        g = -data[k] * y[i] / (1.0 + _exp(u[i]))
        acc += min(max(g, -clip_j), clip_j)
    return acc / n_samples


@njit(cache=True, error_model="numpy")
def _update_state_csc(code, data, indices, indptr, y, u, j, delta):
    """:func:`_update_state` for CSC X: O(nnz_j)."""
    if code == SQUARES:
        for k in range(indptr[j], indptr[j + 1]):
            u[indices[k]] += delta * data[k]
    else:
        for k in range(indptr[j], indptr[j + 1]):
            i = indices[k]
            u[i] += delta * y[i] * data[k]


@njit(inline="always", error_model="numpy")
def _prox_1d(code, params, x, step):
    """Proximal operator of ``step * psi_j`` at the scalar ``x``.

    ``params = [alpha, l1_ratio]``.
    """
    if code == NONE:
        return x
    alpha = params[0]
    if code == L1:
        # soft-thresholding at t = step * alpha, branch-free: the noisy iterates'
        # signs are random, and mispredicted branches doubled DP-SGD's step on
        # dorothea (88 119 coordinates). Exact: one of the two terms is 0.
        t = step * alpha
        return max(x - t, 0.0) + min(x + t, 0.0)
    if code == L2:
        # argmin 1/2 (v - x)^2 + step alpha/2 v^2
        return x / (1.0 + step * alpha)
    # elastic net: alpha (r |v| + (1 - r)/2 v^2)
    t = step * alpha * params[1]
    return (max(x - t, 0.0) + min(x + t, 0.0)) / (1.0 + step * alpha * (1.0 - params[1]))


@njit(cache=True, error_model="numpy")
def _penalty_value(code, params, w):
    """Value of the separable penalty ``psi(w)``."""
    if code == NONE:
        return 0.0
    alpha = params[0]
    l1 = 0.0
    l2 = 0.0
    for j in range(w.shape[0]):
        l1 += abs(w[j])
        l2 += w[j] * w[j]
    if code == L1:
        return alpha * l1
    if code == L2:
        return 0.5 * alpha * l2
    r = params[1]
    return alpha * (r * l1 + 0.5 * (1.0 - r) * l2)
