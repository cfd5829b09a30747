"""Suite-wide set-up for pytest-xdist: one numba warm-up, then the file order.

``make test`` runs ``-n auto --dist loadfile --no-loadscope-reorder``: each test
file goes to one worker, so a module's workflow fixture is built once, and the
files go out in the order set here, each to the first worker with under three
tests left. First one file that needs the shared finished run
(tests/workflow/conftest.py), so that one worker builds it while the other
starts on the files that build their own (a worker reaching a second user
before it is built waits on its lock); then those, the longest first (LONGEST,
measured), then the other users of the shared run, then the unit-test files,
their longest first: the long files do not form the tail of the run.

Before the workers start, the controller compiles every kernel family once
into the numba cache the workflow tests' jobs use (``dpcd warmup``, minutes
cold, seconds warm): otherwise each worker's first workflow compiles them all
at the same time into the same cache (twice the work, and parallel writes of
one cache entry, numba/numba#4807).
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return  # a worker, or a run without workers: each workflow warms up on its own
    os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / "results" / ".numba_cache"))
    subprocess.run([sys.executable, "-m", "dpcd.cli", "warmup"], check=True,
                   stdout=subprocess.DEVNULL, timeout=1800)


# Measured on 2 cores, longest first (minutes each for the workflow files, a
# minute or two for the unit-test ones); the files not named keep their order.
LONGEST = (
    "tests/workflow/test_staged_search.py",
    "tests/workflow/test_cluster.py",
    "tests/workflow/test_private_compare_workflow.py",
    "tests/workflow/test_workflow_validation.py",
    "tests/workflow/test_private_search_workflow.py",
    "tests/workflow/test_interrupt.py",
    "tests/test_private_workflow.py",
    "tests/test_solvers_reference.py",
)


def pytest_collection_modifyitems(items):
    def path(item):
        return item.nodeid.split("::")[0]

    shared = [path(item) for item in items if "finished_workdir" in getattr(item, "fixturenames", ())]

    def rank(item):
        if shared and path(item) == shared[0]:
            return 0, 0
        if not path(item).startswith("tests/workflow/"):
            group = 3
        else:
            group = 2 if path(item) in shared else 1
        long = LONGEST.index(path(item)) if path(item) in LONGEST else len(LONGEST)
        return group, long

    items.sort(key=rank)  # stable: files keep their order within a rank
