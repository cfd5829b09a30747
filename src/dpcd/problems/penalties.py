"""Separable penalties ``psi(w) = sum_j psi_j(w_j)`` and their prox operators.

Plain Python classes holding numbers; ``code`` and ``params`` (``[alpha,
l1_ratio]``, float64) are what the numba kernels see
(:mod:`dpcd.problems._jit`).
"""
import numpy as np

from dpcd.problems import _jit


def _check_alpha(alpha):
    alpha = float(alpha)
    if not np.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    return alpha


def _soft_threshold(x, t):
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


class BasePenalty:
    """Common interface: ``value(w)``, ``prox(w, step)``, ``subdiff_distance``."""

    code = -1
    name = ""
    alpha = 0.0
    l1_ratio = 0.0

    @property
    def params(self):
        """Float parameters for the kernels: array ``[alpha, l1_ratio]``."""
        return np.array([self.alpha, self.l1_ratio], dtype=np.float64)

    def __repr__(self):
        return f"{type(self).__name__}(alpha={self.alpha!r})"

    def dual_scale(self, v):
        """Largest ``s`` in [0, 1] with ``psi^*(s v) < inf``; None if only v = 0."""
        return 1.0


class NoPenalty(BasePenalty):
    """No penalty: ``psi = 0``; the prox is the identity."""

    code = _jit.NONE
    name = "none"

    def __repr__(self):
        return "NoPenalty()"

    def value(self, w):
        """Penalty value: 0."""
        return 0.0

    def prox(self, w, step):
        """Identity."""
        return np.array(w, dtype=np.float64, copy=True)

    def subdiff_distance(self, w, grad):
        """Distance of ``-grad`` to the subdifferential {0}: ``|grad_j|``."""
        return np.abs(grad)

    def fenchel_young(self, w, v):
        """``psi(w) + psi^*(v) - <v, w>``: psi^* is the indicator of {0}."""
        return 0.0 if not np.any(v) else np.inf

    def dual_scale(self, v):
        """psi^* is the indicator of {0}: no scaling gives a feasible point."""
        return None


class L1(BasePenalty):
    """L1 penalty ``alpha ||w||_1`` (LASSO); prox is soft-thresholding.

    Parameters
    ----------
    alpha : float
        Regularisation strength ``lambda >= 0``.
    """

    code = _jit.L1
    name = "l1"

    def __init__(self, alpha):
        self.alpha = _check_alpha(alpha)

    def value(self, w):
        """``alpha ||w||_1``."""
        return self.alpha * float(np.sum(np.abs(w)))

    def prox(self, w, step):
        """Soft-thresholding ``sign(w) max(|w| - step alpha, 0)``.

        Parameters
        ----------
        w : array, shape (n_features,)
            Point.
        step : float or array, shape (n_features,)
            Step sizes.
        """
        w = np.asarray(w, dtype=np.float64)
        return _soft_threshold(w, np.asarray(step) * self.alpha)

    def subdiff_distance(self, w, grad):
        """Distance of ``-grad_j`` to ``alpha * d|w_j|``."""
        return np.where(
            w != 0,
            np.abs(grad + self.alpha * np.sign(w)),
            np.maximum(np.abs(grad) - self.alpha, 0.0),
        )

    def fenchel_young(self, w, v):
        """``alpha ||w||_1 - <v, w>`` for ``||v||_inf <= alpha``."""
        return float(self.alpha * np.sum(np.abs(w)) - v @ w)

    def dual_scale(self, v):
        """``min(1, alpha / ||v||_inf)`` (psi^* is the indicator of the box)."""
        vmax = float(np.max(np.abs(v))) if v.size else 0.0
        return 1.0 if vmax <= self.alpha else self.alpha / vmax


class L2(BasePenalty):
    """Squared L2 penalty ``(alpha / 2) ||w||^2``.

    Parameters
    ----------
    alpha : float
        Regularisation strength ``lambda >= 0``.
    """

    code = _jit.L2
    name = "l2"

    def __init__(self, alpha):
        self.alpha = _check_alpha(alpha)

    def value(self, w):
        """``(alpha / 2) ||w||^2``."""
        return 0.5 * self.alpha * float(np.dot(w, w))

    def prox(self, w, step):
        """``w / (1 + step alpha)``."""
        return np.asarray(w, dtype=np.float64) / (1.0 + np.asarray(step) * self.alpha)

    def subdiff_distance(self, w, grad):
        """``|grad_j + alpha w_j|``."""
        return np.abs(grad + self.alpha * w)

    def fenchel_young(self, w, v):
        """``||v - alpha w||^2 / (2 alpha)`` (psi^*(v) = ||v||^2 / (2 alpha))."""
        if self.alpha == 0:
            return 0.0 if not np.any(v) else np.inf
        r = v - self.alpha * w
        return float(r @ r) / (2.0 * self.alpha)

    def dual_scale(self, v):
        """No scaling needed when alpha > 0."""
        if self.alpha == 0:
            return None
        return 1.0


class ElasticNet(BasePenalty):
    """Elastic net ``alpha (l1_ratio ||w||_1 + (1 - l1_ratio) / 2 ||w||^2)``.

    Same parametrisation as scikit-learn's ``ElasticNet``.

    Parameters
    ----------
    alpha : float
        Regularisation strength ``>= 0``.
    l1_ratio : float
        Mixing parameter in [0, 1].
    """

    code = _jit.ELASTIC_NET
    name = "elastic_net"

    def __init__(self, alpha, l1_ratio=0.5):
        self.alpha = _check_alpha(alpha)
        l1_ratio = float(l1_ratio)
        if not 0.0 <= l1_ratio <= 1.0:
            raise ValueError(f"l1_ratio must be in [0, 1], got {l1_ratio!r}")
        self.l1_ratio = l1_ratio

    def __repr__(self):
        return f"ElasticNet(alpha={self.alpha!r}, l1_ratio={self.l1_ratio!r})"

    def value(self, w):
        """``alpha (r ||w||_1 + (1 - r)/2 ||w||^2)``."""
        r = self.l1_ratio
        return self.alpha * (
            r * float(np.sum(np.abs(w))) + 0.5 * (1.0 - r) * float(np.dot(w, w))
        )

    def prox(self, w, step):
        """Soft-threshold at ``step alpha r``, shrink by ``1 + step alpha (1 - r)``."""
        step = np.asarray(step)
        r = self.l1_ratio
        w = np.asarray(w, dtype=np.float64)
        return _soft_threshold(w, step * self.alpha * r) / (
            1.0 + step * self.alpha * (1.0 - r))

    def subdiff_distance(self, w, grad):
        """Distance of ``-grad_j`` to the elastic-net subdifferential at ``w_j``."""
        a1 = self.alpha * self.l1_ratio
        g = grad + self.alpha * (1.0 - self.l1_ratio) * w
        return np.where(
            w != 0, np.abs(g + a1 * np.sign(w)), np.maximum(np.abs(g) - a1, 0.0)
        )

    def fenchel_young(self, w, v):
        """``psi(w) + psi^*(v) - <v, w>`` coordinate-wise.

        ``psi_j^*(v) = max(|v| - alpha r, 0)^2 / (2 alpha (1 - r))`` for r < 1.
        """
        a1 = self.alpha * self.l1_ratio
        a2 = self.alpha * (1.0 - self.l1_ratio)
        if a2 == 0:
            conj = 0.0
        else:
            conj = float(np.sum(np.maximum(np.abs(v) - a1, 0.0) ** 2)) / (2.0 * a2)
        return self.value(w) + conj - float(v @ w)

    def dual_scale(self, v):
        """1 when ``(1 - l1_ratio) alpha > 0``, else as for L1."""
        if self.alpha * (1.0 - self.l1_ratio) > 0:
            return 1.0
        if self.alpha == 0:
            return None
        vmax = float(np.max(np.abs(v))) if v.size else 0.0
        return 1.0 if vmax <= self.alpha else self.alpha / vmax
