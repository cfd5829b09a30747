"""One DP-SGD step's arithmetic, shared by the solver's kernels.

Both kernel modules (:mod:`dpcd.solvers.dp_sgd`, common random numbers, and
:mod:`dpcd.solvers._dp_sgd_independent`, a stream per run) run these same
operations in the same order, so a run's bits do not depend on which kernel
ran it (tested).
"""
import numpy as np
from numba import njit

from dpcd.problems._jit import HINGE, L1, L2, NONE, SQUARES, _datafit_value, _penalty_value


@njit(inline="always", error_model="numpy")
def _dot_row(X, i, w):
    """``X[i] . w`` over dense row ``i`` with four partial sums (j mod 4), so
    consecutive multiply-adds do not wait on each other (a single sum is one
    dependent chain of n_features additions). A fixed order in plain
    arithmetic: the same bits on every call and in every kernel using it."""
    n_features = w.shape[0]
    a0 = a1 = a2 = a3 = 0.0
    stop = n_features - n_features % 4
    for j in range(0, stop, 4):
        a0 += X[i, j] * w[j]
        a1 += X[i, j + 1] * w[j + 1]
        a2 += X[i, j + 2] * w[j + 2]
        a3 += X[i, j + 3] * w[j + 3]
    for j in range(stop, n_features):
        a0 += X[i, j] * w[j]
    return (a0 + a1) + (a2 + a3)


@njit(inline="always", error_model="numpy")
def _predict(sparse, X, data, indices, indptr, i, w):
    """``x_i . w`` from CSR row ``i`` (O(nnz_i)) or dense row ``i``."""
    if sparse:
        z = 0.0
        for s in range(indptr[i], indptr[i + 1]):
            z += data[s] * w[indices[s]]
        return z
    return _dot_row(X, i, w)


# runs whose objectives share one read of X (their residuals, OBJECTIVE_RUNS x
# n_samples doubles, are buffered): a checkpoint of K runs reads X K / 8 times,
# not K; a dense row's 8 dot products run side by side in registers (the
# lanes of :func:`_lanes`: 8, fixed)
OBJECTIVE_RUNS = 8


@njit(inline="always", error_model="numpy")
def _lanes(a, x, w):
    """``a[b] + x * w[b]`` for the 8 lanes of the tuple ``a`` (a tuple, not an
    array, so that the partial sums stay in registers and vectorise)."""
    return (a[0] + x * w[0], a[1] + x * w[1], a[2] + x * w[2], a[3] + x * w[3],
            a[4] + x * w[4], a[5] + x * w[5], a[6] + x * w[6], a[7] + x * w[7])


@njit(inline="always", error_model="numpy")
def _dot_columns(X, i, WT):
    """The four partial sums (j mod 4) of :func:`_dot_row` of dense row ``i``
    with each of the 8 columns of ``WT``: each lane the same operations in the
    same order as :func:`_dot_row` (so the same bits)."""
    n_features = WT.shape[0]
    a0 = a1 = a2 = a3 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    stop = n_features - n_features % 4
    for j in range(0, stop, 4):
        a0 = _lanes(a0, X[i, j], WT[j])
        a1 = _lanes(a1, X[i, j + 1], WT[j + 1])
        a2 = _lanes(a2, X[i, j + 2], WT[j + 2])
        a3 = _lanes(a3, X[i, j + 3], WT[j + 3])
    for j in range(stop, n_features):
        a0 = _lanes(a0, X[i, j], WT[j])
    return a0, a1, a2, a3


@njit(cache=True, error_model="numpy")
def _objectives(sparse, X, data, indices, indptr, y, W, active, datafit_code,
                penalty_code, penalty_params, out):
    """``out[k] = F(W[k])`` for the first ``active`` rows: a row-wise pass over
    C-ordered X per :data:`OBJECTIVE_RUNS` rows of W, O(n_samples n_features)
    per row of W, or over CSR ``(data, indices, indptr)``, O(nnz + n_features).

    The margins (residuals for squares) go to a buffer and the mean loss is
    taken over it by DP-CD's SIMD reduction (:func:`_datafit_value`): at 8
    features the loss, not the products, is most of the cost. Each run's
    margins are those of :func:`_predict` (the same bits however many runs
    share the pass).
    """
    n_samples = y.shape[0]
    n_features = W.shape[1]
    block = max(1, min(active, OBJECTIVE_RUNS))
    U = np.empty((block, n_samples))
    WT = np.empty((n_features, OBJECTIVE_RUNS))  # lanes past the block's runs: 0
    for k0 in range(0, active, block):
        m = min(active - k0, block)
        for j in range(n_features):
            for b in range(OBJECTIVE_RUNS):
                WT[j, b] = W[k0 + b, j] if b < m else 0.0
        for i in range(n_samples):
            if sparse or m == 1:
                for b in range(m):
                    z = _predict(sparse, X, data, indices, indptr, i, W[k0 + b])
                    U[b, i] = z - y[i] if datafit_code == SQUARES else y[i] * z
            else:
                a0, a1, a2, a3 = _dot_columns(X, i, WT)
                for b in range(m):
                    z = (a0[b] + a1[b]) + (a2[b] + a3[b])
                    U[b, i] = z - y[i] if datafit_code == SQUARES else y[i] * z
        for b in range(m):
            u = U[b]
            if datafit_code == HINGE:
                total = 0.0
                for i in range(n_samples):
                    total += max(0.0, 1.0 - u[i])
                loss = total / n_samples
            else:
                loss = _datafit_value(datafit_code, u)
            out[k0 + b] = loss + _penalty_value(penalty_code, penalty_params, W[k0 + b])


@njit(inline="always", error_model="numpy")
def _prox_form(code, params, step):
    """``(t, d)`` with ``prox_{step psi}(x) = (max(x - t, 0) + min(x + t, 0)) / d``
    for every separable penalty: soft-thresholding at ``t`` then ridge
    shrinkage by ``d``. The same values as :func:`_prox_1d` (``t = 0`` gives
    ``x`` exactly and ``d = 1`` divides exactly), without its branch on the
    penalty inside the loop over coordinates, which kept that loop scalar."""
    if code == NONE:
        return 0.0, 1.0
    alpha = params[0]
    if code == L1:
        return step * alpha, 1.0
    if code == L2:
        return 0.0, 1.0 + step * alpha
    return step * alpha * params[1], 1.0 + step * alpha * (1.0 - params[1])


@njit(inline="always", error_model="numpy")
def _clipped_derivative(datafit_code, yi, pred, row_norm, clip):
    """``l'(pred)``, scaled so that ``||l'(pred) x_i|| = |l'(pred)| ||x_i|| <= clip``."""
    # libm's exp, not the vectorisable polynomial the coordinate kernels use:
    # one exp per step sits on the critical path, where latency counts (135 vs
    # 165 ns per step on Electricity)
    if datafit_code == SQUARES:
        d = 2.0 * (pred - yi)
    elif datafit_code == HINGE:
        # subgradient of max(0, 1 - y z)
        d = -yi if yi * pred < 1.0 else 0.0
    else:
        d = -yi / (1.0 + np.exp(yi * pred))
    norm = abs(d) * row_norm
    if norm > clip:
        d *= clip / norm
    return d


@njit(inline="always", error_model="numpy")
def _add_clipped_gradient(sparse, X, data, indices, indptr, y, i, w, g, datafit_code,
                          row_norm, clip):
    """g += record i's gradient at w, its derivative clipped (every DP-SGD kernel)."""
    pred = _predict(sparse, X, data, indices, indptr, i, w)
    d = _clipped_derivative(datafit_code, y[i], pred, row_norm, clip)
    if sparse:
        for s in range(indptr[i], indptr[i + 1]):
            g[indices[s]] += d * data[s]
    else:
        for j in range(X.shape[1]):
            g[j] += d * X[i, j]


@njit(inline="always", error_model="numpy")
def _prox_update(w, v, step, penalty_code, penalty_params, batch_size):
    """``w <- prox_{step psi}(w - step v / b)``, ``v`` the noisy gradient sum,
    in the branch-free form of :func:`_prox_form` so the loop vectorises; the
    divisions are skipped when they are by 1 (exact either way)."""
    shrink, divide = _prox_form(penalty_code, penalty_params, step)
    if batch_size == 1.0 and divide == 1.0:
        for j in range(w.shape[0]):
            x = w[j] - step * v[j]
            w[j] = max(x - shrink, 0.0) + min(x + shrink, 0.0)
    else:
        for j in range(w.shape[0]):
            x = w[j] - step * (v[j] / batch_size)
            w[j] = (max(x - shrink, 0.0) + min(x + shrink, 0.0)) / divide


@njit(inline="always", error_model="numpy")
def _prox_update_sum(w, g, scale, noise, step, penalty_code, penalty_params, batch_size):
    """:func:`_prox_update` of ``v = g + scale * noise`` (``g`` None: ``v = scale *
    noise``) in one pass: the same operations, so the same bits, without
    writing ``v`` and reading it back (three passes over the iterate's length
    were most of a step on wide data)."""
    shrink, divide = _prox_form(penalty_code, penalty_params, step)
    plain = batch_size == 1.0 and divide == 1.0
    for j in range(w.shape[0]):
        v = scale * noise[j] if g is None else g[j] + scale * noise[j]
        w[j] = _prox_step(w[j], v, step, shrink, divide, batch_size, plain)


@njit(inline="always", error_model="numpy")
def _prox_step(w, v, eta, shrink, divide, batch_size, plain):
    """``prox(w - eta v / b)`` for one coordinate of one run: :func:`_prox_update`'s
    arithmetic, ``plain`` when both of its divisions are by 1."""
    if plain:
        x = w - eta * v
        return max(x - shrink, 0.0) + min(x + shrink, 0.0)
    # v / 1 is v exactly: a division saved at batch size 1 (ridge: divide > 1)
    x = w - eta * v if batch_size == 1.0 else w - eta * (v / batch_size)
    return (max(x - shrink, 0.0) + min(x + shrink, 0.0)) / divide
