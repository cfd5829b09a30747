"""What a private search draws: K, the configurations, and every stream.

Every draw here comes from the search's seed and settings only, never from
the data: K from its law, K configurations uniformly (with replacement) from
the grid, the validation split, and each candidate's own streams (its
training, its score's noise and, for DP-CD-P, its smoothness release).

Distributions of K (``dp_accounting``'s parametrisation)
--------------------------------------------------------
``shape`` η and ``mean`` μ ≥ 1 fix the distribution:

* ``"poisson"`` (η = ∞): K ~ Poisson(μ); K = 0 is possible and then nothing
  is released (Theorem 6 accounts for it).
* ``"negative_binomial"`` (0 < η < ∞): P(K = k) ∝ C(k+η−1, k) (1−γ)^k for
  k ≥ 1, with γ set by μ (dp_accounting's ``_gamma_truncated_negative_binomial``).
* ``"geometric"`` (η = 1): P(K = k) = γ (1−γ)^(k−1), γ = 1/μ.
* ``"logarithmic"`` (η = 0): P(K = k) ∝ (1−γ)^k / k.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpcd.streams import run_entropy, run_identity
from dpcd.sweep.grid import expand_grid

# name -> dp_accounting shape (None: the user states it, 0 < shape < inf)
DISTRIBUTIONS = {"poisson": math.inf, "geometric": 1.0, "logarithmic": 0.0,
                 "negative_binomial": None}


# ------------------------------------------------------------------ K
def check_k_distribution(distribution: str, mean: float, shape=None) -> tuple[float, float]:
    """Validate the distribution of K and return (mean, dp_accounting shape).

    Raises ``ValueError`` naming the setting: unknown ``k_distribution``,
    ``k_mean`` not a finite number >= 1 (dp_accounting's theorems need
    μ ≥ 1), ``shape`` given with a named distribution that fixes it, or
    missing / outside (0, ∞) for ``"negative_binomial"``.
    """
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"k_distribution must be one of {', '.join(DISTRIBUTIONS)}, "
                         f"got {distribution!r}")
    if isinstance(mean, bool) or not isinstance(mean, (int, float, np.number)) \
            or not math.isfinite(mean) or mean < 1:
        raise ValueError(f"k_mean must be a finite number >= 1 (the mean number of "
                         f"candidates), got {mean!r}")
    fixed = DISTRIBUTIONS[distribution]
    if fixed is not None:
        if shape is not None and float(shape) != fixed:
            raise ValueError(f"shape: k_distribution={distribution!r} has shape {fixed}, "
                             f"got shape={shape!r}")
        return float(mean), fixed
    if shape is None or isinstance(shape, bool) or not math.isfinite(float(shape)) \
            or not 0 < float(shape):
        raise ValueError("shape must be a finite number > 0 for "
                         f"k_distribution='negative_binomial', got {shape!r}")
    return float(mean), float(shape)


def k_gamma(mean: float, shape: float) -> float:
    """γ of the truncated negative binomial with ``mean`` and ``shape``
    (dp_accounting's own inversion, so sampler and accountant agree)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    return float(rdp._gamma_truncated_negative_binomial(shape, mean))


def k_pmf(k, mean: float, shape: float) -> np.ndarray:
    """P(K = k) for integer ``k`` >= 0 (see the module docstring)."""
    from scipy import stats

    k = np.asarray(k)
    if shape == math.inf:
        return stats.poisson.pmf(k, mean)
    gamma = k_gamma(mean, shape)
    if shape == 0:
        return np.where(k >= 1, stats.logser.pmf(np.maximum(k, 1), 1 - gamma), 0.0)
    nb = stats.nbinom(shape, gamma)  # counts failures, P(0) = gamma**shape
    return np.where(k >= 1, nb.pmf(k) / (1 - nb.pmf(0)), 0.0)


def k_tail(k, mean: float, shape: float) -> float:
    """An upper bound on ``P(K > k)``: exact for the geometric law
    (``(1 − γ)^k``), scipy's survival function otherwise, each with a relative
    margin of 10⁻⁶ for its floating-point error."""
    from scipy import stats

    k = int(k)
    if shape == 1.0:
        out = math.exp(k * math.log1p(-k_gamma(mean, shape)))
    elif shape == math.inf:
        out = float(stats.poisson.sf(k, mean))
    elif shape == 0:
        out = float(stats.logser.sf(k, 1 - k_gamma(mean, shape)))
    else:
        nb = stats.nbinom(shape, k_gamma(mean, shape))
        out = float(nb.sf(max(k, 0)) / nb.sf(0)) if k >= 1 else 1.0
    return min(1.0, out * (1.0 + 1e-6))


def k_cut(mean: float, shape: float, tail: float) -> int:
    """The smallest ``k`` with :func:`k_tail` at most ``tail``."""
    hi = 1
    while k_tail(hi, mean, shape) > tail:
        hi *= 2
    lo = hi // 2  # k_tail(lo) > tail, or lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if k_tail(mid, mean, shape) > tail else (lo, mid)
    return hi


def draw_k(rng: np.random.Generator, mean: float, shape: float) -> int:
    """One draw of K from its distribution with generator ``rng``.

    The truncation at 0 of the negative binomial is drawn by rejection, which
    samples exactly the conditional law P(K = k | K >= 1).
    """
    if shape == math.inf:
        return int(rng.poisson(mean))
    gamma = k_gamma(mean, shape)
    if shape == 0:
        return int(rng.logseries(1 - gamma))
    while True:
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


# ------------------------------------------------------------------ configurations
def grid_configurations(param_grid) -> list[dict]:
    """Every configuration of ``param_grid`` (dict of lists of values, or of
    ``{"geomspace": [start, stop, num]}`` entries), in a fixed order.

    A grid with a single configuration is refused: there is nothing to select.
    """
    if not isinstance(param_grid, dict) or not param_grid:
        raise ValueError(f"param_grid must be a non-empty dict of lists, got {param_grid!r}")
    keys = sorted(param_grid)
    # lists as given (strings too, e.g. penalty); geomspace entries as the sweep's grids
    values = [expand_grid(param_grid[k]) if isinstance(param_grid[k], dict)
              else [v.item() if isinstance(v, np.generic) else v for v in param_grid[k]]
              for k in keys]
    configs = [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    if len(configs) < 2:
        raise ValueError(f"param_grid has {len(configs)} configuration: private search "
                         "needs at least 2 to select from")
    return configs


def _identity(settings, epsilon, delta, n_configs):
    return {"stream": "private_search", "epsilon": float(epsilon), "delta": float(delta),
            "k_mean": settings.k_mean, "shape": settings.shape,
            "k_distribution": settings.k_distribution,
            "score_fraction": settings.score_fraction, "select_by": settings.select_by,
            "n_configurations": n_configs}


def exact_k_parameters(mean: float, shape: float) -> tuple:
    """The parameters of :func:`dpcd.tuning.exact_k.fill` for the law of K:
    ``(law, γ, λ, pieces, r, f)`` (module :mod:`dpcd.tuning.exact_k`).
    ``ValueError`` when the exact samplers cannot draw it (γ below the
    geometric sampler's range)."""
    if shape == math.inf:  # mu = lam * 2^j with lam < 1, exact
        j = max(0, math.frexp(float(mean))[1])
        lam = math.ldexp(float(mean), -j)
        if not 0 < lam < 1 or math.ldexp(lam, j) != float(mean):  # unreachable
            raise ValueError(f"k_mean={mean!r} is not split exactly")
        return 1, 1.0, lam, 1 << j, 1, 1.0
    gamma = k_gamma(mean, shape)
    if not gamma >= 2.0 ** -40:  # dpcd.privacy.exact.MIN_P
        raise ValueError(f"noise='secure': k_mean={mean!r} gives gamma={gamma:g}, below "
                         "the exact geometric sampler's range (2**-40); use a smaller k_mean")
    if shape == 1.0:
        return 0, gamma, 1.0, 1, 1, 1.0
    if shape == 0:
        return 2, gamma, 1.0, 1, 1, 1.0
    r = math.ceil(shape)
    frac = shape - (r - 1)  # in (0, 1], exact (Sterbenz), checked
    if (r - 1) + frac != shape:
        raise ValueError(f"shape={shape!r}: its fractional part is not exact")
    return 3, gamma, 1.0, 1, r, frac


def draw_k_exact(mean: float, shape: float, size=None, state=None):
    """K drawn exactly on a keystream (the secure mode): see
    :mod:`dpcd.tuning.exact_k` (every law, exactly the stated one for the
    floats the accountant is given).

    ``size``: None for one draw (an int), else an int64 array of that many.
    ``state``: a :mod:`dpcd.privacy.keystream` state (default: a new one
    keyed from the OS; a given one is for tests).
    """
    from dpcd.privacy import keystream
    from dpcd.tuning import exact_k

    params = exact_k_parameters(mean, shape)
    state = keystream.new_state() if state is None else state
    out = np.empty(1 if size is None else int(size), dtype=np.int64)
    exact_k.fill(state, *params, out)
    return int(out[0]) if size is None else out


def draw_search(configs, settings, seed, epsilon, delta, exact_k=False):
    """K and the K configurations of a search, from ``seed`` and the settings only.

    ``exact_k``: K is drawn by :func:`draw_k_exact` instead, on a keystream
    keyed from the OS (the secure mode; ``seed`` then draws the configurations
    only).

    Returns
    -------
    k : int
    drawn : list of dict
        Configurations, uniform with replacement over ``configs``.
    """
    settings = settings.checked()
    seq = np.random.SeedSequence(run_entropy(seed, _identity(settings, epsilon, delta,
                                                              len(configs))))
    k_ss, config_ss = seq.spawn(2)
    k = (draw_k_exact(settings.k_mean, settings.shape)
         if exact_k else draw_k(np.random.default_rng(k_ss), settings.k_mean, settings.shape))
    picks = np.random.default_rng(config_ss).integers(len(configs), size=k)
    return k, [dict(configs[i]) for i in picks]


def search_seed(spec, selection_seed, epsilon, passes):
    """The integer seed of one cell's search: the selection seed and the cell's
    identity (experiment, solver, epsilon, passes), so cells draw independently."""
    identity = run_identity(spec["experiment"], {"solver": spec["solver"],
                                                 "epsilon": float(epsilon), "passes": passes},
                            stream="private_search")
    return int(np.random.SeedSequence(run_entropy(selection_seed, identity)).generate_state(1)[0])


def candidate_entropy(seed, settings, epsilon, delta, n_configs, index, config):
    """Entropy of candidate ``index``: its own release (:func:`run_entropy` of
    the seed, the search and the candidate's index and configuration), so two
    candidates never share a stream, even with the same configuration."""
    return run_entropy(seed, {**_identity(settings, epsilon, delta, n_configs),
                              "stream": "candidate", "index": int(index), **config})


def candidate_streams(seed, search, epsilon, delta, n_configs, index, config):
    """Candidate ``index``'s three streams: its training, its score's noise and
    (DP-CD-P) its smoothness release, spawned from its own entropy
    (:func:`candidate_entropy`: the search's seed, the candidate's index and
    configuration, never the data); the first two
    are those of a two-stream spawn, so other candidates' draws are unchanged."""
    return np.random.SeedSequence(candidate_entropy(
        seed, search, epsilon, delta, n_configs, index, config)).spawn(3)


def validation_split(n, settings, seed, epsilon, delta):
    """(train rows, validation rows): a random split drawn from the seed only."""
    seq = np.random.SeedSequence(run_entropy(seed, {**_identity(settings, epsilon, delta, 0),
                                                    "stream": "private_search_split"}))
    perm = np.random.default_rng(seq).permutation(n)
    n_val = int(round(settings.validation_fraction * n))
    if not 1 <= n_val < n:
        raise ValueError(f"validation_fraction={settings.validation_fraction} leaves "
                         f"{n_val} of {n} records for validation")
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


__all__ = ["DISTRIBUTIONS", "candidate_entropy", "candidate_streams", "check_k_distribution",
           "draw_k", "draw_k_exact", "exact_k_parameters", "draw_search", "grid_configurations", "k_cut", "k_gamma",
           "k_pmf", "k_tail", "search_seed",
           "validation_split"]
