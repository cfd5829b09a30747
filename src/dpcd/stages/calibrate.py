"""``dpcd calibrate``: the rule of ``calibrate.smk``.

A job calibrates the noise of every configuration of a private solver
entry's grid (the entries of one dataset that calibrate alike: the planner's
``calibration_path``), as its runs will ask for it (the algorithm spec's
``calibrate``, which gives a run's noise multipliers bit for bit, on a probe
of the training shape), into the shared calibration cache
(:mod:`dpcd.privacy.cache`). The entries' solve jobs then read every
calibration from the cache: they neither search nor import dp_accounting.
A distinct event is computed once, whichever job or config asks first; a
calibration a job did not foresee is computed by the solve job that needs
it, as without this stage.
"""

import json
import logging
import time

from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import add_command, read_json

log = logging.getLogger("dpcd")


def cmd_calibrate(args):
    """Calibrate every configuration of a solver entry's grid at every
    epsilon; write each distinct noise (its multiplier, the epsilon achieved,
    steps and sampling), what the job computed and its CPU."""
    from dpcd import algorithms
    from dpcd.algorithms.problem import Probe
    from dpcd.privacy import cache
    from dpcd.privacy.validation import delta_or_default
    from dpcd.problems import make_problem
    from dpcd.sweep.grid import configurations, epsilons_of

    start = time.perf_counter()
    spec = json.loads(args.spec)
    name = spec["solver"]
    algorithm = algorithms.get(name)
    noise = []
    if algorithm.private and algorithm.privacy.calibrate is not None:
        constants, privacy, problem = read_json(args.smoothness), spec["privacy"], spec["penalty"]
        mode = privacy.get("noise", "fast")
        if mode == "secure":
            algorithms.check_secure(name, "privacy.noise: 'secure'")
        # the shape the solve jobs' calibrations read; no constant (Probe)
        penalty = make_problem(problem["loss"], problem["penalty"], 0.0,
                               problem.get("l1_ratio", 0.5))[1]
        probe = Probe(constants["n_samples"], constants["n_features"], penalty)
        delta = delta_or_default(privacy.get("delta"), probe.n_samples)
        seen = set()
        for config in configurations(spec["solver"], spec["grid"], spec["passes"],
                                     epsilons_of(privacy)):
            budget = algorithms.Budget(config["epsilon"], delta, privacy.get("accountant", "auto"),
                                       privacy.get("neighbouring", "replace_one"), mode)
            calibration = algorithm.privacy.calibrate(probe, config, budget)
            row = {"epsilon": config["epsilon"], "passes": config["passes"],
                   "noise_multiplier": calibration.noise_multiplier,
                   "epsilon_achieved": calibration.epsilon_achieved,
                   "steps": calibration.steps, "sampling": calibration.sampling,
                   "sampling_rate": calibration.sampling_rate}
            if json.dumps(row, sort_keys=True) not in seen:
                seen.add(json.dumps(row, sort_keys=True))
                noise.append(row)
    stats = {key: cache.STATS[key] for key in ("calls", "computed", "cpu_seconds")}
    log.info("%s: %d distinct noises, %d calibrations computed (of %d asked) in %.1f s",
             name, len(noise), stats["computed"], stats["calls"],
             time.perf_counter() - start)
    # the job's CPU, its start-up included (the benchmark's is sampled)
    write_json(args.out, {"spec": spec, "noise": noise, "calibrations": stats,
                          "cpu_seconds": time.process_time()})


def register(subparsers):
    """Add ``calibrate`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "calibrate", cmd_calibrate,
                    "calibrate the noise of every configuration of one solver's grid")
    p.add_argument("--spec", required=True,
                   help="JSON: solver, grid, passes, privacy, penalty")
    p.add_argument("--smoothness", required=True,
                   help="the smoothness stage's JSON (its n_samples and n_features)")
    p.add_argument("--out", required=True)
