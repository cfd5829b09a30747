"""DP-SCD: differentially private stochastic coordinate descent (Damaskinos et al. 2021).

Three kernels for ``min_θ (1/N) Σ_i l_i(x_iᵀθ) + (λ/2)‖θ‖²`` (the paper's
Equation 1):

* **dual DP-SCD** (Algorithm 1): dual variables ``α`` (one per record) and the
  shared vector ``v = Σ_i α_i x_i`` (= ``Xᵀα`` for our n × p ``X``); each
  iteration samples a mini-batch ``B`` of records, solves the one-dimensional
  subproblem ``G*_j`` (Equation 8) of every ``j ∈ B`` *independently* against
  the same ``v``, scales ``ζ_j ← ζ_j / max(1, |ζ_j|/C)``, adds
  ``N(0, s²)`` to ``α_j`` for ``j ∈ B`` and to every entry of ``v``; returns
  ``θ = v/(λN)``.
* **seqDP-SCD** (Algorithm 3): the same, but the updates within the batch are
  sequential (each ``ζ_j`` sees the previous ones; ``G*_j`` with ``L = 1``,
  as in SDCA), noise after the batch.  Its sensitivity is Lemma 5's.
* **primal DP-SCD** (Algorithm 2, Appendix B): coordinates of ``θ`` with the
  shared vector ``v = Xθ`` (one entry per record); each iteration samples L
  coordinates without replacement and uses every record (q = 1).

Normalisation (check against dpcd's datafits)
----------------------------------------------
The kernels work in the paper's units.  Logistic and hinge are dpcd's
:class:`~dpcd.problems.Logistic` / :class:`~dpcd.problems.Hinge` with the
penalty ``L2(alpha)`` = ``(alpha/2)‖θ‖²`` unchanged: the paper's λ is ``alpha``.
Ridge in the paper (and its code) is ``l = ½(z − y)²`` whereas dpcd's
:class:`~dpcd.problems.Squares` is ``(z − y)²``: dpcd's objective
``(1/N)‖Xθ − y‖² + (alpha/2)‖θ‖²`` is twice the paper's with
``λ = alpha/2`` and has the same minimiser.  The kernels use ``λ = alpha/2``
and the ½-loss for squares, so ``α``, ``v``, ``ζ`` and therefore the scaling
bound C and the noise are exactly the paper's; the recorded ``objective`` is
dpcd's (twice the paper's for ridge).  To reproduce the paper's ridge with
λ, use ``L2(alpha=2λ)``.

Dual variables: ``α_i = −l_i'(x_iᵀθ)`` at the optimum, with the domain
``α_i y_i ∈ [0, 1]`` for logistic and hinge.  As Appendix A.2 says, the
domain is enforced on (a copy of) ``α_j`` *before* ``ζ_j`` is computed, never
after the noise: ``ζ_j`` is computed from the projected value and added to
the unprojected ``α_j`` (as the authors' code does), so the released ``α``
may leave the domain.

Sampling = accounting
---------------------
``sampling="poisson"`` includes every record independently with probability
``q = L/N`` in each iteration (batch size ~ Binomial(N, q); geometric gaps
between selected trials, :mod:`dpcd.solvers._poisson`), the sampling
``dpcd.privacy.calibrate_dp_scd`` accounts by default for the dual kernel;
``"without_replacement"`` draws exactly L distinct records (partial
Fisher–Yates), the default for seqDP-SCD.  The authors' code shuffles once per
epoch and takes consecutive lots while accounting as Poisson: dpcd does not.
In ``G*_j`` (Equation 8) the aggregation parameter ``σ'`` is the paper's L,
whatever the size of the batch drawn: the privacy argument for Poisson batches
needs every update of a batch to be the same whether or not a (zero) record
was also sampled, and ``σ' = |B|`` would break that (with fixed-size batches
``|B| = L`` and nothing changes).  Batches larger than L are rarely drawn
(|B| ≈ L ± √L) and each ζ is bounded by C.

Release model
-------------
What dpcd releases is ``θ = v/(λN)`` (and the objective of the θ at the
checkpoints), never ``α``: Algorithm 1 adds noise to ``α_j`` for ``j ∈ B``
only, so ``α`` would show which records were sampled.  Why the θ-sequence
meets the Poisson-subsampled Gaussian accounting with ``α`` as internal state
is proved in ``docs/method/dp_scd_release.md`` (dual with Poisson batches;
seqDP-SCD with Poisson batches at a stated L_max; fixed-size batches are not
covered by that argument, section 6 there); every DP-SCD ledger says
``released: theta``.  Private runs therefore return no ``α`` (only
``return_dual=True``, for tests and audits, hands it back).

Randomness is drawn inside the kernels from two numpy Generators (sampling,
noise) spawned from the run's seed; same seed, same result bit for bit.

References
----------
.. [1] G. Damaskinos, C. Mendler-Dünner, R. Guerraoui, N. Papandreou,
   T. Parnell. "Differentially Private Stochastic Coordinate Descent",
   AAAI 2021.  Algorithms 1-3, Lemmas 1, 4, 5, Appendix A.2.
.. [2] C. Ma, V. Smith, M. Jaggi, M. Jordan, P. Richtárik, M. Takáč. "Adding
   vs. averaging in distributed primal-dual optimization", ICML 2015.
"""
import math
import time

import numpy as np
from numba import njit

from dpcd.privacy.exact import fill_discrete_gaussian, geometric, uniform_below
from dpcd.problems._jit import FAST, FAST_FMA, HINGE, L2, LOGISTIC, SQUARES
from dpcd.solvers._normal import (_LN2, _MANTISSA, _ONE, _SQRT2, _as_bits, _as_float,
                                  _minus_2_log, new_stream, take_normals)
from dpcd.solvers._poisson import first_trial, geometric_rate, poisson_batch
from dpcd.solvers._prefetch import prefetch, prefetch_row
from dpcd.solvers.base import SolverResult, check_data, pass_checkpoints, spawn_generators

VARIANTS = ("dual", "seq", "primal")
SAMPLINGS = {"poisson": 0, "without_replacement": 1}
# rows (dual) / columns (primal) may exceed norm 1 by rounding only
_NORM_TOL = 1e-9
# secure mode: a contribution's excess over m grid steps, m·2⁻⁴⁰ ≤ 1/4 for the
# grids dpcd.privacy.secure makes, is then within the step charged for float error
_SECURE_NORM_TOL = 2.0 ** -40
# secure mode: the batch's integer sums (and α, v's updates) stay exact in float64
_EXACT_FLOAT = 2.0 ** 53
# safeguarded Newton on the logistic dual subproblem (the fallback)
_NEWTON_MAX = 60
_NEWTON_TOL = 1e-12
# Halley steps from the Lambert-W start, and the last step's size below which
# the root is taken as converged (the error after it is ~ that size cubed)
_HALLEY_STEPS = 3
_HALLEY_OK = 1e-6
_NEAR_ZERO = -1.0
# records whose logistic roots are solved together (one vectorised loop)
_CHUNK = 32


# rows fetched ahead of use in a batch
_AHEAD = 4
# secure primal: v's noise drawn this many at a time (32 KB of int64)
_NOISE_CHUNK = 4096


# ------------------------------------------------------------------ helpers
@njit(inline="always")
def _loss(code, y_i, z):
    """dpcd's loss of record i at ``z = x_iᵀθ``."""
    if code == SQUARES:
        r = z - y_i
        return r * r
    if code == LOGISTIC:
        m = y_i * z
        if m > 0:
            return np.log1p(np.exp(-m))
        return -m + np.log1p(np.exp(m))
    return max(0.0, 1.0 - y_i * z)


@njit(cache=True, fastmath=FAST, error_model="numpy")
def _objective(X, y, theta, code, alpha_pen):
    """dpcd's objective ``(1/N) Σ l(x_iᵀθ) + (alpha/2)‖θ‖²``, row-wise pass over X."""
    n, p = X.shape
    acc = 0.0
    for i in range(n):
        z = 0.0
        for j in range(p):
            z += X[i, j] * theta[j]
        acc += _loss(code, y[i], z)
    sq = 0.0
    for j in range(p):
        sq += theta[j] * theta[j]
    return acc / n + 0.5 * alpha_pen * sq


@njit(inline="always")
def _margins(X, thetas, i0, nr, m):
    """``m[r, c] = x_{i0+r}ᵀ θ_c`` for ``r < nr``: two rows against two θs at
    a time (four dot products share each load of X and of θ; 0.6 of the time
    of one dot product at a time on 10 θs)."""
    p = X.shape[1]
    nc = thetas.shape[0]
    for r in range(0, nr, 2):
        i = i0 + r
        i1 = i0 + min(r + 1, nr - 1)  # an odd last row is done twice
        for c in range(0, nc, 2):
            c1 = min(c + 1, nc - 1)  # so is an odd last θ
            a0 = 0.0
            a1 = 0.0
            b0 = 0.0
            b1 = 0.0
            for j in range(p):
                x0 = X[i, j]
                x1 = X[i1, j]
                t0 = thetas[c, j]
                t1 = thetas[c1, j]
                a0 += x0 * t0
                a1 += x0 * t1
                b0 += x1 * t0
                b1 += x1 * t1
            m[r, c] = a0
            m[r, c1] = a1
            m[i1 - i0, c] = b0
            m[i1 - i0, c1] = b1


@njit(cache=True, fastmath=FAST_FMA, error_model="numpy")
def _objectives(X, y, thetas, code, alpha_pen, out):
    """``out[c]`` = :func:`_objective` of ``thetas[c]`` for every c, in one pass over X.

    The checkpoints' objectives need not be known during the run: their θs are
    kept and evaluated together at the end, each row read once for all of them
    (:func:`_margins`), a block of rows at a time.  Logistic: ``max(−m, 0) +
    log1p(e^{−|m|})`` with the polynomial exp and log of the dual root,
    computed for the block's margins side by side (a loop that vectorises,
    where libm's calls were most of the pass).  Agrees with
    :func:`_objective` to rounding.
    """
    n, p = X.shape
    nc = thetas.shape[0]
    if nc == 0:
        return
    acc = np.zeros(nc)
    m = np.empty((_CHUNK, nc))
    for i0 in range(0, n, _CHUNK):
        nr = min(_CHUNK, n - i0)
        _margins(X, thetas, i0, nr, m)
        if code == LOGISTIC:
            for r in range(nr):
                for c in range(nc):
                    mq = y[i0 + r] * m[r, c]
                    m[r, c] = max(-mq, 0.0) + _log1p_nonneg(_exp_nonpos(-abs(mq)))
            for r in range(nr):
                for c in range(nc):
                    acc[c] += m[r, c]
        else:
            for r in range(nr):
                for c in range(nc):
                    acc[c] += _loss(code, y[i0 + r], m[r, c])
    for c in range(nc):
        sq = 0.0
        for j in range(p):
            sq += thetas[c, j] * thetas[c, j]
        out[c] = acc[c] / n + 0.5 * alpha_pen * sq


@njit(cache=True, error_model="numpy")
def _logistic_dual_root(s, ym, kappa):
    """Root ``s'`` in (0, 1) of ``logit(s') + y m + κ (s' − s) = 0``.

    The fallback of :func:`_logistic_dual_step` (which the kernels use), and
    its reference.  Safeguarded Newton (``rtsafe``) in ``u = logit(s')``:
    ``h(u) = u + c + κ σ(u)``
    with ``c = y m − κ s`` is increasing (``h' = 1 + κ σ(1 − σ) ≥ 1``) and
    changes sign on ``[−c − κ, −c]``; a Newton step that leaves the bracket or
    does not halve the previous step is replaced by bisection (plain Newton
    can cycle when κ is large).  Start at ``logit(s)`` with ``s`` kept in
    [1e-4, 1 − 1e-4] (noisy dual variables often sit on the boundary).
    """
    c = ym - kappa * s
    if kappa == 0.0:
        u = -c
    else:
        lo = -c - kappa
        hi = -c
        sc = min(max(s, 1e-4), 1.0 - 1e-4)
        u = min(max(np.log(sc / (1.0 - sc)), lo), hi)
        dxold = hi - lo
        dx = dxold
        for _ in range(_NEWTON_MAX):
            e = np.exp(-abs(u))
            sig = 1.0 / (1.0 + e) if u >= 0 else e / (1.0 + e)
            h = u + c + kappa * sig
            dh = 1.0 + kappa * sig * (1.0 - sig)
            if h > 0:
                hi = u
            else:
                lo = u
            un = u - h / dh
            if abs(2.0 * h) > abs(dxold * dh) or not (lo <= un <= hi):
                dxold = dx
                dx = 0.5 * (hi - lo)
                u = lo + dx
            else:
                dxold = dx
                dx = h / dh
                u = un
            if abs(dx) <= _NEWTON_TOL * (1.0 + abs(u)):
                break
    e = np.exp(-abs(u))
    return 1.0 / (1.0 + e) if u >= 0 else e / (1.0 + e)


_LN2_HI = 6.93147180369123816490e-01  # fdlibm's ln 2 split: k ln2_hi is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00


@njit(inline="always")
def _exp_reduce(x):
    """Cody-Waite reduction of ``x <= 0`` clamped at −708: ``x = k ln2 + r``,
    ``|r| <= ln2/2``; returns ``(k, r)``."""
    x = max(x, -708.0)
    k = np.floor(x * _INV_LN2 + 0.5)
    return k, (x - k * _LN2_HI) - k * _LN2_LO


@njit(inline="always")
def _exp_finish(k, r, p7):
    """``2^k (1 + r + … + r^6/6! + r^7 p7)``: Taylor's series from its
    ``r^7`` term on given as ``p7``, scaled by ``2^k`` built from its bits."""
    p = 0.001388888888888889 + r * p7
    p = 0.008333333333333333 + r * p
    p = 0.041666666666666664 + r * p
    p = 0.16666666666666666 + r * p
    p = 0.5 + r * p
    p = 1.0 + r * p
    p = 1.0 + r * p
    return p * _as_float(np.uint64(np.int64(k) + 1023) << np.uint64(52))


@njit(inline="always")
def _exp_nonpos(x):
    """``exp(x)`` for ``x <= 0``, branch-free so that a loop of it vectorises.

    ``x`` is clamped at −708 (the result stays a normal double): below that
    the logistic root sees ``σ(u) = e^−708`` for ``e^u``, an absolute change
    of 3e-308 in ``s'``.  Cody-Waite reduction ``x = k ln2 + r``,
    ``|r| <= ln2/2``, and Taylor's series to ``r^13/13!`` (remainder below
    5e-18 relative), scaled by ``2^k`` built from its bits.
    """
    k, r = _exp_reduce(x)
    p = 1.6059043836821613e-10  # 1/13!
    p = 2.08767569878681e-09 + r * p
    p = 2.505210838544172e-08 + r * p
    p = 2.7557319223985893e-07 + r * p
    p = 2.755731922398589e-06 + r * p
    p = 2.48015873015873e-05 + r * p
    return _exp_finish(k, r, 0.0001984126984126984 + r * p)


@njit(inline="always")
def _exp_rough(x):
    """``exp(x)`` for ``x <= 0`` to 7.4e-9 relative: :func:`_exp_nonpos` with
    Taylor's series cut at ``r^7/7!`` (the root's start and its first steps,
    whose errors the last exact step removes; (ln2/2)^8/8! e^{ln2/2})."""
    k, r = _exp_reduce(x)
    return _exp_finish(k, r, 0.0001984126984126984)  # 1/7!


@njit(inline="always")
def _log1p_nonneg(t):
    """``log(1 + t)`` for ``t >= 0`` (fdlibm's log on ``1 + t``, with the
    rounding of ``1 + t`` corrected to first order)."""
    w = 1.0 + t
    return -0.5 * _minus_2_log(w) - ((w - 1.0) - t) / w


@njit(inline="always")
def _log_rough(x):
    """``log(x)`` for a positive normal ``x`` to 6e-7 absolute, without a
    division: ``x = f 2^e`` with ``f`` in [√½, √2) and a degree-7 polynomial
    in ``f − 1`` (Chebyshev fit of log1p; the root's start only)."""
    b = _as_bits(x)
    e = float(np.int32(np.int64(b >> np.uint64(52)) - 1023))
    f = _as_float((b & _MANTISSA) | _ONE)
    big = f > _SQRT2
    t = (f * 0.5 if big else f) - 1.0
    e = e + 1.0 if big else e
    p = 0.114484355
    p = -0.186276973 + t * p
    p = 0.206117852 + t * p
    p = -0.249112106 + t * p
    p = 0.333048124 + t * p
    p = -0.500012933 + t * p
    p = 1.00000310 + t * p
    p = 3.34232691e-08 + t * p
    return e * _LN2 + p


@njit(inline="always")
def _halley(u, c, kappa, e, lo, hi):
    """One Halley step on ``h(u) = u + c + κ σ(u)`` given ``e = e^u``, kept in
    ``[lo, hi]``: ``(u − dx, dx, σ(u))``.  With ``D = 1 + e``, ``h = H/D``,
    ``h' = P/D²``, ``h'' = Q/D³``, so ``dx = h h'/(h'² − h h''/2) =
    H P D/(P² − H Q/2)``: one division."""
    d = 1.0 + e
    ke = kappa * e
    big_h = (u + c) * d + ke
    big_p = d * d + ke
    dx = big_h * big_p * d / (big_p * big_p - 0.5 * big_h * ke * (1.0 - e))
    un = min(max(u - dx, lo), hi)
    return un, u - un, e / d


@njit(inline="always")
def _logistic_dual_step(s, ym, kappa):
    """``(s' − s, converged)`` for the root ``s'`` of ``logit(s') + y m + κ (s' − s) = 0``.

    Branch-free, so that a loop over records vectorises.  In ``u = logit(s')``
    the root solves ``h(u) = u + c + κ σ(u) = 0``, ``c = y m − κ s``; ``h`` is
    increasing, convex for ``u <= 0`` and concave for ``u >= 0``.  When
    ``h(0) < 0`` (root > 0) the mirrored problem is solved instead
    (``s → 1 − s``, ``y m → −y m``, root ``−u``: ``σ(−u) = 1 − σ(u)``), with
    ``c`` computed from ``1 − s`` so that no ``κ``-sized terms cancel; so the
    root is always ``u* <= 0``, in ``[−c − κ/2, min(0, −c)]``.  Start: the
    root of ``u + c + κ e^u`` (``e^u >= σ(u)``), ``u0 = −c − W(κ e^{−c})``,
    with Winitzki's closed-form approximation of Lambert's W at
    ``log(κ e^{−c})`` (no overflow; its logs by :func:`_log_rough`), or the
    Newton step from 0 near 0; then ``_HALLEY_STEPS`` Halley steps (cubic
    convergence, one division each, :func:`_halley`), all but the last with
    :func:`_exp_rough`, and ``σ`` at the last iterate from its value at the
    one before by Taylor's series to ``dx³`` (relative, no further exp).
    Called from a loop compiled with FMA contraction.  The step ``s' − s`` is
    formed on the side where it does not cancel (``(1 − s) − σ(u)`` when
    mirrored).  ``converged`` is
    false when the last step exceeded ``_HALLEY_OK``: the caller then uses the
    safeguarded Newton of :func:`_logistic_dual_root`.
    """
    flip = ym + kappa * (0.5 - s) < 0.0  # h(0) < 0
    c = -ym - kappa * (1.0 - s) if flip else ym - kappa * s
    hi = min(0.0, -c)
    lo = -c - 0.5 * kappa
    # Winitzki: W(x) ~ l (1 − log(1 + l)/(2 + l)), l = log(1 + x), x = e^L
    # (a start needs no last ulp: plain logs of 1 + t)
    big = -c + _log_rough(kappa)  # log(κ e^{−c}); κ > 0 normal
    ln1p = max(big, 0.0) + _log_rough(1.0 + _exp_rough(-abs(big)))
    w0 = ln1p * (1.0 - _log_rough(1.0 + ln1p) / (2.0 + ln1p))
    # near 0 (where e^u is a poor σ) the Newton step from 0 is closer
    u_lin = -(c + 0.5 * kappa) / (1.0 + 0.25 * kappa)
    u = u_lin if u_lin > _NEAR_ZERO else -c - w0
    u = min(max(u, lo), hi)
    # Halley steps, the last with the exact exp (its error is what remains)
    for _ in range(_HALLEY_STEPS - 1):
        u, dx, sig = _halley(u, c, kappa, _exp_rough(u), lo, hi)
    u, dx, sig = _halley(u, c, kappa, _exp_nonpos(u), lo, hi)
    # σ at the last point from σ at the one before, Taylor in −dx to dx³
    # (relative: σ' = σ(1 − σ), no exp)
    a = 1.0 - sig
    sig = sig * (1.0 - a * dx * (1.0 - 0.5 * (1.0 - 2.0 * sig) * dx
                                 + (1.0 - 6.0 * sig * a) * dx * dx / 6.0))
    step = (1.0 - s) - sig if flip else sig - s
    return step, abs(dx) <= _HALLEY_OK * (1.0 + abs(u))


@njit(cache=True, fastmath={"contract"}, error_model="numpy")
def _logistic_dual_steps(s, ym, kappa, step, ok, nb):
    """``step[k] = s'_k − s[k]`` for ``k < nb`` (:func:`_logistic_dual_step`).

    One loop with no branches over the records (it vectorises: the roots of
    a chunk are computed side by side), then the rare unconverged ones by the
    safeguarded Newton.  ``ok`` is a work buffer.
    """
    for k in range(nb):
        step[k], ok[k] = _logistic_dual_step(s[k], ym[k], kappa[k])
    for k in range(nb):
        if not ok[k]:
            step[k] = _logistic_dual_root(s[k], ym[k], kappa[k]) - s[k]


@njit(cache=True, error_model="numpy")
def _dual_zeta(code, y_j, a_j, m, kappa):
    """Unscaled minimiser ζ of ``G*_j`` (Equation 8).

    Parameters
    ----------
    code : int
        Datafit code.
    y_j, a_j : float
        Label and current (noisy) dual variable of record j.
    m : float
        ``x_jᵀv / (λN)`` = ``x_jᵀθ(v)``.
    kappa : float
        ``σ' ‖x_j‖² / (λN)`` with ``σ'`` the batch size (dual) or 1 (seq).
    """
    if code == SQUARES:
        # l = ½(z − y)²: l*(−a) = −a y + a²/2
        return (y_j - m - a_j) / (1.0 + kappa)
    # domain s = α y ∈ [0, 1] enforced before computing ζ (Appendix A.2)
    s = min(max(a_j * y_j, 0.0), 1.0)
    if code == HINGE:
        if kappa > 0.0:
            t = s + (1.0 - y_j * m) / kappa
        else:
            t = 1.0
        t = min(max(t, 0.0), 1.0)
        return y_j * (t - s)
    step, ok = _logistic_dual_step(s, y_j * m, kappa)
    if not ok:
        step = _logistic_dual_root(s, y_j * m, kappa) - s
    return y_j * step


@njit(cache=True, error_model="numpy")
def _scale(z, clip):
    """Step 8: ``ζ / max(1, |ζ|/C)``."""
    a = abs(z)
    if a > clip:
        return z * (clip / a)
    return z


# ------------------------------------------------------------------ secure mode
@njit(inline="always")
def _round_row(X, i, zq, out):
    """Record ``i``'s contribution ``ζ x_i`` in grid steps, each entry rounded
    (``zq = ζ/γ``), added to ``out``; returns its rounded ``ζ/γ`` (the α entry)."""
    for j in range(X.shape[1]):
        out[j] += np.floor(zq * X[i, j] + 0.5)
    return np.floor(zq + 0.5)


@njit(inline="always")
def _secure_poisson_batch(state, q, pos, t, n, idx):
    """:func:`dpcd.solvers._poisson.poisson_batch` on the keystream: the gaps
    between selected trials are exact Geometric(q) draws (failures before the
    first success, :func:`dpcd.privacy.exact.geometric`)."""
    first = t * n
    b = 0
    while pos < first + n:
        idx[b] = pos - first
        b += 1
        pos += 1 + geometric(state, q)
    return b, pos


# ------------------------------------------------------------------ dual / seq
@njit(inline="always")
def _prefetch_record(X, y, alpha, row_norm2, i):
    """Prefetch record ``i``: its row of X and its entries of y, α and ‖x‖²
    (each a cache miss of its own when records are drawn at random)."""
    prefetch_row(X, i)
    prefetch(y, i)
    prefetch(alpha, i)
    prefetch(row_norm2, i)


@njit(cache=True, fastmath=FAST, error_model="numpy")
def _dual_kernel(X, y, alpha, v, code, lam, alpha_pen, clip, noise_scale, batch_size,
                 sampling, sequential, n_iter, rng_sample, noise_key, noise_buf, noise, idx,
                 dv, perm, batch_sizes, row_norm2, theta, checkpoints, obj, state, grid,
                 integer_scale, knoise, aq):
    """Run ``n_iter`` iterations of dual DP-SCD (Algorithm 1) or seqDP-SCD (Algorithm 3).

    Parameters
    ----------
    X : array, shape (n, p)
        C-ordered rows ``x_i`` (read row by row).
    y : array, shape (n,)
    alpha : array, shape (n,)
        Dual variables (updated in place).
    v : array, shape (p,)
        Shared vector ``Σ α_i x_i`` (updated in place, noisy).
    code : int
        Datafit code.
    lam : float
        The paper's λ (``alpha/2`` for squares, see the module docstring).
    alpha_pen : float
        dpcd's L2 strength, for the recorded objective.
    clip : float
        C (``inf``: no scaling).
    noise_scale : float
        Std of the noise added to each entry of the [α_B; v] update.
    batch_size : int
        L.
    sampling : int
        0 Poisson (rate L/n), 1 fixed size L without replacement.
    sequential : bool
        Algorithm 3 (sequential updates, ``σ' = 1``) instead of Algorithm 1.
    n_iter : int
    rng_sample : numpy.random.Generator
        Stream of the sampling.
    noise_key : uint64
        Key of the noise stream (:mod:`dpcd.solvers._normal`), drawn in order:
        each iteration takes its next ``|B| + p`` normals (``|B| + n``, primal).
    noise_buf : array, shape (even,)
        Work buffer of the noise stream.
    noise : array, shape (n + p,)
        Work buffer: one iteration's noise.
    idx : int array, shape (n,)
        Batch buffer.
    dv : array, shape (p,)
        Work buffer (zeros): Δv of the batch.
    perm : int array, shape (n,)
        Persistent permutation for sampling without replacement.
    batch_sizes : int array, shape (n_iter,)
        Output: size of each batch.
    row_norm2 : array, shape (n,)
        ``‖x_i‖²``.
    theta : array, shape (len(checkpoints), p)
        Work buffer: θ at each checkpoint, whose objectives are computed
        together after the last iteration (:func:`_objectives`).
    checkpoints : int array
        Iterations after which ``obj[1 + c]`` is recorded.
    obj : array
    state : uint64 array
        Secure mode when non-empty: the keystream the batches and the exact
        discrete Gaussian noise are drawn from (see "Secure mode" in the
        module docstring); ``alpha`` and ``v`` then hold grid steps.
    grid : float
        Secure mode: the grid step ``γ = C/m``.
    integer_scale : float
        Secure mode: scale of the discrete Gaussian, in grid steps.
    knoise : int64 array, shape (n + p,)
        Secure mode: work buffer, one iteration's integer noise.
    aq : array, shape (n,)
        Secure mode: work buffer, the rounded ``ζ/γ`` of the batch.
    """
    n, p = X.shape
    lam_n = lam * n
    secure = state.shape[0] > 0
    # secure: α and v hold grid steps, read as real values through ``unit``
    unit = grid if secure else 1.0
    inv_grid = 1.0 / grid if secure else 1.0
    lam_n_v = lam_n / unit  # x·v / (λN) with v in grid steps
    q = batch_size / n
    full, lam_q = geometric_rate(q)
    pos = 0
    if sampling == 0 and n_iter > 0:
        # the first selected trial (gap from trial −1)
        pos = geometric(state, q) if secure else first_trial(rng_sample, full, lam_q)
    c = 0
    noise_start, noise_pos = -noise_buf.shape[0], 0  # noise buffer empty
    # a chunk of logistic roots (dual): s, y m, κ, the steps, converged flags
    ch_s, ch_ym, ch_kappa, ch_step = (np.empty(_CHUNK), np.empty(_CHUNK),
                                      np.empty(_CHUNK), np.empty(_CHUNK))
    ch_ok = np.empty(_CHUNK, dtype=np.bool_)
    for t in range(n_iter):
        # ---- Step 5: the mini-batch, drawn as the accountant assumes
        if sampling == 0 and secure:
            b, pos = _secure_poisson_batch(state, q, pos, t, n, idx)
        elif sampling == 0:
            # Poisson: every record independently with probability L/N, the
            # gaps between selected trials Geometric (dpcd.solvers._poisson)
            b, pos = poisson_batch(rng_sample, full, lam_q, pos, t, n, idx)
        else:
            # partial Fisher-Yates: the first L entries are a uniform L-subset
            for k in range(batch_size):
                r = k + (uniform_below(state, n - k) if secure
                         else rng_sample.integers(0, n - k))
                tmp = perm[k]
                perm[k] = perm[r]
                perm[r] = tmp
                idx[k] = perm[k]
            b = batch_size
        batch_sizes[t] = b
        # the batch's first rows (the loops below fetch _AHEAD records on),
        # then, while they arrive, the batch's noise (fast mode: normals
        # depend on their position in the stream alone, so drawing them
        # before the updates that they follow changes nothing)
        for k in range(min(_AHEAD, b)):
            _prefetch_record(X, y, alpha, row_norm2, idx[k])
        if noise_scale > 0.0 and not secure:
            # on α_B (|B| entries) then on v (p entries)
            noise_start = take_normals(noise_key, noise_buf, noise_start, noise_pos,
                                       noise[:b + p])
            noise_pos += b + p
        # ---- Steps 6-11, one read of each row: ζ_i from the dot with v, then
        # the row's contribution to Δv (independent) or to v (sequential)
        # σ' of Equation 8: L itself, never the drawn |B| (see "Sampling =
        # accounting" in the module docstring: with |B| here a zero record's
        # inclusion would move every other update of its batch)
        sigma_p = 1.0 if sequential else float(batch_size)
        if code == LOGISTIC and not sequential:
            # the roots of a chunk of records side by side (their updates are
            # independent in Algorithm 1), then the chunk's rows again, from cache
            for k0 in range(0, b, _CHUNK):
                nb = min(_CHUNK, b - k0)
                for a in range(nb):
                    i = idx[k0 + a]
                    if k0 + a + _AHEAD < b:
                        _prefetch_record(X, y, alpha, row_norm2, idx[k0 + a + _AHEAD])
                    dot = 0.0
                    for j in range(p):
                        dot += X[i, j] * v[j]
                    ch_s[a] = min(max(alpha[i] * unit * y[i], 0.0), 1.0)
                    ch_ym[a] = y[i] * dot / lam_n_v
                    # any κ > 0 for a zero record: its update is 0 below
                    nrm = row_norm2[i]
                    ch_kappa[a] = sigma_p * (nrm if nrm > 0.0 else 1.0) / lam_n
                _logistic_dual_steps(ch_s, ch_ym, ch_kappa, ch_step, ch_ok, nb)
                for a in range(nb):
                    i = idx[k0 + a]
                    z = _scale(y[i] * ch_step[a], clip) if row_norm2[i] > 0.0 else 0.0
                    if secure:
                        aq[k0 + a] = _round_row(X, i, z * inv_grid, dv)
                    else:
                        alpha[i] += z
                        for j in range(p):
                            dv[j] += z * X[i, j]
            b_rows = 0
        else:
            b_rows = b
        for k in range(b_rows):
            i = idx[k]
            if k + _AHEAD < b:
                # rows of a batch are far apart in memory: fetch ahead
                _prefetch_record(X, y, alpha, row_norm2, idx[k + _AHEAD])
            dot = 0.0
            if secure and sequential:
                # the batch's integer sum is kept apart until its noise
                for j in range(p):
                    dot += X[i, j] * (v[j] + dv[j])
            else:
                for j in range(p):
                    dot += X[i, j] * v[j]
            nrm = row_norm2[i]
            if nrm > 0.0:
                z = _scale(_dual_zeta(code, y[i], alpha[i] * unit, dot / lam_n_v,
                                      sigma_p * nrm / lam_n), clip)
            else:
                # a zero record moves no v, hence no θ: it is the paper's
                # "removed" record (Lemma 1's proof takes its update as 0)
                z = 0.0
            if secure:
                # Algorithm 1 and 3 alike: the next records see v + dv
                aq[k] = _round_row(X, i, z * inv_grid, dv)
                continue
            # records of a batch are distinct: α_i is read by its own update only
            alpha[i] += z
            if sequential:
                # Algorithm 3, Steps 8-9: the next update sees this one
                for j in range(p):
                    v[j] += z * X[i, j]
            else:
                # Algorithm 1: every ζ is computed against the same v
                for j in range(p):
                    dv[j] += z * X[i, j]
        if secure:
            fill_discrete_gaussian(state, integer_scale, knoise[:b + p])
            for k in range(b):
                alpha[idx[k]] += aq[k] + knoise[k]
            for j in range(p):
                v[j] += dv[j] + knoise[b + j]
                dv[j] = 0.0
        elif not sequential:
            for j in range(p):
                v[j] += dv[j]
                dv[j] = 0.0
        if noise_scale > 0.0 and not secure:
            for k in range(b):
                alpha[idx[k]] += noise_scale * noise[k]
            for j in range(p):
                v[j] += noise_scale * noise[b + j]
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            for j in range(p):
                theta[c, j] = v[j] / lam_n_v
            c += 1
    _objectives(X, y, theta[:c], code, alpha_pen, obj[1:1 + c])


# ------------------------------------------------------------------ primal
@njit(cache=True, fastmath=FAST, error_model="numpy")
def _primal_kernel(X, y, theta, v, code, lam, alpha_pen, clip, noise_scale, batch_size,
                   n_iter, rng_sample, noise_key, noise_buf, noise, perm, d, zeta, col_norm2,
                   checkpoints, obj, state, grid, integer_scale, knoise):
    """Run ``n_iter`` iterations of primal DP-SCD (Algorithm 2) in place.

    Each iteration draws L distinct coordinates (partial Fisher-Yates), computes
    ``ζ_j = argmin G_j`` independently against the same ``v = Xθ`` with the
    separable surrogate ``(1/(LN)) Σ_i l_i(v_i + L ζ x_ij) + (λ/2)(θ_j + ζ)²``
    (Jensen's inequality makes it an upper bound for L parallel updates):
    exact for the ½-squares, one majorisation step with curvature 1/4 for the
    logistic loss.  Then scaling by C, noise ``N(0, s²)`` on ``θ_B`` and on all
    n entries of ``v``.

    Parameters
    ----------
    X : array, shape (n, p)
        Fortran-ordered (columns are read).
    theta : array, shape (p,)
    v : array, shape (n,)
        Shared vector ``Xθ`` (noisy).
    d : array, shape (n,)
        Work buffer: ``l'(v_i)``.
    zeta : array, shape (p,)
    col_norm2 : array, shape (p,)
        ``‖X_{:,j}‖²``.
    knoise : int64 array, shape (n + p,)
        Secure mode: work buffer of the integer noise (the first ``max(L, _NOISE_CHUNK)``
        entries are used).
    Other parameters as in :func:`_dual_kernel` (secure mode: ``theta`` and
    ``v`` hold grid steps, and ``d`` is also the buffer of the batch's
    integer sum, once the gradients are taken).
    """
    n, p = X.shape
    beta = 1.0 if code == SQUARES else 0.25
    secure = state.shape[0] > 0
    unit = grid if secure else 1.0
    inv_grid = 1.0 / grid if secure else 1.0
    c = 0
    noise_start, noise_pos = -noise_buf.shape[0], 0  # noise buffer empty
    for t in range(n_iter):
        # l'(v_i) once per iteration: every update of the batch reads the same v
        if code == SQUARES:
            for i in range(n):
                d[i] = v[i] * unit - y[i]
        else:
            for i in range(n):
                d[i] = -y[i] / (1.0 + np.exp(y[i] * v[i] * unit))
        for k in range(batch_size):
            r = k + (uniform_below(state, p - k) if secure else rng_sample.integers(0, p - k))
            tmp = perm[k]
            perm[k] = perm[r]
            perm[r] = tmp
        for k in range(batch_size):
            j = perm[k]
            g = 0.0
            for i in range(n):
                g += d[i] * X[i, j]
            g /= n
            z = -(g + lam * theta[j] * unit) / (batch_size * beta * col_norm2[j] / n + lam)
            zeta[k] = _scale(z, clip)
        if secure:
            # the batch's integer sum in d (read no more; the first column sets
            # it), then its noise
            for k in range(batch_size):
                zq = zeta[k] * inv_grid
                j = perm[k]
                if k == 0:
                    for i in range(n):
                        d[i] = np.floor(zq * X[i, j] + 0.5)
                else:
                    for i in range(n):
                        d[i] += np.floor(zq * X[i, j] + 0.5)
                zeta[k] = np.floor(zq + 0.5)
            fill_discrete_gaussian(state, integer_scale, knoise[:batch_size])
            for k in range(batch_size):
                theta[perm[k]] += zeta[k] + knoise[k]
            # v's n draws a cache-sized chunk at a time, each added while in
            # cache (i.i.d. draws: how many per fill does not change their law).
            # The kernel's time fell to about 0.89 of that with one fill of
            # n + L draws (50 000 x 90, L = 10, CPU time, same-process A/B)
            for i0 in range(0, n, _NOISE_CHUNK):
                i1 = min(n, i0 + _NOISE_CHUNK)
                fill_discrete_gaussian(state, integer_scale, knoise[:i1 - i0])
                for i in range(i0, i1):
                    v[i] += d[i] + knoise[i - i0]
            batch = 0  # the updates are done
        else:
            batch = batch_size
        for k in range(batch):
            j = perm[k]
            z = zeta[k]
            theta[j] += z
            for i in range(n):
                v[i] += z * X[i, j]
        if noise_scale > 0.0 and not secure:
            noise_start = take_normals(noise_key, noise_buf, noise_start, noise_pos,
                                       noise[:batch_size])
            noise_pos += batch_size
            for k in range(batch_size):
                theta[perm[k]] += noise_scale * noise[k]
            noise_start = take_normals(noise_key, noise_buf, noise_start, noise_pos,
                                       noise[:n])
            noise_pos += n
            for i in range(n):
                v[i] += noise_scale * noise[i]
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            obj[1 + c] = _objective(X, y, theta * unit if secure else theta, code, alpha_pen)
            c += 1


# ------------------------------------------------------------------ driver
def scd_iterations(n_samples, n_features, batch_size, passes, variant):
    """Iterations T of a run: ``ceil(passes·N/L)`` (dual, seq) or ``ceil(passes·p/L)``.

    The same T as :func:`dpcd.privacy.calibrate_dp_scd` with ``passes``.
    """
    size = n_features if variant == "primal" else n_samples
    return int(math.ceil(float(passes) * size / batch_size))


def _checkpoint_iterations(passes, size, batch_size):
    """Iteration after which each pass checkpoint (beyond 0) is reached."""
    return np.array([int(math.ceil(float(c) * size / batch_size))
                     for c in pass_checkpoints(passes)[1:]], dtype=np.int64)


def _squared_norms(X, axis):
    """``‖x_i‖²`` per row (axis 1) or per column (axis 0): one pass over X,
    shared by the norm check and the kernels."""
    return np.einsum("ij,ij->i" if axis == 1 else "ij,ij->j", X, X)


def _initial_objective(X, y, code, alpha_pen):
    """:func:`_objective` at θ = 0 without reading X: every margin is 0 (its
    sign aside, which no loss sees: (0 - y)², log(1 + e^0), max(0, 1)), and
    the same compiled loop sums the same losses in the same order, so the
    bits are those of ``_objective(X, y, 0, ...)`` (tested)."""
    return _objective(np.zeros((X.shape[0], 1)), y, np.zeros(1), code, alpha_pen)


def _check_norms(squared, axis, what, tol=_NORM_TOL):
    """Refuse rows (axis 1) or columns (axis 0) of norm above ``1 + tol`` (from
    :func:`_squared_norms`)."""
    norms = np.sqrt(squared)
    bad = np.flatnonzero(norms > 1.0 + tol)
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            f"{what} {k} of X has l2 norm {norms[k]:.6g} > 1: the DP-SCD sensitivity "
            f"({'Lemma 4' if axis == 0 else 'Lemmas 1 and 5'}) assumes "
            f"{'feature columns' if axis == 0 else 'records (rows)'} of norm at most 1; "
            + ("normalise each row to unit norm (a per-record transformation, e.g. "
               "dpcd.estimators' normalize_rows) before solving" if axis == 1 else
               "primal DP-SCD needs columns of norm <= 1, e.g. unit-norm rows divided "
               "by sqrt(n_samples)")
        )


def _secure_args(secure, clip, n, p, batch_size, primal):
    """The kernels' secure arguments: a fresh keystream keyed by the OS, the
    grid, the integer scale and the noise buffer; refuses a grid coarser than
    ``clip/m`` or sums that could leave float64's exact integers."""
    from dpcd.privacy import keystream

    grid, m, s = float(secure.grid), int(secure.resolution), float(secure.integer_scale)
    if clip > grid * m:
        raise ValueError(f"noise='secure': clip = {clip!r} exceeds the grid's C = {grid * m!r}")
    if m * _SECURE_NORM_TOL > 0.25:
        raise ValueError(f"noise='secure': the grid C/{m} is too fine for the norm check")
    # one entry of a batch's sum: |B| <= n records (primal: L coordinates) of
    # at most m + 1 steps, plus the noise within its excluded tail (40 s)
    terms = batch_size if primal else n
    if terms * (m + 1.0) + 40.0 * s >= _EXACT_FLOAT:
        raise ValueError("noise='secure': a batch's integer sum could exceed 2**53")
    return keystream.new_state(), grid, s, np.empty(n + p, dtype=np.int64)


def dp_scd(X, y, datafit, penalty, *, clip, noise_scale, passes, batch_size, seed,
           variant="dual", sampling="poisson", check_input=True, return_dual=False,
           secure=None):
    """Differentially private stochastic coordinate descent (dual, seq or primal).

    Solves ``min_θ f(θ) + (alpha/2)‖θ‖²`` for dpcd's squares, logistic or
    hinge datafit (see the module docstring for the ridge normalisation).

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Design matrix; C-ordered for dual/seq (rows are read), Fortran-ordered
        for primal (columns are read); converted once otherwise.
    y : array, shape (n_samples,)
        Targets ({-1, +1} for logistic and hinge).
    datafit : Squares, Logistic or Hinge
        Primal DP-SCD: squares or logistic only.
    penalty : L2
        ``(alpha/2)‖θ‖²`` with ``alpha > 0`` (the paper's Equation 1).
    clip : float
        Scaling bound C of each ``ζ_j`` (``np.inf``: no scaling).
    noise_scale : float
        Std of the noise on every entry of the [α_B; v] (or [θ_B; v]) update:
        ``calibrate_dp_scd(...).noise_scales``; 0 for a non-private run.
    passes : float
        Epochs: ``T = ceil(passes·N/L)`` iterations (dual, seq) or
        ``ceil(passes·p/L)`` (primal), as ``calibrate_dp_scd(passes=...)``.
    batch_size : int
        L: expected (Poisson) or exact (without replacement) batch of records
        (dual, seq), or number of coordinates per iteration (primal).
    seed : int, sequence of int or None
        Seed of ``numpy.random.SeedSequence`` (streams: sampling, noise).
    variant : {"dual", "seq", "primal"}
        Algorithm 1, 3 or 2.
    sampling : {"poisson", "without_replacement", "none"}
        Records' sampling (dual, seq); must be what the budget was accounted
        for.  Primal uses every record each step: ``"none"`` only.
    check_input : bool, default=True
        Scan X for NaN/inf and check y.
    return_dual : bool, default=False
        Also return the dual variables ``α`` of a private run (dual, seq).
        They are internal state: the ledger covers θ only (α is noised on the
        sampled records only, so it shows the batches; see the module
        docstring).  For tests and audits; never release them.
    secure : dpcd.privacy.secure.LatticeGaussian, optional
        The secure mode (:func:`dpcd.privacy.secure_dp_scd`): its ``grid``
        ``γ = C/m`` (``clip`` at most ``C``) and integer scale; the batches and
        the exact discrete Gaussian noise come from a keystream keyed by the
        OS, ``seed`` and ``noise_scale`` are not used.

    Returns
    -------
    result : SolverResult
        ``w`` is ``θ = v/(λN)`` (dual, seq) or ``θ`` (primal); ``objective``
        is dpcd's objective of that θ at ``pass_checkpoints(passes)``.
        ``extra``: ``alpha`` (dual variables, dual/seq; non-private runs or
        ``return_dual=True`` only), ``v``,
        ``batch_sizes`` (records per iteration), ``n_iter``, ``lam`` (the
        paper's λ), ``variant``, ``sampling``.  ``time`` covers sampling, noise
        and updates (JIT excluded).

    Raises
    ------
    ValueError
        Unknown variant/sampling, non-L2 penalty, hinge with primal, and, for
        a private run (``noise_scale > 0``), rows (dual, seq) or columns
        (primal) of norm > 1.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if penalty.code != L2 or not penalty.alpha > 0:
        raise ValueError(f"DP-SCD solves L2-regularised problems with alpha > 0 (the "
                         f"paper's Equation 1), got {penalty!r}")
    if datafit.code not in (SQUARES, LOGISTIC, HINGE):
        raise ValueError(f"DP-SCD: unsupported datafit {datafit!r}")
    primal = variant == "primal"
    if primal:
        if sampling != "none":
            raise ValueError("sampling: primal DP-SCD uses every record each step (q = 1); "
                             f"sampling must be 'none', got {sampling!r}")
        if datafit.code == HINGE:
            raise ValueError("primal DP-SCD: the hinge loss has no smooth coordinate "
                             "subproblem; use the dual (dp_scd) for SVMs")
    elif sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {tuple(SAMPLINGS)} for {variant} "
                         f"DP-SCD, got {sampling!r}")
    X, y = check_data(X, y, datafit, "F" if primal else "C", check_input)
    n, p = X.shape
    clip = float(clip)
    if not clip > 0:
        raise ValueError(f"clip must be > 0, got {clip!r}")
    noise_scale = float(noise_scale)
    if not (np.isfinite(noise_scale) and noise_scale >= 0):
        raise ValueError(f"noise_scale must be finite and >= 0, got {noise_scale!r}")
    size = p if primal else n
    if isinstance(batch_size, bool) or int(batch_size) != batch_size \
            or not 1 <= batch_size <= size:
        raise ValueError(f"batch_size must be an integer in [1, "
                         f"{'n_features' if primal else 'n_samples'} = {size}], "
                         f"got {batch_size!r}")
    batch_size = int(batch_size)
    checkpoints = pass_checkpoints(passes)
    squared_norms = _squared_norms(X, 0 if primal else 1)
    if noise_scale > 0 or secure is not None:
        _check_norms(squared_norms, 0 if primal else 1, "column" if primal else "row",
                     _NORM_TOL if secure is None else _SECURE_NORM_TOL)

    alpha_pen = penalty.alpha
    lam = 0.5 * alpha_pen if datafit.code == SQUARES else alpha_pen
    n_iter = scd_iterations(n, p, batch_size, passes, variant)
    ckpts = _checkpoint_iterations(passes, size, batch_size)
    obj = np.empty(len(checkpoints))
    rng_sample, rng_noise = spawn_generators(0 if secure is not None else seed, 2)
    noise_key, noise_buf = new_stream(rng_noise)
    noise_bufs = (noise_buf, np.empty(max(n, p)))
    fast = (np.zeros(0, dtype=np.uint64), 1.0, 1.0, np.zeros(0, dtype=np.int64))
    secure_args = fast if secure is None else _secure_args(secure, clip, n, p, batch_size,
                                                           primal)
    dcode = datafit.code
    if primal:
        w = np.zeros(p)
        v = np.zeros(n)
        obj[0] = _initial_objective(X, y, dcode, alpha_pen)
        perm = np.arange(p, dtype=np.int64)
        d = np.empty(n)
        zeta = np.empty(p)
        col_norm2 = squared_norms
        args = (X, y, w, v, dcode, lam, alpha_pen, clip, noise_scale, batch_size)
        # compile (or load from the cache) before the timer: zero iterations
        _primal_kernel(*args, 0, np.random.default_rng(0), noise_key, *noise_bufs, perm,
                       d, zeta, col_norm2, ckpts[:0], obj, *fast)
        t0 = time.perf_counter()
        _primal_kernel(*args, n_iter, rng_sample, noise_key, *noise_bufs, perm, d, zeta,
                       col_norm2, ckpts, obj, *secure_args)
        elapsed = time.perf_counter() - t0
        if secure is not None:  # grid steps to values
            w *= secure.grid
            v *= secure.grid
        batch_sizes = np.full(n_iter, batch_size, dtype=np.int64)
        extra = {"v": v}
    else:
        alpha = np.zeros(n)
        v = np.zeros(p)
        w = np.zeros(p)
        obj[0] = _initial_objective(X, y, dcode, alpha_pen)
        idx = np.empty(n, dtype=np.int64)
        dv = np.zeros(p)
        perm = np.arange(n, dtype=np.int64)
        batch_sizes = np.zeros(n_iter, dtype=np.int64)
        row_norm2 = squared_norms
        args = (X, y, alpha, v, dcode, lam, alpha_pen, clip, noise_scale, batch_size,
                SAMPLINGS[sampling], variant == "seq")
        thetas = np.empty((len(ckpts), p))
        aq = np.empty(n if secure is not None else 0)
        noise_bufs = (noise_buf, np.empty(n + p))  # one iteration's noise
        _dual_kernel(*args, 0, np.random.default_rng(0), noise_key, *noise_bufs, idx, dv,
                     perm, batch_sizes, row_norm2, thetas, ckpts[:0], obj, *fast, aq)
        t0 = time.perf_counter()
        _dual_kernel(*args, n_iter, rng_sample, noise_key, *noise_bufs, idx, dv, perm,
                     batch_sizes, row_norm2, thetas, ckpts, obj, *secure_args, aq)
        elapsed = time.perf_counter() - t0
        if secure is not None:  # grid steps to values
            alpha *= secure.grid
            v *= secure.grid
        w = v / (lam * n)
        extra = {"v": v}
        if (noise_scale == 0 and secure is None) or return_dual:
            extra["alpha"] = alpha
    extra.update({"batch_sizes": batch_sizes, "n_iter": n_iter, "lam": lam,
                  "variant": variant, "sampling": sampling})
    return SolverResult(w=w, objective=obj, n_updates=n_iter, time=elapsed, extra=extra,
                        checkpoints=checkpoints)


def dual_objective(X, y, alpha, datafit, penalty):
    """Dual objective ``D(α)`` in dpcd's units (``P(θ) ≥ D(α)``, equal at the optimum).

    ``D(α) = −(1/N) Σ_i l_i^*(−α_i) − ‖Xᵀα‖² / (2λN²)`` (the negative of the
    paper's Equation 3) with the paper's λ and losses, times 2 for squares
    (dpcd's objective is twice the paper's, see the module docstring).
    ``−inf`` when some ``α_i y_i`` leaves [0, 1] (logistic, hinge).

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
    y : array, shape (n_samples,)
    alpha : array, shape (n_samples,)
        Dual variables (``result.extra["alpha"]``).
    datafit : Squares, Logistic or Hinge
    penalty : L2

    Returns
    -------
    value : float
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    code = datafit.code
    lam = 0.5 * penalty.alpha if code == SQUARES else penalty.alpha
    u = X.T @ alpha
    quad = float(u @ u) / (2.0 * lam * n * n)
    if code == SQUARES:
        # l = ½(z − y)²: l*(−a) = −a y + a²/2
        conj = np.mean(-alpha * y + 0.5 * alpha ** 2)
        return 2.0 * (-conj - quad)
    s = alpha * y
    if np.any((s < 0) | (s > 1)):
        return -np.inf
    if code == HINGE:
        conj = np.mean(-s)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = np.where(s > 0, s * np.log(s), 0.0) + \
                np.where(s < 1, (1 - s) * np.log1p(-s), 0.0)
        conj = np.mean(ent)
    return -conj - quad


def duality_gap_scd(X, y, alpha, datafit, penalty):
    """Duality gap ``P(θ(α)) − D(α)`` with ``θ(α) = Xᵀα/(λN)`` (Equation 4), dpcd's units."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    lam = 0.5 * penalty.alpha if datafit.code == SQUARES else penalty.alpha
    theta = X.T @ alpha / (lam * n)
    primal = datafit.value(X, y, theta) + penalty.value(theta)
    return primal - dual_objective(X, y, alpha, datafit, penalty)


def scd(X, y, datafit, penalty, *, passes, seed, check_input=True):
    """Non-private SCD/SDCA: the sequential dual kernel, no scaling, no noise.

    Each pass visits the records in a fresh random order (one batch of size
    N drawn without replacement, sequential updates with ``σ' = 1``: SDCA of
    Shalev-Shwartz and Zhang 2013).  Same normalisation and return value as
    :func:`dp_scd`.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    return dp_scd(X, y, datafit, penalty, clip=np.inf, noise_scale=0.0, passes=passes,
                  batch_size=X.shape[0], seed=seed, variant="seq",
                  sampling="without_replacement", check_input=check_input)
