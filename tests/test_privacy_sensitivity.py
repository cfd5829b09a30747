"""Sensitivities used by the calibrations, checked against their definitions.

Hypothesis draws a dataset D and a neighbour D' (one record replaced, or
replaced by the zero record) and checks that the released quantity moves by
at most the sensitivity the ledger states.
"""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpcd import privacy
from dpcd.privacy.smoothness import smoothness_sensitivity

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


@st.composite
def neighbours(draw, min_n=2, max_n=12, max_p=5):
    n = draw(st.integers(min_n, max_n))
    p = draw(st.integers(1, max_p))
    X = draw(arrays(float, (n, p), elements=finite))
    k = draw(st.integers(0, n - 1))
    row = draw(arrays(float, (p,), elements=finite))
    Xp = X.copy()
    Xp[k] = row
    return X, Xp, k


def clipped_coordinate_gradient_mean(X, y, w, clip):
    # Logistic loss per-sample coordinate gradients, clipped coordinate-wise.
    margins = y * (X @ w)
    dloss = -y / (1 + np.exp(np.clip(margins, -50, 50)))
    per_sample = dloss[:, None] * X
    return np.clip(per_sample, -clip, clip).mean(axis=0)


@settings(max_examples=60, deadline=None)
@given(neighbours(), st.data())
def test_dp_cd_coordinate_gradient_sensitivity(nb, data):
    X, Xp, k = nb
    n, p = X.shape
    clip = data.draw(arrays(float, (p,), elements=st.floats(1e-3, 10)))
    w = data.draw(arrays(float, (p,), elements=st.floats(-3, 3)))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    yp = y.copy()
    yp[k] = data.draw(st.sampled_from([-1.0, 1.0]))
    diff = np.abs(clipped_coordinate_gradient_mean(X, y, w, clip)
                  - clipped_coordinate_gradient_mean(Xp, yp, w, clip))
    cal = privacy.calibrate_dp_cd(max(n, 2), p, 1, clip, 1.0, 1e-5)
    sens = np.asarray(cal.ledger.mechanisms[0].sensitivity)
    assert np.all(diff <= sens * (1 + 1e-9) + 1e-12)
    np.testing.assert_allclose(cal.noise_scales, cal.noise_multiplier * sens)


@settings(max_examples=60, deadline=None)
@given(neighbours(), st.data())
def test_smoothness_mean_sensitivity(nb, data):
    M, Mp, _ = nb
    M, Mp = np.abs(M), np.abs(Mp)  # per-sample smoothness constants are >= 0
    n, p = M.shape
    b = data.draw(arrays(float, (p,), elements=st.floats(1e-2, 60)))
    diff = np.abs(np.clip(M, 0, b).mean(0) - np.clip(Mp, 0, b).mean(0))
    sens = smoothness_sensitivity(n, b)
    assert np.all(diff <= sens * (1 + 1e-9) + 1e-12)
    # The paper's 2 b_j / n is twice what is needed.
    np.testing.assert_allclose(smoothness_sensitivity(n, b, "paper"), 2 * sens)


def test_smoothness_sensitivity_is_attained():
    n, b = 10, np.array([2.0, 5.0])
    M = np.zeros((n, 2))
    Mp = M.copy()
    Mp[3] = [100.0, 100.0]
    diff = np.abs(np.clip(M, 0, b).mean(0) - np.clip(Mp, 0, b).mean(0))
    np.testing.assert_allclose(diff, smoothness_sensitivity(n, b))


def dp_scd_minibatch_update(X, y, alpha, v, batch, clip, lam=0.1):
    """One DP-SCD (Algorithm 1, ridge dual) mini-batch update before noise.

    Every coordinate update of the batch is computed from the same (alpha, v)
    (independent updates), scaled to |zeta| <= C (Step 8); returns [alpha; v].
    """
    N = X.shape[0]
    zeta = np.zeros(N)
    for i in batch:
        xi = X[i]
        denom = 1.0 + xi @ xi / (lam * N)
        z = (y[i] - xi @ v - alpha[i]) / denom
        zeta[i] = z / max(1.0, abs(z) / clip)
    d_alpha = zeta
    d_v = X.T @ zeta  # sum_i zeta_i x_i
    return np.concatenate([alpha + d_alpha, v + d_v])


def unit_rows(A):
    # Rows of tiny norm (hypothesis finds denormals) cannot be normalised accurately
    # in float64: treat them as zero rows, which become e_1, still of unit norm.
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    tiny = norms[:, 0] < 1e-100
    A = np.where(norms >= 1e-100, A / np.where(norms >= 1e-100, norms, 1), 0.0)
    A[tiny, 0] = 1.0
    return A


@settings(max_examples=60, deadline=None)
@given(neighbours(min_n=3), st.data())
def test_dp_scd_dual_update_sensitivity(nb, data):
    X, Xp, k = nb
    X, Xp = unit_rows(X), unit_rows(Xp)  # Lemma 1: records of unit norm
    n, p = X.shape
    clip = data.draw(st.floats(1e-2, 10))
    y = data.draw(arrays(float, (n,), elements=finite))
    alpha = data.draw(arrays(float, (n,), elements=finite))
    v = data.draw(arrays(float, (p,), elements=finite))
    batch = sorted(set(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n))))
    if k not in batch:
        batch.append(k)  # worst case: the differing record is in the batch
    f = dp_scd_minibatch_update(X, y, alpha, v, batch, clip)
    # replace_one: any other unit-norm record and label.
    yp = y.copy()
    yp[k] = data.draw(finite)
    fp = dp_scd_minibatch_update(Xp, yp, alpha, v, batch, clip)
    assert np.linalg.norm(f - fp) <= privacy.dp_scd_sensitivity(clip, len(batch), "dual",
                                                                "replace_one") * (1 + 1e-9)
    # replace_special (the paper's zero record): x_k = 0 contributes no update.
    Xz = X.copy()
    Xz[k] = 0.0
    fz = dp_scd_minibatch_update(Xz, y, alpha, v, [i for i in batch if i != k], clip)
    assert np.linalg.norm(f - fz) <= privacy.dp_scd_sensitivity(clip, len(batch), "dual",
                                                                "replace_special") * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(neighbours(), st.floats(1e-2, 10))
def test_dp_sgd_clipped_sum_sensitivity(nb, clip):
    G, Gp, k = nb
    def clipped_sum(A):
        norms = np.linalg.norm(A, axis=1, keepdims=True)
        return (A / np.maximum(1.0, norms / clip)).sum(0)
    cal_p = privacy.calibrate_dp_sgd(100, 10, 1, clip, 1.0, 1e-5, accountant="rdp")
    cal_w = privacy.calibrate_dp_sgd(100, 10, 1, clip, 1.0, 1e-5,
                                     sampling="without_replacement")
    removed = np.delete(G, k, axis=0)
    assert np.linalg.norm(clipped_sum(G) - clipped_sum(removed)) <= \
        cal_p.ledger.mechanisms[0].sensitivity * (1 + 1e-9)
    assert np.linalg.norm(clipped_sum(G) - clipped_sum(Gp)) <= \
        cal_w.ledger.mechanisms[0].sensitivity * (1 + 1e-9)
    assert math.isclose(cal_w.ledger.mechanisms[0].sensitivity, 2 * clip)
