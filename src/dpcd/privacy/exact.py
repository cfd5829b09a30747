"""Exact samplers for numba kernels, on the ChaCha20 keystream.

Every function here is ``@njit(cache=True)``, callable from a kernel and
from Python, and draws from a :mod:`dpcd.privacy.keystream` state. Each
float parameter is read as the exact real number it represents, and each
sampler's output has exactly the stated law (given a uniform keystream).

How exactness and speed go together
-----------------------------------
Every random decision is a comparison of a uniform real ``U ∈ [0, 1)``
with a threshold: ``U``'s binary expansion is a keystream word's top 53
bits, extended with further words only when needed. The 53 bits put ``U``
in an interval ``[a, a + 2⁻⁵³)``. The threshold is computed in float64
with a proven error bound ``E``:

* if ``U``'s interval lies entirely on one side of ``[θ − E, θ + E]``, the
  comparison is decided exactly, in the kernel;
* otherwise (probability about ``2E``, below 10⁻⁶ per draw at the scales the
  solvers use) the kernel calls, through ``numba.objmode``, an exact path in
  Python: it extends ``U`` word by word and compares with the threshold
  computed by :mod:`decimal` (whose ``exp`` and ``ln`` are correctly
  rounded) at growing precision, as intervals with rational ends
  (:mod:`fractions`) that are certain to contain the true values. It
  decides exactly, and terminates with probability 1.

Both paths decide the same real predicate, so every output is exact. The
error bounds (derived in the comments at each check) assume the platform's
``exp``, ``log`` and ``log1p`` have a relative error below ``2⁻⁴⁸`` (glibc
documents at most 1 to 2 ulps, i.e. below ``2⁻⁵¹``); every other float
operation is an IEEE 754 operation rounded to nearest. Each bound is
applied with a safety factor of at least 2.

The samplers
------------
* :func:`uniform_below`: rejection on 64-bit words (no float).
* :func:`bernoulli`: ``U < p`` compared bit for bit with ``p``'s binary
  expansion (no float error at all).
* :func:`geometric`: inverse CDF, ``G = ⌊ln U / ln(1 − p)⌋``
  (``P(G ≥ m) = (1 − p)^m``), the floor decided as above.
* :func:`discrete_laplace` (pmf ``∝ exp(−|k|/t)``): one word gives a sign
  bit and ``U``; the magnitude is the inverse CDF of ``|X|``,
  ``P(|X| ≥ m) = 2q^m/(1 + q)`` for ``m ≥ 1`` with ``q = e^{−1/t}``, i.e.
  ``|X| = ⌊t·(ln(2/(1 + q)) − ln U)⌋``; a nonzero magnitude gets the sign.
* :func:`discrete_gaussian` (pmf ``∝ exp(−k²/(2σ²))``): Canonne, Kamath
  and Steinke (NeurIPS 2020), Algorithm 3: propose ``Y`` from the discrete
  Laplace of scale ``t = ⌊σ⌋ + 1`` and accept with probability
  ``exp(−(|Y| − σ²/t)²/(2σ²))`` (an exact Bernoulli as above). About 1.3
  proposals per draw at large σ.

Parameters are restricted to ``2⁻¹⁰ ≤ t, σ ≤ 2⁴⁰`` (beyond, the float
checks lose their margin; no solver comes near).

The test hook: a state made by
:func:`dpcd.privacy.keystream.state_from_key` with ``guard=g`` widens every
guard band by ``2**g``, so that the exact path is taken (the tests check
that it agrees with the fast path draw for draw).
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
from numba import njit, objmode

from dpcd.privacy.keystream import GUARD, next_u64

# Parameter range of the scale samplers (see the module docstring).
MIN_SCALE = 2.0 ** -10
MAX_SCALE = 2.0 ** 40

_ULP53 = 2.0 ** -53
_LOG2 = math.log(2.0)


@njit(cache=True)
def _widen(state):
    """2**g for the state's guard hook g (1.0 in production)."""
    return 2.0 ** np.float64(state[GUARD])


@njit(cache=True)
def _prefix(word):
    """``U``'s first 53 bits: ``U ∈ [u·2⁻⁵³, (u + 1)·2⁻⁵³)``."""
    return word >> np.uint64(11)


# ---------------------------------------------------------------------------
# uniform integers and Bernoulli(p): exact in integer arithmetic


@njit(cache=True)
def uniform_below(state, k):
    """A uniform integer on ``{0, …, k − 1}`` (``k ≥ 1``).

    Rejection: a 64-bit word ``x`` is kept when ``x ≥ 2⁶⁴ mod k``, which
    leaves a multiple of ``k`` equally likely values; the draw is ``x mod k``.
    """
    if k < 1:
        raise ValueError("uniform_below: k must be >= 1")
    kk = np.uint64(k)
    low = (np.uint64(0) - kk) % kk          # 2**64 mod k
    while True:
        x = next_u64(state)
        if x >= low:
            return np.int64(x % kk)


@njit(cache=True)
def bernoulli(state, p):
    """``True`` with probability exactly ``p`` (``0 ≤ p ≤ 1``).

    Compares ``U`` with ``p`` 64 bits at a time: ``s = r·2⁶⁴`` is exact for
    a float ``r < 1``, as is its fractional part, so a word ``x`` below
    ``⌊s⌋`` means ``U < p``, above it ``U > p``, equal it moves on to the
    next 64 bits of both (probability 2⁻⁶⁴).
    """
    if not (p >= 0.0 and p <= 1.0):
        raise ValueError("bernoulli: p must be in [0, 1]")
    if p == 1.0:
        return True
    r = p
    while r > 0.0:
        s = r * 18446744073709551616.0      # r·2**64, exact
        top = np.floor(s)
        x = next_u64(state)
        if x < np.uint64(top):
            return True
        if x > np.uint64(top):
            return False
        r = s - top                          # exact
    return False


# ---------------------------------------------------------------------------
# the exact path (Python, through objmode; taken with probability ~1e-7)


def _dec_bounds(x: Fraction, prec: int):
    """Decimals ``lo ≤ x ≤ hi`` with ``prec`` digits."""
    num, den = decimal.Decimal(x.numerator), decimal.Decimal(x.denominator)
    lo = decimal.Context(prec=prec, rounding=decimal.ROUND_FLOOR).divide(num, den)
    hi = decimal.Context(prec=prec, rounding=decimal.ROUND_CEILING).divide(num, den)
    return lo, hi


def _widened(value: decimal.Decimal, prec: int, side: int) -> Fraction:
    """A correctly rounded result moved one relative ulp away, to ``side`` (±1)."""
    v = Fraction(value)
    return v + side * abs(v) * Fraction(1, 10 ** (prec - 1))


def _ln_bounds(x: Fraction, prec: int):
    """Rationals ``lo ≤ ln x ≤ hi`` (``x > 0``): decimal's ``ln`` is correctly rounded."""
    lo, hi = _dec_bounds(x, prec)
    ctx = decimal.Context(prec=prec)
    return _widened(ctx.ln(lo), prec, -1), _widened(ctx.ln(hi), prec, +1)


def _exp_bounds(x: Fraction, prec: int):
    """Rationals ``lo ≤ exp x ≤ hi``: decimal's ``exp`` is correctly rounded."""
    lo, hi = _dec_bounds(x, prec)
    ctx = decimal.Context(prec=prec)
    return _widened(ctx.exp(lo), prec, -1), _widened(ctx.exp(hi), prec, +1)


# How often each exact path ran in this process (read by the tests).
EXACT_PATH_CALLS = {"geometric": 0, "laplace": 0, "accept": 0}


class _Uniform:
    """``U = 0.b₁b₂…``: the bits drawn so far, extended from the stream on demand."""

    def __init__(self, state, prefix, n_bits):
        self.state, self.num, self.n_bits = state, int(prefix), n_bits

    def extend(self):
        self.num = (self.num << 64) | int(next_u64(self.state))
        self.n_bits += 64

    def positive(self):
        """Extend until ``U``'s interval excludes 0; return its lower end."""
        while self.num == 0:
            self.extend()
        return Fraction(self.num, 1 << self.n_bits)

    def below(self, log_threshold):
        """Whether ``U < exp(ℓ)``, where ``log_threshold(prec)`` bounds ℓ."""
        prec = 40
        while True:
            ell_lo, ell_hi = log_threshold(prec)
            a = Fraction(self.num, 1 << self.n_bits)
            b = Fraction(self.num + 1, 1 << self.n_bits)
            if _ln_bounds(b, prec)[1] <= ell_lo:
                return True                  # U < b ≤ exp(ℓ)
            if a > 0 and _ln_bounds(a, prec)[0] >= ell_hi:
                return False                 # U ≥ a ≥ exp(ℓ)
            self.extend()
            prec += 25


def _max_index(estimate, below):
    """The largest ``m ≥ 0`` with ``below(m)`` (decreasing thresholds), searched from ``estimate``."""
    m = max(0, int(estimate))
    while m > 0 and not below(m):
        m -= 1
    while below(m + 1):
        m += 1
    return m


def _exact_geometric(state, prefix, p):
    EXACT_PATH_CALLS["geometric"] += 1
    u = _Uniform(state, prefix, 53)
    a = u.positive()
    one_minus_p = 1 - Fraction(p)

    def below(m):                            # U < (1 − p)^m
        def ell(prec):
            lo, hi = _ln_bounds(one_minus_p, prec)
            return m * lo, m * hi
        return m <= 0 or u.below(ell)

    estimate = (math.log(a.numerator) - math.log(a.denominator)) / math.log1p(-p)
    return _checked(_max_index(estimate, below))


def _exact_laplace_magnitude(state, prefix, t):
    EXACT_PATH_CALLS["laplace"] += 1
    u = _Uniform(state, prefix, 53)
    a = u.positive()
    inv_t = 1 / Fraction(t)

    def below(m):                            # U < 2 q^m / (1 + q), q = exp(−1/t)
        def ell(prec):
            q_lo, q_hi = _exp_bounds(-inv_t, prec)
            l2_lo, l2_hi = _ln_bounds(Fraction(2), prec)
            return (l2_lo - m * inv_t - _ln_bounds(1 + q_hi, prec)[1],
                    l2_hi - m * inv_t - _ln_bounds(1 + q_lo, prec)[0])
        return m <= 0 or u.below(ell)

    c = _LOG2 - math.log1p(math.exp(-1.0 / t))
    estimate = t * (c - (math.log(a.numerator) - math.log(a.denominator)))
    return _checked(_max_index(estimate, below))


def _exact_accept(state, prefix, y, sigma, t):
    """``U < exp(−(|y| − σ²/t)²/(2σ²))``, exactly (γ is rational)."""
    EXACT_PATH_CALLS["accept"] += 1
    s = Fraction(sigma)
    gamma = (abs(int(y)) - s * s / Fraction(t)) ** 2 / (2 * s * s)
    if gamma == 0:
        return True
    return _Uniform(state, prefix, 53).below(lambda prec: (-gamma, -gamma))


def _checked(m):
    if m >= 2 ** 62:
        raise OverflowError("exact sampler: draw beyond the int64 range")
    return m


# ---------------------------------------------------------------------------
# geometric, discrete Laplace, discrete Gaussian


@njit(cache=True)
def _floor_of(y, err):
    """``⌊y*⌋`` for every ``y*`` in ``(y − err, y + err)`` with ``y* > 0``, or −1 if not unique.

    ``err`` overestimates the error at least twofold, so the rounding of
    ``y ± err`` cannot cross ``y*``; ``y* > 0`` lets the low end be clamped.
    """
    lo = max(y - err, 0.0)
    hi = y + err
    if not hi < 4.0e18:
        return -1
    f = np.floor(lo)
    if f == np.floor(hi):
        return np.int64(f)
    return -1


@njit(cache=True)
def _geometric(state, p, log_q, widen):
    prefix = _prefix(next_u64(state))
    m = np.int64(-1)
    if prefix != 0:
        a = np.float64(prefix) * _ULP53
        lg = np.log(a)
        y = lg / log_q
        # y* = ln U / ln(1 − p) with ln U ∈ [ln a, ln a + 1/prefix);
        # |lg − ln a| ≤ 2⁻⁴⁸|ln a|, log_q = ln(1 − p)(1 + ε), |ε| ≤ 2⁻⁴⁸:
        # |y − y*| ≤ |y|(2⁻⁴⁸ + 2⁻⁵²) + (2⁻⁴⁸|lg| + 1/prefix)/|log_q|, halved here.
        err = widen * (abs(y) * 2.0 ** -44
                       + (abs(lg) * 2.0 ** -45 + 4.0 / np.float64(prefix)) / abs(log_q))
        m = _floor_of(y, err)
    if m < 0:
        with objmode(m="int64"):
            m = _exact_geometric(state, prefix, p)
    return m


@njit(cache=True)
def geometric(state, p):
    """Failures before the first success of Bernoulli(p) trials (``0 < p ≤ 1``).

    ``P(G ≥ m) = (1 − p)^m``, exactly for the real ``p``.
    """
    if not (p > 0.0 and p <= 1.0):
        raise ValueError("geometric: p must be in (0, 1]")
    if p == 1.0:
        return np.int64(0)
    return _geometric(state, p, np.log1p(-p), _widen(state))


@njit(cache=True)
def _laplace_constant(t):
    """``ln(2/(1 + q))``, ``q = e^{−1/t}``, within ``2⁻⁴⁷`` (absolute).

    ``q``'s error is at most ``q·(2⁻⁵³/t + 2⁻⁴⁸) ≤ 1.02·2⁻⁴⁸`` (``q/t ≤ 1/e``),
    ``log1p``'s derivative is below 1 and its own error below ``2⁻⁴⁸·ln 2``.
    """
    if not (t >= MIN_SCALE and t <= MAX_SCALE):
        raise ValueError("discrete_laplace: the scale must be in [2**-10, 2**40]")
    return _LOG2 - np.log1p(np.exp(-1.0 / t))


@njit(cache=True)
def _laplace(state, t, c, widen):
    word = next_u64(state)
    prefix = _prefix(word)
    m = np.int64(-1)
    if prefix != 0:
        a = np.float64(prefix) * _ULP53
        lg = np.log(a)
        y = t * (c - lg)
        # y* = t(c* − ln U): |c − c*| ≤ 2⁻⁴⁷, |lg − ln a| ≤ 2⁻⁴⁸|ln a|,
        # 0 ≤ ln U − ln a < 1/prefix, two roundings:
        # |y − y*| ≤ t(2⁻⁴⁷ + 2⁻⁴⁸|lg| + 1/prefix) + 2⁻⁵²|y|, quartered here.
        err = widen * (t * (2.0 ** -44 * (2.0 + abs(lg)) + 2.0 / np.float64(prefix))
                       + abs(y) * 2.0 ** -50)
        m = _floor_of(y, err)
    if m < 0:
        with objmode(m="int64"):
            m = _exact_laplace_magnitude(state, prefix, t)
    if word & np.uint64(1):
        return -m
    return m


@njit(cache=True)
def discrete_laplace(state, t):
    """A discrete Laplace draw: ``P(k) ∝ exp(−|k|/t)`` on the integers.

    ``t`` in ``[2⁻¹⁰, 2⁴⁰]``; one keystream word per draw (almost always).
    """
    return _laplace(state, t, _laplace_constant(t), _widen(state))


@njit(cache=True)
def fill_discrete_laplace(state, t, out):
    """Fill ``out`` (int64[:]) with i.i.d. :func:`discrete_laplace` draws."""
    c = _laplace_constant(t)
    widen = _widen(state)
    for i in range(out.size):
        out[i] = _laplace(state, t, c, widen)


@njit(cache=True)
def _accept(state, y, sigma, inv_sigma, sigma_over_t, t, widen):
    """Bernoulli(exp(−γ)), ``γ = (|y| − σ²/t)²/(2σ²) = (|y|/σ − σ/t)²/2``."""
    prefix = _prefix(next_u64(state))
    ay = np.float64(abs(y))
    v = ay * inv_sigma - sigma_over_t
    gamma = 0.5 * v * v
    a = np.float64(prefix) * _ULP53
    if gamma > 700.0:
        # exp(−γ*) < 2⁻¹⁰⁰⁰ ≤ a unless prefix = 0
        if prefix != 0:
            return False
    else:
        # inv_sigma = (1/σ)(1 + ε), so ay·inv_sigma and σ/t carry ≤ 2·2⁻⁵³
        # relative error each: |v − v*| ≤ ev = (|y|/σ + 1 + |v|)·2⁻⁵¹;
        # |γ − γ*| ≤ ev(|v| + ev) + 2⁻⁵²γ; exp adds 2⁻⁴⁸ relative:
        # θ = exp(−γ) is within θ·δ of θ*, δ ≤ 1.1(2⁻⁴⁸ + |γ − γ*|), halved here.
        ev = (ay * inv_sigma + 1.0 + abs(v)) * 2.0 ** -51
        delta = widen * (2.0 ** -45 + 4.0 * ev * (abs(v) + 1.0) + gamma * 2.0 ** -49)
        theta = np.exp(-gamma)
        if a + _ULP53 <= theta * (1.0 - delta):
            return True
        if a >= theta * (1.0 + delta):
            return False
    with objmode(accept="boolean"):
        accept = _exact_accept(state, prefix, y, sigma, t)
    return accept


@njit(cache=True)
def _gaussian_constants(sigma):
    if not (sigma >= MIN_SCALE and sigma <= MAX_SCALE):
        raise ValueError("discrete_gaussian: sigma must be in [2**-10, 2**40]")
    t = np.floor(sigma) + 1.0
    return t, _laplace_constant(t), 1.0 / sigma, sigma / t


@njit(cache=True)
def _gaussian(state, sigma, t, c, inv_sigma, sigma_over_t, widen):
    while True:
        y = _laplace(state, t, c, widen)
        if _accept(state, y, sigma, inv_sigma, sigma_over_t, t, widen):
            return y


@njit(cache=True)
def discrete_gaussian(state, sigma):
    """A discrete Gaussian draw: ``P(k) ∝ exp(−k²/(2σ²))`` on the integers.

    ``σ`` in ``[2⁻¹⁰, 2⁴⁰]`` (Canonne, Kamath, Steinke 2020, Algorithm 3).
    """
    t, c, inv_sigma, sigma_over_t = _gaussian_constants(sigma)
    return _gaussian(state, sigma, t, c, inv_sigma, sigma_over_t, _widen(state))


@njit(cache=True)
def fill_discrete_gaussian(state, sigma, out):
    """Fill ``out`` (int64[:]) with i.i.d. :func:`discrete_gaussian` draws."""
    t, c, inv_sigma, sigma_over_t = _gaussian_constants(sigma)
    widen = _widen(state)
    for i in range(out.size):
        out[i] = _gaussian(state, sigma, t, c, inv_sigma, sigma_over_t, widen)


__all__ = ["MAX_SCALE", "MIN_SCALE", "bernoulli", "discrete_gaussian", "discrete_laplace",
           "fill_discrete_gaussian", "fill_discrete_laplace", "geometric", "uniform_below"]
