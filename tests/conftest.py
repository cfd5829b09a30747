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
one cache entry, numba/numba#4807). tests/warm_secure.py compiles the secure
kernels meanwhile, which ``dpcd warmup`` does not.

At the end, the run's seconds per test file (setup, call and teardown of its
tests) and per worker are printed: what LONGEST is measured from, and how
evenly the workers were loaded.
"""

import collections
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return  # a worker, or a run without workers: each workflow warms up on its own
    os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / "results" / ".numba_cache"))
    # the secure kernels on the other core meanwhile (about 80 s of CPU cold;
    # the unit tests' secure files compiled them, both workers at once); a
    # failure there only leaves them to compile in the tests, which report it
    secure = subprocess.Popen([sys.executable, str(ROOT / "tests" / "warm_secure.py")],
                              stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-m", "dpcd.cli", "warmup"], check=True,
                   stdout=subprocess.DEVNULL, timeout=1800)
    secure.wait(timeout=1800)


# Measured on 2 cores, longest first (minutes each for the workflow files, a
# minute or two for the unit-test ones: the secure ones' CPU seconds measured
# alone, 50-76 s, would otherwise come last, alphabetically); the files not
# named keep their order.
LONGEST = (
    "tests/workflow/test_cluster.py",
    "tests/workflow/test_staged_search.py",
    "tests/workflow/test_private_compare_workflow.py",
    "tests/workflow/test_workflow_validation.py",
    "tests/workflow/test_private_search_workflow.py",
    "tests/workflow/test_interrupt.py",
    "tests/test_private_workflow.py",
    "tests/test_solvers_reference.py",
    "tests/test_secure_dp_scd.py",
    "tests/test_secure_sgd.py",
    "tests/test_secure_search.py",
    "tests/test_secure_default.py",
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


_FILE_SECONDS = collections.Counter()
_WORKER_SECONDS = collections.Counter()


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    _FILE_SECONDS[path] += report.duration
    node = getattr(report, "node", None)  # under xdist, the worker that ran it
    _WORKER_SECONDS[getattr(getattr(node, "gateway", None), "id", None)] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _FILE_SECONDS:
        return
    write = terminalreporter.write_line
    terminalreporter.section("seconds per test file (the 25 longest) and per worker")
    for path, seconds in _FILE_SECONDS.most_common(25):
        write(f"{seconds:8.1f}s {path}")
    write(f"{sum(_FILE_SECONDS.values()):8.1f}s all {len(_FILE_SECONDS)} files")
    for worker, seconds in sorted(_WORKER_SECONDS.items()) if len(_WORKER_SECONDS) > 1 else ():
        write(f"{seconds:8.1f}s worker {worker}")
