"""search: private in the workflow (issue 29), without Snakemake: the planner's
settings and refusals, the candidates' events against dp-accounting computed
independently (DP-CD, DP-SGD under replace-one and add-or-remove, DP-SCD
without replacement, primal DP-SCD), the workflow score's sensitivity on
neighbouring datasets, and the refusals of trainings repeat-and-select cannot
compose (DP-GCD at the paper's scale, seqDP-SCD, PLD-only events), and
that dpcd.PrivateSearch accepts exactly the candidates the workflow accepts.
DP-CD-P: each candidate's own smoothness release composed into its event, that
release's Rényi divergence on replace-one neighbours below its event's, and
its estimate drawn from the candidate's own stream."""

import copy
import math
import os

import dp_accounting
import numpy as np
import pandas as pd
import pytest
import yaml
from dp_accounting import dp_event as ev
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from snakemake.utils import validate

from dpcd import algorithms, plan, privacy
from dpcd.algorithms import Budget
from dpcd.problems import make_problem
from dpcd.sweep.problem import SweepProblem
from dpcd.tuning.candidates import candidate_spec
from dpcd.tuning.release import released_id
from dpcd.tuning.scores import score_mechanism, score_value
from dpcd.tuning.workflow import run_private_chunk

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(REPO, "workflow", "schemas", "config.schema.yaml")
REL = dp_accounting.NeighboringRelation

CONFIG = {
    "report": {"fresh_seeds": 0},
    "datasets": {"d": {"source": "sparse_lasso",
                       "params": {"n_samples": 50, "n_features": 5, "seed": 0}}},
    "experiments": {"e": {
        "dataset": "d", "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
        "privacy": {"epsilon": [1.0, 2.0]}, "passes": [2, 3], "seeds": 2,
        "search": "private", "search_private": {"selection_seeds": 3},
        "solvers": {"dp_cd": {"step": [0.3, 1.0], "clip": [1.0]},
                    "dp_sgd": {"step": [0.1, 1.0], "clip": [1.0]}}}},
}


def make(config):
    config = copy.deepcopy(config)
    validate(config, SCHEMA)
    return plan.Plan(config, solver_facts=algorithms.plan_facts())


def with_setting(path, value):
    config = copy.deepcopy(CONFIG)
    node = config
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return config


# --- the planner ---------------------------------------------------------------
def test_defaults_are_the_schema_defaults():
    with open(SCHEMA) as fh:
        props = _find(yaml.safe_load(fh), "search_private")["properties"]
    assert {k: v["default"] for k, v in props.items()} == plan.PRIVATE_DEFAULTS


def _find(node, key):
    if isinstance(node, dict):
        if key in node:
            return node[key]
        for value in node.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


def test_one_job_per_solver_and_selection_seed():
    p = make(CONFIG)
    jobs = p.jobs("e")
    assert {j.stage for j in jobs} == {"private"}
    assert sorted((j.solver, j.chunk) for j in jobs) == [
        (s, k) for s in ("dp_cd", "dp_sgd") for k in range(3)]
    assert p.job_path(jobs[0], ".parquet") == "results/runs/e/dp_cd/private/chunk0.parquet"
    spec = p.solve_spec("e", "dp_cd", "private")
    assert spec["stage"] == "private" and spec["chunks"] == 3
    # score_clip_from_data goes into the spec only when true: finished jobs keep their params
    defaults = {k: v for k, v in plan.PRIVATE_DEFAULTS.items() if k != "score_clip_from_data"}
    assert spec["search_private"] == {**defaults, "selection_seeds": 3,
                                      "select_by": "last_objective"}
    assert "estimated solve cost" in p.cost_summary()


def test_score_clip_from_data_reaches_the_spec():
    config = copy.deepcopy(CONFIG)
    config["experiments"]["e"]["search_private"].update(score_clip=5.0,
                                                        score_clip_from_data=True)
    spec = make(config).solve_spec("e", "dp_cd", "private")
    assert spec["search_private"]["score_clip_from_data"] is True
    config["experiments"]["e"]["search_private"]["score_clip_from_data"] = "yes"
    with pytest.raises(ValueError, match="score_clip_from_data"):  # the planner checks too
        plan.Plan(config)


@pytest.mark.parametrize("path, value, named", [
    (("search_private", "mean"), 0, "search_private.mean"),
    (("search_private", "mean"), -2.0, "search_private.mean"),
    (("search_private", "mean"), 0.5, "search_private.mean"),
    (("search_private", "distribution"), "uniform", "search_private.distribution"),
    (("search_private", "score_fraction"), 0.0, "search_private.score_fraction"),
    (("search_private", "score_fraction"), 1.0, "search_private.score_fraction"),
    (("search_private", "score_fraction"), 1.5, "search_private.score_fraction"),
    (("search_private", "shape"), 2.0, "search_private.shape"),
    (("search_private", "score_clip"), 0.0, "search_private.score_clip"),
    (("search_private", "score_noise"), "cauchy", "search_private.score_noise"),
    (("search_private", "selection_seeds"), 0, "search_private.selection_seeds"),
    (("validation_split",), "per_seed", "validation_split"),
])
def test_bad_settings_refused_naming_them(path, value, named):
    config = with_setting(("experiments", "e", *path), value)
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        make(config)


def test_negative_binomial_needs_a_shape():
    config = with_setting(("experiments", "e", "search_private", "distribution"),
                          "negative_binomial")
    with pytest.raises(ValueError, match=r"search_private\.shape"):
        make(config)
    config["experiments"]["e"]["search_private"]["shape"] = 2.0
    make(config)


def test_grid_with_one_configuration_refused():
    config = with_setting(("experiments", "e", "solvers", "dp_cd"), {"step": [1.0], "clip": [1.0]})
    with pytest.raises(ValueError, match=r"solvers\.dp_cd: the grid has 1 configuration"):
        make(config)


def test_fresh_seeds_refused():
    config = with_setting(("report", "fresh_seeds"), 3)
    with pytest.raises(ValueError, match=r"experiments\.e\.search.*fresh_seeds"):
        make(config)


@pytest.mark.parametrize("solver, grid, reason", [
    ("seq_dp_scd", {"clip": [0.1, 1.0], "batch_size": [5]}, "max_batch_size"),
    ("cd", {"step": [0.1, 1.0]}, "not a private solver"),
    ("dp_scd", {"clip": [0.1, 1.0], "batch_size": [5]}, "sampling: without_replacement"),
])
def test_solvers_that_cannot_be_candidates_refused_with_the_reason(solver, grid, reason):
    config = copy.deepcopy(CONFIG)
    config["experiments"]["e"]["solvers"] = {solver: grid}
    if solver in ("dp_scd", "seq_dp_scd"):
        config["experiments"]["e"]["problem"]["penalty"] = "l2"
    with pytest.raises(ValueError, match=rf"solvers\.{solver}: .*{reason}"):
        make(config)


# --- candidates' events against dp-accounting ----------------------------------
def _problem(n=60, p=5, loss="squares", penalty="l1", alpha=0.05, unit_rows=False,
             unit_columns=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    if unit_rows or unit_columns:
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    if unit_columns:  # primal DP-SCD: columns of norm <= 1
        X /= math.sqrt(n)
    y = X @ rng.standard_normal(p) + 0.1 * rng.standard_normal(n)
    if loss != "squares":
        y = np.where(y >= 0, 1.0, -1.0)
    datafit, pen = make_problem(loss, penalty, alpha)
    smooth = datafit.coordinate_smoothness(X) if loss != "hinge" else np.ones(p)
    return SweepProblem(X=X, y=y, datafit=datafit, penalty=pen, smoothness=smooth,
                        global_smoothness=datafit.global_smoothness(X),
                        max_abs=np.abs(X).max(axis=0), loss=loss, alpha=alpha)


def _spec(solver, grid, privacy_spec, passes=(2,), problem=None, **settings):
    return {"experiment": "e", "solver": solver, "dataset": "d", "variant": "raw",
            "problem": problem or {"loss": "squares", "penalty": "l1", "alpha": 0.05},
            "privacy": privacy_spec, "grid": grid, "passes": list(passes), "seeds": 1,
            "base_seed": 0, "chunks": 2, "stage": "private",
            "search_private": {**plan.PRIVATE_DEFAULTS, "mean": 3.0, "selection_seeds": 2,
                               "select_by": "last_objective", **settings}}


def _independent_epsilon(training, relation, score_z, mean, shape, delta):
    """dp-accounting alone: RepeatAndSelect(Composed(training, Laplace(score)))."""
    acc = rdp.RdpAccountant(neighboring_relation=relation)
    acc.compose(ev.RepeatAndSelectDpEvent(
        ev.ComposedDpEvent([training, ev.LaplaceDpEvent(score_z)]), mean, shape))
    return acc.get_epsilon(delta)


def _released(records):
    return [r for r, t in records if t["role"] == "released"]


CASES = {
    # name: (solver, grid, privacy, relation, problem kwargs, training event(z, n, p, passes))
    "dp_cd": ("dp_cd", {"step": [0.3, 1.0], "clip": [0.5, 1.0]},
              {"epsilon": 1.0, "delta": 1e-4}, REL.REPLACE_ONE, {},
              lambda z, n, p, k: ev.SelfComposedDpEvent(ev.GaussianDpEvent(z), k * p)),
    "dp_sgd_replace_one": (
        "dp_sgd", {"step": [0.1, 1.0], "clip": [1.0], "batch_size": [6]},
        {"epsilon": 1.0, "delta": 1e-4}, REL.REPLACE_ONE, {},
        lambda z, n, p, k: ev.SelfComposedDpEvent(ev.GaussianDpEvent(z),
                                                  math.ceil(k * n / 6))),
    "dp_sgd_add_or_remove": (
        "dp_sgd", {"step": [0.1, 1.0], "clip": [1.0], "batch_size": [6]},
        {"epsilon": 1.0, "delta": 1e-4, "neighbouring": "add_or_remove_one"},
        REL.ADD_OR_REMOVE_ONE, {},
        lambda z, n, p, k: ev.SelfComposedDpEvent(
            ev.PoissonSampledDpEvent(6 / n, ev.GaussianDpEvent(z)), math.ceil(k * n / 6))),
    "dp_scd_without_replacement": (
        "dp_scd", {"clip": [0.5, 1.0], "batch_size": [6], "sampling": "without_replacement"},
        {"epsilon": 1.0, "delta": 1e-4}, REL.REPLACE_ONE,
        {"penalty": "l2", "alpha": 0.1, "unit_rows": True},
        lambda z, n, p, k: ev.SelfComposedDpEvent(
            ev.SampledWithoutReplacementDpEvent(n, 6, ev.GaussianDpEvent(z)),
            math.ceil(k * n / 6))),
    "dp_gcd": ("dp_gcd", {"step": [0.3, 1.0], "clip": [1.0]},
               {"epsilon": 1.0, "delta": 1e-4}, REL.REPLACE_ONE, {},
               lambda z, n, p, k: ev.ComposedDpEvent([
                   ev.SelfComposedDpEvent(
                       ev.RandomizedResponseDpEvent(2 / (1 + math.exp(1 / z)), 2), k),
                   ev.SelfComposedDpEvent(ev.LaplaceDpEvent(z), k)])),
    "primal_dp_scd": (
        "primal_dp_scd", {"clip": [0.5, 1.0], "batch_size": [2]},
        {"epsilon": 1.0, "delta": 1e-4}, REL.REPLACE_ONE,
        {"penalty": "l2", "alpha": 0.1, "unit_columns": True},
        lambda z, n, p, k: ev.SelfComposedDpEvent(ev.GaussianDpEvent(z), math.ceil(k * p / 2))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_released_epsilon_is_dp_accounting_repeat_and_select(case):
    """The released run's epsilon equals dp-accounting's RepeatAndSelectDpEvent
    of the training event (built here from the algorithm's definition, not
    from dpcd) and the score, never above the target; its noise is the one
    accounted; its non-private inputs do not list hyperparameter_selection."""
    solver, grid, privacy_spec, relation, kw, training = CASES[case]
    problem = _problem(**kw)
    spec = _spec(solver, grid, privacy_spec, problem={"loss": "squares",
                 "penalty": kw.get("penalty", "l1"), "alpha": kw.get("alpha", 0.05)})
    table, records = run_private_chunk(spec, 0, problem, f_star=1.0)
    (released,) = _released(records)
    ledger = released.ledgers[0]
    sel = ledger.selection
    train, score = ledger.mechanisms[-2:]  # DP-GCD: selection, gradient entry, score
    n, p = problem.n_samples, problem.n_features
    expected = _independent_epsilon(training(train.noise_multiplier, n, p, 2), relation,
                                    score.noise_multiplier, 3.0, 1.0, 1e-4)
    assert ledger.epsilon_achieved == pytest.approx(expected, rel=1e-9)
    assert expected <= 1.0 + 1e-9 and expected > 0.9  # met, not far below
    assert score.sensitivity == pytest.approx(1.0 / n)  # B = 1 for squares, no 1/2
    assert "hyperparameter_selection" not in ledger.nonprivate_inputs
    # K is the researcher's private record: the candidates' runs, not the release
    assert "k" not in sel and "k" not in table and "K=" not in ledger.to_json()
    assert len(records) - 1 >= 1 and score.relation == ledger.neighbouring
    assert table["config_id"].unique().tolist() == [released_id(solver, 1.0, 2)]
    assert table["epsilon_achieved"].unique().tolist() == [ledger.epsilon_achieved]
    assert table["role"].unique().tolist() == ["released"]
    if case == "dp_sgd_replace_one":  # no amplification: noise std z * 2C per step
        assert train.sensitivity == 2.0 and train.sampling == "poisson"
        assert train.noise_scale == pytest.approx(2.0 * train.noise_multiplier)
        assert "without amplification" in train.note


def test_dp_sgd_replace_one_rdp_calibration_is_dp_accounting():
    """accountant rdp under replace-one: T unsampled Gaussians of sensitivity 2C,
    epsilon what dp-accounting's RDP accountant gives for them (the sampled
    event is PLD-only there); the Poisson kernel's coupled sums differ by <= 2C."""
    cal = privacy.calibrate_dp_sgd(100, 10, 2, 0.5, 1.0, 1e-5, accountant="rdp",
                                   relation="replace_one")
    z = cal.ledger.mechanisms[0].noise_multiplier
    acc = rdp.RdpAccountant(neighboring_relation=REL.REPLACE_ONE)
    acc.compose(ev.SelfComposedDpEvent(ev.GaussianDpEvent(z), 20))
    assert cal.epsilon_achieved == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    assert cal.epsilon_achieved <= 1.0
    assert cal.noise_scales == pytest.approx(z * 2 * 0.5)
    assert candidate_spec(cal.ledger, 100) == (("gaussian", 20), z)


def test_same_selection_seed_same_release_other_seed_other_draws():
    solver, grid, privacy_spec, *_ = CASES["dp_cd"]
    problem = _problem()
    spec = _spec(solver, grid, privacy_spec)
    a, ra = run_private_chunk(spec, 0, problem, 1.0)
    b, _ = run_private_chunk(spec, 0, problem, 1.0)
    c, rc = run_private_chunk(spec, 1, problem, 1.0)
    np.testing.assert_array_equal(a["objective"], b["objective"])
    assert a["seed"].iloc[0] != c["seed"].iloc[0] and c["seed_index"].unique().tolist() == [1]
    assert not np.array_equal(a["objective"], c["objective"])


@pytest.mark.parametrize("solver, config, relation, accountant, reason", [
    ("dp_gcd", {"step": 1.0, "clip": 1.0, "passes": 2}, "replace_one", "pld", "composed by"),
    ("dp_gcd", {"step": 1.0, "clip": 1.0, "passes": 2}, "replace_one", "paper",
     "invalid_bound"),
    # auto: PLD, the only accountant of Poisson batches under replace-one
    ("dp_sgd", {"step": 1.0, "clip": 1.0, "batch_size": 6, "passes": 2}, "replace_one",
     "auto", "pld"),
    ("seq_dp_scd", {"clip": 1.0, "batch_size": 6, "passes": 2}, "replace_special", "rdp",
     "2 budget lines"),
])
def test_candidate_spec_refuses_what_repeat_and_select_cannot_compose(
        solver, config, relation, accountant, reason):
    kw = {"penalty": "l2", "alpha": 0.1, "unit_rows": True} if "scd" in solver else {}
    problem = _problem(**kw)
    cal = algorithms.get(solver).privacy.calibrate(
        problem, {**config, "epsilon": 1.0}, Budget(1.0, 1e-4, accountant, relation))
    with pytest.raises(ValueError, match=reason):
        candidate_spec(cal.ledger, problem.n_samples)


# --- the workflow's score ------------------------------------------------------
@pytest.mark.parametrize("loss", ["squares", "logistic"])
def test_score_sensitivity_on_replace_one_neighbours(loss):
    """For a fixed released model, replacing one record moves the exact score by
    at most B/n (clipped losses in [0, B]), even with an outlier record."""
    problem = _problem(n=40, loss=loss)
    score = score_mechanism(problem, "last_objective", "laplace")
    rng = np.random.default_rng(3)
    worst = 0.0
    for trial in range(50):
        w = rng.standard_normal(problem.n_features) * 3
        other = copy.copy(problem)
        X, y = problem.X.copy(), problem.y.copy()
        i = trial % problem.n_samples
        X[i] = rng.standard_normal(problem.n_features) * 100
        y[i] = -y[i] if loss != "squares" else 1e4
        other.X, other.y = X, y
        worst = max(worst, abs(score_value(problem, score, w) - score_value(other, score, w)))
    assert worst <= score.sensitivity * (1 + 1e-12)
    assert worst > 0.5 * score.sensitivity  # the bound is reached: the clip binds


def test_dp_gcd_is_a_candidate():
    """Its correct scale under the RDP composition (candidate_spec refuses the
    paper's scale, invalid_bound, and the other compositions: tested above)."""
    config = copy.deepcopy(CONFIG)
    config["experiments"]["e"]["solvers"] = {"dp_gcd": {"step": [0.1, 1.0], "clip": [1.0]}}
    assert len(make(config).jobs("e")) == 3


def test_pure_pair_event_is_dp_gcd_rdp_composition():
    """("pure_pair", T) at z = 1/eps_step is the event dpcd.privacy.gcd composes
    as "rdp": the same epsilon, and DP-GCD's own step calibration lands on it."""
    from dpcd.privacy import accounting, gcd

    z, achieved, used = accounting.calibrate_multiplier(("pure_pair", 50), 1.0, 1e-5, "rdp",
                                                        "replace_one")
    assert used == "rdp" and achieved <= 1.0
    assert gcd.gcd_epsilon(1 / z, 50, 1e-5, "rdp") == pytest.approx(achieved, rel=1e-12)
    eps_step, _ = gcd._calibrate_step(50, 1.0, 1e-5, "rdp")
    assert 1 / z == pytest.approx(eps_step, rel=1e-6)
    with pytest.raises(ValueError, match="replace_one"):
        accounting.accountant_relation(("pure_pair", 50), "add_or_remove_one", "rdp")


def test_tables_keep_every_cell_of_a_validation_search():
    """Released runs of two epsilons and two selection seeds, selected on
    validation accuracy: the tables keep both epsilons (one cell each, its
    seeds the selection seeds) and each cell's own hyperparameters."""
    from dpcd.report.tables import summary_table

    rng = np.random.default_rng(5)
    problem = _problem(n=80, loss="logistic", penalty="l2", alpha=0.01)
    X_val = rng.standard_normal((30, 5))
    problem.X_val, problem.y_val = X_val, np.where(X_val @ np.ones(5) >= 0, 1.0, -1.0)
    spec = _spec("dp_cd", {"step": [0.3, 1.0], "clip": [0.5, 1.0]},
                 {"epsilon": [0.5, 2.0], "delta": 1e-4},
                 problem={"loss": "logistic", "penalty": "l2", "alpha": 0.01},
                 select_by="validation")
    runs = pd.concat([run_private_chunk(spec, k, problem, 1.0)[0] for k in (0, 1)])
    table = summary_table(runs, "validation")
    assert sorted(table["epsilon"]) == [0.5, 2.0]
    assert (table["n_seeds"] == 2).all() and table["metric"].eq("accuracy").all()
    for row in table.itertuples():
        assert row.config_id == released_id("dp_cd", row.epsilon, 2)
        first = runs[(runs["epsilon"] == row.epsilon) & (runs["seed_index"] == 0)]
        assert row.step == first["step"].iloc[0]


# --- one rule for the workflow and dpcd.PrivateSearch ---------------------------
def _workflow_candidate(solver, relation, problem, grid):
    """The workflow's answer: its planner, then the candidate rule on each
    configuration's calibration as dpcd.tuning.workflow._search reads it. The spec, or
    the refusal's message."""
    config = copy.deepcopy(CONFIG)
    exp = config["experiments"]["e"]
    exp["solvers"] = {solver: {**{k: [v] for k, v in grid.items()}, "clip": [0.5, 1.0]}}
    exp["privacy"]["neighbouring"] = relation
    if "scd" in solver:
        exp["problem"]["penalty"] = "l2"
    try:
        make(config)
        cal = algorithms.get(solver).privacy.calibrate(
            problem, {**grid, "passes": 2, "epsilon": 1.0}, Budget(1.0, 1e-4, "rdp", relation))
        return candidate_spec(cal.ledger, problem.n_samples)[0]
    except ValueError as err:
        return f"refused: {err}"


def _calibrated_under(solver, relation):
    try:
        algorithms.get(solver).check_neighbouring(relation)
    except ValueError:
        return False
    return True


SAME_RULE = [(solver, relation) for solver in algorithms.names(private=True)
             for relation in ("replace_one", "add_or_remove_one", "replace_special")
             if _calibrated_under(solver, relation)]


@pytest.mark.parametrize("solver, relation", SAME_RULE)
def test_estimator_and_workflow_accept_the_same_candidates(solver, relation):
    """Every registered private algorithm under every relation it calibrates
    under: dpcd.PrivateSearch's candidate rule (training_spec) accepts exactly
    what the workflow's search: private accepts, with the same event."""
    from dpcd.estimators import DPCoordinateDescentRegressor
    from dpcd.tuning import candidates

    scd = "scd" in solver
    problem = _problem(penalty="l2" if scd else "l1", alpha=0.1 if scd else 0.05,
                       unit_rows=solver in ("dp_scd", "seq_dp_scd"),
                       unit_columns=solver == "primal_dp_scd")
    grid = {"clip": 1.0, "step": 1.0,
            **({"batch_size": 6} if solver in ("dp_sgd", "dp_scd", "seq_dp_scd")
               else {"batch_size": 2} if solver == "primal_dp_scd" else {})}
    workflow = _workflow_candidate(solver, relation, problem, grid)
    # dp_cd_p: public bounds, as the workflow's (read off the data, named);
    # without them the estimator also releases a bound (tested in test_private_search)
    est = DPCoordinateDescentRegressor(
        solver=solver, neighbouring=relation, passes=2, fit_intercept=False,
        penalty="l2" if scd else "l1", alpha=0.1 if scd else 0.05,
        **({"bounds": 1.0} if solver == "dp_cd_p" else {}), **grid)
    try:
        estimator = candidates.training_spec(est, problem.n_samples, problem.n_features, 1.0,
                                     1e-4)[0]
    except ValueError as err:
        estimator = f"refused: {err}"
    assert isinstance(workflow, tuple) == isinstance(estimator, tuple), (workflow, estimator)
    if isinstance(workflow, tuple):
        assert workflow == estimator
    expected_accepted = {("dp_cd", "replace_one"), ("dp_cd_p", "replace_one"),
                         ("dp_gcd", "replace_one"),
                         ("dp_sgd", "replace_one"), ("dp_sgd", "add_or_remove_one"),
                         ("dp_sgd", "replace_special"), ("dp_scd", "replace_special"),
                         ("primal_dp_scd", "replace_one")}
    assert isinstance(workflow, tuple) == ((solver, relation) in expected_accepted)


def test_noisy_max_renyi_divergences_stay_below_randomized_response():
    """The pure_pair event accounts DP-GCD's selection, report-noisy-max with
    Laplace noise of scale 2*Delta/eps' on every score, as binary randomized
    response at eps'. Re-derived here without dpcd: the selection's output
    distributions on neighbouring score vectors (every score moved by at most
    Delta, in random and in adversarial directions) are integrated
    numerically, and their Renyi divergences must stay below those dp_accounting's
    RDP accountant gives the randomized-response event at the same orders."""
    from dp_accounting import NeighboringRelation, dp_event
    from dp_accounting.rdp import rdp_privacy_accountant
    from scipy import integrate, stats

    eps, delta_s = 0.7, 1.0
    scale = 2 * delta_s / eps
    orders = [1.5, 2.0, 4.0, 8.0, 32.0]
    acc = rdp_privacy_accountant.RdpAccountant(orders, NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_event.RandomizedResponseDpEvent(2 / (1 + np.exp(eps)), 2))
    rr = np.asarray(acc._rdp)

    def win(scores):
        lap = [stats.laplace(loc=s, scale=scale) for s in scores]
        out = []
        for j in range(len(scores)):
            f = lambda x: lap[j].pdf(x) * np.prod([lap[k].cdf(x) for k in range(len(scores)) if k != j])
            lo, hi = scores[j] - 60 * scale, scores[j] + 60 * scale
            out.append(integrate.quad(f, lo, hi, points=list(scores), limit=400)[0])
        p = np.asarray(out)
        assert abs(p.sum() - 1) < 1e-7
        return p

    rng = np.random.default_rng(3)
    cases = [(np.zeros(2), np.array([delta_s, -delta_s])),          # the pair's worst case
             (np.array([0.0, 0.5, -0.3]), np.array([delta_s, -delta_s, -delta_s]))]
    cases += [(rng.normal(0, 2, 3), rng.uniform(-delta_s, delta_s, 3)) for _ in range(4)]
    worst = 0.0
    for g, shift in cases:
        p, q = win(g), win(g + shift)
        for k, a in enumerate(orders):
            for x, y in ((p, q), (q, p)):
                d = np.log(np.sum(x ** a * y ** (1 - a))) / (a - 1)
                assert d <= rr[k] * (1 + 1e-6), (g, shift, a, d, rr[k])
                worst = max(worst, d / rr[k])
    # Not vacuous: the two-score worst case comes close to the bound.
    assert worst > 0.5


# --- DP-CD-P: each candidate's own smoothness release --------------------------
DP_CD_P_GRID = {"step": [0.3, 1.0], "clip": [0.5, 1.0], "smoothness_fraction": 0.1}


@pytest.mark.parametrize("epsilon, distribution, shape", [
    (1.0, "geometric", 1.0), (0.5, "logarithmic", 0.0), (3.0, "negative_binomial", 0.5)])
def test_dp_cd_p_released_epsilon_is_dp_accounting_repeat_and_select(epsilon, distribution,
                                                                     shape):
    """A dp_cd_p candidate is its own smoothness release (P means, Laplace of
    multiplier P / eps_s each, eps_s = smoothness_fraction x its training
    budget E), DP-CD's steps calibrated on (1 - fraction) E, and the score:
    the released epsilon equals dp-accounting's RepeatAndSelectDpEvent of that
    composition built here, meets the target and does not overshoot it; its
    non-private inputs name neither exact_smoothness nor hyperparameter_selection."""
    problem = _problem()
    settings = {"distribution": distribution,
                **({"shape": shape} if distribution == "negative_binomial" else {})}
    spec = _spec("dp_cd_p", DP_CD_P_GRID, {"epsilon": epsilon, "delta": 1e-4}, **settings)
    table, records = run_private_chunk(spec, 0, problem, f_star=1.0)
    (released,) = _released(records)
    ledger = released.ledgers[0]
    smooth, steps, score = ledger.mechanisms
    n, p = problem.n_samples, problem.n_features
    E = ledger.selection["train_epsilon"]
    assert (smooth.name, steps.name, score.name) == ("smoothness_means",
                                                     "coordinate_gradient", "score_loss")
    assert smooth.count == p and smooth.noise_multiplier == pytest.approx(p / (0.1 * E),
                                                                          rel=1e-12)
    candidate = ev.ComposedDpEvent([
        ev.SelfComposedDpEvent(ev.LaplaceDpEvent(p / (0.1 * E)), p),
        ev.SelfComposedDpEvent(ev.GaussianDpEvent(steps.noise_multiplier), 2 * p),
        ev.LaplaceDpEvent(score.noise_multiplier)])
    acc = rdp.RdpAccountant(neighboring_relation=REL.REPLACE_ONE)
    acc.compose(ev.RepeatAndSelectDpEvent(candidate, 3.0, shape))
    expected = acc.get_epsilon(1e-4)
    assert ledger.epsilon_achieved == pytest.approx(expected, rel=1e-9)
    assert 0.9 * epsilon < expected <= epsilon * (1 + 1e-12)
    # the steps' noise: calibrated on their share, never below what dp-accounting certifies
    gauss = rdp.RdpAccountant()
    gauss.compose(ev.SelfComposedDpEvent(ev.GaussianDpEvent(steps.noise_multiplier), 2 * p))
    assert gauss.get_epsilon(1e-4) <= 0.9 * E * (1 + 1e-12)
    assert steps.noise_scale == pytest.approx(
        steps.noise_multiplier * np.asarray(steps.sensitivity))
    for name in ("exact_smoothness", "hyperparameter_selection"):
        assert name not in ledger.nonprivate_inputs
        assert name not in table["nonprivate_inputs"].iloc[0]
    assert "smoothness_bounds_from_data" in ledger.nonprivate_inputs  # the crude bounds
    assert ledger.selection["smoothness_fraction"] == pytest.approx(0.1, rel=1e-12)
    assert ledger.selection["smoothness_fraction_of"] == "train_epsilon"
    # every candidate released its own constants at the same multipliers
    for record, tags in records[:-1]:
        assert tags["role"] == "candidate"
        got = [(m.name, m.noise_multiplier) for m in record.ledgers[0].mechanisms]
        assert got == [(m.name, m.noise_multiplier) for m in (smooth, steps)]


def test_secure_dp_cd_p_candidate_is_its_accounted_event():
    """In the secure mode a dp_cd_p candidate states its steps' multiplier as
    scale over charged sensitivity, a few ulps from the accounted one: the
    search reads the accounted event (it refused every secure dp_cd_p
    candidate before), releases within the target and says ``secure``."""
    problem = _problem()
    spec = _spec("dp_cd_p", DP_CD_P_GRID, {"epsilon": 1.0, "delta": 1e-4, "noise": "secure"},
                 passes=(1,))
    _, records = run_private_chunk(spec, 0, problem, f_star=1.0)
    (released,) = _released(records)
    ledger = released.ledgers[0]
    assert ledger.noise == "secure" and ledger.epsilon_achieved <= 1.0 * (1 + 1e-12)
    for record, tags in records[:-1]:
        assert tags["role"] == "candidate"
        trained = record.ledgers[0]
        (kind, _, count, _, steps), z = candidate_spec(trained, problem.n_samples)
        line = next(b for b in trained.budget if b.accountant == "rdp")
        assert (kind, count, steps) == ("smoothness_gaussian", problem.n_features,
                                        problem.n_features)
        assert line.dp_event == repr(ev.SelfComposedDpEvent(ev.GaussianDpEvent(z), steps))
        steps_m = next(m for m in trained.mechanisms if m.group not in ("smoothness", "bounds"))
        assert steps_m.kind == "discrete_gaussian"
        assert z == pytest.approx(steps_m.noise_multiplier, rel=1e-14)


def test_dp_cd_p_candidate_smoothness_from_its_own_stream():
    """Each candidate's smoothness estimate is drawn from its own stream (its
    search's seed, index and configuration): the same stream gives the same
    estimate, another candidate's another; on a replace-one neighbour (same
    crude bounds) the same stream adds the same noise, so the estimates differ
    by exactly the clipped means' difference, at most b_j / n each."""
    from dpcd.privacy.smoothness import smoothness_sensitivity
    from dpcd.tuning.draws import candidate_streams
    from dpcd.tuning.settings import SearchSettings
    from dpcd.tuning.workflow import candidate_smoothness

    problem = _problem(n=60, p=5)
    search = SearchSettings(k_mean=3.0).checked()
    config = {"step": 1.0, "clip": 1.0, "smoothness_fraction": 0.1, "passes": 2,
              "epsilon": 1.0}

    def estimate(prob, index, seed=11, eps=1e3):  # eps: no clamp binds
        stream = candidate_streams(seed, search, 1.0, 1e-4, 4, index, config)[2]
        return np.asarray(candidate_smoothness(prob, 0.1, eps, stream)["smoothness"])

    a = estimate(problem, 0)
    np.testing.assert_array_equal(a, estimate(problem, 0))
    assert not np.any(a == estimate(problem, 1)) and not np.any(a == estimate(problem, 0, 12))
    other = copy.copy(problem)
    other.X = problem.X.copy()
    other.X[7] = 0.5 * problem.X[8]  # within the crude bounds 2 max |x_ij|
    assert np.array_equal(np.abs(other.X).max(0), np.abs(problem.X).max(0))
    b = estimate(other, 0)
    per_sample = problem.datafit.per_sample_smoothness
    bounds = per_sample(2 * np.abs(problem.X).max(0)[None, :])[0]
    means = [np.clip(per_sample(x), 0, bounds).mean(0) for x in (problem.X, other.X)]
    np.testing.assert_allclose(a - b, means[0] - means[1], rtol=0, atol=1e-12)
    assert np.all(np.abs(a - b) <= smoothness_sensitivity(60, bounds) * (1 + 1e-12))
    assert np.all(np.abs(a - b) > 0)
    ledger = candidate_smoothness(problem, 0.1, 2.0, candidate_streams(
        11, search, 1.0, 1e-4, 4, 0, config)[2])["ledger"]
    assert privacy.Ledger.from_dict(ledger).epsilon_achieved == pytest.approx(0.2)


def _laplace_renyi(t, order):
    """D_order(Lap(0, 1) || Lap(t, 1)) by numerical integration."""
    from scipy import integrate

    def f(x):
        return 0.5 * np.exp(-order * abs(x) - (1 - order) * abs(x - t))

    total = sum(integrate.quad(f, lo, hi, limit=200)[0]
                for lo, hi in ((-np.inf, min(0, t)), (min(0, t), max(0, t)),
                               (max(0, t), np.inf)))
    return math.log(total) / (order - 1)


def test_dp_cd_p_smoothness_release_renyi_below_its_event():
    """The smoothness release on replace-one neighbours (one record replaced,
    clipped to [0, b_j]): the Rényi divergence of the p noisy means, integrated
    numerically, stays below dp-accounting's RDP of the candidate's event for
    it, SelfComposed(Laplace(p / eps_s), p) (each mean at its own sensitivity
    b_j / n, tests/test_privacy_sensitivity.py), which is itself below the
    vector's LaplaceDpEvent(1 / eps_s) (scale / L1 sensitivity of the means
    normalised by their scales); the worst case attains the event."""
    rng = np.random.default_rng(0)
    n, p, eps = 30, 4, 0.8
    datafit, _ = make_problem("squares", "none", 0.0)
    X = rng.standard_normal((n, p))
    bounds = datafit.per_sample_smoothness(np.full((1, p), 2.0))[0]
    ledger = privacy.smoothness_ledger(n, bounds, eps)
    (mech,) = ledger.mechanisms
    scales = np.asarray(mech.noise_scale)
    worst_X, worst_Xp = np.zeros((n, p)), np.zeros((n, p))
    worst_Xp[3] = 10.0  # clipped at b_j: every mean moves by b_j / n
    pairs = [(worst_X, worst_Xp)]
    for k in range(3):
        Xp = X.copy()
        Xp[k] = rng.standard_normal(p) * 5
        pairs.append((X, Xp))
    orders = [1.5, 2.0, 4.0, 8.0, 16.0]
    per_coordinate = rdp.RdpAccountant(orders, REL.REPLACE_ONE)
    per_coordinate.compose(ev.SelfComposedDpEvent(ev.LaplaceDpEvent(mech.noise_multiplier),
                                                  mech.count))
    vector = rdp.RdpAccountant(orders, REL.REPLACE_ONE)
    vector.compose(ev.LaplaceDpEvent(1 / eps))
    assert mech.noise_multiplier == pytest.approx(p / eps) and mech.count == p
    assert np.all(np.asarray(per_coordinate._rdp) <= np.asarray(vector._rdp) * (1 + 1e-12))
    for index, (A, B) in enumerate(pairs):
        shift = np.abs(np.clip(datafit.per_sample_smoothness(A), 0, bounds).mean(0)
                       - np.clip(datafit.per_sample_smoothness(B), 0, bounds).mean(0))
        for k, order in enumerate(orders):
            exact = sum(_laplace_renyi(t, order) for t in shift / scales)
            assert exact <= per_coordinate._rdp[k] * (1 + 1e-6) + 1e-12
            if index == 0:  # attained
                assert exact == pytest.approx(per_coordinate._rdp[k], rel=1e-6)


def test_candidate_spec_refuses_dp_cd_p_ledgers_it_cannot_rebuild():
    """A smoothness release that is not Laplace, one with discrete (secure)
    Laplace noise below the scale the continuous Laplace event dominates, or
    one missing its steps, is refused, not accounted as something else."""
    import dataclasses

    problem = _problem()
    cal = algorithms.get("dp_cd_p").privacy.calibrate(
        problem, {"step": 1.0, "clip": 1.0, "passes": 2, "smoothness_fraction": 0.1},
        Budget(1.0, 1e-4, "rdp"))
    spec, z = candidate_spec(cal.ledger, problem.n_samples)
    assert spec == ("smoothness_gaussian", pytest.approx(50.0), 5, 0.0, 10)
    smooth, steps = cal.ledger.mechanisms
    gaussian = dataclasses.replace(cal.ledger, mechanisms=[
        dataclasses.replace(smooth, kind="gaussian"), steps])
    with pytest.raises(ValueError, match="Laplace noise"):
        candidate_spec(gaussian, problem.n_samples)
    # the fast scale: a discrete Laplace needs 1.0001 times it to be dominated
    secure = dataclasses.replace(cal.ledger, mechanisms=[
        dataclasses.replace(smooth, kind="discrete_laplace"), steps])
    with pytest.raises(ValueError, match="below the scale the continuous Laplace"):
        candidate_spec(secure, problem.n_samples)
    alone = dataclasses.replace(cal.ledger, mechanisms=[smooth], budget=cal.ledger.budget[:1])
    with pytest.raises(ValueError, match="one training event"):
        candidate_spec(alone, problem.n_samples)
    with pytest.raises(ValueError, match="replace_one"):
        accounting_relation = privacy.accounting.accountant_relation
        accounting_relation(spec, "add_or_remove_one", "rdp")
