"""A workflow job imports what it uses: its start-up is not spent on heavy
modules it never calls (bench/bench_startup.py prints the times)."""
import ast
import inspect
import subprocess
import sys
import textwrap

import pytest

from dpcd.stages import aggregate, calibrate, smoothness, solve
from dpcd.stages.common import Ledger

# Modules a solve job on dense data whose calibrations are cached never uses:
# scipy.sparse (a sparse X brings it), the accountants (a computed calibration
# brings them), MLflow (the aggregate job writes the runs) and the figures'
# stack. (numba reads its configuration with yaml: a job with kernels has it.)
SOLVE_NEVER = ("scipy.sparse", "dp_accounting", "mlflow", "matplotlib", "seaborn", "sklearn")
# the kernels' modules, one per solver family: a job imports those it runs
KERNELS = tuple(f"dpcd.solvers.{name}" for name in ("dp_cd", "dp_gcd", "dp_scd", "dp_sgd",
                                                     "reference"))


def body_imports(func):
    """The import statements of ``func``'s body, as source: those it runs
    first, not those of a branch (another kind of job's, e.g. a fresh or
    confirm solve job's)."""
    (definition,) = ast.parse(textwrap.dedent(inspect.getsource(func))).body
    return "\n".join(ast.unparse(node) for node in definition.body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def loaded_after(command, code):
    """Which of the heavy modules a fresh interpreter holds after building
    ``command``'s parser and running ``code``."""
    heavy = SOLVE_NEVER + ("pandas", "numba", "importlib.metadata", "yaml") + KERNELS
    script = "\n".join([
        "import sys", "from dpcd.cli import build_parser", f"build_parser({command!r})", code,
        f"print(' '.join(m for m in {heavy!r} if m in sys.modules))"])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    return set(out.stdout.split())


def test_a_solve_job_imports_only_what_it_runs():
    """The command's own imports, then a dense problem through the kernels'
    input checks, as a solve job does before its first run, and its table
    written, as it does after."""
    code = body_imports(solve.cmd_solve) + textwrap.dedent("""
        import tempfile
        import numpy as np
        from dpcd.problems import make_problem
        from dpcd.solvers.base import check_design
        X = np.random.default_rng(0).normal(size=(20, 3))
        datafit, _ = make_problem("squares", "l1", 0.1)
        check_design(X, X @ np.ones(3), datafit, "csc")
        datafit.global_smoothness(X)
        from dpcd.sweep.tidy import stack_columns
        with tempfile.TemporaryDirectory() as tmp:
            write_table([stack_columns([{"solver": "dp_cd", "passes": 2, "clip": np.nan,
                                         "objective": np.ones(3)}])], tmp + "/t.parquet")
    """)
    loaded = loaded_after("solve", code)
    assert loaded & set(SOLVE_NEVER) == set()
    # its table is written from columns by pyarrow alone (a fresh or confirm
    # job's joins, in their branches, import pandas)
    assert "pandas" not in loaded
    assert "numba" in loaded  # the job's kernels: the test sees them
    assert loaded & set(KERNELS) == set()  # none run yet


def test_a_job_imports_the_kernels_of_its_solvers_only():
    """A DP-CD job's warm-up imports DP-CD's kernels, not the other solvers';
    the package's names stay the solvers' functions once their modules are in."""
    code = textwrap.dedent("""
        from dpcd import algorithms, solvers
        algorithms.warmup(["dp_cd"])
        import dpcd.solvers.dp_cd
        assert callable(solvers.dp_cd) and solvers.dp_cd is dpcd.solvers.dp_cd
    """)
    assert loaded_after("solve", code) & set(KERNELS) == {"dpcd.solvers.dp_cd"}


def test_a_dense_solve_job_loads_no_sparse_kernels():
    """The warm-up of a job's kernels (before any run is timed) builds the
    sparse designs only once scipy.sparse is loaded: by sparse data, or by
    the warmup job, which compiles both."""
    code = textwrap.dedent("""
        import numpy as np
        from dpcd.solvers.warmup import _designs
        assert len(_designs(np.ones((2, 2)), "csc")) == 1
        import scipy.sparse
        assert [type(X).__name__ for X in _designs(np.ones((2, 2)), "csr")] == [
            "ndarray", "csr_matrix"]
    """)
    assert "scipy.sparse" not in loaded_after("solve", "import dpcd.solvers.warmup")
    loaded_after("solve", code)  # its assertions


def test_an_aggregate_job_writes_tables_without_figures_or_mlflow():
    """The tables' job imports neither the figures' stack nor MLflow (the
    aggregate-report job's): what reads the tables waits for neither; nor
    numba (the algorithms' table columns are read without their kernels)."""
    loaded = loaded_after("aggregate", body_imports(aggregate.cmd_aggregate))
    assert loaded & {"mlflow", "matplotlib", "seaborn", "scipy.sparse", "numba"} == set()
    assert "pandas" in loaded  # the job's tables: the test sees them


@pytest.mark.parametrize("command, func", [("reference", solve.cmd_reference),
                                           ("smoothness", smoothness.cmd_smoothness),
                                           ("calibrate", calibrate.cmd_calibrate)])
def test_a_job_before_the_sweep_imports_no_tables(command, func):
    """The jobs that read a problem or a grid import neither the sweep's runner
    nor pandas (its tables)."""
    assert "pandas" not in loaded_after(command, body_imports(func))


@pytest.mark.parametrize("command", ["aggregate", "select", "summary", "solve"])
def test_a_job_parser_reads_no_metadata_or_registry(command):
    """``--version`` reads the installed version only when asked (tests/test_packaging.py
    runs it), and the dataset registry's YAML is parsed only when read."""
    assert loaded_after(command, "") & {"importlib.metadata", "yaml"} == set()



def test_a_job_ledger_adds_up_in_wall_and_cpu():
    """The overhead ledger's parts and ``other`` add up to the job's wall and
    CPU; its CPU counts the process's start-up before the ledger began."""
    ledger = Ledger()
    sum(range(10**5))
    ledger.lap("loading")
    wall, cpu = ledger.lap()  # a part the caller splits (the kernels' runs)
    ledger.add("kernels", wall / 2, cpu / 2)
    ledger.close()
    for seconds, total in ((ledger.seconds, "wall"), (ledger.cpu_seconds, "total")):
        parts = sum(v for k, v in seconds.items() if k != total)
        assert parts == pytest.approx(seconds[total])
        assert set(seconds) >= {"loading", "kernels", "other", total}
    assert ledger.cpu_seconds["startup"] > 0  # the interpreter's, at least
