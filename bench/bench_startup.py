"""Benchmark: a workflow job's start-up (its imports) against ``python -c pass``.

Run: ``python bench/bench_startup.py [--repeat 5] [--baseline SRC]``. For each job kind, a
fresh interpreter builds the command's parser and runs the import statements
of the command's own function (as the job does before it reads its inputs);
``solve+kernels`` then loads DP-CD's kernels from the numba cache, as a solve
job does before its first run (``NUMBA_CACHE_DIR``, a temporary one if unset,
is filled by an untimed first round), ``solve+write`` adds the writing of a
small table as the job writes its own, and ``numba`` is numba's import alone;
``pass`` is timed in the same rounds, interleaved, so load from other
processes hits all alike. Prints the median CPU seconds (user + sys of the
child) and wall seconds of each, and each one's excess over ``pass``; no
assertions. The import lines are read from the functions' source (the
statements of their bodies, not of a branch), so the figures follow the code.
``--baseline SRC`` (the ``src`` directory of another revision, e.g. from
``git worktree add``) times that tree's jobs (its own import lines) with it
first on ``PYTHONPATH``, interleaved, and prints their ratio.
"""
import argparse
import ast
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time



def body_imports(func):
    """The import statements of ``func``'s body, as source: those it runs
    first, not those of a branch (another kind of job's, e.g. a fresh or
    confirm solve job's)."""
    (definition,) = ast.parse(textwrap.dedent(inspect.getsource(func))).body
    return "\n".join(ast.unparse(node) for node in definition.body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def job(command, func):
    return "\n".join(["from dpcd.cli import build_parser", f"build_parser({command!r})",
                      body_imports(func)])


# a solve job's table written as that tree writes it (before write_table: pandas)
WRITE = """
import tempfile
import numpy as np
import dpcd.sweep.tidy as tidy
row = {"solver": "dp_cd", "passes": 2, "clip": np.nan, "objective": np.ones(3)}
with tempfile.TemporaryDirectory() as tmp:
    if hasattr(tidy, "write_table"):
        tidy.write_table([tidy.stack_columns([row])], tmp + "/t.parquet")
    else:
        tidy.stack_rows([row]).to_parquet(tmp + "/t.parquet", index=False)
"""


def jobs():
    """Each job kind's code, read from the ``dpcd`` on the path."""
    from dpcd.stages import aggregate, calibrate, fresh, solve

    code = {
        "pass": "pass",
        "solve": job("solve", solve.cmd_solve),
        "select": job("select", solve.cmd_select),
        "reference": job("reference", solve.cmd_reference),
        "calibrate": job("calibrate", calibrate.cmd_calibrate),
        "fresh": job("fresh", fresh.cmd_fresh),
        "aggregate": job("aggregate", aggregate.cmd_aggregate),
    }
    if hasattr(aggregate, "cmd_aggregate_report"):  # the figures and MLflow, apart from the tables
        code["aggregate-report"] = job("aggregate-report", aggregate.cmd_aggregate_report)
    code["solve+kernels"] = code["solve"] + "\nfrom dpcd import algorithms\nalgorithms.warmup(['dp_cd'])"
    code["solve+write"] = code["solve"] + WRITE
    code["numba"] = "import numba"
    return code


def jobs_of(src):
    """:func:`jobs` of the tree ``src`` (None: this one), read in a child
    process with ``src`` first on its path: a baseline runs its own imports."""
    if src is None:
        return jobs()
    out = subprocess.run([sys.executable, __file__, "--list"], check=True, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=src))
    return json.loads(out.stdout)


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
    parser.add_argument("--list", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.list:  # for jobs_of
        print(json.dumps(jobs()))
        return 0
    trees = {"this tree": None, **({"baseline": args.baseline} if args.baseline else {})}
    code = {tree: jobs_of(src) for tree, src in trees.items()}
    names = list(code["this tree"])
    os.environ.setdefault("NUMBA_CACHE_DIR", tempfile.mkdtemp(prefix="numba_cache"))
    for tree, src in trees.items():  # untimed: the kernels compile into the cache
        timed(code[tree]["solve+kernels"], src)
    times = {(tree, name): [] for tree in trees for name in names}
    for _ in range(args.repeat):
        for name in names:  # interleaved: each round times every job
            for tree, src in trees.items():
                if name in code[tree]:
                    times[tree, name].append(timed(code[tree][name], src))
    median = {key: (statistics.median(t[0] for t in rows), statistics.median(t[1] for t in rows))
              for key, rows in times.items() if rows}
    print(f"median of {args.repeat} rounds (shared machines: read the CPU column)")
    print(f"{'job':22} {'CPU s':>7} {'- pass':>7} {'wall s':>7} {'- pass':>7}")
    for (tree, name), (cpu, wall) in median.items():
        base_cpu, base_wall = median[tree, "pass"]
        print(f"{name + ' (' + tree + ')':22} {cpu:7.2f} {cpu - base_cpu:7.2f} "
              f"{wall:7.2f} {wall - base_wall:7.2f}")
    if args.baseline:
        print("CPU over pass, this tree / baseline:")
        for name in names:
            if name != "pass" and ("baseline", name) in median:
                new = median["this tree", name][0] - median["this tree", "pass"][0]
                old = median["baseline", name][0] - median["baseline", "pass"][0]
                print(f"  {name:10} {new / old:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
