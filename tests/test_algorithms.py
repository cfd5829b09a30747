"""The algorithm specs and their registry: the config schema is theirs, and a
solver from outside dpcd (tests/outside_solver/) registers and runs through
the estimators with its own ledger."""
from pathlib import Path

import dp_accounting
import numpy as np
import pytest
import yaml
from dp_accounting.rdp import rdp_privacy_accountant

from dpcd import algorithms
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
OUTSIDE = ROOT / "tests" / "outside_solver" / "noisy_gd.py"


def _resolve(node, defs):
    """``node`` with each object-level ``$ref`` to a ``$defs`` entry merged in
    (the leaf references grid, passes and gcd_rule are kept as they are)."""
    if isinstance(node, list):
        return [_resolve(item, defs) for item in node]
    if not isinstance(node, dict):
        return " ".join(node.split()) if isinstance(node, str) else node
    ref = node.get("$ref", "")
    name = ref.removeprefix("#/$defs/")
    if ref and name not in ("grid", "passes", "gcd_rule"):
        node = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
    return {key: _resolve(value, defs) for key, value in node.items()}


def test_the_config_schema_is_the_specs():
    """The solver section and the variant definition of the config schema are
    what the specs generate: neither can change without the other."""
    schema = yaml.safe_load(SCHEMA.read_text())
    defs = schema["$defs"]
    solvers = defs["experiment"]["properties"]["solvers"]["properties"]
    assert _resolve(solvers, defs) == _resolve(algorithms.solvers_schema(), defs)
    assert _resolve(defs["variant"], defs) == _resolve(algorithms.variant_schema(), defs)


def test_every_builtin_spec_is_complete():
    for name in algorithms.names(builtin=True):
        spec = algorithms.get(name)
        assert spec.name == name and spec.description and callable(spec.run)
        # the warmup job compiles every built-in kernel
        assert spec.runtime.family is not None and spec.runtime.warm is not None
        assert set(spec.required) <= {hp.name for hp in spec.hyperparameters}
        assert not spec.private or spec.privacy.calibrate is not None
    assert algorithms.table_hyperparameters() == ("step", "clip", "batch_size")


def test_registry_refuses_unknown_and_builtin_names():
    with pytest.raises(ValueError, match="unknown solver 'dp_cdd'; known: .*'dp_cd'"):
        algorithms.get("dp_cdd")
    with pytest.raises(ValueError, match="built into dpcd"):
        algorithms.register(algorithms.get("dp_cd"))
    with pytest.raises(TypeError, match="takes a dpcd.algorithms.Algorithm"):
        algorithms.register({"name": "x"})


def test_register_refuses_a_second_algorithm_under_one_name():
    from dpcd.algorithms import registry

    first = algorithms.Algorithm(name="twice", description="a", run=algorithms.get("cd").run)
    second = algorithms.Algorithm(name="twice", description="b", run=algorithms.get("sgd").run)
    try:
        algorithms.register(first)
        algorithms.register(first)  # the same module imported again
        with pytest.raises(ValueError, match="'twice' is already registered"):
            algorithms.register(second)
        assert algorithms.register(second, replace=True) is second
    finally:
        registry._SPECS.pop("twice", None)


def test_plan_time_checks_name_the_entry():
    defs = yaml.safe_load(SCHEMA.read_text())["$defs"]

    def config(solvers, penalty="l1", neighbouring="replace_one"):
        return {"experiments": {"e": {
            "problem": {"loss": "squares", "penalty": penalty},
            "privacy": {"epsilon": 1.0, "neighbouring": neighbouring}, "solvers": solvers}}}

    algorithms.check_solvers(config({"dp_cd": {"step": [1.0], "clip": [1.0]}}), defs)
    with pytest.raises(ValueError, match=r"experiments\.e\.solvers\.typo: unknown solver"):
        algorithms.check_solvers(config({"typo": {"step": [1.0]}}), defs)
    with pytest.raises(ValueError, match="penalty must be 'l1', 'l2' or 'none' for solver "
                                         "'dp_gcd'"):
        algorithms.check_solvers(config({"dp_gcd": {"step": [1.0], "clip": [1.0]}},
                                        penalty="elastic_net"), defs)
    with pytest.raises(ValueError, match="privacy.neighbouring, solver dp_cd"):
        algorithms.check_solvers(config({"dp_cd": {"step": [1.0], "clip": [1.0]}},
                                        neighbouring="add_or_remove_one"), defs)


def test_secure_support_is_the_specs(monkeypatch):
    """Whether a solver runs in the secure noise mode is its spec's
    ``privacy.secure`` alone: the estimators, the jobs and the plan-time check
    read it (a copy of a secure spec that says False is refused, and the
    reverse)."""
    import dataclasses

    from dpcd.algorithms import registry

    defs = yaml.safe_load(SCHEMA.read_text())["$defs"]
    for name in algorithms.names():
        spec = algorithms.get(name)
        assert (name in algorithms.names(secure=True)) == (spec.private
                                                            and spec.privacy.secure)
    secure = algorithms.names(secure=True)[0]
    spec = algorithms.get(secure)
    plain = dataclasses.replace(spec, name="plain", privacy=dataclasses.replace(
        spec.privacy, secure=False))
    monkeypatch.setitem(registry._SPECS, "plain", plain)
    algorithms.check_secure(secure, "noise='secure'")
    with pytest.raises(ValueError, match=f"noise='secure' covers solver .*{secure}.*, "
                                         "not 'plain'"):
        algorithms.check_secure("plain", "noise='secure'")
    config = {"experiments": {"e": {
        "problem": {"loss": "squares", "penalty": "l1"},
        "privacy": {"epsilon": 1.0, "noise": "secure"},
        "solvers": {"mine": {"solver": "plain", "step": [1.0], "clip": [1.0]}}}}}
    with pytest.raises(ValueError, match=r"experiments\.e\.privacy\.noise: 'secure' "
                                         r"\(solver mine\) covers solver"):
        algorithms.check_solvers(config, defs)
    config["experiments"]["e"]["solvers"]["mine"]["solver"] = secure
    algorithms.check_solvers(config, defs)
    config["experiments"]["e"]["search"] = "private"  # the secure private search
    algorithms.check_solvers(config, defs)
    config["experiments"]["e"]["solvers"]["mine"]["solver"] = "plain"
    with pytest.raises(ValueError, match=r"\(solver mine\) covers solver"):
        algorithms.check_solvers(config, defs)


def test_every_paper_config_passes_the_plan_time_checks():
    defs = yaml.safe_load(SCHEMA.read_text())["$defs"]
    paths = [ROOT / "config" / "config.yaml", *sorted((ROOT / "config" / "paper").glob("*.yaml"))]
    for path in paths:
        algorithms.check_solvers(yaml.safe_load(path.read_text()), defs)


# --- a solver from outside dpcd --------------------------------------------------
@pytest.fixture(scope="module")
def noisy_gd():
    algorithms.load([str(OUTSIDE)])
    return algorithms.get("noisy_gd")


def test_outside_solver_registers_and_checks_its_grid(noisy_gd):
    assert "noisy_gd" in algorithms.names(private=True, builtin=False)
    assert "noisy_gd" not in algorithms.solvers_schema()  # the schema file has built-ins only
    defs = yaml.safe_load(SCHEMA.read_text())["$defs"]
    entry = {"step": [0.5], "clip": [1.0]}
    assert algorithms.check_entry("noisy_gd", entry, defs) is noisy_gd
    with pytest.raises(ValueError, match="'clip' is a required property"):
        algorithms.check_entry("noisy_gd", {"step": [0.5]}, defs)
    with pytest.raises(ValueError, match="batch_size"):
        algorithms.check_entry("noisy_gd", {**entry, "batch_size": [2]}, defs)
    with pytest.raises(ValueError, match="calibrated under replace_one only"):
        noisy_gd.check_neighbouring("add_or_remove_one")
    assert algorithms.warmup(["noisy_gd"]) == ["noisy_gd"]


@pytest.mark.parametrize("epsilon, passes", [(0.5, 3), (2.0, 10)])
def test_outside_solver_calibration_against_dp_accounting(noisy_gd, epsilon, passes):
    """The ledger's multiplier composes to at most the target (and not far
    below), and the per-step std is the multiplier times 2C/n."""
    from dpcd.algorithms import Budget
    from types import SimpleNamespace

    problem = SimpleNamespace(n_samples=200)
    ledger = noisy_gd.privacy.calibrate(problem, {"clip": 0.5, "passes": passes},
                                        Budget(epsilon, 1e-5)).ledger
    (mech,) = ledger.mechanisms
    assert mech.sensitivity == 2 * 0.5 / 200 and mech.count == passes
    assert mech.noise_scale == pytest.approx(mech.noise_multiplier * mech.sensitivity)
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(mech.noise_multiplier), passes)
    eps = rdp_privacy_accountant.RdpAccountant().compose(event).get_epsilon(1e-5)
    assert eps <= epsilon * (1 + 1e-9) and eps >= 0.97 * epsilon
    assert ledger.epsilon_achieved == pytest.approx(eps)
    # the analytic Gaussian mechanism's bound for one release at this total
    # noise (sqrt(T) z for T compositions) is no looser than the accountant's
    one = dp_accounting.GaussianDpEvent(mech.noise_multiplier / np.sqrt(passes))
    assert rdp_privacy_accountant.RdpAccountant().compose(one).get_epsilon(1e-5) \
        == pytest.approx(eps, rel=1e-6)


def test_outside_solver_through_the_estimators(noisy_gd):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 5))
    w = np.array([1.0, -2.0, 0.0, 0.5, 0.0])
    y = X @ w + 0.1 * rng.standard_normal(300)
    kw = dict(solver="noisy_gd", passes=30, step=1.0, clip=5.0, penalty="l2", alpha=1e-3,
              random_state=0)
    with pytest.warns(UserWarning, match="global_smoothness"):
        reg = DPCoordinateDescentRegressor(epsilon=1e4, **kw).fit(X, y)
    assert reg.privacy_ledger_.algorithm == "noisy_gd"
    assert reg.privacy_ledger_.epsilon_achieved <= 1e4
    assert reg.privacy_ledger_.nonprivate_inputs == ("global_smoothness",)
    assert reg.score(X, y) > 0.9
    again = DPCoordinateDescentRegressor(epsilon=1e4, **kw).fit(X, y)
    assert np.array_equal(reg.coef_, again.coef_)  # same seed and settings: bit for bit
    noisy = DPCoordinateDescentRegressor(epsilon=0.1, **kw).fit(X, y)
    assert noisy.privacy_ledger_.mechanisms[0].noise_scale \
        > 100 * reg.privacy_ledger_.mechanisms[0].noise_scale
    labels = (X @ w > 0).astype(int)
    clf = DPCoordinateDescentClassifier(epsilon=1e4, **{**kw, "clip": 1.0}).fit(X, labels)
    assert clf.score(X, labels) > 0.9
    with pytest.raises(ValueError, match="hinge.*not smooth"):
        DPCoordinateDescentClassifier(loss="hinge", epsilon=1.0, **kw).fit(X, labels)
    with pytest.raises(ValueError, match="calibrated under replace_one only"):
        DPCoordinateDescentRegressor(neighbouring="add_or_remove_one", **kw).fit(X, y)



def test_entry_points_register_installed_solvers(tmp_path, monkeypatch):
    """A package that declares an entry point in the group dpcd.algorithms
    (here a distribution's metadata on sys.path, as pip installs it) is loaded
    on the first look-up of an unknown name."""
    from dpcd.algorithms import registry

    (tmp_path / "ep_demo_solver.py").write_text(
        "from dpcd import algorithms\n"
        "from dpcd.algorithms import cd\n"
        "algorithms.register(algorithms.Algorithm(name='ep_demo', description='demo',\n"
        "                                         run=cd.run, privacy=None))\n")
    info = tmp_path / "ep_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dpcd.algorithms]\nep_demo = ep_demo_solver\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", set())
    try:
        assert algorithms.get("ep_demo").run is algorithms.get("cd").run
        assert "ep_demo" in algorithms.names(private=False, builtin=False)
    finally:
        registry._SPECS.pop("ep_demo", None)


# --- imports run downward ---------------------------------------------------------
# the plan package imports nothing of dpcd (stdlib and yaml only,
# tests/test_plan.py): a leaf like leak.py, so the sweep reads the staged
# lattice from its lattice module (as tests/test_layers.py).
LAYERS = {"data": 0, "problems": 0, "privacy": 0, "leak": 0, "plan": 0, "streams": 0, "solvers": 1,
          "algorithms": 2, "sweep": 3, "tuning": 3, "tracking": 4, "report": 4, "estimators": 5,
          "stages": 6, "cli": 6}
# none: an audit that runs a solver lives in tests/ (tests/dp_scd_audit.py)
KNOWN_UPWARD = set()


def test_imports_run_downward():
    """data, problems, privacy -> solvers -> algorithms -> sweep -> tracking,
    report -> estimators -> stages: no module imports a higher floor."""
    import ast

    upward = set()
    src = ROOT / "src" / "dpcd"
    for path in src.rglob("*.py"):
        rel = path.relative_to(src)
        floor = LAYERS.get(rel.parts[0].removesuffix(".py"))
        if floor is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpcd"):
                parts = node.module.split(".")
                names = parts[1:2] or [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name.split(".")[1] for a in node.names if a.name.startswith("dpcd.")]
            else:
                continue
            upward |= {(rel.as_posix(), name) for name in names
                       if LAYERS.get(name, -1) > floor}
    assert upward == KNOWN_UPWARD
