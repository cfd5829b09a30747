"""Datafits: the smooth part ``f(w) = (1/n) sum_i l(w; (x_i, y_i))``.

Plain Python classes holding numbers (no jitclass, see numba/numba#4830). Each
has an integer ``code`` that the numba kernels dispatch on
(:mod:`dpcd.problems._jit`).

References
----------
.. [1] P. Mangold, A. Bellet, J. Salmon, M. Tommasi. "Differentially Private
   Coordinate Descent for Composite Empirical Risk Minimization", ICML 2022.
   https://arxiv.org/abs/2110.11688
"""
import numpy as np

from dpcd.lazy import issparse
from dpcd.problems import _jit


def _largest_eigenvalue_gram(X):
    """Largest eigenvalue of ``X^T X`` (squared spectral norm of X)."""
    n_samples, n_features = X.shape
    if issparse(X) and min(n_samples, n_features) <= 2000:
        # dorothea (800 x 88 119): the small Gram matrix, X never densified
        gram = X.T @ X if n_features <= n_samples else X @ X.T
        return float(np.linalg.eigvalsh(gram.toarray())[-1])
    if n_features <= 2000:
        # O(n p^2): the p x p Gram matrix, then its top eigenvalue
        return float(np.linalg.eigvalsh(X.T @ X)[-1])
    if n_samples <= 2000:
        return float(np.linalg.eigvalsh(X @ X.T)[-1])
    from scipy.sparse.linalg import svds

    return float(svds(X, k=1, return_singular_vectors=False)[0] ** 2)


class BaseDatafit:
    """Common interface of datafits.

    Subclasses define ``code``, ``name``, ``_sample_constant`` (per-sample
    smoothness is ``_sample_constant * x_ij ** 2``), ``loss(y, Xw)``,
    ``raw_grad(y, Xw)``, ``raw_hessian(y, Xw)`` and ``fenchel_young``.
    """

    code = -1
    name = ""
    smooth = True
    _sample_constant = np.nan

    def __repr__(self):
        return f"{type(self).__name__}()"

    def validate(self, y):
        """Check the targets; raise ValueError if they do not suit the loss."""
        y = np.asarray(y)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{self.name}: y contains NaN or inf")

    def value(self, X, y, w):
        """Mean loss ``f(w)``.

        Parameters
        ----------
        X : array, shape (n_samples, n_features)
            Design matrix.
        y : array, shape (n_samples,)
            Targets.
        w : array, shape (n_features,)
            Coefficients.

        Returns
        -------
        value : float
        """
        return float(np.mean(self.loss(y, X @ w)))

    def gradient(self, X, y, w):
        """Gradient ``(1/n) X^T l'(Xw)``, array, shape (n_features,)."""
        return X.T @ self.raw_grad(y, X @ w) / X.shape[0]

    def per_sample_gradients(self, X, y, w):
        """Per-sample gradients, array, shape (n_samples, n_features)."""
        return self.raw_grad(y, X @ w)[:, None] * X

    def per_sample_smoothness(self, X):
        """Per-sample coordinate-wise smoothness constants ``M_j^(i)``.

        Returns
        -------
        M : array, shape (n_samples, n_features)
            ``2 x_ij^2`` for squares, ``x_ij^2 / 4`` for logistic.
        """
        X = np.asarray(X, dtype=np.float64)
        return self._sample_constant * X ** 2

    def coordinate_smoothness(self, X):
        """Coordinate-wise smoothness constants ``M_j`` of ``f``.

        ``M_j = (1/n) sum_i M_j^(i)``: ``2 ||X_j||^2 / n`` for squares and
        ``||X_j||^2 / (4 n)`` for logistic. All-zero columns give ``M_j = 0``
        (solvers refuse them, see :func:`dpcd.problems.check_smoothness`).

        Parameters
        ----------
        X : array, shape (n_samples, n_features)
            Design matrix.

        Returns
        -------
        M : array, shape (n_features,)
        """
        if issparse(X):  # column norms without densifying
            sq = np.asarray(X.multiply(X).sum(axis=0), dtype=np.float64).ravel()
            return self._sample_constant * sq / X.shape[0]
        X = np.asarray(X, dtype=np.float64)
        return self._sample_constant * np.einsum("ij,ij->j", X, X) / X.shape[0]

    def global_smoothness(self, X):
        """Smoothness constant ``beta`` of ``f`` (largest Hessian-bound eigenvalue).

        ``2 lambda_max(X^T X) / n`` for squares, ``lambda_max(X^T X) / (4 n)``
        for logistic; DP-SGD uses the step ``gamma / beta``.
        """
        if not issparse(X):
            X = np.asarray(X, dtype=np.float64)
        return self._sample_constant * _largest_eigenvalue_gram(X) / X.shape[0]


class Squares(BaseDatafit):
    """Least squares ``l(w; (x, y)) = (w^T x - y)^2`` (no 1/2, as in [1]_).

    The kernels keep the residuals ``Xw - y``.

    References
    ----------
    .. [1] Mangold et al., "Differentially Private Coordinate Descent for
       Composite Empirical Risk Minimization", ICML 2022, Section 6.
    """

    code = _jit.SQUARES
    name = "squares"
    _sample_constant = 2.0

    def loss(self, y, Xw):
        """Per-sample losses ``(Xw - y)^2``."""
        return (Xw - y) ** 2

    def raw_grad(self, y, Xw):
        """Derivative with respect to the prediction: ``2 (Xw - y)``."""
        return 2.0 * (Xw - y)

    def raw_hessian(self, y, Xw):
        """Second derivative with respect to the prediction: 2."""
        return np.full_like(Xw, 2.0)

    def fenchel_young(self, y, Xw, a):
        """``sum_i l_i(z_i) + l_i^*(a_i) - a_i z_i`` with ``l_i^*(a) = a y_i + a^2/4``.

        Equals ``sum_i (z_i - y_i - a_i / 2)^2``, computed in that exact form.
        """
        return float(np.sum((Xw - y - 0.5 * a) ** 2))

    def dual_feasible(self, a):
        """Every ``a`` is in the domain of the conjugate."""
        return True


class Logistic(BaseDatafit):
    """Logistic loss ``l(w; (x, y)) = log(1 + exp(-y w^T x))``, ``y`` in {-1, +1}.

    The kernels keep the margins ``y * Xw``.

    References
    ----------
    .. [1] Mangold et al., "Differentially Private Coordinate Descent for
       Composite Empirical Risk Minimization", ICML 2022, Section 6.
    """

    code = _jit.LOGISTIC
    name = "logistic"
    _sample_constant = 0.25

    def validate(self, y):
        """Require labels in {-1, +1}."""
        super().validate(y)
        bad = ~np.isin(np.asarray(y), (-1.0, 1.0))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"logistic: labels must be -1 or +1, got y[{i}] = {float(np.asarray(y)[i])!r}"
            )

    def loss(self, y, Xw):
        """Per-sample losses ``log(1 + exp(-y Xw))`` (overflow-free)."""
        return np.logaddexp(0.0, -y * Xw)

    def raw_grad(self, y, Xw):
        """Derivative with respect to the prediction: ``-y / (1 + exp(y Xw))``."""
        return -y * _sigmoid(-y * Xw)

    def raw_hessian(self, y, Xw):
        """Second derivative: ``s (1 - s)`` with ``s = sigmoid(y Xw)``."""
        s = _sigmoid(y * Xw)
        return s * (1.0 - s)

    def fenchel_young(self, y, Xw, a):
        """Fenchel-Young gap ``sum_i l_i(z_i) + l_i^*(a_i) - a_i z_i``.

        With ``a_i = -y_i s_i``, ``s_i in [0, 1]``:
        ``l_i^*(a_i) = s_i log s_i + (1 - s_i) log(1 - s_i)``.
        """
        s = -y * a
        m = y * Xw
        ent = _xlogx(s) + _xlogx(1.0 - s)
        return float(np.sum(np.logaddexp(0.0, -m) + ent + s * m))

    def dual_feasible(self, a):
        """Scaling ``a`` by a factor in [0, 1] keeps it feasible."""
        return True


class Hinge(BaseDatafit):
    """Hinge loss (SVM) ``l(w; (x, y)) = max(0, 1 - y w^T x)``, ``y`` in {-1, +1}.

    Not smooth: it has no coordinate-wise smoothness constants, so DP-CD and
    the reference CD solver refuse it; the dual DP-SCD kernels solve its
    one-dimensional dual subproblem in closed form (Damaskinos et al. 2021)
    and (DP-)SGD use the subgradient ``raw_grad``.  Conjugate:
    ``l^*(a) = a y`` for ``a y`` in [-1, 0] (+inf elsewhere).
    """

    code = _jit.HINGE
    name = "hinge"
    smooth = False

    def validate(self, y):
        """Require labels in {-1, +1}."""
        super().validate(y)
        bad = ~np.isin(np.asarray(y), (-1.0, 1.0))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"hinge: labels must be -1 or +1, got y[{i}] = {np.asarray(y)[i]!r}"
            )

    def loss(self, y, Xw):
        """Per-sample losses ``max(0, 1 - y Xw)``."""
        return np.maximum(0.0, 1.0 - y * Xw)

    def raw_grad(self, y, Xw):
        """A subgradient with respect to the prediction: ``-y`` where ``y Xw < 1``, else 0."""
        return np.where(y * Xw < 1.0, -y, 0.0).astype(np.float64)

    def raw_hessian(self, y, Xw):
        """Not defined: the hinge loss is not twice differentiable."""
        raise ValueError("hinge: the loss is not twice differentiable (no Hessian)")

    def fenchel_young(self, y, Xw, a):
        """``sum_i l_i(z_i) + l_i^*(a_i) - a_i z_i`` for ``a_i = -y_i s_i``, s_i in [0, 1].

        Equals ``sum_i max(0, 1 - m_i) - s_i (1 - m_i)`` with ``m_i = y_i z_i``.
        """
        s = -y * a
        if np.any((s < 0) | (s > 1)):
            return np.inf
        m = y * Xw
        return float(np.sum(np.maximum(0.0, 1.0 - m) - s * (1.0 - m)))

    def dual_feasible(self, a):
        """Scaling ``a`` by a factor in [0, 1] keeps ``-y a`` in [0, 1]."""
        return True

    def _not_smooth(self, *args, **kwargs):
        raise ValueError(
            "hinge: the loss is not smooth, so it has no smoothness constants; "
            "DP-CD, DP-GCD and the reference CD solver need a smooth datafit "
            "(use dp_scd / seq_dp_scd / scd, or (dp_)sgd with an explicit step)"
        )

    per_sample_smoothness = _not_smooth
    coordinate_smoothness = _not_smooth
    global_smoothness = _not_smooth


def require_smooth(datafit, solver):
    """Raise a clear ValueError if ``solver`` is given a non-smooth datafit."""
    if not getattr(datafit, "smooth", True):
        raise ValueError(
            f"{solver} needs a smooth datafit, got {datafit.name!r} (not smooth); "
            "use dp_scd / seq_dp_scd / scd for the hinge loss"
        )


def _sigmoid(t):
    """Numerically stable ``1 / (1 + exp(-t))``."""
    out = np.empty_like(t, dtype=np.float64)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def _xlogx(s):
    """``s log s`` with ``0 log 0 = 0``."""
    out = np.zeros_like(s)
    pos = s > 0
    out[pos] = s[pos] * np.log(s[pos])
    return out
