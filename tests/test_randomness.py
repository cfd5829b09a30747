"""Issue 30, item 4: releases that are compared or combined draw independent noise.

Each run seeds its streams with ``run_entropy(seed, run_identity(experiment,
config))``: the replicate seed and a stable digest of what the run is. Tests:
the digest is stable across processes (no ``hash()`` salt) and changes with
any setting; two DP-SGD runs that differ only in epsilon (so in sigma) draw
uncorrelated noise where common random numbers gave the same draws; the same
configuration twice is bit for bit the same run.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpcd.problems import make_problem
from dpcd.algorithms import Budget
from dpcd.algorithms.dp_sgd import run_many as run_dp_sgd_many
from dpcd.sweep.grid import configurations
from dpcd.streams import fresh_cell, fresh_seeds, run_entropy, run_identity
from dpcd.sweep.problem import SweepProblem
from dpcd.sweep.run import run_chunk

CONFIG = {"solver": "dp_sgd", "epsilon": 1.0, "passes": 2, "step": 0.1, "clip": 1.0,
          "batch_size": 1}


def test_run_entropy_is_the_seed_then_a_digest_of_the_identity():
    entropy = run_entropy(7, run_identity("e", CONFIG))
    assert entropy[0] == 7 and len(entropy) == 9
    assert entropy == run_entropy(7, run_identity("e", dict(reversed(CONFIG.items()))))
    others = [run_entropy(8, run_identity("e", CONFIG)),
              run_entropy(7, run_identity("f", CONFIG)),
              run_entropy(7, run_identity("e", CONFIG, stream="private_smoothness"))]
    others += [run_entropy(7, run_identity("e", {**CONFIG, name: value}))
               for name, value in (("epsilon", 2.0), ("passes", 5), ("step", 0.2),
                                   ("clip", 2.0), ("batch_size", 5), ("solver", "dp_cd"))]
    assert len({tuple(e) for e in others + [entropy]}) == len(others) + 1


def test_run_entropy_is_the_same_in_every_process():
    """A stable digest (SHA-256 of canonical JSON), not Python's salted hash()."""
    code = ("import json; from dpcd.streams import run_entropy, run_identity; "
            f"print(json.dumps(run_entropy(7, run_identity('e', {CONFIG!r}))))")
    outputs = set()
    for salt in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": salt}
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True).stdout
        outputs.add(out)
    assert len(outputs) == 1
    assert json.loads(outputs.pop()) == run_entropy(7, run_identity("e", CONFIG))


def _noise_problem(n=10, p=3000):
    """X = 0, y = 0, no penalty: a DP-SGD step is w <- w - eta sigma z / b, so the
    final iterate over sigma is the (scaled) sum of the run's normals."""
    datafit, penalty = make_problem("squares", "none", 0.0)
    X = np.zeros((n, p))
    return SweepProblem(X=X, y=np.zeros(n), datafit=datafit, penalty=penalty,
                        smoothness=np.ones(p), global_smoothness=1.0,
                        max_abs=np.zeros(p), loss="squares")


def _standardised_noise(problem, configs, seeds):
    budgets = [Budget(c["epsilon"], 1e-3) for c in configs]
    out = []
    for (result, ledger), config in zip(run_dp_sgd_many(problem, configs, seeds, budgets),
                                        configs):
        sigma = ledger.mechanisms[-1].noise_scale
        out.append(result.w / (config["step"] * np.atleast_1d(sigma)[0]))
    return out


def test_dp_sgd_runs_differing_only_in_sigma_draw_independent_noise():
    problem = _noise_problem()
    configs = [{**CONFIG, "passes": 0.1, "epsilon": e} for e in (1.0, 2.0)]
    seeds = [run_entropy(3, run_identity("e", c)) for c in configs]
    a, b = _standardised_noise(problem, configs, seeds)
    # sigma differs, so the runs are distinguishable; each sees 1 step of N(0, I) noise
    assert not np.allclose(a, b)
    assert abs(np.std(a) - 1) < 0.1 and abs(np.std(b) - 1) < 0.1
    r = np.corrcoef(a, b)[0, 1]
    # independent: r ~ N(0, 1/3000), |r| < 4 standard deviations
    assert abs(r) < 4 / np.sqrt(a.size), r
    # common random numbers (one seed for both), as before issue 30: the same
    # standardised noise, so the two releases give away each other's noise
    shared = _standardised_noise(problem, configs, [3, 3])
    np.testing.assert_allclose(shared[0], shared[1], rtol=1e-12)


def test_the_same_configuration_twice_is_the_same_run_bit_for_bit():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    y = X @ rng.standard_normal(4)
    datafit, penalty = make_problem("squares", "l1", 0.05)
    problem = SweepProblem(X=X, y=y, datafit=datafit, penalty=penalty,
                           smoothness=datafit.coordinate_smoothness(X),
                           global_smoothness=datafit.global_smoothness(X),
                           max_abs=np.abs(X).max(axis=0), loss="squares", alpha=0.05)
    for solver, grid in (("dp_sgd", {"step": [0.1], "clip": [1.0], "batch_size": [1]}),
                         ("dp_cd", {"step": [0.5], "clip": [1.0]}),
                         ("sgd", {"step": [0.1], "batch_size": [1]}),
                         ("cd", {"step": [0.5]})):
        spec = {"experiment": "e", "solver": solver, "dataset": "d", "variant": "raw",
                "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
                "privacy": {"epsilon": [1.0, 2.0], "delta": 1e-4}, "grid": grid,
                "passes": [2], "seeds": 2, "base_seed": 0, "chunks": 1}
        first, _ = run_chunk(spec, 0, problem, 0.01)
        again, _ = run_chunk(spec, 0, problem, 0.01)
        pd.testing.assert_frame_equal(first.drop(columns="time"), again.drop(columns="time"))
        # the two epsilons' runs of one seed are not one noise draw rescaled; a
        # non-private solver reads no epsilon: its two runs are one run
        last = first[first["pass"] == first["pass"].max()]
        private = solver.startswith("dp_")
        assert last.groupby("epsilon")["objective"].apply(tuple).nunique() == (2 if private else 1)


def test_fresh_seeds_differ_per_cell():
    configs = configurations("dp_cd", {"step": [0.5], "clip": [1.0]}, [2, 5], [1.0, 2.0])
    cells = [fresh_cell("e", c) for c in configs] + [fresh_cell("f", configs[0])]
    seeds = [fresh_seeds(0, 5, cell) for cell in cells]
    flat = [s for group in seeds for s in group]
    assert len(set(flat)) == len(flat)  # no seed shared by two cells
    assert seeds[0] == fresh_seeds(0, 5, cells[0])  # reproducible


@pytest.mark.parametrize("n_runs", [1, 5])
@pytest.mark.parametrize("inner", [False, True])
def test_independent_runs_are_each_the_run_alone(n_runs, inner, monkeypatch):
    """dp_sgd_many(seeds=...) gives run k the bits of dp_sgd(seed=seeds[k]),
    whatever shares its call (calls of 2 runs here) and whichever kernel runs
    it (``inner``: the runs-inner kernel takes the calls of dp_sgd_many; the
    run alone takes the runs-outer one)."""
    import importlib

    import scipy.sparse as sp

    from dpcd.solvers import dp_sgd, dp_sgd_many

    module = importlib.import_module("dpcd.solvers._dp_sgd_independent")
    monkeypatch.setattr(module, "RUNS_PER_CALL", 2)
    monkeypatch.setattr(module, "takes_inner", lambda n_runs, n_features: inner and n_runs > 1)
    # 7 features: at odd steps t a step's normals (7 t, ...) start mid-pair
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 7))
    y = np.where(X @ rng.standard_normal(7) > 0, 1.0, -1.0)
    datafit, penalty = make_problem("logistic", "l2", 0.05)
    steps, clips = [0.5, 0.1, 1.0, 0.3, 2.0][:n_runs], [1.0, np.inf, 0.1, 2.0, 0.5][:n_runs]
    scales, passes = [0.5, 0.0, 2.0, 1.0, 0.3][:n_runs], [2, 1, 2.5, 0.4, 3][:n_runs]
    seeds = [[k, 9] for k in range(n_runs)]
    # batch size 1: the prox skips its division by b (ridge: not by 1 + eta alpha)
    for design, b in ((X, 2.0), (X, 1.0), (sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0)), 2.0)):
        many = dp_sgd_many(design, y, datafit, penalty, steps=steps, clips=clips,
                           noise_scales=scales, passes=passes, seeds=seeds, batch_size=b)
        for k, got in enumerate(many):
            alone = dp_sgd(design, y, datafit, penalty, step=steps[k], clip=clips[k],
                           noise_scale=scales[k], passes=passes[k], seed=seeds[k],
                           batch_size=b)
            np.testing.assert_array_equal(got.w, alone.w)
            np.testing.assert_array_equal(got.objective, alone.objective)
    with pytest.raises(ValueError, match="one seed per run"):
        dp_sgd_many(X, y, datafit, penalty, steps=steps, clips=clips, noise_scales=scales,
                    passes=passes, seeds=seeds[:-1] + [[0]] * 2)


def test_dp_cd_runs_differing_only_in_epsilon_draw_independent_noise():
    """X = I (sparse), y = 0, no penalty, a tiny step gamma: an update of
    coordinate j is w_j <- (1 - gamma) w_j - gamma noise (M_j = 1, the gradient
    w_j far below the clipping threshold), so w_j / (gamma sigma_j) is minus the
    sum of the normals drawn for j, up to O(gamma). Across coordinates, the two
    epsilons' vectors are uncorrelated; one shared stream made them equal."""
    import scipy.sparse as sp

    from dpcd.algorithms.dp_cd import run as run_dp_cd
    from dpcd.streams import stream_identity

    p, gamma = 3000, 1e-6
    X = sp.identity(p, format="csc") * np.sqrt(p / 2.0)  # M_j = (2/n) x_j.x_j = 1
    datafit, penalty = make_problem("squares", "none", 0.0)
    problem = SweepProblem(X=X, y=np.zeros(p), datafit=datafit, penalty=penalty,
                           smoothness=np.ones(p), global_smoothness=1.0,
                           max_abs=np.full(p, np.sqrt(p / 2.0)), loss="squares")
    spec = {"experiment": "e", "solver": "dp_cd"}
    standardised = {}
    for seeds in ("derived", "shared"):
        out = []
        for epsilon in (1.0, 2.0):
            config = {"solver": "dp_cd", "epsilon": epsilon, "passes": 3, "step": gamma,
                      "clip": 1.0}
            seed = (run_entropy(5, stream_identity("e", config)) if seeds == "derived"
                    else 5)
            result, ledger = run_dp_cd(problem, config, seed, Budget(epsilon, 1e-3))
            scales = np.asarray(ledger.mechanisms[-1].noise_scale)
            out.append(-result.w / (gamma * scales))
        standardised[seeds] = out
    a, b = standardised["derived"]
    moved = (a != 0) & (b != 0)  # coordinates updated in both runs
    assert moved.sum() > 0.8 * p  # each run updates a coordinate w.p. 1 - exp(-3)
    assert 1 < np.std(a[moved]) < 3  # sums of about 3 standard normals
    r = np.corrcoef(a[moved], b[moved])[0, 1]
    # independent: r ~ N(0, 1/2700), |r| < 4 standard deviations
    assert abs(r) < 4 / np.sqrt(moved.sum()), r
    np.testing.assert_allclose(*standardised["shared"], rtol=1e-4)
