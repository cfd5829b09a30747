"""A cryptographically secure keystream for numba kernels: ChaCha20.

The secure noise mode's samplers (:mod:`dpcd.privacy.exact`) draw their
random bits from this stream, inside the numba kernels, with no Python
call. The stream is ChaCha20's keystream (Bernstein 2008; the block
function of RFC 8439, section 2.3), under a 256-bit key drawn from the
operating system's secure source (:mod:`secrets`):

* the state is one 1-D ``uint64`` array (:func:`new_state`): ChaCha20's 16
  input words (constants, key, a 64-bit block counter in words 12-13 and a
  64-bit nonce in words 14-15, as in the original construction, so the
  stream does not wrap after 2³² blocks), a buffer of ``8·BLOCKS`` words of
  keystream, and the position of the next unread word;
* :func:`next_u64` returns the next 8 bytes of keystream as a little-endian
  ``uint64`` and refills the buffer, ``BLOCKS`` blocks at a time, when it is
  empty (inlined into the calling kernel);
* :func:`fill_u64` copies the next words into an array, for loops that
  need many (it avoids :func:`next_u64`'s per-call reference counting of
  the state array, which costs about as much as computing a word).

So the words are exactly the bytes of the keystream that ``cryptography``'s
ChaCha20 (OpenSSL) produces for the same key and 16-byte counter-and-nonce
(tested, with RFC 8439's test vectors). The state is a secret: it is never
logged, pickled or recorded; a process that needs a stream makes its own,
and so does each thread (threads sharing a state could read the same words).
"""

from __future__ import annotations

import secrets

import numpy as np
from numba import njit

# Blocks of keystream computed per refill (64 bytes each).
BLOCKS = 32
_WORDS = 8 * BLOCKS          # uint64 words in the buffer
_POS = 16                    # index of the read position in the buffer
GUARD = 17                   # exact.py's guard-band widening (0 except in tests)
_BUF = 18                    # index of the buffer's first word
STATE_SIZE = _BUF + _WORDS

_MASK32 = np.uint64(0xFFFFFFFF)
# "expand 32-byte k", little-endian words
_SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)


def state_from_key(key: bytes, nonce: bytes = bytes(8), counter: int = 0,
                   guard: int = 0) -> np.ndarray:
    """A stream keyed by ``key``: for tests and test vectors only.

    Parameters
    ----------
    key : bytes
        32 bytes.
    nonce : bytes
        8 bytes (ChaCha20 words 14-15).
    counter : int
        First 64-bit block counter (words 12-13).
    guard : int
        Test hook: :mod:`dpcd.privacy.exact` widens its guard bands by
        ``2**guard``, so that its exact fallback path is taken (0 in production).

    Returns
    -------
    state : ndarray of uint64, shape (STATE_SIZE,)
    """
    if len(key) != 32 or len(nonce) != 8:
        raise ValueError("key must be 32 bytes and nonce 8 bytes")
    state = np.zeros(STATE_SIZE, dtype=np.uint64)
    state[0:4] = _SIGMA
    state[4:12] = np.frombuffer(key, dtype="<u4")
    state[12] = counter & 0xFFFFFFFF
    state[13] = (counter >> 32) & 0xFFFFFFFF
    state[14:16] = np.frombuffer(nonce, dtype="<u4")
    state[_POS] = _WORDS       # buffer empty: the first draw refills it
    state[GUARD] = guard
    return state


def new_state() -> np.ndarray:
    """A fresh stream keyed with 256 bits from the OS's secure source.

    The state is the secret: never log, pickle or record it.

    Returns
    -------
    state : ndarray of uint64, shape (STATE_SIZE,)
    """
    return state_from_key(secrets.token_bytes(32), secrets.token_bytes(8))


@njit(fastmath=False, inline="always")
def _rotl(x, n):
    return np.uint32((x << np.uint32(n)) | (x >> np.uint32(32 - n)))


@njit(fastmath=False, inline="always")
def _qr(a, b, c, d):
    a = np.uint32(a + b)
    d = _rotl(d ^ a, 16)
    c = np.uint32(c + d)
    b = _rotl(b ^ c, 12)
    a = np.uint32(a + b)
    d = _rotl(d ^ a, 8)
    c = np.uint32(c + d)
    b = _rotl(b ^ c, 7)
    return a, b, c, d


@njit(cache=True, fastmath=False)
def chacha20_blocks(inp, out, offset, n_blocks):
    """ChaCha20's block function (RFC 8439, 2.3) for ``n_blocks`` consecutive counters.

    ``inp[:16]`` are the 16 input words (``uint64`` holding 32-bit values),
    words 12-13 the 64-bit counter of the first block. Block ``b`` is written
    as 8 little-endian ``uint64`` words to ``out[offset + 8b:offset + 8b + 8]``.
    The blocks are computed side by side, one lane each, so that the compiler
    vectorises the rounds across blocks.
    """
    x = np.empty((16, n_blocks), dtype=np.uint32)
    first = inp[12] | (inp[13] << np.uint64(32))
    for i in range(16):
        for b in range(n_blocks):
            x[i, b] = np.uint32(inp[i])
    for b in range(n_blocks):
        counter = first + np.uint64(b)
        x[12, b] = np.uint32(counter & _MASK32)
        x[13, b] = np.uint32(counter >> np.uint64(32))
    start = x.copy()
    for _ in range(10):
        for b in range(n_blocks):
            x0, x1, x2, x3 = x[0, b], x[1, b], x[2, b], x[3, b]
            x4, x5, x6, x7 = x[4, b], x[5, b], x[6, b], x[7, b]
            x8, x9, x10, x11 = x[8, b], x[9, b], x[10, b], x[11, b]
            x12, x13, x14, x15 = x[12, b], x[13, b], x[14, b], x[15, b]
            # a column round then a diagonal round
            x0, x4, x8, x12 = _qr(x0, x4, x8, x12)
            x1, x5, x9, x13 = _qr(x1, x5, x9, x13)
            x2, x6, x10, x14 = _qr(x2, x6, x10, x14)
            x3, x7, x11, x15 = _qr(x3, x7, x11, x15)
            x0, x5, x10, x15 = _qr(x0, x5, x10, x15)
            x1, x6, x11, x12 = _qr(x1, x6, x11, x12)
            x2, x7, x8, x13 = _qr(x2, x7, x8, x13)
            x3, x4, x9, x14 = _qr(x3, x4, x9, x14)
            x[0, b], x[1, b], x[2, b], x[3, b] = x0, x1, x2, x3
            x[4, b], x[5, b], x[6, b], x[7, b] = x4, x5, x6, x7
            x[8, b], x[9, b], x[10, b], x[11, b] = x8, x9, x10, x11
            x[12, b], x[13, b], x[14, b], x[15, b] = x12, x13, x14, x15
    s32 = np.uint64(32)
    for b in range(n_blocks):
        for i in range(8):
            lo = np.uint64(np.uint32(x[2 * i, b] + start[2 * i, b]))
            hi = np.uint64(np.uint32(x[2 * i + 1, b] + start[2 * i + 1, b]))
            out[offset + 8 * b + i] = lo | (hi << s32)


@njit(cache=True, fastmath=False)
def _refill(state):
    """Fill the buffer with the next BLOCKS blocks; advance the counter; position 0."""
    chacha20_blocks(state, state, _BUF, BLOCKS)
    counter = (state[12] | (state[13] << np.uint64(32))) + np.uint64(BLOCKS)
    state[12] = counter & _MASK32
    state[13] = counter >> np.uint64(32)
    state[_POS] = 0


@njit(cache=True, fastmath=False, inline="always")
def next_u64(state):
    """The next 64 bits of the keystream, as a uint64 (advances ``state``)."""
    pos = state[_POS]
    if pos >= _WORDS:
        _refill(state)
        pos = state[_POS]
    state[_POS] = pos + np.uint64(1)
    return state[_BUF + pos]


@njit(cache=True, fastmath=False)
def fill_u64(state, out):
    """Fill ``out`` (uint64[:]) with the next words of the keystream."""
    pos = np.int64(state[_POS])
    i = 0
    while i < out.size:
        if pos >= _WORDS:
            _refill(state)
            pos = 0
        # a refill's words at a time (a copy that vectorises, not a test per word)
        n = min(out.size - i, _WORDS - pos)
        out[i:i + n] = state[_BUF + pos:_BUF + pos + n]
        i += n
        pos += n
    state[_POS] = pos


__all__ = ["BLOCKS", "GUARD", "STATE_SIZE", "chacha20_blocks", "fill_u64", "new_state",
           "next_u64", "state_from_key"]
