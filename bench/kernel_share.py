"""The kernels' share of a finished workflow run's CPU, from its overhead ledgers.

Run, in the workdir of a finished run (or with ``--workdir``)::

    /usr/bin/time -o time.log snakemake --cores 2 ...
    python bench/kernel_share.py --time-log time.log

Every solve job writes an overhead ledger (``results/runs/**/chunk*.timing.json``,
``results/fresh/*/chunk*.timing.json``): the seconds of its kernels, its
calibrations, its MLflow runs file and the rest. This script sums them and
sets them against the CPU seconds of the whole run: user + sys as
``/usr/bin/time`` reports them (its default format, or ``-v``), or
``--cpu-seconds``. The ledgers' seconds are wall; where a ledger has its CPU
seconds (``cpu_seconds``: the kernels' at the CPU / wall ratio of the runs
around them, and the job's start-up), the shares are of CPU, as the run's
total is: on a shared machine a job's wall exceeds its CPU. It also sums Snakemake's ``benchmark:`` files per rule
(``results/benchmarks/<rule>/...``: jobs, wall and CPU seconds), so the CPU
outside the kernels can be read per rule. The calibrations: the ledgers'
wall, their CPU, calls and entries computed (ledgers that have them), and the
distinct calibrations in the run's cache (``results/calibration``), each
computed once by whichever job asked first. Prints a table; no assertions.
"""
import argparse
import csv
import glob
import json
import os
import re
import sys
from collections import defaultdict


def ledger_sums(workdir):
    """Sum of each overhead-ledger field over the solve jobs (wall, and CPU
    where the ledgers have it), of their calibration counts
    (``calibrations``), and their number."""
    paths = (glob.glob(os.path.join(workdir, "results/runs/**/chunk*.timing.json"), recursive=True)
             + glob.glob(os.path.join(workdir, "results/fresh/*/chunk*.timing.json")))
    sums, cpu, calibrations = defaultdict(float), defaultdict(float), defaultdict(float)
    for path in paths:
        with open(path) as fh:
            ledger = json.load(fh)
        for key, value in ledger["seconds"].items():
            sums[key] += value
        for key, value in ledger.get("cpu_seconds", {}).items():
            cpu[key] += value
        for key, value in ledger.get("calibrations", {}).items():
            calibrations[key] += value
    return dict(sums), dict(cpu), dict(calibrations), len(paths)


def cached_calibrations(workdir):
    """{kind: entries} of the run's calibration cache."""
    kinds = defaultdict(int)
    for path in glob.glob(os.path.join(workdir, "results/calibration/*/*.json")):
        with open(path) as fh:
            kinds[json.load(fh)["key"]["kind"]] += 1
    return dict(kinds)


def rule_sums(workdir):
    """{rule: (jobs, wall s, CPU s)} from Snakemake's benchmark files."""
    out = {}
    root = os.path.join(workdir, "results/benchmarks")
    for entry in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        # a rule's jobs in its folder, a rule of one job in <rule>.tsv
        paths = (glob.glob(os.path.join(root, entry, "**/*.tsv"), recursive=True)
                 if os.path.isdir(os.path.join(root, entry)) else [os.path.join(root, entry)])
        jobs = wall = cpu = 0.0
        for path in paths:
            with open(path) as fh:
                for row in csv.DictReader(fh, delimiter="\t"):
                    jobs += 1
                    wall += float(row["s"])
                    cpu += float(row.get("cpu_time") or 0.0)
        rule = entry[:-4] if entry.endswith(".tsv") else entry
        jobs0, wall0, cpu0 = out.get(rule, (0, 0.0, 0.0))
        out[rule] = (jobs0 + int(jobs), wall0 + wall, cpu0 + cpu)
    return out


def cpu_of_time_log(path):
    """user + sys seconds and the wall of a ``/usr/bin/time`` report."""
    text = open(path).read()
    verbose = re.search(r"User time \(seconds\): ([\d.]+).*?System time \(seconds\): ([\d.]+)",
                        text, re.S)
    if verbose:
        user, system = map(float, verbose.groups())
    else:
        found = re.search(r"([\d.]+)user\s+([\d.]+)system\s+([\d:.]+)elapsed", text)
        if not found:
            raise ValueError(f"{path}: no user/system seconds of /usr/bin/time found")
        user, system = float(found.group(1)), float(found.group(2))
    wall = re.search(r"([\d:.]+)elapsed", text) or re.search(
        r"Elapsed \(wall clock\) time.*?: ([\d:.]+)", text)
    return user, system, wall.group(1) if wall else "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=".", help="the run's workdir (has results/)")
    cpu = parser.add_mutually_exclusive_group(required=True)
    cpu.add_argument("--time-log", help="/usr/bin/time's report of the whole run")
    cpu.add_argument("--cpu-seconds", type=float, help="user + sys CPU seconds of the run")
    args = parser.parse_args()
    if args.time_log:
        user, system, wall = cpu_of_time_log(args.time_log)
        total = user + system
        print(f"run: wall {wall}, user {user:.1f} s + sys {system:.1f} s = {total:.1f} CPU s")
    else:
        total = args.cpu_seconds
        print(f"run: {total:.1f} CPU s")
    ledgers, ledgers_cpu, calibrations, n_jobs = ledger_sums(args.workdir)
    if not n_jobs:
        print(f"{args.workdir}: no overhead ledgers under results/", file=sys.stderr)
        return 1
    print(f"\n{n_jobs} solve jobs' overhead ledgers (s; share of the run's CPU), "
          f"inside {ledgers.pop('wall', 0.0):.1f} s of their wall:")
    for key in sorted(ledgers, key=ledgers.get, reverse=True):
        print(f"  {key:12} {ledgers[key]:9.1f}  {ledgers[key] / total:6.1%}")
    if ledgers_cpu:
        print(f"\ntheir CPU seconds (s; share of the run's CPU), of "
              f"{ledgers_cpu.pop('total', 0.0):.1f} s of their CPU:")
        for key in sorted(ledgers_cpu, key=ledgers_cpu.get, reverse=True):
            print(f"  {key:12} {ledgers_cpu[key]:9.1f}  {ledgers_cpu[key] / total:6.1%}")
    rules = rule_sums(args.workdir)
    solve_cpu = sum(rules.get(r, (0, 0, 0))[2] for r in ("solve", "fresh_solve"))
    print("\nper rule (Snakemake benchmarks): jobs, job wall s, job CPU s")
    for rule, (jobs, wall, cpu_s) in sorted(rules.items(), key=lambda kv: -kv[1][2]):
        print(f"  {rule:22} {jobs:5d} {wall:9.1f} {cpu_s:9.1f}")
    kernels, kind = ((ledgers_cpu["kernels"], "CPU") if "kernels" in ledgers_cpu
                     else (ledgers.get("kernels", 0.0), "wall"))
    print(f"\nkernels ({kind}): {kernels:.1f} of {total:.1f} CPU s = "
          f"{kernels / total:.1%} (outside the kernels: {total - kernels:.1f} s)")
    if solve_cpu:
        print(f"calibration: {ledgers.get('calibration', 0.0):.1f} of the solve jobs' "
              f"{solve_cpu:.1f} CPU s = {ledgers.get('calibration', 0.0) / solve_cpu:.1%}")
    if calibrations:
        print(f"calibrations in the ledgers: {calibrations.get('cpu_seconds', 0.0):.1f} CPU s "
              f"(of {ledgers.get('calibration', 0.0):.1f} s wall), "
              f"{calibrations.get('calls', 0):.0f} calls, "
              f"{calibrations.get('computed', 0):.0f} entries computed")
    kinds = cached_calibrations(args.workdir)
    if kinds:
        print("distinct calibrations in results/calibration: "
              + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
