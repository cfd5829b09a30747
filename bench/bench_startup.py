"""Benchmark: a workflow job's start-up (its imports) against ``python -c pass``.

Run: ``python bench/bench_startup.py [--repeat 5] [--baseline SRC]``. For each job kind, a
fresh interpreter builds the command's parser and runs the import statements
of the command's own function (as the job does before it reads its inputs);
``solve+kernels`` then loads DP-CD's kernels from the numba cache, as a solve
job does before its first run (``NUMBA_CACHE_DIR``, a temporary one if unset,
is filled by an untimed first round), and ``numba`` is numba's import alone;
``pass`` is timed in the same rounds, interleaved, so load from other
processes hits all alike. Prints the median CPU seconds (user + sys of the
child) and wall seconds of each, and each one's excess over ``pass``; no
assertions. The import lines are read from the functions' source, so the
figures follow the code. ``--baseline SRC`` (the ``src`` directory of
another revision, e.g. from ``git worktree add``) times the same jobs with
that tree first on ``PYTHONPATH``, interleaved, and prints their ratio.
"""
import argparse
import ast
import inspect
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

from dpcd.stages import aggregate, calibrate, fresh, solve


def body_imports(func):
    """The import statements in ``func``'s body, as source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    return "\n".join(ast.unparse(node) for node in ast.walk(tree)
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def job(command, func):
    return "\n".join(["from dpcd.cli import build_parser", f"build_parser({command!r})",
                      body_imports(func)])


JOBS = {
    "pass": "pass",
    "solve": job("solve", solve.cmd_solve),
    "select": job("select", solve.cmd_select),
    "reference": job("reference", solve.cmd_reference),
    "calibrate": job("calibrate", calibrate.cmd_calibrate),
    "fresh": job("fresh", fresh.cmd_fresh),
    "aggregate": job("aggregate", aggregate.cmd_aggregate),
}
if hasattr(aggregate, "cmd_aggregate_report"):  # the figures and MLflow, apart from the tables
    JOBS["aggregate-report"] = job("aggregate-report", aggregate.cmd_aggregate_report)
JOBS["solve+kernels"] = JOBS["solve"] + "\nfrom dpcd import algorithms\nalgorithms.warmup(['dp_cd'])"
JOBS["numba"] = "import numba"


def timed(code, src=None):
    """(CPU s, wall s) of a fresh interpreter running ``code`` (with ``src``
    first on its path)."""
    env = dict(os.environ, PYTHONPATH=src) if src else None
    before = os.times()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    return cpu, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", help="src directory of a baseline revision")
    args = parser.parse_args()
    trees = {"this tree": None, **({"baseline": args.baseline} if args.baseline else {})}
    os.environ.setdefault("NUMBA_CACHE_DIR", tempfile.mkdtemp(prefix="numba_cache"))
    for src in trees.values():  # untimed: the kernels compile into the cache
        timed(JOBS["solve+kernels"], src)
    times = {(tree, name): [] for tree in trees for name in JOBS}
    for _ in range(args.repeat):
        for name, code in JOBS.items():  # interleaved: each round times every job
            for tree, src in trees.items():
                times[tree, name].append(timed(code, src))
    median = {key: (statistics.median(t[0] for t in rows), statistics.median(t[1] for t in rows))
              for key, rows in times.items()}
    print(f"median of {args.repeat} rounds (shared machines: read the CPU column)")
    print(f"{'job':22} {'CPU s':>7} {'- pass':>7} {'wall s':>7} {'- pass':>7}")
    for (tree, name), (cpu, wall) in median.items():
        base_cpu, base_wall = median[tree, "pass"]
        print(f"{name + ' (' + tree + ')':22} {cpu:7.2f} {cpu - base_cpu:7.2f} "
              f"{wall:7.2f} {wall - base_wall:7.2f}")
    if args.baseline:
        print("CPU over pass, this tree / baseline:")
        for name in JOBS:
            if name != "pass":
                new = median["this tree", name][0] - median["this tree", "pass"][0]
                old = median["baseline", name][0] - median["baseline", "pass"][0]
                print(f"  {name:10} {new / old:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
