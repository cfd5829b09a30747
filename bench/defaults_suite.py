"""The estimators' defaults on data they were not chosen on.

Every private solver with the estimator's defaults (only ``solver`` and
``epsilon`` given) on

* the reference problems: ``make_regression(20000, 20, noise=10,
  random_state=0)`` and ``make_classification(20000, 20, n_informative=10,
  random_state=0)``, half the rows to train and half to test;
* synthetic regression and classification (``make_regression`` with
  ``noise=10``; ``make_classification`` with ``n_informative = p / 2``) of
  n training rows (and n test rows), n in {1 000, 10 000, 100 000} x p in
  {10, 100};
* the real datasets of the project's registry, read by its loaders from
  ``DPCD_DATA_MIRROR`` (or ``--data``): California (regression), Electricity,
  Phishing, Adult and Madelon; a seeded 80/20 split (Adult: its own test
  file). Dorothea is left out: the DP-SCD solvers densify its 800 x 88 119
  matrix.

Features are prepared as a user would: standardised with the training
columns' statistics (the synthetic ones then clipped to [-3, 3]), and a
regression target standardised the same way; that preparation is not
private, as in most practice. Each cell is run at epsilon in {0.1, 1, 10}
(delta = 1/n^2) with 5 seeds and set against non-private ridge or logistic
regression at the estimators' ``alpha`` (sklearn ``Ridge(alpha=1e-3 n)``,
``LogisticRegression(C=1/(1e-4 n))``) and against predicting the training
mean or majority class. Scores are test R^2 or accuracy; the table gives
the median over seeds.

Beside the defaults, ``PrivateSearch`` (``--search``) over a small grid of
``clip`` and ``passes`` for the default solver ``dp_cd_p``, at the same total
epsilon, on the reference problems and the real datasets.

Seeds: ``--mode default`` (the default) fits with ``random_state=None``, the
estimators' default mode (the table's ``noise`` column says which it is);
``--mode seeded`` fits with ``random_state`` = the seed (the fast,
reproducible path).

Usage::

    DPCD_DATA_MIRROR=/path/to/data python bench/defaults_suite.py --quick
    DPCD_DATA_MIRROR=/path/to/data python bench/defaults_suite.py          # the full grid
    make defaults-suite                                                    # the same, --quick

``--set clip=1e-4 passes=100`` gives those estimator parameters to every
solver instead of their defaults (one cell of a hyperparameter grid).

Writes ``<out>.csv`` (one row per fit) and ``<out>.md`` (the medians), by
default ``results/bench/defaults_suite.*``.
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np

SOLVERS = ("dp_cd", "dp_cd_p", "dp_gcd", "dp_sgd", "dp_scd", "seq_dp_scd", "primal_dp_scd")
REAL = ("california", "electricity", "phishing", "adult", "madelon")
SEARCH_GRID = {"clip": [0.1, 0.3, 1.0], "passes": [3, 10, 30]}


# --------------------------------------------------------------------------- data
def _standardise(train, test, clip=None):
    mean, std = train.mean(axis=0), train.std(axis=0)
    std[std == 0] = 1.0
    out = [(a - mean) / std for a in (train, test)]
    return [np.clip(a, -clip, clip) for a in out] if clip else out


def _synthetic(task, n_total, p, informative=None, n_train=None):
    from sklearn.datasets import make_classification, make_regression

    if task == "regression":
        X, y = make_regression(n_total, p, noise=10, random_state=0)
    else:
        X, y = make_classification(n_total, p, n_informative=informative or max(2, p // 2),
                                   random_state=0)
    h = n_total // 2 if n_train is None else n_train
    X, X_test = _standardise(X[:h], X[h:], clip=3.0)
    y, y_test = y[:h].astype(float), y[h:].astype(float)
    if task == "regression":
        y, y_test = (a.ravel() for a in _standardise(y[:, None], y_test[:, None]))
    return {"task": task, "X": X, "y": y, "X_test": X_test, "y_test": y_test}


def _real(name, data_dir):
    from dpcd.data.loaders import load_raw
    from dpcd.data.registry import get_entry

    raw = load_raw(get_entry(name), os.path.join(data_dir, name))
    X = raw.X.toarray() if hasattr(raw.X, "toarray") else np.asarray(raw.X, dtype=float)
    y = np.asarray(raw.y, dtype=float)
    if raw.X_test is not None:
        X_test = raw.X_test.toarray() if hasattr(raw.X_test, "toarray") \
            else np.asarray(raw.X_test, dtype=float)
        y_test = np.asarray(raw.y_test, dtype=float)
    else:
        order = np.random.default_rng(0).permutation(len(y))
        cut = len(y) // 5
        test, train = np.sort(order[:cut]), np.sort(order[cut:])
        X, X_test, y, y_test = X[train], X[test], y[train], y[test]
    task = "regression" if raw.task == "regression" else "classification"
    X, X_test = _standardise(X, X_test)
    if task == "regression":
        y, y_test = (a.ravel() for a in _standardise(y[:, None], y_test[:, None]))
    return {"task": task, "X": X, "y": y, "X_test": X_test, "y_test": y_test}


def datasets(quick, data_dir):
    """(name, loader) pairs of the suite (loaders build the arrays when called)."""
    out = [("reference regression", lambda: _synthetic("regression", 20000, 20)),
           ("reference classification",
            lambda: _synthetic("classification", 20000, 20, informative=10))]
    sizes = (1000, 10000) if quick else (1000, 10000, 100000)
    widths = (10,) if quick else (10, 100)
    for task in ("regression", "classification"):
        for n in sizes:
            for p in widths:
                out.append((f"{task} n={n} p={p}",
                            lambda t=task, n=n, p=p: _synthetic(t, 2 * n, p)))
    if data_dir:
        for name in (("california", "electricity") if quick else REAL):
            out.append((name, lambda name=name: _real(name, data_dir)))
    return out


# ------------------------------------------------------------------------ scoring
def _score(task, y, pred):
    if task == "classification":
        return float(np.mean(y == pred))
    return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))


def baselines(data):
    """Non-private ridge / logistic regression at the estimators' alpha, and
    the mean / majority predictor."""
    from sklearn.linear_model import LogisticRegression, Ridge

    X, y, Xt, yt, task = data["X"], data["y"], data["X_test"], data["y_test"], data["task"]
    n = len(y)
    if task == "regression":
        model = Ridge(alpha=1e-3 * n).fit(X, y)
        trivial = np.full(len(yt), y.mean())
    else:
        model = LogisticRegression(C=1.0 / (1e-4 * n), max_iter=1000).fit(X, y)
        values, counts = np.unique(y, return_counts=True)
        trivial = np.full(len(yt), values[np.argmax(counts)])
    return _score(task, yt, model.predict(Xt)), _score(task, yt, trivial)


# The suite's extra method: the default solver given the synthetic data's
# public bound (their features are clipped to +-3), to set its private bound against.
PUBLIC_BOUND = "dp_cd_p, bounds=3"


def fit_default(data, solver, epsilon, seed, mode, settings=None):
    """One fit of ``solver`` with the estimator's defaults, or with
    ``settings`` (estimator parameters, e.g. ``{"clip": 1e-4}``) given."""
    from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor

    cls = (DPCoordinateDescentRegressor if data["task"] == "regression"
           else DPCoordinateDescentClassifier)
    extra = {"bounds": 3.0} if solver == PUBLIC_BOUND else {}
    model = cls(solver="dp_cd_p" if extra else solver, epsilon=epsilon,
                random_state=seed if mode == "seeded" else None, **extra,
                **(settings or {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data["X"], data["y"])
    score = _score(data["task"], data["y_test"], model.predict(data["X_test"]))
    return score, model.privacy_ledger_


def fit_search(data, epsilon, seed, mode):
    from dpcd.estimators import (DPCoordinateDescentClassifier, DPCoordinateDescentRegressor,
                                 PrivateSearch)

    cls = (DPCoordinateDescentRegressor if data["task"] == "regression"
           else DPCoordinateDescentClassifier)
    search = PrivateSearch(cls(solver="dp_cd_p"), SEARCH_GRID, epsilon=epsilon,
                           random_state=seed if mode == "seeded" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(data["X"], data["y"])
    if search.best_estimator_ is None:
        return float("nan"), search.privacy_ledger_
    return (_score(data["task"], data["y_test"], search.predict(data["X_test"])),
            search.privacy_ledger_)


# --------------------------------------------------------------------------- main
def _setting(item):
    """``"name=value"`` as ``(name, value)``, the value an int, a float or a string."""
    name, _, value = item.partition("=")
    for kind in (int, float):
        try:
            return name, kind(value)
        except ValueError:
            pass
    return name, value


def run(args):
    import pandas as pd

    rows = []
    seeds = range(args.seeds)
    for name, load in datasets(args.quick, args.data):
        if args.only and not any(word in name for word in args.only):
            continue
        data = load()
        n = len(data["y"])
        nonprivate, trivial = baselines(data)
        reference = name.startswith("reference")
        epsilons = args.eps
        solvers = list(args.solvers)
        if args.public_bound and not (name in REAL or "dp_cd_p" not in solvers):
            solvers.insert(solvers.index("dp_cd_p") + 1, PUBLIC_BOUND)
        for epsilon in epsilons:
            for solver in solvers:
                start = time.perf_counter()
                for seed in seeds:
                    score, ledger = fit_default(data, solver, epsilon, seed, args.mode,
                                                args.set)
                    rows.append({"dataset": name, "task": data["task"], "n": n,
                                 "p": data["X"].shape[1], "epsilon": epsilon,
                                 "method": solver, "seed": seed, "score": score,
                                 "settings": " ".join(f"{k}={v}" for k, v in args.set.items()),
                                 "epsilon_spent": ledger.epsilon_achieved,
                                 "noise": getattr(ledger, "noise", "fast"),
                                 "nonprivate": nonprivate, "trivial": trivial})
                print(f"{name} eps={epsilon:g} {solver}: median "
                      f"{np.median([r['score'] for r in rows[-len(seeds):]]):.3f} "
                      f"({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)
            if args.search and (reference or name in REAL) and epsilon in args.search_eps:
                for seed in seeds:
                    score, ledger = fit_search(data, epsilon, seed, args.mode)
                    rows.append({"dataset": name, "task": data["task"], "n": n,
                                 "p": data["X"].shape[1], "epsilon": epsilon,
                                 "method": "PrivateSearch(dp_cd_p)", "seed": seed,
                                 "score": score, "epsilon_spent": ledger.epsilon_achieved,
                                 "noise": "fast", "nonprivate": nonprivate,
                                 "trivial": trivial})
                print(f"{name} eps={epsilon:g} search: median "
                      f"{np.nanmedian([r['score'] for r in rows[-len(seeds):]]):.3f}",
                      file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def markdown(frame):
    """One row per (dataset, epsilon): the median score of each method, the
    non-private and the trivial baselines; a cell is marked ``*`` when it is
    below the trivial predictor where n epsilon >= 1000, or more than 0.1
    below it elsewhere, at the table's precision (3 decimals)."""
    methods = [m for m in (*SOLVERS[:2], PUBLIC_BOUND, *SOLVERS[2:], "PrivateSearch(dp_cd_p)")
               if m in set(frame["method"])]
    head = ["dataset", "n", "p", "ε", "metric", *methods, "non-private", "mean/majority"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = ["dataset", "epsilon"]
    for (name, epsilon), group in frame.groupby(keys, sort=False):
        first = group.iloc[0]
        trivial = first["trivial"]
        slack = 0.0 if first["n"] * epsilon >= 1e3 else 0.1
        cells = []
        for method in methods:
            scores = group.loc[group["method"] == method, "score"]
            if scores.empty:
                cells.append("")
                continue
            median = float(np.nanmedian(scores))
            mark = "*" if round(median, 3) < round(trivial - slack, 3) else ""
            cells.append(f"{median:.3f}{mark}")
        metric = "R²" if first["task"] == "regression" else "accuracy"
        lines.append("| " + " | ".join([name, f"{first['n']}", f"{first['p']}", f"{epsilon:g}",
                                         metric, *cells, f"{first['nonprivate']:.3f}",
                                         f"{trivial:.3f}"]) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="n in {1 000, 10 000}, p = 10, California and Electricity, "
                             "epsilon in {0.1, 1}, 3 seeds (the reference problems keep 5)")
    parser.add_argument("--eps", type=float, nargs="+", default=None,
                        help="default 0.1 1 10 (--quick: 0.1 1)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    parser.add_argument("--mode", choices=("default", "seeded"), default="default")
    parser.add_argument("--only", nargs="+", default=None,
                        help="only the datasets whose name contains one of these words")
    parser.add_argument("--public-bound", action="store_true",
                        help=f"also '{PUBLIC_BOUND}' on the synthetic datasets")
    parser.add_argument("--search", action="store_true",
                        help="also PrivateSearch over SEARCH_GRID (dp_cd_p)")
    parser.add_argument("--no-search", dest="search", action="store_false",
                        help="no PrivateSearch (undoes --search)")
    parser.add_argument("--search-eps", type=float, nargs="+", default=[1.0])
    parser.add_argument("--set", nargs="+", default=[], metavar="NAME=VALUE",
                        help="estimator parameters given to every solver instead of their "
                             "defaults, e.g. --set clip=1e-4 passes=100 (a hyperparameter grid)")
    parser.add_argument("--data", default=os.environ.get("DPCD_DATA_MIRROR"),
                        help="directory with <dataset>/ raw files (default: $DPCD_DATA_MIRROR)")
    parser.add_argument("--out", default=os.path.join("results", "bench", "defaults_suite"))
    args = parser.parse_args(argv)
    if args.eps is None:
        args.eps = [0.1, 1.0] if args.quick else [0.1, 1.0, 10.0]
    if args.quick:
        args.seeds = min(args.seeds, 5)
    args.set = dict(_setting(item) for item in args.set)
    frame = run(args)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    frame.to_csv(args.out + ".csv", index=False)
    table = markdown(frame)
    with open(args.out + ".md", "w") as fh:
        fh.write(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
