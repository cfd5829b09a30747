"""Standard normal noise vectors, drawn in SIMD from a counter-based stream.

DP-SGD adds a fresh normal to every coordinate at every step. numba's
``Generator.standard_normal`` (numpy's ziggurat) costs about 10 ns a draw and
its branches keep it scalar: at 8 features the draws were half of a step, and
nearly all of it on wide data. Here normal ``i`` of a stream is a pure
function of ``(key, i)``, so a loop fills a vector of them with no carried
state and LLVM vectorises it (4 doubles per AVX2 instruction; about 2x fewer
ns per draw, ``bench/bench_normal.py``):

* uniform bits: SplitMix64's output function on the Weyl sequence
  ``key + c * 0x9E3779B97F4A7C15`` (this *is* SplitMix64, addressed by ``c``);
* Box-Muller on pairs: normals ``2k`` and ``2k + 1`` are ``r cos t`` and
  ``r sin t`` with ``r = sqrt(-2 log u)``, ``t`` uniform on a full turn, from
  the counters ``3k, 3k + 1, 3k + 2``.

Tails. ``u`` lies on a grid of step 2**-104 (two 52-bit words), so ``r``
reaches 12.0 and the mass left out is 2**-104 per pair: 2.5e-22 over
10**10 draws, far below any delta used here. (With one 52-bit word the cut
would be at 8.5 sigma, and 10**9 draws would miss mass 1e-7, more than a
typical delta.) ``log``, ``sin`` and ``cos`` are polynomials (fdlibm's log, Cephes'
sin/cos) so they vectorise; they agree with libm to a few ulp
(``tests/test_normal.py``). Like every floating-point sampler (numpy's
ziggurat too), this draws from a finite set of doubles, not the exact
Gaussian the accountants assume (a pair takes 158 random bits: 104 for the
radius, 54 for the angle).
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types, uint64
from numba.extending import intrinsic

_GAMMA = np.uint64(0x9E3779B97F4A7C15)  # SplitMix64's Weyl increment
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_ONE = np.uint64(0x3FF0000000000000)  # bits of 1.0
_MANTISSA = np.uint64(0x000FFFFFFFFFFFFF)
_LN2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)
_HALF_PI = math.pi / 2


# normals a kernel's buffer holds (even): at 8 features, one vector loop per 64 steps
BUFFER = 512


def stream_key(seed_seq):
    """The 64-bit key of a normal stream, from a ``numpy.random.SeedSequence``."""
    return np.uint64(seed_seq.generate_state(1, np.uint64)[0])


def new_stream(rng):
    """Key and (empty) buffer of the normal stream of ``rng``'s SeedSequence: what
    a kernel takes in place of the noise Generator."""
    return stream_key(rng.bit_generator.seed_seq), np.empty(BUFFER)


@intrinsic
def _as_float(typingctx, bits):
    """The float64 whose bits are ``bits`` (uint64)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.uint64), codegen


@intrinsic
def _as_bits(typingctx, x):
    """The bits (uint64) of float64 ``x``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.uint64(types.float64), codegen


@njit(inline="always")
def _splitmix(key, c):
    """64 uniform bits: SplitMix64 output ``c`` of the stream ``key``."""
    z = key + c * _GAMMA
    z = (z ^ (z >> uint64(30))) * _M1
    z = (z ^ (z >> uint64(27))) * _M2
    return z ^ (z >> uint64(31))


@njit(inline="always")
def _unit(bits):
    """Uniform on [0, 1) from the top 52 of ``bits``, built as 1.m - 1."""
    return _as_float((bits >> uint64(12)) | _ONE) - 1.0


@njit(inline="always")
def _minus_2_log(u):
    """``-2 log(u)`` for ``u`` in (0, 1]: fdlibm's e_log.c without the ln2
    hi/lo split (|u| >= 2**-104, so ``e ln2`` loses under 1 ulp of the sum)."""
    b = _as_bits(u)
    e = float(np.int32(np.int64(b >> uint64(52)) - 1023))
    f = _as_float((b & _MANTISSA) | _ONE)  # u = f 2**e, f in [1, 2)
    big = f > _SQRT2  # f in [sqrt(2)/2, sqrt(2)) keeps s small
    f = f * 0.5 if big else f
    e = e + 1.0 if big else e
    s = (f - 1.0) / (f + 1.0)
    z = s * s
    # log(f) = log((1 + s) / (1 - s)) = 2 s + s R(z), |error| < 2**-58.45
    r = 1.479819860511658591e-01
    r = 1.531383769920937332e-01 + z * r
    r = 1.818357216161805012e-01 + z * r
    r = 2.222219843214978396e-01 + z * r
    r = 2.857142874366239149e-01 + z * r
    r = 3.999999999940941908e-01 + z * r
    r = 6.666666666666735130e-01 + z * r
    return -2.0 * (e * _LN2 + (2.0 * s + s * (z * r)))


@njit(inline="always")
def _sin_cos(x):
    """``sin(x), cos(x)`` for |x| <= pi/4 (Cephes sin.c polynomials)."""
    z = x * x
    s = 1.58962301576546568060e-10
    s = -2.50507477628578072866e-8 + z * s
    s = 2.75573136213857245213e-6 + z * s
    s = -1.98412698295895385996e-4 + z * s
    s = 8.33333333332211858878e-3 + z * s
    s = -1.66666666666666307295e-1 + z * s
    c = -1.13585365213876817300e-11
    c = 2.08757008419747316778e-9 + z * c
    c = -2.75573141792967388112e-7 + z * c
    c = 2.48015872888517045348e-5 + z * c
    c = -1.38888888888730564116e-3 + z * c
    c = 4.16666666666665929218e-2 + z * c
    return x + x * z * s, 1.0 - 0.5 * z + z * z * c


@njit(inline="always")
def _pair(key, k):
    """Normals ``2k`` and ``2k + 1`` of the stream ``key`` (Box-Muller)."""
    c = uint64(k) * uint64(3)
    h_u = _splitmix(key, c)
    h_t = _splitmix(key, c + uint64(1))
    h_lo = _splitmix(key, c + uint64(2))
    # u = 1 - hi - lo 2**-52 in [2**-104, 1]: never 0, so log(u) is finite
    u = (1.0 - _unit(h_u)) - _unit(h_lo) * 2.0**-52
    r = np.sqrt(_minus_2_log(u))
    # angle: quadrant q from the top 2 bits, x in [-pi/4, pi/4) from the next 52
    q = h_t >> uint64(62)
    x = (_unit(h_t << uint64(2)) - 0.5) * _HALF_PI
    sn, cs = _sin_cos(x)
    # (cos, sin) of q pi/2 + x, without branches
    odd = (q & uint64(1)) != uint64(0)
    a = sn if odd else cs
    b = cs if odd else sn
    a = -a if (q == uint64(1) or q == uint64(2)) else a
    b = -b if q >= uint64(2) else b
    return r * a, r * b


# FMA contraction in the polynomials: about 1 ns a draw
@njit(cache=True, error_model="numpy", fastmath={"contract"})
def fill_normals(key, first, out):
    """``out[j]`` = normal ``first + j`` of the stream ``key``; ``first`` and
    ``out.shape[0]`` even. One vectorised loop over pairs."""
    k0 = first // 2
    for k in range(out.shape[0] // 2):
        a, b = _pair(key, k0 + k)
        out[2 * k] = a
        out[2 * k + 1] = b


@njit(inline="always")
def _take_buffered(key, buf, start, pos, out, lo, hi):
    """``out[lo:hi]`` from the buffer (see :func:`take_normals`)."""
    n_buf = buf.shape[0]
    for j in range(lo, hi):
        i = pos + j
        if i - start >= n_buf:
            start = i - (i & 1)
            fill_normals(key, start, buf)
        out[j] = buf[i - start]
    return start


@njit(inline="always")
def take_normals(key, buf, start, pos, out):
    """Copy normals ``pos, ..., pos + len(out) - 1`` of the stream into ``out``.

    ``buf`` (even length) holds normals ``start, ...``. A vector shorter than
    the buffer is copied from it, refilling it as ``pos`` runs past its end,
    so short vectors cost one call and one vector loop per buffer, not per
    step; a longer one is filled in place (its odd ends from the buffer).
    Returns the new ``start``; begin with ``start = -len(buf)`` (empty).
    The values depend only on ``(key, pos)``: not on the buffer's length.
    """
    n = out.shape[0]
    if n < buf.shape[0]:
        return _take_buffered(key, buf, start, pos, out, 0, n)
    lo = pos & 1  # fill_normals starts on a pair
    hi = lo + ((n - lo) & ~1)
    start = _take_buffered(key, buf, start, pos, out, 0, lo)
    fill_normals(key, pos + lo, out[lo:hi])
    return _take_buffered(key, buf, start, pos, out, hi, n)
