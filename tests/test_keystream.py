"""The ChaCha20 keystream: RFC 8439's test vectors and OpenSSL's keystream."""

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from dpcd.privacy import keystream


def _block(key, counter, nonce_words):
    """One block for 16 input words laid out as RFC 8439 (32-bit counter, 96-bit nonce)."""
    inp = keystream.state_from_key(key)[:16].copy()
    inp[12] = counter
    inp[13:16] = nonce_words
    out = np.zeros(8, dtype=np.uint64)
    keystream.chacha20_blocks(inp, out, 0, 1)
    return out.tobytes()


def test_rfc8439_block_function_vector():
    # RFC 8439, 2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00, counter 1
    nonce = np.frombuffer(bytes.fromhex("000000090000004a00000000"), dtype="<u4")
    expected = bytes.fromhex(
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    assert _block(bytes(range(32)), 1, nonce) == expected


def test_rfc8439_appendix_a1_vectors():
    # RFC 8439, A.1, test vectors #1 and #2: all-zero key and nonce, counters 0 and 1
    zero = np.zeros(3, dtype=np.uint32)
    assert _block(bytes(32), 0, zero) == bytes.fromhex(
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586")
    assert _block(bytes(32), 1, zero) == bytes.fromhex(
        "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
        "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f")


def _openssl_words(key, first16, n_words):
    encryptor = Cipher(algorithms.ChaCha20(key, first16), mode=None).encryptor()
    return np.frombuffer(encryptor.update(bytes(8 * n_words)), dtype="<u8")


def test_stream_is_openssl_chacha20_keystream():
    rng = np.random.default_rng(7)
    key, nonce = rng.bytes(32), rng.bytes(8)
    state = keystream.state_from_key(key, nonce)
    words = np.zeros(100_003, dtype=np.uint64)      # many refills, not a multiple of one
    keystream.fill_u64(state, words)
    expected = _openssl_words(key, bytes(8) + nonce, words.size)
    np.testing.assert_array_equal(words, expected)
    # word by word (the kernels' path) continues the same stream
    more = [keystream.next_u64(state) for _ in range(1000)]
    np.testing.assert_array_equal(more, _openssl_words(key, bytes(8) + nonce,
                                                       words.size + 1000)[words.size:])
    # and a fill from the middle of the buffer, across refills, continues it too
    rest = np.zeros(700, dtype=np.uint64)
    keystream.fill_u64(state, rest)
    np.testing.assert_array_equal(rest, _openssl_words(key, bytes(8) + nonce,
                                                       words.size + 1700)[words.size + 1000:])


def test_counter_carries_into_the_high_word():
    """The 64-bit counter: past block 2³² − 1 comes block (0, 1) (OpenSSL's 32-bit
    counter refuses to go on; its block for words 12-13 = (0, 1) is the reference)."""
    rng = np.random.default_rng(8)
    key, nonce = rng.bytes(32), rng.bytes(8)
    start = 2 ** 32 - 5
    state = keystream.state_from_key(key, nonce, counter=start)
    words = np.zeros(80, dtype=np.uint64)
    keystream.fill_u64(state, words)
    before = _openssl_words(key, start.to_bytes(8, "little") + nonce, 40)
    after = _openssl_words(key, (2 ** 32).to_bytes(8, "little") + nonce, 40)
    np.testing.assert_array_equal(words, np.concatenate([before, after]))


def test_new_states_are_keyed_from_the_os():
    a, b = keystream.new_state(), keystream.new_state()
    assert not np.array_equal(a[4:12], b[4:12])
    assert keystream.next_u64(a) != keystream.next_u64(b)
    assert a[keystream.GUARD] == 0


def test_state_from_key_refuses_bad_lengths():
    with pytest.raises(ValueError):
        keystream.state_from_key(bytes(31))
    with pytest.raises(ValueError):
        keystream.state_from_key(bytes(32), bytes(12))
