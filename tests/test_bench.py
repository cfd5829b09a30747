"""The bench scripts import against the package as it is.

Benchmarks run by hand, not in the suite, so a renamed module or function
breaks one silently until someone next runs it. Importing each (its main
guarded, so nothing is timed) names the break where it happens.
"""
import ast
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))

# One interpreter for all: each script's module-level code (imports, constants)
# runs under another name than "__main__".
IMPORT_ALL = """
import json, runpy, sys
sys.path.insert(0, sys.argv[1])
failures = {}
for path in sys.argv[2:]:
    try:
        runpy.run_path(path, run_name="bench_import")
    except Exception as error:
        failures[path] = f"{type(error).__name__}: {error}"
print(json.dumps(failures))
"""


def _has_main_guard(path):
    """True if the script's top level has ``if __name__ == "__main__":``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def test_every_bench_script_runs_only_under_its_main_guard():
    assert SCRIPTS, f"no bench scripts under {BENCH}"
    assert [path.name for path in SCRIPTS if not _has_main_guard(path)] == []


def test_every_bench_script_imports():
    out = subprocess.run([sys.executable, "-c", IMPORT_ALL, str(BENCH),
                          *map(str, SCRIPTS)],
                         capture_output=True, text=True, timeout=300, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == {}
