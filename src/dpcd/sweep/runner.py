"""Run configurations on seeds in-process: the kernel calls, each run's ledger,
and the runs handed to :mod:`dpcd.sweep.tidy` for the table and records."""

import logging
import time as clock

import numpy as np

from dpcd import algorithms, privacy
from dpcd.algorithms import Budget
from dpcd.plan.lattice import prefix_passes
from dpcd.privacy.ledger import nonprivate_inputs
from dpcd.privacy.validation import delta_or_default
from dpcd.streams import config_id, run_entropies
from dpcd.sweep.metrics import final_metrics
from dpcd.sweep.problem import SeedProblems
from dpcd.sweep.smoothness import run_estimates
from dpcd.sweep.tidy import ConfigRecord, tidy_results

log = logging.getLogger("dpcd.sweep")


def resolve_delta(privacy_spec, n_samples):
    """delta from the config, or 1/n^2 (the papers' choice) when null."""
    return delta_or_default(privacy_spec.get("delta"), n_samples)


# Final iterates a block of configurations run together may hold (128 MB)
TOGETHER_ENTRIES = 1 << 24


def run_configurations(spec, configs, seeds, problem, f_star, private_estimates=None,
                       w_star=None, nonprivate=(), together=True, also_at=(), first_seed=0,
                       columns=False):
    """Run configurations ``configs`` on seeds ``seeds``: the body of
    :func:`dpcd.sweep.run.run_chunk`, also used to re-run selected
    configurations on fresh seeds (:mod:`dpcd.sweep.fresh`).

    Parameters
    ----------
    spec, problem, f_star, private_estimates, w_star
        As for :func:`~dpcd.sweep.run.run_chunk`; ``private_estimates`` is
        indexed by the seeds' indices (``first_seed`` onwards).
    configs : list of dict
        Configurations (from :func:`dpcd.sweep.grid.configurations`).
    seeds : list of int
        Integer replicate seeds, one run per configuration and seed; run
        (config, seed) seeds its streams with
        ``run_entropy(seed, stream_identity(experiment, config, private))``
        (:func:`dpcd.streams.run_entropies`), so that no two configurations
        share a draw.
    nonprivate : tuple of str
        Non-private inputs added to every run's ledger (e.g.
        ``hyperparameter_selection`` for configurations chosen on the data).
    together : bool, default=True
        Run the configurations of one seed in one kernel call where the
        solver can (its spec's ``run_many``): the same results, each
        run's ``time`` then an amortised share of the call. False times every
        run alone (the fresh re-runs, whose times Table 3 reports).
    also_at : list of float
        Other epsilons the runs stand for (a non-private solver's:
        :func:`dpcd.sweep.run.chunk_runs`), given their rows and records
        too (:func:`dpcd.sweep.tidy.tidy_results`).
    first_seed : int, default=0
        The replicate index of ``seeds[0]`` (a staged confirm runs the seeds
        after the first): the table's ``seed_index`` and the estimates read.
    columns : bool, default=False
        The table as columns, not a DataFrame (:func:`dpcd.sweep.tidy.tidy_results`).

    Returns
    -------
    table, records
        As for :func:`~dpcd.sweep.run.run_chunk`.
    """
    # A named variant (config entry {solver: dp_gcd, rule: gs_q}) runs the
    # algorithm ``spec["adapter"]``; its rows and curves keep the entry's name.
    algorithm = algorithms.get(spec.get("adapter", spec["solver"]))
    privacy_spec = spec["privacy"]
    delta = resolve_delta(privacy_spec, problem.n_samples)
    accountant = privacy_spec.get("accountant", "auto")
    neighbouring = privacy_spec.get("neighbouring", "replace_one")
    noise = privacy_spec.get("noise", "fast")
    if noise == "secure":
        # seeds from the OS per run, never recorded: the table's seed column
        # holds -1 - seed_index (see docs/secure_noise.md)
        algorithms.check_secure(spec.get("adapter", spec["solver"]), "privacy.noise: 'secure'")
        privacy.secure.check_accountant(accountant)
        seeds = [None] * len(seeds)
    runs = []
    started = clock.monotonic()
    # a multi-fidelity screen (search_fidelity) runs each configuration's first passes
    fidelity = spec.get("fidelity")
    budgets = [Budget(config["epsilon"], delta, accountant, neighbouring, noise,
                      prefix=None if fidelity is None else prefix_passes(config["passes"],
                                                                         fidelity))
               for config in configs]
    many = algorithm.runtime.run_many if together else None
    # Run together: {(configuration, seed index): (result, ledger)} for a block
    # of configurations whose final iterates (block x seeds x features) stay
    # within TOGETHER_ENTRIES doubles: a whole chunk at 8 or 1 000 features, 38
    # configurations on dorothea (88 119). Each configuration's MLflow run
    # spans its block's shared calls.
    ran = {}
    # each seed's problem: the same, or its validation rows redrawn (per_seed)
    problem_of = SeedProblems(problem, seeds, spec.get("validation_split", "fixed"))
    if problem_of.per_seed and private_estimates is not None:
        raise ValueError(
            f"experiment {spec['experiment']!r}: validation_split: per_seed with "
            f"{spec['solver']}: its private smoothness estimate is drawn on the data "
            "file's training rows, not on each seed's; use validation_split: fixed"
        )
    splits = [problem_of.division(k) for k in range(len(seeds))]
    # what each run reads: its smoothness estimate (one run at a time) and its streams
    indices = range(first_seed, first_seed + len(seeds))
    estimates = None if many is not None else run_estimates(private_estimates, configs, indices)
    # secure (seed None): no stream to derive; a run_many draws its own from the OS
    entropies = [[None] * len(configs) if seed is None else
                 run_entropies(seed, spec["experiment"], configs, algorithm.private)
                 for seed in seeds]
    per_block = max(1, TOGETHER_ENTRIES // max(1, len(seeds) * problem.n_features))
    for done, config in enumerate(configs, 1):
        start_ms = int(clock.time() * 1000)
        if many is not None and (done - 1, 0) not in ran:
            block_ms, first = start_ms, done - 1
            block = slice(first, first + per_block)
            for s in range(len(seeds)):
                for c, pair in enumerate(many(problem_of(s), configs[block], entropies[s][block],
                                              budgets[block])):
                    ran[(first + c, s)] = pair
        if many is not None:
            start_ms = block_ms
        budget = budgets[done - 1]
        objectives, times, ledgers, finals, checkpoints = [], [], [], [], []
        for seed_index, seed in enumerate(seeds):
            if many is not None:
                result, ledger = ran.pop((done - 1, seed_index))
            else:
                estimate = None if estimates is None else estimates[done - 1][seed_index]
                entropy = (privacy.secure.secure_entropy() if seed is None
                           else entropies[seed_index][done - 1])
                result, ledger = algorithm.run(problem_of(seed_index), config, entropy, budget,
                                               estimate)
            if ledger is not None:
                # what the data stage and the problem read off the data without
                # noise (standardisation, lambda_max, dropped columns, ...) is
                # part of every run's ledger
                for name in (*nonprivate, *problem.nonprivate_inputs):
                    ledger = ledger.add_nonprivate_input(name)
                # which division of the data it trained on (data-independent)
                ledger = ledger.with_data_split(splits[seed_index])
            objectives.append(np.asarray(result.objective, dtype=np.float64))
            checkpoints.append(result.passes_done)
            times.append(float(result.time))
            ledgers.append(ledger)
            finals.append(result.w)
        holdout, counts = final_metrics(problem_of, finals, w_star)
        objective = np.vstack(objectives)
        rel_error = (objective - f_star) / abs(f_star)
        status = "done" if np.all(np.isfinite(objective)) else "diverged"
        record = ConfigRecord(config, config_id(config), status, objective, rel_error,
                              np.asarray(times), ledgers, holdout, start_ms,
                              int(clock.time() * 1000), None if splits[0] is None else splits)
        runs.append((record, checkpoints[0], budget.passes(config),
                     nonprivate_inputs(problem, ledgers[0]), counts))
        # progress: done/total, elapsed and estimated remaining about every 10 %
        if done % max(1, len(configs) // 10) == 0 or done == len(configs):
            elapsed = clock.monotonic() - started
            log.info("progress: %d/%d configurations, %.1f s elapsed, ~%.1f s remaining",
                     done, len(configs), elapsed, elapsed / done * (len(configs) - done))
    return tidy_results(spec, runs, seeds, delta, also_at, first_seed, columns)
