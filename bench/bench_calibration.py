"""Benchmark: the noise calibration's search against a baseline revision's, same run.

Run: ``python bench/bench_calibration.py`` (a representative set of events),
or ``python bench/bench_calibration.py --config config/paper/dpscd_aaai21.yaml
[--config ...]`` (every distinct event of those configs' grids). Prints one
row per event, each config's totals (what a workflow computes once per
distinct event, its disk cache empty) and the overall totals; no assertions.

For each event, the baseline's ``calibrate_multiplier`` (the file
``src/dpcd/privacy/accounting.py`` at ``--baseline``, loaded from git as a
module of its own) and this tree's are timed back to back, each with empty
in-process caches and no disk cache, so that load from other jobs hits both
alike. DP-GCD's events (``dp_gcd`` T=...) are its per-step ε′ under every
composition ``"auto"`` tries (``_calibrate_step`` of
``src/dpcd/privacy/gcd.py``, baseline likewise). Columns: CPU seconds of
each, their ratio, and the relative change of the noise multiplier z
(new/old - 1; 1/ε′ for DP-GCD). ``--recheck`` also re-evaluates each new z
that PLD calibrated at a 10x finer discretisation (slow: minutes for
millions of steps) and prints the ε found there. ``--evaluations`` adds
each search's accountant evaluations per event, the baseline's then this
tree's (how many PLD and RDP, and their CPU seconds: where a calibration's
time goes; DP-GCD's own compositions are not counted).

Events come from the configs as a solve job makes them: each private
solver entry's calibration (its spec's ``calibrate``, the one a run calls)
on a data-free probe of the dataset's training shape, over the entry's
passes, batch sizes and samplings and the experiment's ε. The training
shape is the registry's (or the generator's) size with the variant's split
applied (DP-SCD's App. E: 25 % test when no test file, then 25 % of the
rest for validation); columns dropped by preprocessing are not, so a DP-CD
event's count can differ from a run's by those columns.
"""
import argparse
import functools
import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import time

import yaml

from dpcd import algorithms
from dpcd.algorithms.problem import Probe
from dpcd.privacy import accounting, gcd
from dpcd.problems import make_problem
from dpcd.sweep.grid import expand_grid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "6a412cb"
PRIVACY_KEYS = ("batch_size", "sampling", "max_batch_size", "smoothness_fraction")

# (spec, epsilon, delta, accountant, relation): DP-SCD's and DP-SGD's Poisson
# replace-one events on the YearPredictionMSD stand-in (347 786 training rows,
# 50 passes, δ = 1e-3), seqDP-SCD's (its δ less the batch-size tail is close),
# Phishing's 10 passes, and the DP-CD and DP-GCD papers' California events
# (DP-CD's Gaussian coordinate steps, DP-SGD at batch 1; δ = 1/n²).
_MSD, _PHISHING, _CAL = 347_786, 6_218, 20_640


def _poisson(n, batch, passes):
    return ("poisson_gaussian", batch / n, math.ceil(passes * n / batch))


REPRESENTATIVE = [
    *[(_poisson(_MSD, b, 50), e, 1e-3, "auto", "replace_one")
      for b in (5, 100, 2000) for e in (0.1, 1.0)],
    (_poisson(_MSD, 50, 50), 0.5, 0.99e-3, "auto", "replace_one"),
    *[(_poisson(_PHISHING, b, 10), e, 1e-3, "auto", "replace_one")
      for b in (10, 500) for e in (0.1, 2.0)],
    *[(("gaussian", passes * 8), 1.0, _CAL ** -2.0, "auto", "replace_one")
      for passes in (2, 50)],
    *[(_poisson(_CAL, 1, passes), 1.0, _CAL ** -2.0, "auto", "replace_one")
      for passes in (0.1, 2, 10)],
]


def load_baseline(rev, name="accounting"):
    """The module ``src/dpcd/privacy/<name>.py`` of git revision ``rev``."""
    source = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:src/dpcd/privacy/{name}.py"],
                            check=True, capture_output=True, text=True).stdout
    path = os.path.join(tempfile.mkdtemp(), f"baseline_{name}.py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(f"baseline_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def clear(module):
    for name in ("_tightest", "_calibrate", "_epsilon", "_calibrate_step"):
        if hasattr(module, name):
            getattr(module, name).cache_clear()


def train_shape(config, exp):
    """(n, p) of an experiment's training part (see the module docstring)."""
    import yaml as _yaml

    registry = _yaml.safe_load(open(os.path.join(ROOT, "src/dpcd/data/registry.yaml")))
    dataset = config["datasets"][exp["dataset"]]
    entry = registry[dataset["source"]]
    shape = {**entry.get("expected", {}), **entry.get("defaults", {}),
             **(dataset.get("params") or {})}
    n, p = shape["n_samples"], shape.get("n_features", shape.get("n_features_nonzero"))
    if exp["variant"] == "maxabs_unitnorm":
        if "n_test" in shape and "generator" in entry:
            n -= shape["n_test"]  # a generated stand-in: n_samples counts its test rows
        if "n_test" not in shape:
            n -= math.ceil(0.25 * n)
        n -= math.ceil(0.25 * n)
    return n, p


def config_events(path):
    """Every distinct event of the private solver entries of config ``path``."""
    config = yaml.safe_load(open(path))
    seen = {}
    record = []

    def recorder(spec, epsilon, delta, accountant="auto", relation="replace_one"):
        record.append((tuple(spec), float(epsilon), float(delta), accountant, relation))
        return 1.0, float(epsilon), "rdp"

    def step_recorder(steps, epsilon, delta, composition, grid_steps=0):
        record.append(("dp_gcd", int(steps), float(epsilon), float(delta)))
        return 1e-3, float(epsilon)

    real, real_step = accounting.calibrate_multiplier, gcd._calibrate_step
    accounting.calibrate_multiplier, gcd._calibrate_step = recorder, step_recorder
    try:
        for exp in config["experiments"].values():
            n, p = train_shape(config, exp)
            privacy = exp.get("privacy") or {}
            epsilons = privacy.get("epsilon", [1.0])
            epsilons = epsilons if isinstance(epsilons, list) else [epsilons]
            delta = privacy.get("delta") or 1.0 / n ** 2
            penalty = make_problem(exp["problem"]["loss"], exp["problem"].get("penalty", "none"),
                                   exp["problem"].get("alpha", 0.0))[1]
            for name, entry in exp["solvers"].items():
                entry = dict(entry or {})
                solver = algorithms.get(entry.pop("solver", name))
                if not solver.private or solver.privacy.calibrate is None:
                    continue
                passes = entry.pop("passes", exp["passes"])
                axes = {k: expand_grid(v) if isinstance(v, (list, dict)) else [v]
                        for k, v in entry.items() if k in PRIVACY_KEYS}
                combos = [{}]
                for key, values in axes.items():
                    combos = [{**c, key: v} for c in combos for v in values]
                for combo in combos:
                    for ps in passes:
                        for eps in epsilons:
                            cfg = {"passes": ps, "clip": 1.0, "step": 1.0, **combo}
                            budget = algorithms.Budget(eps, delta, privacy.get("accountant", "auto"),
                                                       privacy.get("neighbouring", "replace_one"))
                            solver.privacy.calibrate(Probe(n, p, penalty), cfg, budget)
    finally:
        accounting.calibrate_multiplier, gcd._calibrate_step = real, real_step
    for event in record:
        seen.setdefault(event, None)
    return list(seen)


def timed(module, event):
    clear(module)
    start = time.process_time()
    if event[0] == "dp_gcd":  # every composition "auto" tries; z = 1/(largest ε′)
        steps = {k: module._calibrate_step(*event[1:], k)[0] for k in gcd.COMPOSITIONS}
        used = max(steps, key=steps.get)
        return time.process_time() - start, 1.0 / steps[used], used
    z, achieved, used = module.calibrate_multiplier(*event)
    return time.process_time() - start, z, used


def count_evaluations(module):
    """Record each accountant evaluation of ``module``'s search (kind, CPU
    seconds) in the returned list, cleared by the caller between events."""
    log = []
    raw = module._epsilon.__wrapped__

    def timed_epsilon(spec, z, delta, kind, relation, discretization):
        start = time.process_time()
        try:
            return raw(spec, z, delta, kind, relation, discretization)
        finally:
            log.append((kind, time.process_time() - start))

    module._epsilon = functools.lru_cache(maxsize=65536)(timed_epsilon)
    return log


def recheck(event, z):
    """ε of ``z`` under PLD at a tenth of the search's discretisation."""
    spec, _, delta, _, relation = event
    interval = accounting.pld_interval(spec, relation) / 10
    return accounting._epsilon(spec, float(z), delta, "pld", relation, interval)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", default=[],
                        help="a paper config whose events to time (repeatable)")
    parser.add_argument("--baseline", default=BASELINE, help="git revision of the old search")
    parser.add_argument("--recheck", action="store_true",
                        help="re-evaluate each new PLD z at a 10x finer discretisation")
    parser.add_argument("--evaluations", action="store_true",
                        help="also count each search's accountant evaluations per event "
                             "(PLD and RDP: how many, CPU seconds; old, then new)")
    parser.add_argument("--limit", type=int, default=None, help="time only the first N events")
    parser.add_argument("--every", type=int, default=1,
                        help="time every k-th event only (a sample across the configs)")
    parser.add_argument("--kind", help="time only events of this kind (dp_gcd, gaussian, "
                                       "poisson_gaussian, ...)")
    args = parser.parse_args()
    os.environ.pop("DPCD_CALIBRATION_CACHE", None)
    events, by_config = REPRESENTATIVE, {}
    if args.config:
        by_config = {path: config_events(path) for path in args.config}
        events = list(dict.fromkeys(e for path in args.config for e in by_config[path]))
    if args.kind:
        events = [e for e in events if (e[0] if e[0] == "dp_gcd" else e[0][0]) == args.kind]
    events = events[::args.every][:args.limit]
    old = load_baseline(args.baseline)
    old_gcd = load_baseline(args.baseline, "gcd")
    print(f"{len(events)} events; baseline {args.baseline}; CPU seconds of this process "
          "(other jobs' load still slows both)")
    print(f"{'event':58} {'eps':>5} {'old s':>7} {'new s':>7} {'ratio':>6} {'dz/z':>9} acct")
    total_old = total_new = 0.0
    worst = 0.0
    seconds = {}
    logs = (count_evaluations(old), count_evaluations(accounting)) if args.evaluations else ()
    counts = {}  # (old/new, kind): [evaluations, CPU s]
    for event in events:
        gcd_event = event[0] == "dp_gcd"
        for log in logs:
            log.clear()
        t_old, z_old, _ = timed(old_gcd if gcd_event else old, event)
        t_new, z_new, used = timed(gcd if gcd_event else accounting, event)
        seconds[event] = t_old, t_new
        total_old, total_new = total_old + t_old, total_new + t_new
        change = z_new / z_old - 1
        worst = max(worst, abs(change))
        if gcd_event:
            name, eps = f"dp_gcd T={event[1]} delta={event[3]:.3g}", event[2]
        else:
            spec = ",".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in event[0])
            name, eps = spec + " " + event[4], event[1]
        line = (f"{name:58} {eps:5g} {t_old:7.2f} {t_new:7.2f} "
                f"{t_old / max(t_new, 1e-9):6.1f} {change:+9.2e} {used}")
        for which, log in zip(("old", "new"), logs):
            line += f"  {which}"
            for kind in ("pld", "rdp"):
                mine = [t for k, t in log if k == kind]
                line += f" {kind} {len(mine)}x {sum(mine):.2f}s"
                total = counts.setdefault((which, kind), [0, 0.0])
                total[0], total[1] = total[0] + len(mine), total[1] + sum(mine)
        if args.recheck and used == "pld" and not gcd_event:
            fine = recheck(event, z_new)
            line += f"  eps at 1/10 interval {fine:.5g}{'' if fine <= event[1] else ' MISSES'}"
        print(line, flush=True)
    for path, config in by_config.items():
        timed_here = [seconds[e] for e in dict.fromkeys(config) if e in seconds]
        t_old, t_new = (sum(t[i] for t in timed_here) for i in (0, 1))
        print(f"{path}: {len(timed_here)} events, old {t_old:.1f} s, new {t_new:.1f} s, "
              f"ratio {t_old / max(t_new, 1e-9):.2f}")
    for (which, kind), (n, t) in counts.items():
        print(f"{kind} evaluations ({which}): {n}, {t:.1f} CPU s")
    print(f"total: old {total_old:.1f} s, new {total_new:.1f} s, ratio "
          f"{total_old / max(total_new, 1e-9):.2f}; max |dz/z| {worst:.2e}")


if __name__ == "__main__":
    sys.exit(main())
