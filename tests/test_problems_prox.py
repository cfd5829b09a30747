"""Property tests of the prox operators (vectorised and the njit 1-d ones)."""
import numpy as np
from hypothesis import given, settings, strategies as st

from dpcd.problems import L1, L2, ElasticNet, NoPenalty
from dpcd.problems._jit import _penalty_value, _prox_1d

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
steps = st.floats(1e-3, 1e2, allow_nan=False)
alphas = st.floats(0, 10, allow_nan=False)


def _penalty(kind, alpha, r):
    return {"l1": L1(alpha), "l2": L2(alpha), "enet": ElasticNet(alpha, r),
            "none": NoPenalty()}[kind]


kinds = st.sampled_from(["l1", "l2", "enet", "none"])
ratios = st.floats(0, 1, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(x=finite, step=steps, alpha=alphas)
def test_l1_prox_is_soft_threshold(x, step, alpha):
    p = L1(alpha).prox(np.array([x]), step)[0]
    expected = np.sign(x) * max(abs(x) - step * alpha, 0.0)
    assert p == expected


@settings(max_examples=300, deadline=None)
@given(kind=kinds, x=finite, step=steps, alpha=alphas, r=ratios)
def test_prox_optimality(kind, x, step, alpha, r):
    """(x - prox) / step is in d psi(prox)."""
    pen = _penalty(kind, alpha, r)
    p = pen.prox(np.array([x]), step)
    # -grad with grad = -(x - p) / step
    dist = pen.subdiff_distance(p, -(x - p) / step)[0]
    assert dist <= 1e-9 * (1 + abs(x) / step)


@settings(max_examples=300, deadline=None)
@given(kind=kinds, x=finite, z=finite, step=steps, alpha=alphas, r=ratios)
def test_prox_firmly_nonexpansive(kind, x, z, step, alpha, r):
    """|P x - P z|^2 <= (P x - P z)(x - z)."""
    pen = _penalty(kind, alpha, r)
    px, pz = pen.prox(np.array([x, z]), step)
    assert (px - pz) ** 2 <= (px - pz) * (x - z) + 1e-9 * (1 + abs(x) + abs(z)) ** 2


@settings(max_examples=200, deadline=None)
@given(kind=kinds, x=finite, step=steps, alpha=alphas, r=ratios)
def test_jit_prox_matches_vectorised(kind, x, step, alpha, r):
    pen = _penalty(kind, alpha, r)
    p_vec = pen.prox(np.array([x]), step)[0]
    p_jit = _prox_1d(pen.code, pen.params, x, step)
    assert abs(p_vec - p_jit) <= 1e-12 * (1 + abs(x))


@settings(max_examples=50, deadline=None)
@given(kind=kinds, alpha=alphas, r=ratios, seed=st.integers(0, 2**31))
def test_vectorised_prox_with_step_array(kind, alpha, r, seed):
    rng = np.random.default_rng(seed)
    pen = _penalty(kind, alpha, r)
    w = rng.standard_normal(6) * 5
    s = rng.uniform(0.01, 3, size=6)
    p = pen.prox(w, s)
    for j in range(6):
        assert abs(p[j] - _prox_1d(pen.code, pen.params, w[j], s[j])) <= 1e-12 * (
            1 + abs(w[j]))
    assert abs(pen.value(w) - _penalty_value(pen.code, pen.params, w)) <= 1e-12 * (
        1 + abs(pen.value(w)))
