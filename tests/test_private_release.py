"""What a privately tuned release carries, and nothing more.

Repeat-and-select (Papernot & Steinke 2022) covers the best candidate with the
number of candidates K as internal randomness; with K published the guarantee
is the average of the best-of-k mechanisms' and breaks the stated epsilon. The
released model must also not carry the seed of its own noise, nor its exact
training objective (the selection score before clipping and noise). And under
add-or-remove-one the score divides by a public n with a noise scale that does
not depend on the data's n (neighbours of sizes n and n + 1)."""

import dataclasses
import math
import re
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as ev
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from scipy import integrate
from sklearn.base import clone
from sklearn.datasets import make_regression

from dpcd import PrivacyLeakWarning, PrivateSearch
from dpcd.estimators import DPCoordinateDescentRegressor
from dpcd.tuning import scores

#: The public attributes of a fitted search: what goes out with the release.
RELEASED = {"best_estimator_", "best_params_", "best_score_", "privacy_ledger_", "ledger_",
            "calibration_", "n_features_in_"}


@pytest.fixture(scope="module")
def data():
    X, y = make_regression(200, 4, noise=1.0, random_state=0)
    return X / np.abs(X).max(axis=0), y / np.std(y)


def _fit(data, **kw):
    search = PrivateSearch(DPCoordinateDescentRegressor(solver="dp_cd", passes=2),
                           {"step": [0.1, 0.3, 1.0], "clip": [0.5, 1.0]}, epsilon=1.0,
                           delta=1e-5, k_mean=6, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return search.fit(*data)


def _holds_k(text):
    """A key or note that states K (the ledger keeps only the law of K)."""
    return re.search(r'"k"\s*:|\bK=\d|n_candidates|candidate_params|"drawn"', text)


def test_a_fitted_search_holds_no_k(data):
    search = _fit(data, random_state=3)
    public = {a for a in vars(search) if a.endswith("_") and not a.startswith("_")}
    assert public == RELEASED  # a new public attribute must be reviewed here first
    text = search.privacy_ledger_.to_json()
    assert not _holds_k(text), _holds_k(text)
    assert '"k_distribution": "geometric"' in text and '"k_mean": 6.0' in text
    assert not any(re.search(r"(^|\.)k$|candidates", key)
                   for key in {**search.privacy_ledger_.flat_params(),
                               **search.privacy_ledger_.flat_metrics()})
    fields = {f.name for f in dataclasses.fields(search.calibration_)}
    assert not fields & {"k", "drawn", "candidates"}
    # nor the released estimator: its ledger is its own training's
    assert not _holds_k(search.best_estimator_.privacy_ledger_.to_json())


def test_the_released_model_keeps_no_seed_and_no_history(data):
    """random_state=None: the released estimator says None (not the 64-bit seed
    its noise came from), so refitting it draws other noise; no history_."""
    search = _fit(data, random_state=None)
    best = search.best_estimator_
    assert best.get_params()["random_state"] is None
    assert not hasattr(best, "history_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        refit = clone(best).fit(*data)
    assert not np.array_equal(refit.coef_, best.coef_)
    # a seeded search hands out the seed its user gave, nothing else
    assert _fit(data, random_state=5).best_estimator_.random_state == 5
    # the standalone estimator keeps its own diagnostics
    assert hasattr(refit, "history_")


# --- the score under add-or-remove-one: a public n ---------------------------
def _renyi(alpha, m1, b1, m2, b2):
    """D_alpha(Laplace(m1, b1) || Laplace(m2, b2)) by quadrature."""
    def f(x):
        return math.exp(alpha * (-abs(x - m1) / b1 - math.log(2 * b1))
                        + (1 - alpha) * (-abs(x - m2) / b2 - math.log(2 * b2)))
    lo, hi = sorted((m1, m2))
    total = sum(integrate.quad(f, a, b, limit=200)[0]
                for a, b in ((-np.inf, lo), (lo, hi), (hi, np.inf)))
    return math.log(total) / (alpha - 1)


def _accounted(z, alpha):
    acc = rdp.RdpAccountant(orders=[alpha])
    acc.compose(ev.LaplaceDpEvent(z))
    return acc._rdp[0]


@pytest.mark.parametrize("alpha", [2, 10, 50])
def test_add_or_remove_score_on_neighbours_of_sizes_n_and_n_plus_1(alpha):
    """One mechanism (public n = 100) scores a dataset and its neighbour with
    one more record: the values differ by at most B/n, the noise scale is the
    mechanism's alone, so the two output laws are within dp-accounting's
    Laplace RDP at the multiplier (and equal to it at the worst case). The old
    scheme, each dataset's own n in the mean and the scale, is above it."""
    n, B, z = 100, 2.0, 33.487  # z: dpcd's Laplace score multiplier at 0.1 of eps = 1
    score = scores.ScoreMechanism("last_objective", "loss", "laplace", n, B,
                                     relation="add_or_remove_one")
    losses = np.random.default_rng(0).uniform(0, 3 * B, n)
    for neighbour in (np.append(losses, 10 * B), losses[1:]):  # add one, remove one
        gap = abs(score.value(neighbour, 0.3) - score.value(losses, 0.3))
        assert gap <= score.sensitivity * (1 + 1e-12) and score.sensitivity == B / n
    scale = z * score.sensitivity  # what noisy() draws with, on both datasets
    worst = _renyi(alpha, 0.0, scale, B / n, scale)  # the neighbour adds a loss >= B
    assert worst == pytest.approx(_accounted(z, alpha), rel=1e-6)
    old = max(_renyi(alpha, 0.0, z * B / n, B / (n + 1), z * B / (n + 1)),
              _renyi(alpha, B / (n + 1), z * B / (n + 1), 0.0, z * B / n))
    assert old > 1.1 * _accounted(z, alpha)


def test_noisy_score_scale_does_not_read_the_data():
    score = scores.ScoreMechanism("last_objective", "loss", "laplace", 50, 1.0,
                                     relation="add_or_remove_one")
    draws = [score.noisy(0.0, 2.0, np.random.default_rng(s)) for s in range(4000)]
    # Laplace(0, b) has mean |x| = b: b = z * B / n = 0.04, whatever was scored
    assert np.mean(np.abs(draws)) == pytest.approx(2.0 / 50, rel=0.05)


def test_replace_one_scores_a_fixed_n_and_add_or_remove_refuses_validation():
    score = scores.ScoreMechanism("last_objective", "loss", "laplace", 10, 1.0)
    with pytest.raises(ValueError, match="need 10 per-record values"):
        score.value(np.zeros(11))
    with pytest.raises(ValueError, match="fixed n"):
        scores.ScoreMechanism("validation", "accuracy", "laplace", 10,
                                 relation="add_or_remove_one")
