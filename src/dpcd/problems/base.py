"""Problem construction, objective and optimality measures."""
import numpy as np

from dpcd.problems.datafits import Hinge, Logistic, Squares
from dpcd.problems.penalties import L1, L2, ElasticNet, NoPenalty

LOSSES = ("squares", "logistic", "hinge")
PENALTIES = ("l1", "l2", "elastic_net", "none")


def make_problem(loss, penalty, alpha, l1_ratio=0.5):
    """Build a ``(datafit, penalty)`` pair from names.

    Parameters
    ----------
    loss : {"squares", "logistic", "hinge"}
        Datafit name.
    penalty : {"l1", "l2", "elastic_net", "none"}
        Penalty name.
    alpha : float
        Regularisation strength ``lambda`` (ignored for "none").
    l1_ratio : float, default=0.5
        Elastic-net mixing parameter (only for "elastic_net").

    Returns
    -------
    datafit : Squares or Logistic
    penalty : L1, L2, ElasticNet or NoPenalty

    Raises
    ------
    ValueError
        If ``loss`` or ``penalty`` is not a known name.
    """
    if loss == "squares":
        datafit = Squares()
    elif loss == "logistic":
        datafit = Logistic()
    elif loss == "hinge":
        datafit = Hinge()
    else:
        raise ValueError(f"unknown loss {loss!r}; expected one of {LOSSES}")
    if penalty == "l1":
        pen = L1(alpha)
    elif penalty == "l2":
        pen = L2(alpha)
    elif penalty == "elastic_net":
        pen = ElasticNet(alpha, l1_ratio)
    elif penalty == "none":
        pen = NoPenalty()
    else:
        raise ValueError(f"unknown penalty {penalty!r}; expected one of {PENALTIES}")
    return datafit, pen


def lambda_max(X, y, datafit):
    """``||grad f(0)||_inf``: the smallest L1 strength whose solution is ``w = 0``.

    For squares ``(1/n) sum (x_i.w - y_i)^2`` this is ``2 ||X^T y||_inf / n``; for
    the logistic loss ``||X^T y||_inf / (2 n)``. It is the usual scale of lambda
    (``lambda_max x fraction``); for L2 and elastic-net penalties it is the same
    number, used as a scale only (their solutions are never exactly 0).

    Parameters
    ----------
    X : array or scipy.sparse matrix, shape (n_samples, n_features)
    y : array, shape (n_samples,)
    datafit : Squares, Logistic or Hinge

    Returns
    -------
    float
    """
    grad = datafit.gradient(X, np.asarray(y, dtype=np.float64), np.zeros(X.shape[1]))
    return float(np.max(np.abs(grad)))


def objective(X, y, w, datafit, penalty):
    """Objective ``F(w) = (1/n) sum_i l(w; (x_i, y_i)) + psi(w)``.

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Design matrix.
    y : array, shape (n_samples,)
        Targets.
    w : array, shape (n_features,)
        Coefficients.
    datafit : Squares or Logistic
    penalty : L1, L2, ElasticNet or NoPenalty

    Returns
    -------
    value : float
    """
    return datafit.value(X, y, w) + penalty.value(w)


def check_smoothness(M):
    """Validate coordinate-wise smoothness constants before dividing by them.

    Parameters
    ----------
    M : array, shape (n_features,)
        Smoothness constants.

    Returns
    -------
    M : array, shape (n_features,), float64

    Raises
    ------
    ValueError
        Naming the first column whose constant is zero, negative or not finite
        (an all-zero column: drop it before solving).
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 1:
        raise ValueError(f"smoothness must be 1-d, got shape {M.shape}")
    bad = ~(np.isfinite(M) & (M > 0))
    if np.any(bad):
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"column {j} has smoothness constant M_{j} = {M[j]!r}; constants must be "
            "finite and > 0 (an all-zero column has M_j = 0: drop it before solving)"
        )
    return M


def duality_gap(X, y, w, datafit, penalty):
    """Fenchel duality gap of ``min_w (1/n) sum_i l_i(x_i^T w) + psi(w)``.

    The dual point is ``a = l'(Xw)`` rescaled into the dual domain; the gap is
    computed as a sum of non-negative Fenchel-Young terms
    ``(1/n) sum_i [l_i(z_i) + l_i^*(a_i) - a_i z_i] + psi(w) + psi^*(v) - <v, w>``
    with ``v = -X^T a / n``, which avoids cancellation.

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Design matrix.
    y : array, shape (n_samples,)
        Targets.
    w : array, shape (n_features,)
        Coefficients.
    datafit : Squares or Logistic
    penalty : L1, L2, ElasticNet or NoPenalty

    Returns
    -------
    gap : float or None
        ``P(w) - D(a) >= 0``; None when no dual point is available (no penalty,
        or alpha = 0).
    """
    n_samples = X.shape[0]
    Xw = X @ w
    a = datafit.raw_grad(y, Xw)
    v = -(X.T @ a) / n_samples
    s = penalty.dual_scale(v)
    if s is None:
        return None
    a = s * a
    v = s * v
    return datafit.fenchel_young(y, Xw, a) / n_samples + penalty.fenchel_young(w, v)


def kkt_violation(X, y, w, datafit, penalty):
    """Largest distance of ``-grad_j f(w)`` to ``d psi_j(w_j)`` over coordinates.

    Zero exactly at minimisers of the (convex) objective.

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Design matrix.
    y : array, shape (n_samples,)
        Targets.
    w : array, shape (n_features,)
        Coefficients.
    datafit : Squares or Logistic
    penalty : L1, L2, ElasticNet or NoPenalty

    Returns
    -------
    kkt : float
    """
    grad = datafit.gradient(X, y, w)
    return float(np.max(penalty.subdiff_distance(w, grad), initial=0.0))


def prox_grad_mapping_norm(X, y, w, datafit, penalty, smoothness):
    """Norm ``||M (w - prox_{psi/M}(w - grad f(w) / M))||_{M^{-1}}``.

    The coordinate-wise proximal-gradient mapping with steps ``1 / M_j``.

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Design matrix.
    y : array, shape (n_samples,)
        Targets.
    w : array, shape (n_features,)
        Coefficients.
    datafit : Squares or Logistic
    penalty : L1, L2, ElasticNet or NoPenalty
    smoothness : array, shape (n_features,)
        Coordinate-wise smoothness constants ``M_j > 0``.

    Returns
    -------
    norm : float
    """
    M = check_smoothness(smoothness)
    steps = 1.0 / M
    grad = datafit.gradient(X, y, w)
    G = (w - penalty.prox(w - steps * grad, steps)) * M
    return float(np.sqrt(np.sum(G ** 2 / M)))
