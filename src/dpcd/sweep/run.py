"""Run one chunk of a sweep in-process: configurations x seeds, one tidy table."""

import logging
import time as clock
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from dpcd import algorithms, privacy
from dpcd.algorithms import Budget
from dpcd.plan.lattice import prefix_passes
from dpcd.privacy.ledger import nonprivate_inputs
from dpcd.privacy.validation import check_positive_int
from dpcd.problems import make_problem
from dpcd.streams import config_id, run_entropy, run_identity, run_seed
from dpcd.sweep import staged
from dpcd.sweep.grid import chunk_of, configurations
from dpcd.sweep.metrics import holdout_metrics
from dpcd.sweep.problem import SeedProblems

log = logging.getLogger("dpcd.sweep")


@dataclass
class ConfigRecord:
    """Everything MLflow gets about one configuration (all its seeds)."""

    config: dict
    config_id: str
    status: str
    objective: np.ndarray  # shape (n_seeds, passes + 1)
    rel_error: np.ndarray  # shape (n_seeds, passes + 1)
    time: np.ndarray  # shape (n_seeds,), seconds in the kernels
    ledgers: list = field(default_factory=list)
    holdout: dict = None  # metric name, validation and test values per seed
    start_ms: int = None  # wall clock of the configuration's first and last seed (MLflow)
    end_ms: int = None
    # each seed's train/validation division (SeedProblems.division), None without one
    splits: list = None


def epsilons_of(privacy_spec):
    eps = privacy_spec["epsilon"]
    return list(eps) if isinstance(eps, (list, tuple)) else [eps]


def resolve_delta(privacy_spec, n_samples):
    """delta from the config, or 1/n^2 (the papers' choice) when null."""
    delta = privacy_spec.get("delta")
    return 1.0 / n_samples**2 if delta is None else float(delta)


def private(spec):
    """Whether the spec's solver releases under a budget."""
    return algorithms.get(spec.get("adapter", spec["solver"])).private


def chunk_configurations(spec, chunk):
    """The configurations of chunk ``chunk`` of a solve spec. A non-private
    solver's at the first epsilon only: its runs are the same at every epsilon
    (:func:`stream_identity`), and :func:`every_epsilon` gives them to the
    others (a staged search keeps the same ones at every epsilon)."""
    epsilons = epsilons_of(spec["privacy"])
    configs = configurations(spec["solver"], spec["grid"], spec["passes"], epsilons)
    # staged search: the screen's lattice, the refine's neighbours, the confirm's kept
    configs = staged.stage_configurations(spec, configs)
    if not private(spec):
        configs = [config for config in configs if config["epsilon"] == float(epsilons[0])]
    return chunk_of(configs, chunk, spec["chunks"])


def grid_size(spec):
    """Configurations of the spec's whole grid (every stage's share is of these)."""
    return len(configurations(spec["solver"], spec["grid"], spec["passes"],
                              epsilons_of(spec["privacy"])))


def private_smoothness_estimates(X, loss, fraction, epsilons, seeds, experiment,
                                 noise="fast"):
    """Private smoothness constants per (epsilon, seed index), DP-CD Appendix F.

    The estimate of seed ``seeds[k]`` at ``epsilon`` draws its Laplace noise
    from ``SeedSequence(run_entropy(seeds[k], identity))``, the identity
    holding the experiment, epsilon and the smoothness fraction
    (:func:`dpcd.streams.run_identity`, stream ``"private_smoothness"``):
    the estimates at two epsilons (and of two experiments) are independent
    releases. The configurations of one (epsilon, seed) share theirs; each
    run's ledger counts it, so runs combined are over-counted, never under.
    The selection runs pass the replicate seeds, the fresh re-runs their own
    (:func:`dpcd.streams.fresh_seeds`), so their estimates are new releases.
    ``noise="secure"``: exact discrete Laplace noise from the OS instead (the
    seeds are then unused).

    Returns
    -------
    dict
        ``{"smoothness_fraction", "estimates": [{epsilon, seed_index, seed,
        smoothness, ledger}, ...]}`` (what the private smoothness stage writes).
    """
    datafit, _ = make_problem(loss, "none", 0.0)
    estimates = []
    for epsilon in epsilons:
        identity = run_identity(experiment, {"epsilon": float(epsilon),
                                             "smoothness_fraction": float(fraction)},
                                stream="private_smoothness")
        for seed_index, seed in enumerate(seeds):
            seq = np.random.SeedSequence(run_entropy(seed, identity))
            # The paper's crude bounds: twice each feature's largest magnitude.
            smoothness, ledger = privacy.estimate_smoothness(
                datafit, X, fraction * epsilon, np.random.default_rng(seq), noise=noise)
            estimates.append({
                "epsilon": float(epsilon),
                "seed_index": seed_index,
                "seed": int(seed),
                "smoothness": np.asarray(smoothness).tolist(),
                "ledger": ledger.to_dict(),
            })
    return {"smoothness_fraction": fraction, "estimates": estimates}


def _private_estimate(estimates, epsilon, seed_index):
    if estimates is None:
        return None
    for entry in estimates["estimates"]:
        if entry["epsilon"] == epsilon and entry["seed_index"] == seed_index:
            return {**entry, "smoothness_fraction": estimates["smoothness_fraction"]}
    raise ValueError(
        f"no private smoothness estimate for epsilon={epsilon}, seed {seed_index}"
    )


def support_counts(w, w_star):
    """Coordinates of ``w`` correctly / incorrectly non-zero w.r.t. ``w_star``
    (DP-GCD Table 3): ``(|supp w ∩ supp w*|, |supp w minus supp w*|)``."""
    nonzero, true = np.asarray(w) != 0, np.asarray(w_star) != 0
    return int(np.sum(nonzero & true)), int(np.sum(nonzero & ~true))


def run_chunk(spec, chunk, problem, f_star, private_estimates=None, w_star=None):
    """Run every configuration of one chunk over all seeds.

    Parameters
    ----------
    spec : dict
        The solve rule's params (experiment, solver, grid, passes, privacy,
        seeds, base_seed, chunks, ...); ``adapter`` names the solver a named
        variant runs (default: ``solver``).
    chunk : int
        Which chunk of the configurations to run.
    problem : SweepProblem
        Data and constants, loaded once for the whole chunk.
    f_star : float
        Non-private optimum, for the relative error (F - F*) / F*.
    private_estimates : dict, optional
        Output of the private smoothness stage (DP-CD-P only).
    w_star : array, shape (n_features,), optional
        Non-private solution: each run's final iterate is compared with its
        support (columns ``nnz_correct``, ``nnz_incorrect``; NaN without it).

    Returns
    -------
    table : pandas.DataFrame
        One row per (configuration, seed, pass).
    records : list of ConfigRecord
        One per configuration, for MLflow.
    """
    n_seeds = check_positive_int(spec["seeds"], "seeds")
    seeds = [run_seed(spec["base_seed"], k) for k in range(n_seeds)]
    configs = chunk_configurations(spec, chunk)
    table, records = run_configurations(spec, configs, seeds, problem, f_star,
                                        private_estimates, w_star)
    return every_epsilon(spec, table, records)


def every_epsilon(spec, table, records):
    """A non-private solver's runs at the first epsilon, given to every other
    epsilon of the spec: the rows and records each cell reads, each with its
    epsilon and that configuration's id, as if run there (the same results bit
    for bit: the streams are keyed without epsilon, :func:`stream_identity`).
    A private solver's are returned as they are."""
    epsilons = epsilons_of(spec["privacy"])
    if private(spec) or len(epsilons) == 1:
        return table, records
    tables, copies = [table], list(records)
    for epsilon in epsilons[1:]:
        ids = {}
        for record in records:
            config = {**record.config, "epsilon": float(epsilon)}
            ids[record.config_id] = config_id(config)
            copies.append(replace(record, config=config, config_id=ids[record.config_id]))
        tables.append(table.assign(epsilon=float(epsilon),
                                   config_id=table["config_id"].map(ids)))
    return pd.concat(tables, ignore_index=True), copies


def stream_identity(spec, config):
    """What a run's streams are keyed by (:func:`dpcd.streams.run_identity`):
    the experiment and the configuration, without epsilon for a solver that
    reads no budget (a non-private :class:`dpcd.algorithms.Algorithm`), whose runs
    at two epsilons are then one run."""
    if not private(spec):
        config = {k: v for k, v in config.items() if k != "epsilon"}
    return run_identity(spec["experiment"], config)


# Final iterates a block of configurations run together may hold (128 MB)
TOGETHER_ENTRIES = 1 << 24


def run_configurations(spec, configs, seeds, problem, f_star, private_estimates=None,
                       w_star=None, nonprivate=(), together=True):
    """Run configurations ``configs`` on seeds ``seeds``: the body of :func:`run_chunk`,
    also used to re-run selected configurations on fresh seeds (:mod:`dpcd.sweep.fresh`).

    Parameters
    ----------
    spec, problem, f_star, private_estimates, w_star
        As for :func:`run_chunk`; ``private_estimates`` is indexed by the
        position of a seed in ``seeds``.
    configs : list of dict
        Configurations (from :func:`dpcd.sweep.grid.configurations`).
    seeds : list of int
        Integer replicate seeds, one run per configuration and seed; run
        (config, seed) seeds its streams with
        ``run_entropy(seed, stream_identity(spec, config))``
        (:func:`dpcd.streams.run_entropy`), so that no two configurations
        share a draw.
    nonprivate : tuple of str
        Non-private inputs added to every run's ledger (e.g.
        ``hyperparameter_selection`` for configurations chosen on the data).
    together : bool, default=True
        Run the configurations of one seed in one kernel call where the
        solver can (its spec's ``run_many``): the same results, each
        run's ``time`` then an amortised share of the call. False times every
        run alone (the fresh re-runs, whose times Table 3 reports).

    Returns
    -------
    table, records
        As for :func:`run_chunk`.
    """
    # A named variant (config entry {solver: dp_gcd, rule: gs_q}) runs the
    # algorithm ``spec["adapter"]``; its rows and curves keep the entry's name.
    algorithm = algorithms.get(spec.get("adapter", spec["solver"]))
    adapter = algorithm.run
    privacy_spec = spec["privacy"]
    delta = resolve_delta(privacy_spec, problem.n_samples)
    accountant = privacy_spec.get("accountant", "auto")
    neighbouring = privacy_spec.get("neighbouring", "replace_one")
    noise = privacy_spec.get("noise", "fast")
    if noise == "secure":
        # seeds from the OS per run, never recorded: the table's seed column
        # holds -1 - seed_index (see docs/secure_noise.md)
        privacy.secure.check_workflow(spec.get("adapter", spec["solver"]), accountant)
        seeds = [None] * len(seeds)
    rows, records = [], []
    started = clock.monotonic()
    # a multi-fidelity screen (search_fidelity) runs each configuration's first passes
    fidelity = spec.get("fidelity")
    budgets = [Budget(config["epsilon"], delta, accountant, neighbouring, noise,
                      prefix=None if fidelity is None else prefix_passes(config["passes"],
                                                                         fidelity))
               for config in configs]
    many = algorithm.run_many if together else None
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
    per_block = max(1, TOGETHER_ENTRIES // max(1, len(seeds) * problem.n_features))
    for done, config in enumerate(configs, 1):
        start_ms = int(clock.time() * 1000)
        if many is not None and (done - 1, 0) not in ran:
            block_ms, first = start_ms, done - 1
            block = slice(first, first + per_block)
            for s, seed in enumerate(seeds):
                entropies = [run_entropy(seed, stream_identity(spec, config))
                             for config in configs[block]]
                for c, pair in enumerate(many(problem_of(s), configs[block], entropies,
                                              budgets[block])):
                    ran[(first + c, s)] = pair
        if many is not None:
            start_ms = block_ms
        budget = budgets[done - 1]
        cid = config_id(config)
        objectives, times, ledgers, finals, checkpoints, supports = [], [], [], [], [], []
        for seed_index, seed in enumerate(seeds):
            if many is not None:
                result, ledger = ran.pop((done - 1, seed_index))
            else:
                estimate = _private_estimate(private_estimates, config["epsilon"], seed_index)
                entropy = (privacy.secure.secure_entropy() if seed is None
                           else run_entropy(seed, stream_identity(spec, config)))
                result, ledger = adapter(problem_of(seed_index), config, entropy, budget,
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
            if w_star is not None:
                supports.append(support_counts(result.w, w_star))
            times.append(float(result.time))
            ledgers.append(ledger)
            finals.append(result.w)
        holdout = _holdout(problem_of, finals)
        objective = np.vstack(objectives)
        rel_error = (objective - f_star) / abs(f_star)
        status = "done" if np.all(np.isfinite(objective)) else "diverged"
        time = np.asarray(times)
        records.append(
            ConfigRecord(config, cid, status, objective, rel_error, time, ledgers, holdout,
                         start_ms, int(clock.time() * 1000),
                         None if splits[0] is None else splits)
        )
        _progress(done, len(configs), started)
        columns = _tidy_rows(
            spec, config, cid, status, seeds, objective, rel_error, time, ledgers, delta,
            checkpoints[0], budget.passes(config),
        )
        _holdout_columns(columns, holdout, objective.shape[1])
        columns["nonprivate_inputs"] = nonprivate_inputs(problem, ledgers[0])
        counts = np.asarray(supports, dtype=np.float64).reshape(-1, 2) if supports else None
        for k, name in enumerate(("nnz_correct", "nnz_incorrect")):
            columns[name] = np.nan if counts is None else np.repeat(counts[:, k], objective.shape[1])
        rows.append(columns)
    table = _stack_rows(rows) if rows else _empty_table()
    return table, records


def _holdout(problem_of, finals):
    """:func:`holdout_metrics` of each seed's final iterate on that seed's problem."""
    if not problem_of.per_seed:
        return holdout_metrics(problem_of.problem, finals)
    parts = [holdout_metrics(problem_of(k), [w]) for k, w in enumerate(finals)]
    return {"metric": parts[0]["metric"],
            **{name: np.concatenate([part[name] for part in parts]) for name in ("val", "test")}}


def _progress(done, total, started):
    """Log done/total, elapsed and estimated remaining about every 10 %."""
    if done % max(1, total // 10) and done != total:
        return
    elapsed = clock.monotonic() - started
    log.info("progress: %d/%d configurations, %.1f s elapsed, ~%.1f s remaining",
             done, total, elapsed, elapsed / done * (total - done))


def _tidy_rows(spec, config, cid, status, seeds, objective, rel_error, time, ledgers, delta,
               checkpoints, ran):
    """The columns of one configuration's rows: arrays of one value per row, or
    scalars that :func:`_stack_rows` repeats (the table is built once per chunk;
    a DataFrame per configuration cost ~5 ms each, 1.2 s of a 250-configuration job)."""
    n_seeds, n_points = objective.shape
    passes = config["passes"]
    # The pass column is the solver's own checkpoints (float: 0, 1, ..., and
    # the fractional end), the same for every seed of a configuration.
    pass_index = np.tile(np.asarray(checkpoints, dtype=np.float64), n_seeds)
    # Every pass costs the same, so the time at pass k is k/(passes run) of the total.
    elapsed = np.repeat(time, n_points) * pass_index / ran
    columns = {
        "experiment": spec["experiment"],
        "solver": spec["solver"],
        "config_id": cid,
        "epsilon": float(config["epsilon"]),
        "delta": delta,
        "passes": passes,  # int for integer grids, float for fractional ones
        "seed_index": np.repeat(np.arange(n_seeds), n_points),
        "seed": np.repeat(np.asarray([-1 - k if s is None else s for k, s in enumerate(seeds)],
                                     dtype=np.int64), n_points),
        "pass": pass_index,
        "objective": objective.ravel(),
        "rel_error": rel_error.ravel(),
        "time": elapsed,
        "status": status,
    }
    for name in algorithms.table_hyperparameters():
        columns[name] = float(config[name]) if name in config else np.nan
    achieved = [
        ledger.epsilon_achieved if ledger is not None else np.nan for ledger in ledgers
    ]
    columns["epsilon_achieved"] = np.repeat(achieved, n_points)
    # the relation the run's guarantee holds under ("none": not private)
    columns["neighbouring"] = next(
        (ledger.neighbouring for ledger in ledgers if ledger is not None), "none")
    return columns


def _holdout_columns(columns, holdout, n_points):
    """Validation/test metric of the final iterate, on each seed's last row only."""
    if holdout is None:
        return
    n_rows = len(columns["objective"])
    last = np.zeros(n_rows, dtype=bool)
    last[n_points - 1::n_points] = True
    columns["metric"] = holdout["metric"]
    for name in ("val", "test"):
        column = np.full(n_rows, np.nan)
        column[last] = holdout[name]
        columns[f"{name}_metric"] = column


def _stack_rows(rows):
    """One DataFrame from the configurations' columns (see :func:`_tidy_rows`).

    Scalars are repeated over their configuration's rows; the concatenated
    columns get the dtypes ``pd.concat`` of one DataFrame per configuration
    gave (int64 ``passes`` unless some configuration's passes are fractional).
    """
    data = {}
    for name in rows[0]:
        parts = []
        for columns in rows:
            value, n_rows = columns[name], len(columns["objective"])
            if np.ndim(value) == 0:
                # object for strings: numpy's fixed-width unicode is not what pandas stores
                value = np.full(n_rows, value, dtype=object if isinstance(value, str) else None)
            parts.append(value)
        data[name] = np.concatenate(parts)
    return pd.DataFrame(data)


def _empty_table():
    columns = [
        "experiment", "solver", "config_id", "epsilon", "delta", "passes",
        "seed_index", "seed", "pass", "objective", "rel_error", "time", "status",
        *algorithms.table_hyperparameters(), "epsilon_achieved", "neighbouring", "nonprivate_inputs",
        "metric", "val_metric", "test_metric", "nnz_correct", "nnz_incorrect",
    ]
    return pd.DataFrame({name: [] for name in columns})

