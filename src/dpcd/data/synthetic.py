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


LABEL_RULES = ("sign", "bernoulli", "median")


def lognormal(n_samples=1000, n_features=100, sigma=1.0, noise=1.0, label_rule="sign",
              seed=0):
    """``log1`` / ``log2`` data (DP-GCD §5), labels in {-1, +1}.

    Unit-variance normal columns; ``w_true`` log-normal with parameters
    (0, ``sigma``) so it is quasi-sparse; scores ``s = X w_true + noise * e``
    (``e`` standard normal). The paper says only that "labels are computed as
    y = X w_true + e" and fits a logistic model; ``label_rule`` says how the
    scores become classes:

    * ``"sign"``: ``y = sign(s)`` (``+1`` at 0);
    * ``"bernoulli"``: ``y = +1`` with probability ``logistic(s)``, from one
      uniform per sample drawn after ``e``;
    * ``"median"``: ``y = +1`` where ``s`` is at least its median.

    Returns
    -------
    X : ndarray, shape (n_samples, n_features)
    y : ndarray, shape (n_samples,)
    w_true : ndarray, shape (n_features,)
    """
    _check(n_samples, n_features)
    if label_rule not in LABEL_RULES:
        raise ValueError(f"label_rule must be one of {LABEL_RULES}, got {label_rule!r}")
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features))
    w_true = rng.lognormal(mean=0.0, sigma=sigma, size=n_features)
    score = X @ w_true + noise * rng.standard_normal(n_samples)
    if label_rule == "bernoulli":
        # P(y = +1) = 1 / (1 + exp(-s)), written so that no exp overflows
        positive = rng.random(n_samples) < 0.5 * (1.0 + np.tanh(0.5 * score))
    elif label_rule == "median":
        positive = score >= np.median(score)
    else:
        positive = score >= 0
    y = np.where(positive, 1.0, -1.0)
    return X, y, w_true


def msd_standin(n_samples=515345, n_features=90, n_test=51630, seed=0):
    """Stand-in for YearPredictionMSD (DP-SCD App. E), which is not available offline.

    Same shape and official train/test division (the last ``n_test`` rows are the
    test file, as in the LIBSVM/UCI distribution: 463 715 + 51 630 rows), and the
    features' and labels' rough character, not their values:

    * 12 latent "timbre" factors ``Z`` (standard normal) drive every column:
      ``x_j = s_j (Z b_j + e_j)`` with ``b_j`` normal (variance 1/12) and noise
      ``e_j`` of variance 1/2; the first 12 columns ("timbre averages") have
      normal noise and scales ``s_j = 10^U(0.5, 1.7)``, the other 78 ("timbre
      covariances") Student-t noise (5 d.o.f., heavy tails) and scales
      ``s_j = 10^U(1, 3)``, so max-abs scaling matters as it does on MSD;
    * the label is a release year: ``1998.4 + 5.45 Z v / |v| + 9.44 t`` with
      ``v`` standard normal and ``t`` standard normal, rounded and clipped to
      [1922, 2011] (MSD's range; mean about 1998 and std about 10, MSD: 1998.4 and 10.9; a
      linear model explains about a quarter of the variance, as it does there).

    Returns
    -------
    X : ndarray, shape (n_samples, n_features)
    y : ndarray, shape (n_samples,)
    w_true : ndarray, shape (n_features,)
        Zeros: the labels depend on the latent factors, not on a weight vector.
    """
    _check(n_samples, n_features)
    if not 0 < int(n_test) < int(n_samples):
        raise ValueError(f"n_test must lie in [1, n_samples={n_samples}), got {n_test}")
    rng = np.random.default_rng(seed)
    k, n_avg = 12, min(12, n_features)
    Z = rng.standard_normal((n_samples, k))
    B = rng.standard_normal((k, n_features)) / np.sqrt(k)
    X = Z @ B
    X[:, :n_avg] += np.sqrt(0.5) * rng.standard_normal((n_samples, n_avg))
    tail = rng.standard_t(5, size=(n_samples, n_features - n_avg))
    X[:, n_avg:] += np.sqrt(0.5 * 3 / 5) * tail  # t(5) has variance 5/3
    scale = np.concatenate([10 ** rng.uniform(0.5, 1.7, n_avg),
                            10 ** rng.uniform(1.0, 3.0, n_features - n_avg)])
    X *= scale
    v = rng.standard_normal(k)
    year = 1998.4 + 5.45 * (Z @ v) / np.linalg.norm(v) + 9.44 * rng.standard_normal(n_samples)
    y = np.clip(np.round(year), 1922.0, 2011.0)
    return X, y, np.zeros(n_features)


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
    "msd_standin": msd_standin,
    "sparse_binary": sparse_binary,
    "dense_gaussian": dense_gaussian,
    "sparse_lasso": sparse_lasso,
    "lognormal": lognormal,
}


def generate(source, params=None):
    """Generate the registered synthetic dataset ``source``.

    Parameters
    ----------
    source : str
        Registry name (``sparse_lasso``, ``log1``, ``log2``, ...).
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
