"""The end-to-end audit of DP-SCD: its kernel run on a worst-case pair of
neighbouring datasets, its noise from :func:`dpcd.privacy.calibrate_dp_scd`,
the bound from :func:`dpcd.privacy.audit.audit_scores`.

It runs a solver, so it lives with the tests, not in :mod:`dpcd.privacy`
(whose audits are of mechanisms alone).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpcd.privacy.audit import AuditResult, audit_scores
from dpcd.privacy.scd import calibrate_dp_scd, secure_dp_scd
from dpcd.problems import make_problem
from dpcd.solvers.dp_scd import dp_scd


def audit_dp_scd(
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 20,
    batch_size: int = 1,
    passes: float = 0.25,
    clip: float = 1.0,
    release: str = "theta",
    n_runs: int = 20_000,
    n_select: int | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    relation: str = "replace_special",
    variant: str = "dual",
    noise: str = "fast",
    noise_factor: float = 1.0,
) -> AuditResult:
    """Audit DP-SCD with Poisson batches end to end.

    A tiny instance run through :func:`dpcd.solvers.dp_scd` itself, with the
    noise :func:`dpcd.privacy.calibrate_dp_scd` gives for (``epsilon``,
    ``delta``, ``relation``, ``variant``; seq at ``max_batch_size="auto"``):
    ``D`` holds record k = 0 with ``x_k = e_1`` and a label that pushes every
    ζ_k to +C, the others ``x_j = e_2``; ``D'`` replaces record k by the zero
    record (``relation="replace_special"``) or, under ``"replace_one"``, by
    ``x_k = e_1`` with a label that pushes every ζ_k to −C (the two shifts
    antipodal, the worst case of the replace-one pair).  The statistic is the first coordinate of
    the released θ (``release="theta"``, what dpcd releases: the bound must
    stay below ``epsilon``), or, with ``release="alpha"``, the dual
    variables too: ``α_k + v_1`` when ``α_k`` moved (k was sampled) and
    −10⁹ otherwise — the un-noised entries of α show the batches, which removes
    the amplification by sampling (the bound may then exceed ``epsilon``).

    Parameters
    ----------
    epsilon, delta : float
        The claimed guarantee of the whole run.
    n, batch_size, passes, clip : int, int, float, float
        Records, expected batch size L, passes (T = ceil(passes·n/L)) and C.
    release : {"theta", "alpha"}
    n_runs, n_select, alpha, seed
        See :func:`audit_scores`.
    relation : {"replace_special", "replace_one"}
    variant : {"dual", "seq"}
    noise : {"fast", "secure"}
        ``"secure"``: the noise of :func:`dpcd.privacy.scd.secure_dp_scd`,
        the kernel's secure mode (batches and exact noise from a keystream
        keyed by the OS: the runs do not follow ``seed``).
    noise_factor : float
        The runs' noise, times the calibrated one (below 1: a run that the
        audit should catch).

    Returns
    -------
    AuditResult
    """
    if release not in ("theta", "alpha"):
        raise ValueError(f"release must be 'theta' or 'alpha', got {release!r}")
    if relation not in ("replace_special", "replace_one"):
        raise ValueError(f"relation must be 'replace_special' or 'replace_one', got {relation!r}")
    calibrate = secure_dp_scd if noise == "secure" else calibrate_dp_scd
    cal = calibrate(n, 2, batch_size, clip, epsilon, delta, passes=passes,
                    variant=variant, sampling="poisson", relation=relation)
    sec, cal = (cal, cal.calibration) if noise == "secure" else (None, cal)
    if sec is not None:
        sec = dataclasses.replace(sec, integer_scale=noise_factor * sec.integer_scale)
    X = np.zeros((n, 2))
    X[:, 1] = 1.0
    X[0] = (1.0, 0.0)
    y = np.zeros(n)
    y[0] = 1e6  # ζ_0 = clip at every visit (squares: ζ = (y − m − α)/(1 + κ))
    X_prime, y_prime = X.copy(), y.copy()
    if relation == "replace_one":
        y_prime[0] = -1e6  # ζ_0 = -clip: the shift opposite to D's
    else:
        X_prime[0] = 0.0
    datafit, penalty = make_problem("squares", "l2", 1.0)
    kw = dict(clip=clip, noise_scale=noise_factor * cal.noise_scales, passes=passes,
              batch_size=batch_size,
              variant=variant, sampling="poisson", check_input=False,
              return_dual=release == "alpha", secure=sec)

    def sample(rng, neighbour, size):
        Xs, ys = (X_prime, y_prime) if neighbour else (X, y)
        out = np.empty(size)
        for r in range(size):
            res = dp_scd(Xs, ys, datafit, penalty, seed=int(rng.integers(2**62)), **kw)
            if release == "theta":
                out[r] = res.w[0]
            else:
                a = res.extra["alpha"][0]
                out[r] = a + res.extra["v"][0] if a != 0.0 else -1e9
        return out

    return audit_scores(
        sample, delta=delta, n_runs=n_runs, n_select=n_select, alpha=alpha,
        seed=seed, epsilon_claimed=cal.epsilon_achieved, noise_scale=cal.noise_scales,
    )
