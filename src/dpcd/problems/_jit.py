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

Notes
-----
numba's cache does not track helpers defined in other files: after editing this
module, clear the ``__pycache__`` directories (or ``NUMBA_CACHE_DIR``) of the
solvers.
"""
import numpy as np
from numba import njit

# datafit codes
SQUARES = 0
LOGISTIC = 1

# penalty codes
NONE = 0
L1 = 1
L2 = 2
ELASTIC_NET = 3


@njit(cache=True)
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


@njit(cache=True)
def _loss_scalar(code, u_i):
    """Loss of one sample from its state (residual or margin)."""
    if code == SQUARES:
        return u_i * u_i
    # log(1 + exp(-u)) computed without overflow
    if u_i > 0.0:
        return np.log1p(np.exp(-u_i))
    return -u_i + np.log1p(np.exp(u_i))


@njit(cache=True)
def _datafit_value(code, u):
    """Mean loss ``f(w) = (1/n) sum_i l(u_i)`` from the state ``u``."""
    n_samples = u.shape[0]
    acc = 0.0
    if code == SQUARES:
        for i in range(n_samples):
            acc += u[i] * u[i]
    else:
        for i in range(n_samples):
            acc += _loss_scalar(code, u[i])
    return acc / n_samples


@njit(cache=True)
def _raw_grad_scalar(code, u_i, y_i):
    """Derivative of the loss with respect to the prediction ``z_i = x_i^T w``.

    squares: ``2 (z_i - y_i) = 2 u_i``; logistic: ``-y_i / (1 + exp(u_i))``.
    """
    if code == SQUARES:
        return 2.0 * u_i
    return -y_i / (1.0 + np.exp(u_i))


@njit(cache=True)
def _raw_grad_from_prediction(code, z_i, y_i):
    """Derivative of the loss with respect to ``z_i`` given the prediction."""
    if code == SQUARES:
        return 2.0 * (z_i - y_i)
    return -y_i / (1.0 + np.exp(y_i * z_i))


@njit(cache=True)
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
    # logistic
    for i in range(n_samples):
        g = -X[i, j] * y[i] / (1.0 + np.exp(u[i]))
        g = min(max(g, -clip_j), clip_j)
        acc += g
    return acc / n_samples


@njit(cache=True)
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


@njit(cache=True)
def _update_state(code, X, y, u, j, delta):
    """Update the state after ``w_j += delta``: O(n_samples)."""
    n_samples = X.shape[0]
    if code == SQUARES:
        for i in range(n_samples):
            u[i] += delta * X[i, j]
    else:
        for i in range(n_samples):
            u[i] += delta * y[i] * X[i, j]


@njit(cache=True)
def _prox_1d(code, params, x, step):
    """Proximal operator of ``step * psi_j`` at the scalar ``x``.

    ``params = [alpha, l1_ratio]``.
    """
    if code == NONE:
        return x
    alpha = params[0]
    if code == L1:
        # soft-thresholding at step * alpha
        t = step * alpha
        if x > t:
            return x - t
        if x < -t:
            return x + t
        return 0.0
    if code == L2:
        # argmin 1/2 (v - x)^2 + step alpha/2 v^2
        return x / (1.0 + step * alpha)
    # elastic net: alpha (r |v| + (1 - r)/2 v^2)
    r = params[1]
    t = step * alpha * r
    if x > t:
        v = x - t
    elif x < -t:
        v = x + t
    else:
        return 0.0
    return v / (1.0 + step * alpha * (1.0 - r))


@njit(cache=True)
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
