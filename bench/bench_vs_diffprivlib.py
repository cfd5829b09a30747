"""dpcd's estimators against IBM's diffprivlib, as a practitioner meets them.

Real Phishing, Adult and California (the project's loaders, read from
``DPCD_DATA_MIRROR`` or ``--data``), the same splits for both libraries:

* a test set (Adult: its own test file; the others: 20 % of the rows), the
  rest the training set, of which 25 % is carved out as a validation split;
* every candidate configuration is fitted on the rest with one seed and
  scored on the validation split; the best is refitted on the whole training
  set with ``--seeds`` seeds and scored on the test set (mean over seeds);
* ε ∈ ``--eps``, δ = 1/n² (n: the training rows; diffprivlib's models are
  pure ε-DP and ignore δ).

Preprocessing is the same for both and is *not* private (the statistics are
read off the training set, as a practitioner's ``StandardScaler`` does):
Adult's six continuous columns and California's features and target are
standardised and clipped to [-3, 3], which makes the public bounds both
libraries are given true: |x_ij| <= 3 (Adult one-hot columns <= 1) and rows
of norm <= sqrt(sum of squared bounds); Phishing rows have unit norm and
entries 0 or 1/sqrt(30) as LIBSVM distributes them.

Columns of the printed table, each the test metric (accuracy; R² for
California) averaged over the seeds:

* ``dpcd default``: the estimator with its defaults, given only the public
  bounds (what diffprivlib is given);
* ``dpcd tuned``: the same estimator, private, with ``alpha``, ``clip`` and
  ``passes`` chosen on the validation split;
* in brackets, ``dpcd default without bounds``: no argument but ε, δ and the
  seed (the bound is then released privately, see dpcd.privacy.bounds);
* ``diffprivlib``: ``LogisticRegression`` (``C`` and ``data_norm`` chosen
  on the validation split) or ``LinearRegression`` (the bounds' scale chosen).

diffprivlib 0.6.6 does not import under scikit-learn >= 1.6, so its side
runs in its own virtualenv (``--dpl-venv``, created on first use with
``diffprivlib==0.6.6`` and ``scikit-learn==1.5.2``) through a subprocess of
this same file; only numpy is imported at the top for that reason.

Usage::

    DPCD_DATA_MIRROR=/path/to/data python bench/bench_vs_diffprivlib.py
    python bench/bench_vs_diffprivlib.py --quick        # 2 seeds, eps 0.1 and 1
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

DPL_PINS = ("diffprivlib==0.6.6", "scikit-learn==1.5.2", "numpy<2.3", "scipy<1.16")
DATASETS = ("phishing", "adult", "california")
BOUND = 3.0  # standardised columns are clipped to [-BOUND, BOUND]


# --------------------------------------------------------------------------- data
def _split(n, fraction, seed):
    """Indices (kept, held out) of a seeded random split."""
    order = np.random.default_rng(seed).permutation(n)
    cut = int(round(n * fraction))
    return np.sort(order[cut:]), np.sort(order[:cut])


def _standardise(train, *others):
    """Standardise with the training columns' statistics, then clip to ±BOUND."""
    mean, std = train.mean(axis=0), train.std(axis=0)
    std[std == 0] = 1.0
    return [np.clip((a - mean) / std, -BOUND, BOUND) for a in (train, *others)]


def prepare(name, data_dir):
    """Train/test arrays and the public bounds of ``name`` (see the module docstring)."""
    from dpcd.data.loaders import load_raw
    from dpcd.data.registry import get_entry

    raw = load_raw(get_entry(name), os.path.join(data_dir, name))
    X, y = raw.X, np.asarray(raw.y, dtype=float)
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
    if raw.X_test is not None:
        X_test, y_test = np.asarray(raw.X_test, dtype=float), np.asarray(raw.y_test, float)
    else:
        train, test = _split(len(y), 0.2, seed=0)
        X, X_test, y, y_test = X[train], X[test], y[train], y[test]
    task = "regression" if name == "california" else "binary"
    if name == "phishing":
        feature_bound = np.full(X.shape[1], 1.0 / np.sqrt(30.0))
    elif name == "adult":
        continuous = [j for j, f in enumerate(raw.feature_names) if "=" not in f]
        X[:, continuous], X_test[:, continuous] = _standardise(X[:, continuous],
                                                               X_test[:, continuous])
        feature_bound = np.ones(X.shape[1])
        feature_bound[continuous] = BOUND
    else:
        X, X_test = _standardise(X, X_test)
        y, y_test = (a.ravel() for a in _standardise(y[:, None], y_test[:, None]))
        feature_bound = np.full(X.shape[1], BOUND)
    assert np.all(np.abs(X) <= feature_bound + 1e-12), name
    return {"task": task, "X": X, "y": y, "X_test": X_test, "y_test": y_test,
            "feature_bound": feature_bound,
            "data_norm": float(np.sqrt(np.sum(feature_bound ** 2)))
            if name != "phishing" else 1.0,
            "y_bound": BOUND}


def _score(task, y, pred):
    if task == "binary":
        return float(np.mean(y == pred))
    return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))


def select_and_refit(make, grid, data, eps, seeds):
    """Pick the best of ``grid`` on the validation split (seed 0), refit it on
    the training set with ``seeds`` seeds; return (test scores, config)."""
    X, y = data["X"], data["y"]
    fit_rows, val_rows = _split(len(y), 0.25, seed=1)
    best, best_score = None, -np.inf
    for config in grid:
        model = make(eps, len(fit_rows), config, 0).fit(X[fit_rows], y[fit_rows])
        score = _score(data["task"], y[val_rows], model.predict(X[val_rows]))
        score = score if np.isfinite(score) else -np.inf
        if best is None or score > best_score:
            best, best_score = config, score
    scores = []
    for seed in seeds:
        model = make(eps, len(y), best, seed).fit(X, y)
        scores.append(_score(data["task"], data["y_test"], model.predict(data["X_test"])))
    return scores, best


# ------------------------------------------------------------------- diffprivlib
def dpl_grid(data):
    if data["task"] == "binary":
        return [{"C": C, "data_norm": data["data_norm"] * s}
                for C in (0.1, 1.0, 10.0) for s in (1.0, 0.5, 0.25)]
    return [{"scale": s} for s in (1.0, 0.5, 0.25)]


def dpl_make(data):
    import diffprivlib.models as dpl

    def make(eps, n, config, seed):
        if data["task"] == "binary":
            return dpl.LogisticRegression(epsilon=eps, data_norm=config["data_norm"],
                                          C=config["C"], random_state=seed)
        b = config["scale"] * BOUND
        return dpl.LinearRegression(epsilon=eps, bounds_X=(-b, b), bounds_y=(-b, b),
                                    random_state=seed)
    return make


def diffprivlib_worker(npz, out, eps_list, seeds):
    """The diffprivlib side, run in diffprivlib's interpreter."""
    import warnings

    with np.load(npz) as f:
        data = {k: f[k] for k in f.files}
    data["task"] = str(data["task"])
    data["data_norm"] = float(data["data_norm"])
    warnings.simplefilter("ignore")  # PrivacyLeakWarning etc.: bounds are given
    make = dpl_make(data)
    rows = {}
    for eps in eps_list:
        scores, best = select_and_refit(make, dpl_grid(data), data, eps, seeds)
        rows[str(eps)] = {"scores": scores, "config": best}
    with open(out, "w") as fh:
        json.dump(rows, fh)


def ensure_dpl_venv(path):
    python = os.path.join(path, "bin", "python")
    if not os.path.exists(python):
        print(f"creating {path} with {' '.join(DPL_PINS)}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", path], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", *DPL_PINS], check=True)
    return python


def run_diffprivlib(python, data, eps_list, seeds, tmp):
    npz, out = os.path.join(tmp, "data.npz"), os.path.join(tmp, "dpl.json")
    np.savez(npz, **data)
    subprocess.run([python, os.path.abspath(__file__), "--diffprivlib-worker", npz, out,
                    "--eps", *map(str, eps_list), "--seeds", str(len(seeds))], check=True)
    with open(out) as fh:
        return json.load(fh)


# ------------------------------------------------------------------------- dpcd
def dpcd_public(data):
    """The public knowledge dpcd is given: the same bounds as diffprivlib."""
    return {"bounds": data["feature_bound"]}


def dpcd_default(data):
    return [{}]


def dpcd_grid(data):
    alphas = (1e-5, 1e-4, 1e-3) if data["task"] == "binary" else (1e-4, 1e-3, 1e-2)
    return [{"alpha": a, "clip": c, "passes": p}
            for a in alphas for c in (0.1, 0.3, 1.0, 2.0) for p in (3, 10, 20)]


def dpcd_make(data, public=True):
    import warnings

    from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor

    cls = (DPCoordinateDescentClassifier if data["task"] == "binary"
           else DPCoordinateDescentRegressor)
    warnings.simplefilter("ignore", RuntimeWarning)

    def make(eps, n, config, seed):
        return cls(epsilon=eps, delta=1.0 / n ** 2, random_state=seed,
                   **(dpcd_public(data) if public else {}), **config)
    return make


def run_dpcd(data, eps_list, seeds):
    make, bare = dpcd_make(data), dpcd_make(data, public=False)
    rows = {}
    for eps in eps_list:
        default, _ = select_and_refit(make, dpcd_default(data), data, eps, seeds)
        no_bounds, _ = select_and_refit(bare, dpcd_default(data), data, eps, seeds)
        tuned, best = select_and_refit(make, dpcd_grid(data), data, eps, seeds)
        rows[str(eps)] = {"default": default, "default_no_bounds": no_bounds,
                          "tuned": tuned, "config": best}
    return rows


# ------------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, eps 0.1 and 1")
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.5, 1.0, 2.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--data", default=os.environ.get("DPCD_DATA_MIRROR"),
                        help="directory with <dataset>/ raw files (default: $DPCD_DATA_MIRROR)")
    parser.add_argument("--dpl-venv", default=os.path.join("results", "bench", "dpl-venv"),
                        help="virtualenv with diffprivlib (created if missing)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--diffprivlib-worker", nargs=2, metavar=("NPZ", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.eps, args.seeds = [0.1, 1.0], 2
    seeds = list(range(args.seeds))
    if args.diffprivlib_worker:
        return diffprivlib_worker(*args.diffprivlib_worker, args.eps, seeds)
    if not args.data:
        parser.error("give --data or set DPCD_DATA_MIRROR")
    python = ensure_dpl_venv(args.dpl_venv)
    results = {}
    for name in args.datasets:
        data = prepare(name, args.data)
        start = time.perf_counter()
        ours = run_dpcd(data, args.eps, seeds)
        t_ours = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            theirs = run_diffprivlib(python, {k: v for k, v in data.items()}, args.eps,
                                     seeds, tmp)
            t_theirs = time.perf_counter() - start
        results[name] = {"dpcd": ours, "diffprivlib": theirs, "n_train": len(data["y"]),
                         "seconds": {"dpcd": t_ours, "diffprivlib": t_theirs}}
        print(f"{name}: dpcd {t_ours:.0f} s, diffprivlib {t_theirs:.0f} s", file=sys.stderr)
    print(table(results, args.eps, len(seeds)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


def table(results, eps_list, n_seeds):
    metric = {"phishing": "accuracy", "adult": "accuracy", "california": "R²"}
    lines = [f"| test metric (mean of {n_seeds} seeds): dpcd default / dpcd tuned / "
             "diffprivlib [dpcd default without bounds] | "
             + " | ".join(f"ε = {e:g}" for e in eps_list) + " |",
             "|---|" + "---|" * len(eps_list)]
    for name, r in results.items():
        cells = []
        for eps in map(str, eps_list):
            d, t = np.mean(r["dpcd"][eps]["default"]), np.mean(r["dpcd"][eps]["tuned"])
            b = np.mean(r["diffprivlib"][eps]["scores"])
            u = np.mean(r["dpcd"][eps]["default_no_bounds"])
            mark = "" if d > b else " (default behind)"
            cells.append(f"{d:.3f} / {t:.3f} / {b:.3f}{mark} [{u:.3f}]")
        lines.append(f"| {name} {metric[name]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
