"""The floating-point attack on DP-CD: its solver run on a pair of neighbouring
datasets, its noise from :func:`dpcd.privacy.calibrate_dp_cd`, the bound from
:func:`dpcd.privacy.fp_attack.attack_off_grid`.

It runs a solver, so it lives with the tests, not in :mod:`dpcd.privacy`
(whose audits are of mechanisms alone). ``bench/bench_fp_attack.py`` runs
it at larger sizes.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpcd.privacy import calibrate_dp_cd
from dpcd.privacy.audit import AuditResult
from dpcd.privacy.fp_attack import attack_off_grid
from dpcd.privacy.secure import secure_dp_cd
from dpcd.problems import NoPenalty, Squares
from dpcd.solvers import dp_cd


def dp_cd_pair(n_features: int, clip: float):
    """Least-squares data where DP-CD's clipped gradient is exactly 0 on D.

    Row 0 has every feature 1 and a label of ``−10⁶`` in D, ``+10⁶`` in D'.
    Row ``j + 1`` has feature ``j`` alone, with label ``+10⁶``. While the
    iterates stay far below 10⁶, every per-sample gradient is clipped. So on
    D each coordinate's clipped gradient is ``(C − C)/n = 0``, and on D' it
    is ``−2C/n``: the sensitivity, on every coordinate at once. X is sparse,
    so an update costs O(1).

    Returns
    -------
    X : scipy.sparse.csc_matrix, shape (p + 1, p)
    y, y_prime : ndarray, shape (p + 1,)
        The labels of D and of D'.
    reference : float
        D''s clipped coordinate gradient, ``−2C/n``.
    """
    p = int(n_features)
    X = sp.vstack([sp.csr_matrix(np.ones((1, p))), sp.identity(p, format="csr")]).tocsc()
    y = np.full(p + 1, 1e6)
    y[0] = -1e6
    y_prime = y.copy()
    y_prime[0] = 1e6
    return X, y, y_prime, -2.0 * clip / (p + 1)


def attack_dp_cd(noise: str = "fast", n_runs: int = 3_000, n_features: int = 2048,
                 passes: float = 0.25, clip: float = 2.0, epsilon: float = 1.0,
                 delta: float = 1e-5, seed: int = 0) -> AuditResult:
    """The low-bit attack on one DP-CD run of ``passes·p`` updates, claimed (ε, δ).

    The run starts at 0, with no penalty and step 1 (``M_j = 1``), so its
    iterates on D' stay multiples of ``ulp(2C/n)/2`` and the test set never
    fires there. On D a coordinate updated once holds ``−fl(σ z)``, the
    noise itself; when it is below ``C/n`` in size, its low bits usually
    give it away. More updates give more chances, and the calibrated noise
    grows only as their square root.

    Parameters
    ----------
    noise : {"fast", "secure"}
        ``"secure"`` runs ``dp_cd`` with :func:`dpcd.privacy.secure.secure_dp_cd`
        of the same calibration, as the estimators do.
    n_runs : int
        Runs per dataset.
    n_features, passes, clip : int, float, float
        ``p``, the passes (``round(passes·p)`` updates) and ``C``.
    epsilon, delta : float
        The claimed guarantee, calibrated by :func:`dpcd.privacy.calibrate_dp_cd`.
    seed : int
        Draws the fast runs' seeds.

    Returns
    -------
    AuditResult
    """
    X, y, y_prime, reference = dp_cd_pair(n_features, clip)
    n, p = X.shape
    calibration = calibrate_dp_cd(n, p, passes, clip, epsilon, delta)
    exact = secure_dp_cd(calibration, n) if noise == "secure" else None

    def release(neighbour, run_seed):
        return dp_cd(X, y_prime if neighbour else y, Squares(), NoPenalty(),
                     smoothness=np.ones(p), step=1.0, clip=clip,
                     noise_scales=calibration.noise_scales, passes=passes,
                     seed=None if exact else run_seed, secure=exact, check_input=False).w

    return attack_off_grid(release, reference, n_runs, delta, epsilon, seed=seed)
