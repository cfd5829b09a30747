"""Secure noise: exact discrete samplers on a grid, seeds never recorded.

The fast path's samplers are floating-point (numba's ziggurat normals, numpy's
inverse-CDF Laplace) fed by a seeded PCG64 generator whose seed is recorded:
its guarantee assumes an idealised sampler and a secret seed (Mironov, CCS
2012, showed how the low-order bits of floating-point Laplace noise leak the
input).  The secure mode (``noise="secure"``) instead

* rounds each released quantity to a grid ``γ`` (``q = floor(x/γ + 1/2)``,
  an integer),
* adds integer noise ``k`` drawn by the exact samplers of
  :mod:`dpcd.privacy.exact` on a ChaCha20 keystream keyed by the OS (discrete
  Gaussian or discrete Laplace),
* releases ``γ·(q + k)``: a deterministic function of the integer ``q + k``,
  so its floating-point representation reveals nothing more.

Grid and sensitivity.  With ``γ = Δ/m`` (``m`` = :data:`RESOLUTION` grid
steps per sensitivity), two values ``x, x'`` with ``|x − x'| ≤ Δ`` round to
integers with ``|q − q'| ≤ ⌈Δ/γ⌉ = m``: ``floor(· + 1/2)`` is monotone and
commutes with integer shifts, so ``q' ≤ round(x + m γ) = q + m``.  The ledger
charges ``m + 1`` grid steps, i.e. the rounded value moves by at most
``Δ + γ``: the extra step absorbs the floating-point error of computing
``x`` (a mean of ``n`` clipped terms, error at most ``n·2⁻⁵³·Δ·n/2`` in grid
units ``m``; :func:`check_grid` refuses runs where it could reach half a
step).  The integer noise scale is ``z·(m + 1)`` for the fast path's noise
multiplier ``z``, so the secure noise is ``(m + 1)/m`` times the fast one
(0.1 % at ``m = 1000``).

Accounting.  A discrete Gaussian ``N_Z(0, s²)`` with integer sensitivity
``Δ`` has Rényi divergence at most ``α Δ²/(2 s²)`` at every order α, the
continuous Gaussian's (Canonne, Kamath, Steinke, NeurIPS 2020, Prop. 5 /
Thm. 4: it is ``Δ²/(2s²)``-zCDP).  So the RDP accountant's
``GaussianDpEvent(z)`` composed ``T`` times bounds the secure DP-CD run.
Where the fast path's calibration is PLD's (``accountant`` ``"auto"`` when
PLD wins, or ``"pld"``), the secure mode accounts the discrete Gaussian
itself: dp_accounting's ``from_discrete_gaussian_mechanism`` (integer
sensitivity ``m + 1``, connect-the-dots, a pessimistic estimate) composed
``T`` times, at integer scales ``r·z·m`` for the ratios ``r`` of
:data:`PLD_RATIOS` (the noise is ``r`` times the fast path's), the first
that meets the target; if none does, RDP's scale.  Its Theorem 7 bounds the
hockey-stick divergence of every shift ``|q − q'| ≤ Δ`` by that of the shift
``Δ`` (tested by exact sums), so the pair at ``Δ = m + 1`` dominates each
update, and dominating pairs compose.  A discrete Laplace of scale ``t``
with integer sensitivity ``Δ`` is ``Δ/t``-DP exactly like the continuous
one (the pmf ratio at shift ``Δ`` is ``e^{Δ/t}``), so the private
smoothness release keeps its pure-DP line.

Randomness that does not affect privacy (DP-CD's coordinate choices: the
accounting holds for every fixed coordinate sequence) stays on the fast
generator, seeded from the OS's secure source and never recorded.

Lattice Gaussian (vector releases on sampled batches: :func:`secure_lattice`).
dp_accounting has no PLD of a subsampled multivariate discrete Gaussian, so
these releases are accounted by their closeness to the *rounded* continuous
Gaussian run, a post-processing of the continuous Gaussian mechanism the fast
path accounts.  Each record's contribution (ℓ2 norm ≤ C) is rounded
coordinate-wise to the grid ``γ = C/m`` (``m`` a power of two), so a sum is
an integer vector and its ℓ2 sensitivity in grid steps is at most
``Δ = m·u + r·(⌈√d/2⌉ + 1)`` (``u`` the fast sensitivity in units of C, ``r``
the rounded contributions that differ between neighbours: rounding moves a
d-vector by at most ``√d/2``; the ``+1`` absorbs the float error, below
``m(d + 16)·2⁻⁵²`` ≤ 1/4 when ``m(d + 16) ≤ 2⁵⁰``).  Integer noise scale
``s = z·Δ``.  For ``N_Z(0, s²)`` (pmf ``φ(k)/Z``, ``φ`` the ``N(0, s²)``
density, ``Z = Σφ(k) = 1 + 2Σ_{j≥1} e^{−2π²s²j²}`` by Poisson summation) and
``R = round(N(0, s²))`` (``p_R(k) = φ(k)∫_{−1/2}^{1/2} cosh(ku/s²)
e^{−u²/2s²} du``, so ``ln(p_R/φ) ∈ [−1/(8s²), k²/(8s⁴)]``), at every
``|k| ≤ K·s``: ``|ln p_D(k)/p_R(k)| ≤ ρ(s) = (K²/8 + 1/8)/s² + 3e^{−2π²s²}``
(:func:`lattice_closeness`), and both laws put at most
``τ = 2e^{−(K − 1/s)²/2}`` beyond ``K·s``.  A run of ``N`` draws, each given
the past (mixtures over batches keep pointwise bounds), has an output law
within ``e^{±a}``, ``a = N·ρ(s)``, of the rounded continuous run's, off an
event of probability ``N·τ``: if the continuous run is ``(ε_c, δ_c)``-DP the
secure one is ``(ε_c + 2a, e^{a}δ_c + (1 + e^{ε_c + a})Nτ)``-DP.  So the
continuous event is calibrated at ``(ε − 2a, δ·e^{−a}·(1 − 10⁻⁶))``; ``m``
makes ``s ≥ 2²⁴``, ``2a ≤ 10⁻⁴ε`` and the rounding's share of ``Δ`` at most
10⁻³, hence noise within 1 % of the fast path's (docs/secure_noise.md).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import secrets

import numpy as np

from dpcd.privacy import accounting, cache
# the modes and their guarantees live with the ledger that states them
from dpcd.privacy.ledger import GUARANTEES, NOISE_MODES, BudgetLine


# Grid steps per sensitivity: the grid is γ = Δ/m and the charged sensitivity
# m + 1 steps, so the noise grows by (m + 1)/m = 1.001.
RESOLUTION = 1000

# Whether the private feature-bound release (dpcd.privacy.bounds) has a
# secure mode (secure_feature_bound): without one a secure fit needs public
# bounds. (Whether a solver has one is its spec's ``privacy.secure``.)
SECURE_FEATURE_BOUND = True

# Accountants the secure mode can use: RDP bounds the discrete Gaussian
# (Canonne et al. 2020), PLD accounts it exactly; "paper" reports RDP's ε
# for Theorem 3.1's noise.
SECURE_ACCOUNTANTS = ("auto", "rdp", "pld", "paper")

# Secure integer scales tried, as ratios to the fast path's PLD noise
# (``r·z·m`` grid steps for the fast multiplier ``z``): the secure noise is
# at most 1 % above the fast path's, or RDP's when no ratio is certified.
PLD_RATIOS = (1.001, 1.004, 1.007, 1.01)


def secure_entropy() -> int:
    """128 bits from the operating system's secure source (never record them)."""
    return secrets.randbits(128)


def _draw(kind: str, scale: float, size: int) -> np.ndarray:
    """``size`` i.i.d. integer draws of the exact sampler ``kind``
    (:mod:`dpcd.privacy.exact`) on a fresh keyed stream."""
    size = int(size)
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    scale = float(scale)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    # imported here: numba's import is not paid by jobs that only read calibrations
    from dpcd.privacy import exact, keystream

    out = np.empty(size, dtype=np.int64)
    fill = exact.fill_discrete_gaussian if kind == "gaussian" else exact.fill_discrete_laplace
    fill(keystream.new_state(), scale, out)
    return out


def discrete_gaussian(scale: float, size: int) -> np.ndarray:
    """Exact discrete Gaussian draws, pmf ∝ ``exp(−k²/(2 scale²))`` on the integers.

    Drawn by :func:`dpcd.privacy.exact.fill_discrete_gaussian` (Canonne et
    al. 2020's sampler) on a keystream keyed from the OS's secure source.

    Parameters
    ----------
    scale : float
        ``s > 0`` (for ``s`` ≫ 1 the standard deviation; below, slightly less).
    size : int

    Returns
    -------
    k : ndarray of int64, shape (size,)
    """
    return _draw("gaussian", scale, size)


def discrete_laplace(scale: float, size: int) -> np.ndarray:
    """Exact discrete Laplace draws, pmf ∝ ``exp(−|k|/scale)`` on the integers.

    Drawn by :func:`dpcd.privacy.exact.fill_discrete_laplace` on a keystream
    keyed from the OS's secure source.

    Parameters
    ----------
    scale : float
        ``t > 0``.
    size : int

    Returns
    -------
    k : ndarray of int64, shape (size,)
    """
    return _draw("laplace", scale, size)


def round_to_grid(x, grid):
    """``floor(x/γ + 1/2)``: monotone and commuting with integer shifts.

    (numpy's ``rint`` rounds half to even and does not commute with shifts:
    ``rint(0.5) = 0``, ``rint(1.5) = 2``.)
    """
    return np.floor(np.asarray(x, dtype=np.float64) / grid + 0.5)


def check_grid(n: int, resolution: int = RESOLUTION) -> None:
    """Refuse a grid whose rounding could be moved by floating-point error.

    A mean of ``n`` terms bounded by ``B`` is computed with an error below
    ``n·2⁻⁵³·B`` (naive summation), i.e. at most ``n²·m·2⁻⁵³`` grid steps
    of ``γ = B/(n m)`` (DP-CD's grid is twice as coarse); the ledger's spare
    grid step covers up to one, and we ask for at most a quarter.
    """
    if n * n * resolution * 2.0 ** -53 > 0.25:
        raise ValueError(f"noise='secure': n_samples = {n} is too large for the grid "
                         f"resolution {resolution} (floating-point error of the means "
                         "could cross a grid step)")


def check_accountant(accountant: str) -> str:
    """``accountant``, refused unless the secure mode can account with it."""
    if accountant not in SECURE_ACCOUNTANTS:
        raise ValueError(f"accountant={accountant!r} with noise='secure': use one of "
                         f"{SECURE_ACCOUNTANTS}")
    return accountant


def discrete_gaussian_epsilon(scale: float, sensitivity: int, count: int,
                              delta: float) -> float:
    """ε at ``delta`` of ``count`` discrete Gaussians ``N_Z(0, scale²)`` with
    integer ``sensitivity``: dp_accounting's PLD of the discrete Gaussian,
    connect-the-dots, pessimistic, composed ``count`` times (cached)."""
    inputs = {"scale": float(scale), "sensitivity": int(sensitivity),
              "count": int(count), "delta": float(delta),
              "discretization": accounting.PLD_DISCRETIZATION}
    return cache.cached("discrete_gaussian_epsilon", inputs,
                        lambda: _discrete_gaussian_epsilon(**inputs))


@functools.lru_cache(maxsize=1024)
def _discrete_gaussian_epsilon(scale, sensitivity, count, delta, discretization):
    from dp_accounting.pld import privacy_loss_distribution

    pld = privacy_loss_distribution.from_discrete_gaussian_mechanism(
        scale, sensitivity=sensitivity, value_discretization_interval=discretization,
        use_connect_dots=True)
    return float(pld.self_compose(count).get_epsilon_for_delta(delta))


def _pld_integer_scale(z, steps, epsilon, delta, resolution):
    """The smallest integer scale ``r·z·m`` (``r`` in :data:`PLD_RATIOS`) whose
    discrete Gaussian PLD meets ``epsilon``, and its ε; None if none does."""
    for ratio in PLD_RATIOS:
        scale = ratio * z * resolution
        achieved = discrete_gaussian_epsilon(scale, resolution + 1, steps, delta)
        if achieved <= epsilon:
            return scale, achieved
    return None


@dataclasses.dataclass(frozen=True)
class SecureGaussian:
    """Grid and integer noise scale of a secure coordinate-wise release.

    Attributes
    ----------
    grid : ndarray, shape (p,)
        ``γ_j = Δ_j / m``.
    integer_scale : float
        Discrete Gaussian scale in grid steps, ``z·(m + 1)`` (same for all j).
    calibration : dpcd.privacy.Calibration
        Noise scales ``integer_scale·γ_j`` and the secure ledger.
    """

    grid: np.ndarray
    integer_scale: float
    calibration: object

    def draw(self, size: int) -> np.ndarray:
        """``size`` integer noise draws (grid steps), as float64 for the kernel."""
        return discrete_gaussian(self.integer_scale, size).astype(np.float64)


def secure_dp_cd(calibration, n: int, resolution: int = RESOLUTION) -> SecureGaussian:
    """Turn a DP-CD calibration into its secure version (see the module docstring).

    Parameters
    ----------
    calibration : dpcd.privacy.Calibration
        From :func:`dpcd.privacy.calibrate_dp_cd`: an RDP (or "paper")
        multiplier ``z`` bounds the discrete Gaussian of scale ``z·(m + 1)``
        too; a PLD one is the start of the discrete Gaussian's own PLD
        calibration (:data:`PLD_RATIOS`), RDP's ``z`` if that fails.
    n : int
        Number of records (the grid must be fine enough, :func:`check_grid`).
    resolution : int
        ``m``, grid steps per sensitivity.

    Returns
    -------
    SecureGaussian
    """
    ledger = calibration.ledger
    check_grid(n, resolution)
    mech = ledger.mechanisms[0]
    line = ledger.budget[0]
    steps, delta = int(calibration.steps), float(ledger.delta)
    epsilon = float(ledger.epsilon_target)
    accountant, achieved = ledger.accountant, float(calibration.epsilon_achieved)
    z = float(calibration.noise_multiplier)
    found = (_pld_integer_scale(z, steps, epsilon, delta, resolution)
             if accountant == "pld" else None)
    if found is not None:
        scale, achieved = found
        event = (f"SelfComposed(DiscreteGaussian(sigma={scale!r}, sensitivity="
                 f"{resolution + 1}), {steps}): dp_accounting PLD of the discrete "
                 "Gaussian, connect-the-dots")
        line = dataclasses.replace(line, epsilon_achieved=achieved, dp_event=event)
        how = "PLD of the discrete Gaussian (dp_accounting, connect-the-dots)"
    else:
        if accountant == "pld":  # no ratio certified: RDP's multiplier
            z, achieved, accountant = accounting.calibrate_multiplier(
                ("gaussian", steps), epsilon, delta, "rdp", ledger.neighbouring)
            line = dataclasses.replace(line, accountant="rdp", epsilon_achieved=achieved,
                                       dp_event=repr(accounting.make_event(
                                           ("gaussian", steps), z)))
        scale = z * (resolution + 1)
        how = "RDP of the discrete Gaussian <= the continuous one (Canonne et al. 2020)"
    delta_j = np.asarray(mech.sensitivity, dtype=np.float64)
    grid = delta_j / resolution
    charged = (resolution + 1) * grid  # Δ_j + γ_j
    scales = scale * grid
    secure_mech = dataclasses.replace(
        mech, kind="discrete_gaussian", sensitivity=charged.tolist(),
        noise_multiplier=scale / (resolution + 1), noise_scale=scales.tolist(),
        note=(f"{mech.note}; rounded to the grid Δ_j/{resolution}, sensitivity "
              f"Δ_j + grid ({resolution + 1} grid steps), exact discrete Gaussian of "
              f"scale {scale:.6g} grid steps; {how}"))
    secure_ledger = dataclasses.replace(
        ledger, mechanisms=(secure_mech,) + tuple(ledger.mechanisms[1:]), noise="secure",
        accountant=accountant, epsilon_achieved=achieved,
        budget=[line] + list(ledger.budget[1:]))
    cal = dataclasses.replace(calibration, noise_multiplier=scale / (resolution + 1),
                              noise_scales=scales, ledger=secure_ledger,
                              epsilon_achieved=achieved)
    return SecureGaussian(grid=grid, integer_scale=scale, calibration=cal)


@dataclasses.dataclass(frozen=True)
class SecureGcd:
    """Grids and integer noise scales of secure DP-GCD (see docs/secure_noise.md).

    Attributes
    ----------
    score_grid : float
        ``γ_s = s/m`` for the score sensitivity ``s = max_k κ_k Δ_k``.
    selection_scale : float
        Discrete Laplace scale of the scores, ``2(m + 1)/ε′`` grid steps.
    grid : ndarray, shape (p,)
        ``γ_j = Δ_j/m`` of the gradient entries.
    gradient_scale : float
        Discrete Laplace scale of the gradient entry, ``(m + 1)/ε′`` grid steps.
    calibration : dpcd.privacy.Calibration
        With the secure ledger.
    """

    score_grid: float
    selection_scale: float
    grid: np.ndarray
    gradient_scale: float
    calibration: object


def secure_dp_gcd(calibration, n: int, resolution: int = RESOLUTION) -> SecureGcd:
    """Secure DP-GCD from its calibration with ``resolution=m``
    (:func:`dpcd.privacy.calibrate_dp_gcd`): report-noisy-max of the rounded
    scores plus discrete Laplace noise, exact ties broken uniformly at random,
    and a discrete Laplace gradient entry, both ``ε′``-DP on the grid."""
    extra = calibration.extra
    if "score_sensitivity" not in extra:
        raise ValueError("secure DP-GCD needs a calibration made with resolution=m")
    check_grid(n, resolution)
    eps_step = float(extra["epsilon_per_step"])
    select, grad = calibration.ledger.mechanisms
    score_grid = float(extra["score_sensitivity"]) / resolution
    selection_scale = 2.0 * (resolution + 1) / eps_step
    delta_j = np.asarray(grad.sensitivity, dtype=np.float64)
    grid = delta_j / resolution
    gradient_scale = (resolution + 1) / eps_step
    p = grid.size
    mechs = (
        dataclasses.replace(
            select, kind="discrete_report_noisy_max",
            sensitivity=[(resolution + 1) * score_grid] * p,
            noise_scale=[selection_scale * score_grid] * p,
            note=(f"{select.note}; secure: scores h_j(grad_j f) rounded to the grid "
                  f"s/{resolution}, sensitivity {resolution + 1} grid steps, exact discrete "
                  f"Laplace of scale {selection_scale:.6g} steps; exact ties broken "
                  "uniformly at random (eps_step-DP, docs/secure_noise.md)")),
        dataclasses.replace(
            grad, kind="discrete_laplace", sensitivity=((resolution + 1) * grid).tolist(),
            noise_scale=(gradient_scale * grid).tolist(),
            note=(f"{grad.note}; rounded to the grid Delta_j/{resolution}, sensitivity "
                  f"{resolution + 1} grid steps, exact discrete Laplace of scale "
                  f"{gradient_scale:.6g} steps")),
    )
    ledger = dataclasses.replace(calibration.ledger, mechanisms=mechs, noise="secure")
    extra = {**extra, "selection_scales": np.asarray(mechs[0].noise_scale)}
    cal = dataclasses.replace(calibration, noise_scales=gradient_scale * grid,
                              ledger=ledger, extra=extra)
    return SecureGcd(score_grid=score_grid, selection_scale=selection_scale, grid=grid,
                     gradient_scale=gradient_scale, calibration=cal)


# Discrete Laplace scales tried, as ratios to ``z·(m + 1)`` grid steps (see
# :func:`laplace_scale`): at the ratio 1 its Rényi divergences exceed the
# continuous Laplace's by up to about 5·10⁻⁷ of their value; 1.0001 clears it.
LAPLACE_RATIOS = (1.0001, 1.001, 1.01)

# Relative float error allowed for in :func:`discrete_laplace_rdp` (the
# margin below the continuous Laplace's Rényi divergence it must keep).
_RDP_MARGIN = 1e-6


def discrete_laplace_rdp(order: float, sensitivity: int, scale: float) -> float:
    """Rényi divergence of order ``order`` > 1 between the discrete Laplace
    ``∝ exp(−|k|/scale)`` and its shift by the integer ``sensitivity`` Δ.

    In closed form, with ``q = e^{−1/t}``, ``c = (1 − q)/(1 + q)`` and
    ``r = q^{2α−1}``, ``Σ_k P(k)^α Q(k)^{1−α}`` is ``c·q^{(1−α)Δ}/(1 − q)``
    (k ≤ 0) ``+ c·q^{αΔ}/(1 − q)`` (k ≥ Δ) ``+ c·q^{(1−α)Δ}·r(1 − r^{Δ−1})/(1 − r)``
    (0 < k < Δ); evaluated in logarithms (relative error far below 10⁻⁶,
    checked against exact sums in the tests).
    """
    a, d, x = float(order), int(sensitivity), 1.0 / float(scale)
    if not a > 1 or d < 1:
        raise ValueError(f"need order > 1 and an integer sensitivity >= 1, got {order}, {d}")
    log_1mq = math.log(-math.expm1(-x))
    log_c = log_1mq - math.log1p(math.exp(-x))
    terms = [(a - 1) * d * x - log_1mq, -a * d * x - log_1mq]
    if d > 1:
        b = (2 * a - 1) * x
        terms.append((a - 1) * d * x - b + math.log(-math.expm1(-b * (d - 1)))
                     - math.log(-math.expm1(-b)))
    top = max(terms)
    log_sum = log_c + top + math.log(math.fsum(math.exp(t - top) for t in terms))
    return log_sum / (a - 1)


@functools.lru_cache(maxsize=256)
def laplace_scale(multiplier: float, steps: int) -> float:
    """Discrete Laplace scale (grid steps) whose Rényi divergences at integer
    sensitivity ``steps`` are at most the continuous ``LaplaceDpEvent(multiplier)``'s
    at every order of dp_accounting's RDP accountant: ``r·multiplier·steps`` for the
    first ``r`` of :data:`LAPLACE_RATIOS` that passes, with a relative margin of
    10⁻⁶.  So a discrete Laplace release may stand for the continuous event in
    an RDP composition (a private search's score, DP-CD-P's smoothness release
    as a candidate); its pure ε only shrinks (``steps/scale``)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    z = float(multiplier)
    orders = rdp.RdpAccountant()._orders
    bound = [rdp._laplace_rdp(1.0 / z, a) * (1 - _RDP_MARGIN) for a in orders]
    for ratio in LAPLACE_RATIOS:
        scale = ratio * z * steps
        if all(discrete_laplace_rdp(a, steps, scale) <= b for a, b in zip(orders, bound)):
            return scale
    raise ValueError(f"no discrete Laplace scale within {LAPLACE_RATIOS[-1]} of the "
                     f"continuous one at multiplier {z}")


def secure_laplace_release(means, sensitivity, multiplier: float,
                           resolution: int = RESOLUTION):
    """``means`` released with exact discrete Laplace noise on the grid ``Δ_j/m``.

    The continuous release adds ``Lap(λ_j)`` with ``λ_j = z·Δ_j`` (``z`` the
    noise ``multiplier``); here the
    means are rounded to ``γ_j = Δ_j/m``, charged ``m + 1`` steps, and get a
    discrete Laplace of scale :func:`laplace_scale` ``(z, m + 1)``, i.e.
    ``1.0001·z·(m + 1)`` steps: each coordinate is at most ``Δ/λ``-DP as
    before, with ``λ_j = z·(Δ_j + γ_j)``, and its Rényi divergences are at
    most the continuous Laplace's (what a private search composes).

    Returns
    -------
    noisy : ndarray, shape (p,)
    charged : ndarray, shape (p,)
        ``Δ_j + γ_j``, the sensitivity the ledger must state.
    """
    sensitivity = np.asarray(sensitivity, dtype=np.float64)
    z = float(multiplier)
    grid = sensitivity / resolution
    k = discrete_laplace(laplace_scale(z, resolution + 1), sensitivity.size)
    noisy = grid * (round_to_grid(means, grid) + k)
    return noisy, (resolution + 1) * grid



# ---------------------------------------------------------------------------
# lattice Gaussian: vector releases accounted by closeness to the rounded
# continuous Gaussian (see the module docstring)

# K: a draw beyond K·s grid steps is the excluded event (τ = 2e^{-(K - 1/s)²/2}).
LATTICE_TAIL = 40.0
# The integer scale s is at least this (ρ(s) ≈ 200/s² per draw).
LATTICE_MIN_SCALE = 2.0 ** 24
# 2a is at most this fraction of ε.
LATTICE_SHARE = 1e-4
# The rounding's share of Δ is at most this (the noise grows by as much). A
# finer grid makes s larger for no gain worth having.
LATTICE_ROUNDING_SHARE = 1e-3
# Fraction of δ left for the tails: the continuous event gets δ·e^{-a}·(1 - this).
LATTICE_TAIL_DELTA = 1e-6
# Integer sums stay below this (int64 holds 2⁶³).
_MAX_SUM = 2.0 ** 62
# Float error of a contribution in grid steps is below m(d + 16)·2⁻⁵² ≤ 1/4.
_MAX_FLOAT_STEPS = 2.0 ** 50
# The slack a is computed at this fraction of the first calibration's scale:
# the second, at a smaller target, gives a z at least that large (its search
# stops within 0.1 % of the answer), checked.
_SCALE_MARGIN = 0.99


def lattice_closeness(scale: float, tail: float = LATTICE_TAIL) -> float:
    """ρ(s): bound on ``|ln p_D(k)/p_R(k)|`` for ``|k| ≤ tail·s``.

    ``p_D`` the discrete Gaussian ``N_Z(0, s²)``, ``p_R`` the law of
    ``round(N(0, s²))`` (module docstring): ``(K²/8 + 1/8)/s² + 3e^{−2π²s²}``.
    """
    s2 = float(scale) ** 2
    return (tail * tail / 8.0 + 0.125) / s2 + 3.0 * math.exp(-2.0 * math.pi ** 2 * s2)


def lattice_log_tail(scale: float, tail: float = LATTICE_TAIL) -> float:
    """``ln τ``: both ``N_Z(0, s²)`` and ``round(N(0, s²))`` put at most
    ``τ = 2e^{−(K − 1/s)²/2}`` beyond ``K·s`` (``Σ_{k≥k₀}φ(k) ≤ P(N ≥ k₀ − 1)``
    and ``Z ≥ 1``; the rounded one's tail is ``P(|N| ≥ K s − 1/2)``)."""
    return math.log(2.0) - 0.5 * (tail - 1.0 / float(scale)) ** 2


def lattice_sensitivity(resolution: int, units: float, dim: int, records: int = 1) -> int:
    """Δ in grid steps of an integer sum of contributions rounded to ``C/m``.

    ``m·u`` for the clipped sums' sensitivity ``u·C``, plus ``⌈√d/2⌉ + 1``
    for each of the ``records`` rounded contributions that differ between
    neighbours (rounding a d-vector moves it by at most ``√d/2`` in ℓ2; the
    1 absorbs the float error, :func:`lattice_grid`).
    """
    root = math.isqrt(dim)
    root += root * root < dim                    # ⌈√d⌉, exactly
    return int(math.ceil(resolution * units)) + records * ((root + 1) // 2 + 1)


def lattice_grid(multiplier: float, units: float, dim: int, draws: int, epsilon: float,
                 records: int = 1) -> int:
    """``m``, grid steps per clipping threshold: the smallest power of two with
    ``s = z·Δ ≥`` :data:`LATTICE_MIN_SCALE`, ``2·N·ρ(s) ≤`` :data:`LATTICE_SHARE`
    ``·ε`` and the rounding's share of Δ at most :data:`LATTICE_ROUNDING_SHARE`.

    Parameters
    ----------
    multiplier : float
        ``z``: the continuous noise std over the sensitivity ``u·C``.
    units : float
        ``u``, the sensitivity in units of the clipping threshold C.
    dim : int
        ``d``, coordinates of a released vector.
    draws : int
        ``N``, discrete Gaussian draws of the whole run.
    epsilon : float
        The run's target ε.
    records : int
        Rounded contributions that differ between neighbours.
    """
    z = float(multiplier)
    for k in range(1, 62):
        m = 1 << k
        delta_steps = lattice_sensitivity(m, units, dim, records)
        s = z * delta_steps
        slack = draws * lattice_closeness(_SCALE_MARGIN * s)
        if (s >= LATTICE_MIN_SCALE and 2.0 * slack <= LATTICE_SHARE * epsilon
                and delta_steps - m * units <= LATTICE_ROUNDING_SHARE * m * units):
            return m
    raise ValueError(f"noise='secure': no grid meets the lattice rules (z = {z:g}, "
                     f"{draws} draws, epsilon = {epsilon:g})")


@dataclasses.dataclass(frozen=True)
class LatticeGaussian:
    """A secure vector release: grid, integer noise and the secure calibration.

    Attributes
    ----------
    grid : float
        ``γ = C/m``, one grid step in the units of the released sums.
    resolution : int
        ``m``, grid steps per clipping threshold C (a power of two).
    sensitivity : int
        ``Δ`` in grid steps.
    integer_scale : float
        ``s = z·Δ``, the discrete Gaussian's scale in grid steps.
    slack : float
        ``a = N·ρ(s)``: the secure run's law is within ``e^{±a}`` of the
        rounded continuous run's (off the tails).
    calibration : dpcd.privacy.Calibration
        Noise scale ``s·γ`` and the secure ledger (its continuous line at
        ``(ε − 2a, δ_c)``, a line for the rounding slack).
    """

    grid: float
    resolution: int
    sensitivity: int
    integer_scale: float
    slack: float
    calibration: object


def secure_lattice(calibrate, epsilon: float, delta: float, *, clip: float, units: float,
                   dim: int, draws_per_step: int, terms: int,
                   records: int = 1) -> LatticeGaussian:
    """Calibrate a secure vector Gaussian release (module docstring, "Lattice Gaussian").

    Parameters
    ----------
    calibrate : callable
        ``calibrate(epsilon, delta) -> Calibration``: the continuous (fast)
        calibration of the family at a target, whose ``noise_scales`` (a
        scalar) is the std on the sums and ``steps`` the number of releases.
    epsilon, delta : float
        The run's target.
    clip : float
        ``C``, the bound on one record's contribution (ℓ2).
    units : float
        The continuous sensitivity the multiplier is relative to, in units of
        C: ``z = σ/(u·C)``.
    dim : int
        Coordinates of a released vector.
    draws_per_step : int
        Discrete Gaussian draws per release (``N = steps·draws_per_step``).
    terms : int
        Most contributions in one sum (the int64 sums must not overflow).
    records : int
        Rounded contributions that differ between neighbours.

    Returns
    -------
    LatticeGaussian
    """
    clip, units, dim = float(clip), float(units), int(dim)
    fast = calibrate(epsilon, delta)
    draws = int(fast.steps) * int(draws_per_step)
    z0 = float(fast.noise_scales) / (units * clip)
    m = lattice_grid(z0, units, dim, draws, epsilon, records)
    delta_steps = lattice_sensitivity(m, units, dim, records)
    if m * (dim + 16) > _MAX_FLOAT_STEPS:
        raise ValueError(f"noise='secure': {dim} coordinates are too many for the grid "
                         f"C/{m} (float error could cross a grid step)")
    # ρ decreases in s: a bounds the slack if the calibration below gives
    # z ≥ 0.99·z0 (at a smaller target it gives about z0·(1 + 10⁻⁴)), checked
    a = draws * lattice_closeness(_SCALE_MARGIN * z0 * delta_steps)
    eps_c = epsilon - 2.0 * a
    delta_c = delta * math.exp(-a) * (1.0 - LATTICE_TAIL_DELTA)
    cal = calibrate(eps_c, delta_c)
    z = float(cal.noise_scales) / (units * clip)
    s = z * delta_steps
    from dpcd.privacy.exact import MAX_SCALE  # numba's import: only for secure runs

    if draws * lattice_closeness(s) > a:
        raise RuntimeError(f"noise='secure': the slack bound {a:.3g} does not hold at the "
                           f"calibrated scale {s:.6g}")
    if s > MAX_SCALE:
        raise ValueError(f"noise='secure': integer scale {s:.3g} beyond the sampler's "
                         f"{MAX_SCALE:.3g}")
    if terms * (m + 1.0) + LATTICE_TAIL * s > _MAX_SUM:
        raise ValueError("noise='secure': the integer sums could overflow int64")
    achieved_c = float(cal.epsilon_achieved)
    # the tails: (1 + e^{ε_c + a})·N·τ must fit in the δ left over
    log_tails = (math.log(draws) + lattice_log_tail(s)
                 + math.log1p(math.exp(min(achieved_c + a, 700.0))))
    if log_tails > math.log(delta - math.exp(a) * delta_c):
        raise ValueError("noise='secure': the lattice tails exceed the delta left for them")
    grid = clip / m
    ledger = cal.ledger
    mech, line = ledger.mechanisms[0], ledger.budget[0]
    # the charged sensitivity: the fast one scaled by Δ grid steps over m·u
    charged = float(mech.sensitivity) * delta_steps / (m * units)
    secure_mech = dataclasses.replace(
        mech, kind="discrete_gaussian", sensitivity=charged, noise_scale=s * grid,
        noise_multiplier=s * grid / charged,
        note=(f"{mech.note}; secure: contributions rounded to the grid C/{m}, integer "
              f"sums, sensitivity {delta_steps} grid steps (m*{units:g} + {records} x "
              f"(ceil(sqrt({dim})/2) + 1) for rounding and float error), exact discrete "
              f"Gaussian of scale {s:.6g} grid steps per coordinate; accounted as the "
              "rounded continuous Gaussian, within exp(+-a) pointwise"))
    slack_line = BudgetLine(
        group="lattice_rounding", accountant="closeness", epsilon_target=2.0 * a,
        epsilon_achieved=2.0 * a, delta=delta - delta_c,
        dp_event=(f"{draws} discrete Gaussian draws N_Z(0, s^2), s = {s:.6g}: "
                  f"|ln p_D(k)/p_R(k)| <= rho(s) = (K^2/8 + 1/8)/s^2 + 3exp(-2pi^2 s^2) "
                  f"for |k| <= K s, K = {LATTICE_TAIL:g}; a = N rho = {a:.3g} (eps + 2a); "
                  f"delta: (e^a - 1) delta_c + (1 + e^(eps_c + a)) N tau, "
                  f"tau = 2exp(-(K - 1/s)^2/2)"))
    secure_ledger = dataclasses.replace(
        ledger, mechanisms=(secure_mech,) + tuple(ledger.mechanisms[1:]), noise="secure",
        epsilon_target=float(epsilon), epsilon_achieved=achieved_c + 2.0 * a,
        delta=float(delta), budget=[line, slack_line] + list(ledger.budget[1:]))
    secure_cal = dataclasses.replace(
        cal, noise_multiplier=secure_mech.noise_multiplier,
        noise_scales=s * grid, ledger=secure_ledger, epsilon_achieved=achieved_c + 2.0 * a)
    return LatticeGaussian(grid=grid, resolution=m, sensitivity=delta_steps,
                           integer_scale=s, slack=a, calibration=secure_cal)


__all__ = ["GUARANTEES", "LAPLACE_RATIOS", "LATTICE_MIN_SCALE", "LATTICE_ROUNDING_SHARE",
           "LATTICE_SHARE", "LATTICE_TAIL", "LATTICE_TAIL_DELTA", "LatticeGaussian",
           "NOISE_MODES", "PLD_RATIOS", "RESOLUTION",
           "SECURE_FEATURE_BOUND", "SecureGaussian", "SecureGcd", "check_accountant",
           "check_grid", "discrete_gaussian", "discrete_gaussian_epsilon", "discrete_laplace",
           "discrete_laplace_rdp", "laplace_scale", "lattice_closeness", "lattice_grid",
           "lattice_log_tail", "lattice_sensitivity", "round_to_grid", "secure_dp_cd",
           "secure_dp_gcd", "secure_entropy", "secure_laplace_release", "secure_lattice"]
