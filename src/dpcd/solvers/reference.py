"""Non-private reference solver giving ``F*`` to high accuracy.

Cyclic proximal coordinate descent with exact steps ``1 / M_j`` [1]_, stopped
on the relative duality gap (checked every few epochs), followed by Newton
polishing: on the current support for L1/elastic net, on all coordinates for
smooth penalties (L2, none).

References
----------
.. [1] P. Richtarik, M. Takac. "Iteration complexity of randomized
   block-coordinate descent methods for minimizing a composite function",
   Mathematical Programming, 2014.
"""
import logging
import time

import numpy as np
from numba import njit

from dpcd.lazy import issparse
from dpcd.problems import (
    check_smoothness,
    duality_gap,
    kkt_violation,
    objective,
    require_smooth,
)
from dpcd.problems._jit import (
    L1,
    L2,
    ELASTIC_NET,
    NONE,
    SQUARES,
    _coordinate_gradient,
    _init_state,
    _prox_1d,
    _update_state,
)
from dpcd.solvers.base import SolverResult, check_data
from dpcd.solvers.dp_scd import duality_gap_scd, scd

log = logging.getLogger("dpcd.solvers")


@njit(cache=True, error_model="numpy")
def _cd_epochs(X, y, w, u, datafit_code, penalty_code, penalty_params, steps,
               n_epochs):
    """``n_epochs`` cyclic proximal CD epochs in place (no clipping, no noise).

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Fortran-ordered design matrix.
    y : array, shape (n_samples,)
        Targets.
    w : array, shape (n_features,)
        Iterate (updated in place).
    u : array, shape (n_samples,)
        Datafit state of ``w`` (updated in place).
    datafit_code, penalty_code : int
        Dispatch codes.
    penalty_params : array, shape (2,)
        ``[alpha, l1_ratio]``.
    steps : array, shape (n_features,)
        ``1 / M_j``.
    n_epochs : int
        Number of epochs.
    """
    n_features = X.shape[1]
    for _ in range(n_epochs):
        for j in range(n_features):
            g = _coordinate_gradient(datafit_code, X, y, u, j, np.inf)
            old = w[j]
            new = _prox_1d(penalty_code, penalty_params, old - steps[j] * g, steps[j])
            if new != old:
                _update_state(datafit_code, X, y, u, j, new - old)
                w[j] = new


@njit(cache=True, error_model="numpy")
def _cd_epochs_csc(indptr, indices, data, y, w, u, datafit_code, penalty_code,
                   penalty_params, steps, n_epochs):
    """:func:`_cd_epochs` on a CSC matrix: an epoch costs O(nnz), not O(np)."""
    n_samples = y.shape[0]
    n_features = indptr.shape[0] - 1
    for _ in range(n_epochs):
        for j in range(n_features):
            acc = 0.0
            for k in range(indptr[j], indptr[j + 1]):
                i = indices[k]
                if datafit_code == SQUARES:
                    acc += 2.0 * data[k] * u[i]
                else:
                    acc -= data[k] * y[i] / (1.0 + np.exp(u[i]))
            g = acc / n_samples
            old = w[j]
            new = _prox_1d(penalty_code, penalty_params, old - steps[j] * g, steps[j])
            if new != old:
                delta = new - old
                for k in range(indptr[j], indptr[j + 1]):
                    i = indices[k]
                    if datafit_code == SQUARES:
                        u[i] += delta * data[k]
                    else:
                        u[i] += delta * y[i] * data[k]
                w[j] = new


def _state(datafit_code, X, y, w):
    """Residuals ``Xw - y`` (squares) or margins ``y * Xw`` (logistic), CSC X."""
    z = X @ w
    return z - y if datafit_code == SQUARES else z * y


def _smooth_part_l2(penalty, w_sub):
    """Gradient and Hessian diagonal of the smooth part of the penalty on a support."""
    if penalty.code == L2:
        return penalty.alpha * w_sub, penalty.alpha
    if penalty.code == ELASTIC_NET:
        a2 = penalty.alpha * (1.0 - penalty.l1_ratio)
        a1 = penalty.alpha * penalty.l1_ratio
        return a2 * w_sub + a1 * np.sign(w_sub), a2
    if penalty.code == L1:
        return penalty.alpha * np.sign(w_sub), 0.0
    return np.zeros_like(w_sub), 0.0


def _newton_polish(X, y, w, datafit, penalty, n_steps=8):
    """Damped Newton steps on the support of ``w`` with signs fixed.

    For L1/elastic net the objective restricted to ``{v: sign(v_S) = sign(w_S),
    v_{S^c} = 0}`` is smooth; a step leaving that orthant is rejected. For L2
    and no penalty the support is all coordinates (no sign constraint).
    Returns the improved ``w`` (never worse than the input).
    """
    smooth_pen = penalty.code in (L2, NONE)
    support = np.arange(w.shape[0]) if smooth_pen else np.flatnonzero(w)
    # the restricted Hessian must be well posed and cheap relative to CD epochs
    if support.size == 0 or support.size > min(X.shape[0], 1000):
        return w
    Xs = X[:, support]
    if issparse(Xs):  # a small support (dorothea: ~72 of 88 119 columns)
        Xs = Xs.toarray()
    n_samples = X.shape[0]
    f_cur = objective(X, y, w, datafit, penalty)
    for _ in range(n_steps):
        ws = w[support]
        Xw = Xs @ ws
        pg, ph = _smooth_part_l2(penalty, ws)
        grad = Xs.T @ datafit.raw_grad(y, Xw) / n_samples + pg
        H = (Xs.T * datafit.raw_hessian(y, Xw)) @ Xs / n_samples
        H[np.diag_indices_from(H)] += ph
        try:
            d = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            d = np.linalg.lstsq(H, grad, rcond=None)[0]
        t = 1.0
        improved = False
        while t > 1e-10:
            ws_new = ws - t * d
            if smooth_pen or np.all(np.sign(ws_new) == np.sign(ws)):
                w_new = w.copy()
                w_new[support] = ws_new
                f_new = objective(X, y, w_new, datafit, penalty)
                if f_new <= f_cur:
                    improved = f_new < f_cur
                    w, f_cur = w_new, f_new
                    break
            t *= 0.5
        if not improved:
            break
    return w


def _optimality(X, y, w, datafit, penalty):
    """(relative gap or None, kkt, primal)."""
    p_obj = objective(X, y, w, datafit, penalty)
    gap = duality_gap(X, y, w, datafit, penalty)
    kkt = kkt_violation(X, y, w, datafit, penalty)
    rel = None if gap is None else gap / max(abs(p_obj), np.finfo(float).tiny)
    return rel, gap, kkt, p_obj


def reference_solve(X, y, datafit, penalty, *, tol=1e-10, max_iter=100_000,
                    check_every=10):
    """Solve ``min_w f(w) + psi(w)`` to high accuracy (non-private reference).

    Cyclic proximal CD with steps ``1 / M_j``, stopped when the relative
    duality gap ``gap / F(w) <= tol`` (or, without a dual point, i.e. no
    penalty, when the KKT violation ``max_j dist(-grad_j f, d psi_j) <= tol``
    times the gradient scale at 0). Every ``check_every`` epochs a Newton step
    on the current support is tried, which makes the tail converge fast.

    Parameters
    ----------
    X : array or scipy.sparse matrix, shape (n_samples, n_features)
        Design matrix (converted once to Fortran order; sparse input is kept
        sparse, as CSC, and epochs cost O(nnz)).
    y : array, shape (n_samples,)
        Targets.
    datafit : Squares or Logistic
    penalty : L1, L2, ElasticNet or NoPenalty
    tol : float, default=1e-10
        Target relative duality gap (or relative KKT violation).
    max_iter : int, default=100000
        Maximum number of CD epochs.
    check_every : int, default=10
        Epochs between optimality checks.

    Returns
    -------
    result : SolverResult
        ``objective`` holds ``F`` at each check; ``extra`` has ``gap`` (absolute
        duality gap or None), ``rel_gap``, ``kkt``, ``converged``, ``n_epochs``.
    """
    require_smooth(datafit, "reference_solve")
    sparse = issparse(X)
    if sparse:
        import scipy.sparse as sp

        X = sp.csc_matrix(X, dtype=np.float64)
        X.sort_indices()
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if not np.all(np.isfinite(X.data)):
            raise ValueError("X contains NaN or inf")
        datafit.validate(y)
    else:
        X, y = check_data(X, y, datafit, "F")
    n_samples, n_features = X.shape
    M = check_smoothness(datafit.coordinate_smoothness(X))
    steps = 1.0 / M
    w = np.zeros(n_features)
    u = np.empty(n_samples)
    dcode, pcode, pparams = datafit.code, penalty.code, penalty.params

    if sparse:
        def epochs(n):
            u[:] = _state(dcode, X, y, w)  # refresh the state: no drift
            _cd_epochs_csc(X.indptr, X.indices, X.data, y, w, u, dcode, pcode, pparams,
                           steps, n)
    else:
        def epochs(n):
            _init_state(dcode, X, y, w, u)  # refresh the state: no drift
            _cd_epochs(X, y, w, u, dcode, pcode, pparams, steps, n)

    epochs(0)  # compile before the timer
    kkt_scale = max(kkt_violation(X, y, w, datafit, NoPenaltyLike()), 1e-300)

    def converged(rel, kkt):
        if rel is not None:
            return rel <= tol
        return kkt <= tol * kkt_scale

    history = [objective(X, y, w, datafit, penalty)]
    elapsed = 0.0
    n_epochs = 0
    rel, gap, kkt, p_obj = _optimality(X, y, w, datafit, penalty)
    while not converged(rel, kkt) and n_epochs < max_iter:
        n = min(check_every, max_iter - n_epochs)
        t0 = time.perf_counter()
        epochs(n)
        elapsed += time.perf_counter() - t0
        n_epochs += n
        rel, gap, kkt, p_obj = _optimality(X, y, w, datafit, penalty)
        if not converged(rel, kkt):
            t0 = time.perf_counter()
            w = _newton_polish(X, y, w, datafit, penalty)
            elapsed += time.perf_counter() - t0
            rel, gap, kkt, p_obj = _optimality(X, y, w, datafit, penalty)
        history.append(p_obj)
    extra = {
        "gap": gap,
        "rel_gap": rel,
        "kkt": kkt,
        "converged": bool(converged(rel, kkt)),
        "n_epochs": n_epochs,
        "tol": tol,
    }
    return SolverResult(w=w, objective=np.array(history),
                        n_updates=n_epochs * n_features, time=elapsed, extra=extra)


class NoPenaltyLike:
    """Zero penalty used to scale the KKT criterion by ``||grad f(0)||_inf``."""

    @staticmethod
    def subdiff_distance(w, grad):
        return np.abs(grad)


def reference_hinge(X, y, datafit, penalty, tol):
    """F* of a hinge (SVM) problem: SDCA, whose duality gap certifies it.

    Passes grow tenfold until the relative duality gap is below ``tol``;
    ``extra`` gets ``gap``, ``rel_gap`` and ``passes``.
    """
    if hasattr(X, "toarray"):
        raise ValueError("the hinge reference needs dense X")
    X = np.ascontiguousarray(X)
    for passes in (100, 1000, 10000):
        result = scd(X, y, datafit, penalty, passes=passes, seed=0)
        gap = duality_gap_scd(X, y, result.extra["alpha"], datafit, penalty)
        rel_gap = gap / max(abs(float(result.objective[-1])), 1e-300)
        if rel_gap <= tol:
            break
    result.extra.update(gap=gap, rel_gap=rel_gap, passes=passes)
    log.info("SDCA reference: %d passes, relative duality gap %.3g", passes, rel_gap)
    if rel_gap > tol:  # F* is still certified to within rel_gap; say so
        log.warning("SDCA reference: relative duality gap %.3g above tol %.3g after %d passes; "
                    "F* is certified to that relative accuracy", rel_gap, tol, passes)
    return result


def reference_optimum(X, y, datafit, penalty, tol=1e-10):
    """The non-private optimum of any problem: :func:`reference_solve` for a
    smooth datafit, :func:`reference_hinge` for the hinge loss."""
    if getattr(datafit, "smooth", True):
        return reference_solve(X, y, datafit, penalty, tol=tol)
    return reference_hinge(X, y, datafit, penalty, tol)
