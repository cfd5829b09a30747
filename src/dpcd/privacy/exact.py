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
* otherwise (probability about ``2E``: below 10⁻⁶ per draw for the discrete
  Gaussian at every scale, and for the discrete Laplace up to t = 10⁶) the
  kernel calls, through ``numba.objmode``, an exact path in
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
  proposals per draw at large σ. From σ = 2²⁰ up the proposal is a
  staircase (see ``WIDE_SCALE``): ``|Y| = L·H + low`` with ``H`` geometric
  of ratio ``e^{−L/t}``, ``low`` uniform below ``L``, ``−0`` rejected, and
  ``e^{−low/t}`` moved into the acceptance, so that the float decisions'
  guard bands no longer widen with σ.

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

from dpcd.privacy.keystream import GUARD, fill_u64, next_u64

# Parameter range of the scale samplers (see the module docstring).
MIN_SCALE = 2.0 ** -10
MAX_SCALE = 2.0 ** 40
# Smallest success probability of the geometric sampler.
MIN_P = 2.0 ** -40

_ULP53 = 2.0 ** -53
_LOG2 = math.log(2.0)


@njit(cache=True, inline="always")
def _widen(state):
    """2**g for the state's guard hook g (1.0 in production)."""
    return 2.0 ** np.float64(state[GUARD])


@njit(cache=True, inline="always")
def _prefix(word):
    """``U``'s first 53 bits: ``U ∈ [u·2⁻⁵³, (u + 1)·2⁻⁵³)`` (as an int64, whose
    conversion to float is one instruction where uint64's is not)."""
    return np.int64(word >> np.uint64(11))


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
EXACT_PATH_CALLS = {"geometric": 0, "laplace": 0, "staircase": 0, "accept": 0}


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


def _exact_staircase_high(state, prefix, tl):
    """The largest ``j ≥ 0`` with ``U < exp(−j/tl)`` (a geometric of ratio ``e^{−1/tl}``)."""
    EXACT_PATH_CALLS["staircase"] += 1
    u = _Uniform(state, prefix, 53)
    a = u.positive()
    inv = 1 / Fraction(tl)

    def below(j):
        return j <= 0 or u.below(lambda prec: (-j * inv, -j * inv))

    estimate = tl * -(math.log(a.numerator) - math.log(a.denominator))
    return _checked(_max_index(estimate, below))


def _exact_accept(state, prefix, m, sigma, t, low=0):
    """``U < exp(−(m − σ²/t)²/(2σ²) − low/t)``, exactly (the exponent is rational)."""
    EXACT_PATH_CALLS["accept"] += 1
    s = Fraction(sigma)
    gamma = (int(m) - s * s / Fraction(t)) ** 2 / (2 * s * s) + int(low) / Fraction(t)
    if gamma == 0:
        return True
    return _Uniform(state, prefix, 53).below(lambda prec: (-gamma, -gamma))


def _checked(m):
    if m >= 2 ** 62:
        raise OverflowError("exact sampler: draw beyond the int64 range")
    return m


# ---------------------------------------------------------------------------
# geometric, discrete Laplace, discrete Gaussian


@njit(cache=True, inline="always")
def _floor_of(y, err):
    """``⌊y*⌋`` for every ``y*`` in ``(y − err, y + err)`` with ``y* > 0``, or −1 if not unique.

    ``err`` overestimates the error at least twofold, so the rounding of
    ``y ± err`` cannot cross ``y*``; ``y* > 0`` lets the low end be clamped.
    (Branch-free, so that the loops calling it vectorise.)
    """
    lo = max(y - err, 0.0)
    hi = min(y + err, 4.0e18)
    f = np.floor(lo)
    return np.int64(f) if f == np.floor(hi) and hi < 4.0e18 else np.int64(-1)


@njit(cache=True, inline="always")
def _inv_bound(prefix):
    """An upper bound of ``1/prefix``: ``prefix < 2⁵³`` is exact as a float and
    the division errs by at most ``2⁻⁵³`` relative, which ``1 + 2⁻⁵⁰`` covers
    with the product's own rounding. (A coarser ``2⁻⁴³`` made the Laplace
    magnitude's guard band, and the exact path's share, 2.5 times wider at
    the scales of sampled vector releases, ``t ≈ 10⁸``-``10⁹``.)"""
    return (1.0 / np.float64(max(prefix, 1))) * (1.0 + 2.0 ** -50)


@njit(cache=True)
def geometric(state, p):
    """Failures before the first success of Bernoulli(p) trials (``2⁻⁴⁰ ≤ p ≤ 1``).

    ``P(G ≥ m) = (1 − p)^m``, exactly for the real ``p``. (Below ``2⁻⁴⁰`` the
    draws could leave the int64 range.)
    """
    if not (p >= MIN_P and p <= 1.0):
        raise ValueError("geometric: p must be in [2**-40, 1]")
    if p == 1.0:
        return np.int64(0)
    log_q = np.log1p(-p)
    prefix = _prefix(next_u64(state))
    m = np.int64(-1)
    if prefix != 0:
        lg = np.log(np.float64(prefix) * _ULP53)
        y = lg / log_q
        # y* = ln U / ln(1 − p) with ln U ∈ [ln a, ln a + 1/prefix);
        # |lg − ln a| ≤ 2⁻⁴⁸|ln a|, log_q = ln(1 − p)(1 + ε), |ε| ≤ 2⁻⁴⁸:
        # |y − y*| ≤ |y|(2⁻⁴⁸ + 2⁻⁵²) + (2⁻⁴⁸|lg| + 1/prefix)/|log_q|, quartered here.
        err = _widen(state) * (abs(y) * 2.0 ** -44
                               + (abs(lg) * 2.0 ** -45 + 4.0 * _inv_bound(prefix)) / abs(log_q))
        m = _floor_of(y, err)
    if m < 0:
        with objmode(m="int64"):
            m = _exact_geometric(state, prefix, p)
    return m


@njit(cache=True)
def _laplace_constant(t):
    """``ln(2/(1 + q))``, ``q = e^{−1/t}``, within ``2⁻⁴⁷`` (absolute).

    ``q``'s error is at most ``q·(2⁻⁵³/t + 2⁻⁴⁸) ≤ 1.02·2⁻⁴⁸`` (``q/t ≤ 1/e``),
    ``log1p``'s derivative is below 1 and its own error below ``2⁻⁴⁸·ln 2``.
    """
    if not (t >= MIN_SCALE and t <= MAX_SCALE):
        raise ValueError("discrete_laplace: the scale must be in [2**-10, 2**40]")
    return _LOG2 - np.log1p(np.exp(-1.0 / t))


@njit(cache=True, inline="always")
def _laplace_magnitude(prefix, lg, t, c, widen):
    """The discrete Laplace magnitude for ``U``'s prefix, given ``lg = log(prefix·2⁻⁵³)``,
    or −1 if the floats cannot tell (always for prefix 0, where ``lg = −∞``)."""
    y = t * (c - lg)
    # y* = t(c* − ln U): |c − c*| ≤ 2⁻⁴⁷, |lg − ln a| ≤ 2⁻⁴⁸|ln a|,
    # 0 ≤ ln U − ln a < 1/prefix, two roundings:
    # |y − y*| ≤ t(2⁻⁴⁷ + 2⁻⁴⁸|lg| + 1/prefix) + 2⁻⁵²|y|, quartered here.
    err = widen * (t * (2.0 ** -44 * (2.0 + abs(lg)) + 2.0 * _inv_bound(prefix))
                   + abs(y) * 2.0 ** -50)
    return _floor_of(y, err)


@njit(cache=True)
def _laplace_exact_path(state, prefix, t):
    with objmode(m="int64"):
        m = _exact_laplace_magnitude(state, prefix, t)
    return m


# Proposals handled per batch: the libm calls run in tight loops of their own.
_BATCH = 128
# Below this many draws, a fill draws one at a time (a batch's scratch arrays cost more).
_SMALL = 16


@njit(cache=True, inline="always")
def _laplace_draw(state, t, c, widen):
    """One discrete Laplace draw, the checks of the fills one at a time."""
    word = next_u64(state)
    prefix = _prefix(word)
    m = _laplace_magnitude(prefix, np.log(np.float64(prefix) * _ULP53), t, c, widen)
    if m < 0:
        m = _laplace_exact_path(state, prefix, t)
    return -m if word & np.uint64(1) else m


@njit(cache=True)
def fill_discrete_laplace(state, t, out):
    """Fill ``out`` (int64[:]) with i.i.d. :func:`discrete_laplace` draws (in batches)."""
    c = _laplace_constant(t)
    widen = _widen(state)
    if out.size < _SMALL:
        for i in range(out.size):
            out[i] = _laplace_draw(state, t, c, widen)
        return
    batch = min(_BATCH, out.size)
    words = np.empty(batch, dtype=np.uint64)
    lg = np.empty(batch)
    mag = np.empty(batch, dtype=np.int64)
    for start in range(0, out.size, batch):
        k = min(batch, out.size - start)
        fill_u64(state, words[:k])
        for j in range(k):
            lg[j] = np.log(np.float64(_prefix(words[j])) * _ULP53)
        for j in range(k):
            mag[j] = _laplace_magnitude(_prefix(words[j]), lg[j], t, c, widen)
        for j in range(k):
            m = mag[j]
            if m < 0:
                m = _laplace_exact_path(state, _prefix(words[j]), t)
            out[start + j] = -m if words[j] & np.uint64(1) else m


@njit(cache=True)
def discrete_laplace(state, t):
    """A discrete Laplace draw: ``P(k) ∝ exp(−|k|/t)`` on the integers.

    ``t`` in ``[2⁻¹⁰, 2⁴⁰]``; one keystream word per draw (almost always).
    For many draws, :func:`fill_discrete_laplace` is faster.
    """
    return _laplace_draw(state, t, _laplace_constant(t), _widen(state))


@njit(cache=True, inline="always")
def _acceptance_exponent(m, inv_sigma, sigma_over_t):
    """``v = m/σ − σ/t`` and ``γ = v²/2 = (m − σ²/t)²/(2σ²)``, in floats."""
    v = np.float64(m) * inv_sigma - sigma_over_t
    return v, 0.5 * v * v


@njit(cache=True, inline="always")
def _accept_decision(prefix, m, v, gamma, theta, inv_sigma, widen, extra=0.0):
    """Whether ``U < exp(−γ*)`` given ``theta = exp(−γ)`` (γ from
    :func:`_acceptance_exponent`, plus ``extra`` = ``low·inv_sigma`` on the
    staircase path): 1 or 0, or −1 if the floats cannot tell."""
    a = np.float64(prefix) * _ULP53
    # inv_sigma = (1/σ)(1 + ε), so m·inv_sigma and σ/t carry ≤ 2·2⁻⁵³
    # relative error each: |v − v*| ≤ ev = (m/σ + 1 + |v|)·2⁻⁵¹;
    # |γ − γ*| ≤ ev(|v| + ev) + 2⁻⁵²γ; exp adds 2⁻⁴⁸ relative:
    # θ = exp(−γ) is within θ·δ of θ*, δ ≤ 1.1(2⁻⁴⁸ + |γ − γ*|), halved here.
    # (On the staircase path γ = v²/2 + extra: extra = low/σ within 2⁻⁵¹
    # relative, the sum's rounding 2⁻⁵³γ; the last two terms cover both twice.)
    ev = (np.float64(m) * inv_sigma + 1.0 + abs(v)) * 2.0 ** -51
    delta = widen * (2.0 ** -45 + 4.0 * ev * (abs(v) + 1.0) + gamma * 2.0 ** -49
                     + extra * 2.0 ** -48)
    # beyond γ = 700: exp(−γ*) < 2⁻¹⁰⁰⁰ ≤ a unless prefix = 0 (θ's bound no longer holds)
    far = gamma > 700.0
    below = (a + _ULP53 <= theta * (1.0 - delta)) and not far
    above = (a >= theta * (1.0 + delta) and not far) or (far and prefix != 0)
    return np.int64(1) if below else (np.int64(0) if above else np.int64(-1))


@njit(cache=True)
def _accept_exact_path(state, prefix, m, sigma, t, low=0):
    with objmode(accept="int64"):
        accept = int(_exact_accept(state, prefix, m, sigma, t, low))
    return accept


# The discrete Gaussian's proposal at wide scales (σ ≥ WIDE_SCALE): the
# magnitude M = L·H + low, with H geometric of ratio e^{−L/t} (its inverse
# CDF ⌊(t/L)·(−ln U)⌋ is a float of a few thousand, decided with a guard band
# independent of t) and ``low`` uniform on {0, …, L − 1} from spare bits of the
# proposal's two words; the missing factor e^{−low/t} joins the acceptance.
# The one-word inverse CDF ⌊t·(c − ln U)⌋ errs by about t·2⁻⁴⁶, so its exact
# path (about a millisecond) ran for 1 proposal in 10³ at t = 2³².
WIDE_SCALE = 2.0 ** 20
# t/L is at least 2^_STEP_BITS (the floor's guard band is about (t/L)·2⁻⁴³ wide);
# L/t, the acceptance lost to the staircase, at most 2^-_STEP_BITS.
_STEP_BITS = 12
# Spare bits of a proposal's two words (bits 1-10 of the first, 0-10 of the second).
_LOW_BITS = 21


@njit(cache=True, inline="always")
def _staircase_low(w1, w2, steps):
    """``low``: 21 bits outside the two words' 53-bit prefixes and sign bit, mod ``steps``."""
    bits = ((w1 >> np.uint64(1)) & np.uint64(0x3FF)) | ((w2 & np.uint64(0x7FF)) << np.uint64(10))
    return np.int64(bits & np.uint64(steps - 1))


@njit(cache=True, inline="always")
def _staircase_high(prefix, lg, tl, widen):
    """``H = ⌊tl·(−ln U)⌋`` for ``U``'s prefix, given ``lg = log(prefix·2⁻⁵³)``, or −1."""
    y = tl * -lg
    # y* = tl·(−ln U), tl = t/L exact: |lg − ln a| ≤ 2⁻⁴⁸|ln a|,
    # 0 ≤ ln U − ln a < 1/prefix, one rounding:
    # |y − y*| ≤ tl(2⁻⁴⁸|lg| + 1/prefix) + 2⁻⁵²|y|, quartered here.
    err = widen * (tl * (2.0 ** -45 * abs(lg) + 4.0 * _inv_bound(prefix)) + abs(y) * 2.0 ** -50)
    return _floor_of(y, err)


@njit(cache=True)
def _staircase_exact_path(state, prefix, tl):
    with objmode(h="int64"):
        h = _exact_staircase_high(state, prefix, tl)
    return h


@njit(cache=True)
def _gaussian_constants(sigma):
    if not (sigma >= MIN_SCALE and sigma <= MAX_SCALE):
        raise ValueError("discrete_gaussian: sigma must be in [2**-10, 2**40]")
    # the proposal's scale: Canonne et al. take ⌊σ⌋ + 1 (their Laplace sampler needs a
    # rational); any t > 0 gives the same law, and t = σ accepts more (0.70 against
    # 0.54 proposals at σ = 1, 0.76 for both at large σ)
    t = sigma
    return t, _laplace_constant(t), 1.0 / sigma, sigma / t


@njit(cache=True)
def _staircase_steps(t):
    """The staircase's step ``L`` for the proposal scale ``t`` (1: the one-word
    discrete Laplace proposal, below :data:`WIDE_SCALE`)."""
    bits = 0
    while t >= WIDE_SCALE and bits < _LOW_BITS and 2.0 ** (bits + 1 + _STEP_BITS) <= t:
        bits += 1
    return np.int64(1) << np.int64(bits)


@njit(cache=True, inline="always")
def _gaussian_draw(state, sigma, t, c, inv_sigma, sigma_over_t, steps, widen):
    """One discrete Gaussian draw, the checks of the fills one proposal at a time."""
    tl = t / np.float64(steps)
    while True:
        word = next_u64(state)
        word2 = next_u64(state)
        accept_prefix = _prefix(word2)
        prefix = _prefix(word)
        lg = np.log(np.float64(prefix) * _ULP53)
        low = np.int64(0)
        if steps == 1:
            m = _laplace_magnitude(prefix, lg, t, c, widen)
            if m < 0:
                m = _laplace_exact_path(state, prefix, t)
        else:
            low = _staircase_low(word, word2, steps)
            h = _staircase_high(prefix, lg, tl, widen)
            if h < 0:
                h = _staircase_exact_path(state, prefix, tl)
            m = steps * h + low
        v, gamma = _acceptance_exponent(m, inv_sigma, sigma_over_t)
        extra = np.float64(low) * inv_sigma
        gamma += extra
        accept = _accept_decision(accept_prefix, m, v, gamma, np.exp(-min(gamma, 745.0)),
                                  inv_sigma, widen, extra)
        if accept < 0:
            accept = _accept_exact_path(state, accept_prefix, m, sigma, t, low)
        negative = word & np.uint64(1)
        # the staircase proposes −0 too: rejected, so that 0 is proposed once
        if accept == 1 and not (steps > 1 and negative and m == 0):
            return -m if negative else m


@njit(cache=True)
def fill_discrete_gaussian(state, sigma, out):
    """Fill ``out`` (int64[:]) with i.i.d. :func:`discrete_gaussian` draws.

    Proposals are made in batches, two keystream words each (the discrete
    Laplace's, the acceptance's), about 1.3 per draw; the accepted ones fill
    ``out`` in order, and those left over when ``out`` is full are dropped
    (the stopping rule depends only on their number, so the law is intact).
    Fewer than ``_SMALL`` draws are made one at a time.
    """
    _fill_gaussian(state, sigma, out, _staircase_steps(sigma))


@njit(cache=True)
def _fill_gaussian(state, sigma, out, steps):
    """:func:`fill_discrete_gaussian` with the staircase's step ``L`` given (a
    power of two up to 2²¹; 1 for the discrete Laplace proposal)."""
    t, c, inv_sigma, sigma_over_t = _gaussian_constants(sigma)
    widen = _widen(state)
    if out.size < _SMALL:
        for i in range(out.size):
            out[i] = _gaussian_draw(state, sigma, t, c, inv_sigma, sigma_over_t, steps, widen)
        return
    tl = t / np.float64(steps)
    batch = min(_BATCH, out.size + out.size // 2 + 1)
    words = np.empty(2 * batch, dtype=np.uint64)
    floats = np.empty((5, batch))
    lg, v, gamma, theta, extra = floats[0], floats[1], floats[2], floats[3], floats[4]
    ints = np.empty((4, batch), dtype=np.int64)
    mag, decision, draws, low = ints[0], ints[1], ints[2], ints[3]
    i = 0
    while i < out.size:
        left = out.size - i
        k = min(batch, left + left // 2 + 1)
        fill_u64(state, words[:2 * k])
        # loops without branches or calls vectorise, libm's calls get loops of their
        # own, and the rare exact paths are taken in loops apart
        for j in range(k):
            lg[j] = np.log(np.float64(_prefix(words[2 * j])) * _ULP53)
        if steps == 1:
            for j in range(k):
                mag[j] = _laplace_magnitude(_prefix(words[2 * j]), lg[j], t, c, widen)
            for j in range(k):
                if mag[j] < 0:
                    mag[j] = _laplace_exact_path(state, _prefix(words[2 * j]), t)
            low[:k] = 0
        else:
            for j in range(k):
                mag[j] = _staircase_high(_prefix(words[2 * j]), lg[j], tl, widen)
            for j in range(k):
                if mag[j] < 0:
                    mag[j] = _staircase_exact_path(state, _prefix(words[2 * j]), tl)
            for j in range(k):
                low[j] = _staircase_low(words[2 * j], words[2 * j + 1], steps)
                mag[j] = steps * mag[j] + low[j]
        for j in range(k):
            v[j], gamma[j] = _acceptance_exponent(mag[j], inv_sigma, sigma_over_t)
            extra[j] = np.float64(low[j]) * inv_sigma
            gamma[j] += extra[j]
        for j in range(k):
            theta[j] = np.exp(-min(gamma[j], 745.0))
        for j in range(k):
            decision[j] = _accept_decision(_prefix(words[2 * j + 1]), mag[j], v[j], gamma[j],
                                           theta[j], inv_sigma, widen, extra[j])
        for j in range(k):
            if decision[j] < 0:
                decision[j] = _accept_exact_path(state, _prefix(words[2 * j + 1]), mag[j],
                                                 sigma, t, low[j])
        if steps > 1:     # the staircase proposes −0 too: rejected
            for j in range(k):
                if mag[j] == 0 and words[2 * j] & np.uint64(1):
                    decision[j] = 0
        # the accepted proposals, in order
        n_accepted = 0
        for j in range(k):
            draws[n_accepted] = -mag[j] if words[2 * j] & np.uint64(1) else mag[j]
            n_accepted += decision[j]
        n_accepted = min(n_accepted, left)
        out[i:i + n_accepted] = draws[:n_accepted]
        i += n_accepted


@njit(cache=True)
def discrete_gaussian(state, sigma):
    """A discrete Gaussian draw: ``P(k) ∝ exp(−k²/(2σ²))`` on the integers.

    ``σ`` in ``[2⁻¹⁰, 2⁴⁰]`` (Canonne, Kamath, Steinke 2020, Algorithm 3).
    For many draws, :func:`fill_discrete_gaussian` is faster.
    """
    t, c, inv_sigma, sigma_over_t = _gaussian_constants(sigma)
    return _gaussian_draw(state, sigma, t, c, inv_sigma, sigma_over_t, _staircase_steps(t),
                          _widen(state))


__all__ = ["MAX_SCALE", "MIN_P", "MIN_SCALE", "bernoulli", "discrete_gaussian",
           "discrete_laplace", "fill_discrete_gaussian", "fill_discrete_laplace", "geometric",
           "uniform_below"]
