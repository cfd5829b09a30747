"""Seeded generators for the papers' synthetic datasets.

All draw from one ``numpy.random.default_rng(seed)`` in a fixed order, so the
same parameters give the same arrays bit for bit (for a given NumPy version).
"""

import numpy as np

from .registry import get_entry


def _check(n_samples, n_features, n_informative=None):
    if int(n_samples) < 2 or int(n_features) < 1:
        raise ValueError(
            f"generator needs n_samples >= 2 and n_features >= 1, "
            f"got n_samples={n_samples}, n_features={n_features}"
        )
    if n_informative is not None and not 0 < int(n_informative) <= int(n_features):
        raise ValueError(
            f"n_informative must lie in [1, n_features={n_features}], got {n_informative}"
        )


def sparse_lasso(n_samples=1000, n_features=1000, n_informative=10, noise=0.1, seed=0):
    """Sparse LASSO data (DP-CD §6).

    Independent standard normal features; ``y = X w_true + noise * e`` with
    ``w_true`` supported on ``n_informative`` random coordinates carrying
    standard normal weights and ``e`` standard normal.

    Returns
    -------
    X : ndarray, shape (n_samples, n_features)
    y : ndarray, shape (n_samples,)
    w_true : ndarray, shape (n_features,)
    """
    _check(n_samples, n_features, n_informative)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features))
    w_true = np.zeros(n_features)
    support = np.sort(rng.choice(n_features, size=n_informative, replace=False))
    w_true[support] = rng.standard_normal(n_informative)
    y = X @ w_true + noise * rng.standard_normal(n_samples)
    return X, y, w_true


def lognormal(n_samples=1000, n_features=100, sigma=1.0, noise=1.0, seed=0):
    """``log1`` / ``log2`` data (DP-GCD §5), labels in {-1, +1}.

    Unit-variance normal columns; ``w_true`` log-normal with parameters
    (0, ``sigma``) so it is quasi-sparse; ``y = sign(X w_true + noise * e)``
    (the paper computes ``X w_true + e`` and fits a logistic model, so the
    sign is the class).
    """
    _check(n_samples, n_features)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features))
    w_true = rng.lognormal(mean=0.0, sigma=sigma, size=n_features)
    score = X @ w_true + noise * rng.standard_normal(n_samples)
    y = np.where(score >= 0, 1.0, -1.0)
    return X, y, w_true


def sparse_lognormal(
    n_samples=1000, n_features=1000, n_informative=10, sigma=1.0, noise=1.0, seed=0
):
    """``square`` data (DP-GCD §5): like log1 but ``w_true`` has 10 non-zeros.

    The non-zero weights are log-normal (0, ``sigma``); labels are real,
    ``y = X w_true + noise * e`` (least squares).
    """
    _check(n_samples, n_features, n_informative)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features))
    w_true = np.zeros(n_features)
    support = np.sort(rng.choice(n_features, size=n_informative, replace=False))
    w_true[support] = rng.lognormal(mean=0.0, sigma=sigma, size=n_informative)
    y = X @ w_true + noise * rng.standard_normal(n_samples)
    return X, y, w_true


def dense_gaussian(n_samples=4450, n_features=202, noise=1.0, seed=0):
    """Stand-in for ``mtp`` (OpenML 405, not available offline): same shape.

    Standard normal columns, a *dense* ``w_true`` with standard normal
    weights (the paper's Figure 2 shows mtp's solution balanced, unlike the
    other problems), ``y = X w_true + noise * e`` (least squares). It keeps
    the two properties the comparison rests on (n, p and a balanced
    solution), not mtp's feature distributions.
    """
    _check(n_samples, n_features)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features))
    w_true = rng.standard_normal(n_features)
    y = X @ w_true + noise * rng.standard_normal(n_samples)
    return X, y, w_true


def sparse_binary(n_samples=100, n_features=400, density=0.02, n_informative=5, seed=0):
    """Small dorothea-like data (binary sparse features, labels in {-1, +1}),
    for tests of the sparse path: X is CSC and never dense.

    Each entry is 1 with probability ``density``; ``y = sign(X w_true + e)``
    with ``n_informative`` standard normal weights and standard normal ``e``.
    Columns may be empty (as dorothea's): preprocessing drops them.
    """
    import scipy.sparse as sp

    _check(n_samples, n_features, n_informative)
    rng = np.random.default_rng(seed)
    X = sp.random(n_samples, n_features, density=density, format="csc", random_state=rng,
                  data_rvs=np.ones)
    w_true = np.zeros(n_features)
    support = np.sort(rng.choice(n_features, size=n_informative, replace=False))
    w_true[support] = rng.standard_normal(n_informative)
    score = X @ w_true + rng.standard_normal(n_samples)
    y = np.where(score >= 0, 1.0, -1.0)
    return X, y, w_true


GENERATORS = {
    "sparse_binary": sparse_binary,
    "dense_gaussian": dense_gaussian,
    "sparse_lasso": sparse_lasso,
    "lognormal": lognormal,
    "sparse_lognormal": sparse_lognormal,
}


def generate(source, params=None):
    """Generate the registered synthetic dataset ``source``.

    Parameters
    ----------
    source : str
        Registry name (``sparse_lasso``, ``log1``, ``log2``, ``square``).
    params : dict, optional
        Overrides of the entry's defaults (``n_samples``, ``seed``, ...).

    Returns
    -------
    X, y, w_true : ndarrays
    settings : dict
        The full settings used (defaults merged with ``params``).
    """
    entry = get_entry(source)
    if "generator" not in entry:
        raise ValueError(f"dataset {source!r} is downloaded, not generated")
    settings = dict(entry.get("defaults", {}))
    unknown = set(params or {}) - set(settings)
    if unknown:
        raise ValueError(
            f"dataset {source!r}: unknown generator parameter(s) {sorted(unknown)}; "
            f"allowed: {sorted(settings)}"
        )
    settings.update(params or {})
    X, y, w_true = GENERATORS[entry["generator"]](**settings)
    return X, y, w_true, settings
