"""Imports run downward only (the package's floors: data, problems,
privacy, streams -> solvers -> algorithms -> sweep, tuning -> tracking/report ->
estimators -> stages), the never-rules of DESIGN.md hold, and a solve job
never loads MLflow."""

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dpcd"

# Each floor may import its own floor and those below, never one above.
FLOORS = {
    "leak": 0, "lazy": 0, "plan": 0, "data": 0, "problems": 0, "privacy": 0, "streams": 0,
    "solvers": 1,
    "algorithms": 2,
    "sweep": 3, "tuning": 3,
    "tracking": 4, "report": 4,
    "estimators": 5,
    "stages": 6,
    "cli": 7,
}

# Imports the floors alone would allow and DESIGN.md forbids: (importer, imported).
# report reads tables, not the sweep's internals (metric directions live in
# problems, run identities in streams); the estimators run a spec on a problem
# the spec prepares, never through the sweep; privacy calibrates and audits
# mechanisms and never runs a solver (an audit that does lives in tests/).
NEVER = {("report", "sweep"), ("estimators", "sweep"), ("privacy", "solvers")}

# Edges of NEVER that remain until their modules move, each with where it goes
# (none: keep the set for the next move that needs one).
PENDING = set()


def _imports(path):
    """Every ``dpcd.<floor>`` a module imports, anywhere in its body."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "dpcd" and len(parts) > 1 and parts[1] in FLOORS:
                yield parts[1]


def _floor_of(path):
    top = path.relative_to(SRC).parts[0]
    return Path(top).stem if top.endswith(".py") else top


def test_no_module_imports_a_floor_above_its_own():
    upward = []
    for path in SRC.rglob("*.py"):
        if path.name == "__init__.py" and path.parent == SRC:
            continue  # the package's own face re-exports what users need
        floor = _floor_of(path)
        assert floor in FLOORS, f"{path}: a new subpackage needs its floor in FLOORS"
        where = path.relative_to(SRC).as_posix()
        upward += [f"{where} imports dpcd.{name}" for name in _imports(path)
                   if FLOORS[name] > FLOORS[floor]]
    assert upward == []


def test_never_rules():
    """report -/-> sweep, estimators -/-> sweep, privacy -/-> solvers (DESIGN.md,
    "Imports run downward only"), apart from PENDING."""
    broken = {(path.relative_to(SRC).as_posix(), name)
              for path in SRC.rglob("*.py") for name in _imports(path)
              if (_floor_of(path), name) in NEVER}
    assert broken - PENDING == set()
    assert all((SRC / where).is_file() for where, _ in PENDING)


def test_streams_is_a_leaf_read_by_sweep_and_estimators():
    """Run identities and seed entropy have one home, below both their readers."""
    assert set(_imports(SRC / "streams.py")) == set()
    for reader in ("sweep", "estimators"):
        package = SRC / reader
        paths = package.rglob("*.py") if package.is_dir() else [SRC / f"{reader}.py"]
        assert any("streams" in set(_imports(path)) for path in paths), reader


def test_sweep_does_not_import_tracking():
    """The runs go sweep (records) -> tracking (payload, file, ingestion)."""
    assert all("tracking" not in set(_imports(path)) for path in (SRC / "sweep").rglob("*.py"))


def test_a_solve_job_writes_its_runs_file_without_loading_mlflow():
    """Importing MLflow costs a solve job 1.4 s: the payload and the runs file
    are plain data, and ``dpcd.tracking`` loads its MLflow writers lazily."""
    code = ("import sys; from dpcd.cli import build_parser; build_parser(); "
            "import dpcd.stages.solve, dpcd.tracking.payload, dpcd.tracking.runs_file, dpcd.tracking; "
            "print('mlflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_stage_job_starts_without_the_kernels():
    """A job builds only its own command's parser: a table, figure or select
    job loads neither numba and the kernels' modules (through the algorithms
    package, which ``dpcd budget`` needs) nor scipy.sparse (about 1 s in all)."""
    heavy = ("numba", "scipy.sparse", "dpcd.algorithms")
    code = ("import sys; from dpcd.cli import build_parser; "
            "[build_parser(c) for c in ('aggregate', 'fresh', 'select', 'summary')]; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    from dpcd.cli import build_parser

    # every command still parses, and --help lists them all
    assert {"data", "budget", "solve", "aggregate"} <= set(
        build_parser()._subparsers._group_actions[0].choices)
    assert build_parser("budget").parse_args(
        ["budget", "--algorithm", "dp_cd", "--epsilon", "1", "--delta", "1e-6", "--n", "10",
         "--passes", "1"]).command == "budget"


def test_stage_modules_stay_thin_entry_points():
    """One module per rule file, each an entry point of at most 200 lines:
    what grows belongs in the library below."""
    sizes = {path.name: len(path.read_text().splitlines())
             for path in (SRC / "stages").glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 200} == {}
    rules = Path(__file__).resolve().parents[1] / "workflow" / "rules"
    stages = {f"{rule.stem}.py" for rule in rules.glob("*.smk")} - {"data.py", "common.py",
                                                                       "data_common.py"}
    assert stages <= set(sizes)
