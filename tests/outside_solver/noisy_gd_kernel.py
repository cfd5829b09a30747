"""The kernel of a solver from outside dpcd: noisy proximal full-gradient descent.

Knows nothing of epsilon: it takes the data, the step, the clipping threshold,
the noise scale and a seed. One step per pass: every record's gradient,
clipped to l2 norm ``clip``, averaged, plus Gaussian noise of std
``noise_scale``, then the penalty's prox.
"""
import time

import numpy as np
from numba import njit

from dpcd.solvers.base import SolverResult


@njit(cache=True)
def clipped_gradient_mean(X, r, clip, out):
    """``out = (1/n) sum_i min(1, clip / ||r_i x_i||) r_i x_i``.

    Parameters
    ----------
    X : array, shape (n_samples, n_features), C-ordered
    r : array, shape (n_samples,)
        Derivative of each record's loss at its prediction.
    clip : float
        l2 clipping threshold of a record's gradient.
    out : array, shape (n_features,)
        Overwritten with the clipped mean.
    """
    n, p = X.shape
    out[:] = 0.0
    for i in range(n):
        norm = 0.0
        for j in range(p):
            norm += X[i, j] * X[i, j]
        norm = abs(r[i]) * np.sqrt(norm)
        scale = r[i] if norm <= clip else r[i] * clip / norm
        for j in range(p):
            out[j] += scale * X[i, j]
    for j in range(p):
        out[j] /= n


def noisy_gd(X, y, datafit, penalty, step, clip, noise_scale, passes, seed):
    """``passes`` steps of noisy proximal gradient descent from 0.

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
    y : array, shape (n_samples,)
    datafit, penalty
        From :func:`dpcd.problems.make_problem`.
    step : float
        The step size.
    clip : float
        l2 clipping threshold of a record's gradient.
    noise_scale : float
        Std of the Gaussian noise added to the clipped mean gradient.
    passes : int
        Steps (one pass over the data each).
    seed : int or sequence of int
        Seed of the noise (``numpy.random.default_rng``).

    Returns
    -------
    SolverResult
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    rng = np.random.default_rng(seed)
    w = np.zeros(X.shape[1])
    grad = np.empty_like(w)
    objective = [datafit.value(X, y, w) + penalty.value(w)]
    elapsed = 0.0
    for _ in range(passes):
        r = datafit.raw_grad(y, X @ w)
        start = time.perf_counter()
        clipped_gradient_mean(X, r, clip, grad)
        elapsed += time.perf_counter() - start
        noisy = grad + noise_scale * rng.standard_normal(w.size)
        w = penalty.prox(w - step * noisy, step)
        objective.append(datafit.value(X, y, w) + penalty.value(w))
    return SolverResult(w=w, objective=np.asarray(objective), n_updates=passes, time=elapsed)
