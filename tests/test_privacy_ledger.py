"""Ledger serialisation, MLflow views, combination; private smoothness release."""

import json

import numpy as np
import pytest

from dpcd import privacy
from dpcd.privacy import Ledger


def test_ledger_json_round_trip_and_flat_views():
    cal = privacy.calibrate_dp_cd_p(1000, 4, 5, np.ones(4), 1.0, 1e-6)
    led = cal.ledger.add_nonprivate_input("standardisation")
    assert "standardisation" in led.nonprivate_inputs
    assert "standardisation" not in cal.ledger.nonprivate_inputs  # copy, not mutation
    text = led.to_json()
    assert Ledger.from_json(text) == led
    assert Ledger.from_dict(json.loads(text)) == led
    params = led.flat_params()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in params.items())
    assert len(params) < 60 and all(len(k) < 250 and len(v) < 500 for k, v in params.items())
    assert params["privacy.nonprivate_inputs"] == "standardisation"
    assert params["privacy.mechanism.1.noise_multiplier"]
    metrics = led.flat_metrics()
    assert metrics["privacy.epsilon_achieved"] == pytest.approx(led.epsilon_achieved)
    assert all(isinstance(v, float) for v in metrics.values())
    assert led.flat_tags()["privacy.nonprivate_inputs"] == "standardisation"


def test_combine_adds_up_and_checks_relation():
    a = privacy.calibrate_dp_cd(1000, 4, 5, np.ones(4), 0.5, 1e-6).ledger
    b = privacy.smoothness_ledger(1000, np.ones(4), 0.2).add_nonprivate_input("x")
    c = Ledger.combine([b, a])
    assert c.epsilon_achieved == pytest.approx(a.epsilon_achieved + 0.2)
    assert c.delta == pytest.approx(1e-6)
    assert len(c.mechanisms) == 2 and len(c.budget) == 2 and c.nonprivate_inputs == ("x",)
    sgd = privacy.calibrate_dp_sgd(1000, 10, 1, 1.0, 1.0, 1e-6).ledger
    with pytest.raises(ValueError, match="neighbouring"):
        Ledger.combine([a, sgd])


def test_private_smoothness_release():
    rng = np.random.default_rng(0)
    n, p = 400, 3
    per_sample = rng.random((n, p)) * np.array([1.0, 4.0, 0.01])
    bounds = np.array([1.0, 2.0, 1.0])
    M, led = privacy.private_smoothness(per_sample, bounds, 1.0, np.random.default_rng(1))
    assert M.shape == (p,) and np.all(M > 0) and np.all(M <= bounds)
    assert led.epsilon_achieved == 1.0 and led.delta == 0.0
    np.testing.assert_allclose(led.mechanisms[0].noise_scale, p * bounds / (n * 1.0))
    # Same generator seed, same release.
    M2, _ = privacy.private_smoothness(per_sample, bounds, 1.0, np.random.default_rng(1))
    np.testing.assert_array_equal(M, M2)
    # Noise has the stated Laplace scale (many draws of the release).
    draws = np.array([privacy.private_smoothness(per_sample, 10.0, 1.0,
                                                 np.random.default_rng(s), floor=1e-9)[0]
                      for s in range(2000)])
    scale = p * 10.0 / n
    mean = np.clip(per_sample, 0, 10.0).mean(0)
    # (coordinate 2 has mean ~0.005, so the floor clips it; check the others)
    np.testing.assert_allclose(np.abs(draws - mean).mean(0)[:2], scale, rtol=0.1)
    # Non-positive estimates are floored (post-processing).
    M0, _ = privacy.private_smoothness(np.zeros((2, 2)), 1.0, 0.01, np.random.default_rng(0))
    assert np.all(M0 >= 1e-2)
    with pytest.raises(ValueError, match="epsilon"):
        privacy.private_smoothness(per_sample, bounds, 0.0, rng)
    with pytest.raises(ValueError, match="rng"):
        privacy.private_smoothness(per_sample, bounds, 1.0, 0)
