"""Suite-wide set-up for pytest-xdist: one numba warm-up, then the file order.

``make test`` runs ``-n auto --dist loadfile --no-loadscope-reorder``: each test
file goes to one worker, so a module's workflow fixture is built once, and the
files go out in collection order. The workflow files (minutes each) go first,
so that they do not form the tail of the run; among them, those that do not
need the shared finished run (tests/workflow/conftest.py) go first, to build
their own while one worker builds the shared one.

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


def pytest_collection_modifyitems(items):
    def path(item):
        return item.nodeid.split("::")[0]

    shared = {path(item) for item in items if "finished_workdir" in getattr(item, "fixturenames", ())}

    def rank(item):
        if not path(item).startswith("tests/workflow/"):
            return 2
        return 1 if path(item) in shared else 0

    items.sort(key=rank)  # stable: files keep their order within a rank
