"""A given ``NUMBA_CACHE_DIR`` gets a subdirectory named for the package's
sources: numba checks only the file of the function it caches, not the files
of the functions it calls (numba/numba#1833), so without it an update that
changes ``privacy/exact.py`` alone would leave other modules' cached kernels
running the old code."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dpcd

CALLER = """from numba import njit
from dpcd._probe_callee import f
@njit(cache=True)
def g():
    return 10 * f()
"""
CALLEE = """from numba import njit
@njit(cache=True)
def f():
    return {value}
"""
PROBE = ("import os, sys\n"
         "if sys.argv[1] == 'numba-first': import numba\n"
         "import dpcd, numba\n"
         "from dpcd._probe_caller import g\n"
         "print(os.environ['NUMBA_CACHE_DIR'], numba.config.CACHE_DIR, g())\n")


def _run(src, cache, order="dpcd-first"):
    out = subprocess.run([sys.executable, "-c", PROBE, order], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(src), "NUMBA_CACHE_DIR": str(cache)},
                         check=True, timeout=300)
    env_dir, numba_dir, value = out.stdout.split()
    assert env_dir == numba_dir  # what numba uses
    return env_dir, int(value)


def test_a_changed_callee_is_compiled_again(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(Path(dpcd.__file__).parent, src / "dpcd",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (src / "dpcd" / "_probe_caller.py").write_text(CALLER)
    callee = src / "dpcd" / "_probe_callee.py"
    callee.write_text(CALLEE.format(value=1))
    base = tmp_path / "cache"

    first, value = _run(src, base)
    assert Path(first).parent == base and value == 10
    assert any(Path(first).rglob("*.nbi"))  # cached there
    assert _run(src, base, "numba-first") == (first, 10)  # numba imported before dpcd
    assert _run(src, first) == (first, 10)  # a child process inherits the directory

    callee.write_text(CALLEE.format(value=2))  # the caller's file is unchanged
    second, value = _run(src, base)
    assert value == 20, "the caller's cached kernel kept the old callee"
    assert second != first and Path(second).parent == base
    assert _run(src, first) == (second, 20)  # an inherited directory of older sources
