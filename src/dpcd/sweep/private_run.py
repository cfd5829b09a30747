"""``search: private`` in the workflow: one selection seed's private searches.

For each (epsilon, passes) of a solver entry, one private search (Papernot &
Steinke 2022; :mod:`dpcd.privacy.selection`) on the experiment's problem:

1. every configuration of the grid at that (epsilon, passes) is a possible
   candidate; its training event is read off its calibration under the RDP
   accountant (:func:`dpcd.sweep.candidate.candidate_spec`, the rule
   :class:`dpcd.PrivateSearch` shares: the ``dp_accounting`` event the
   calibration accounted, or a refusal with the reason);
2. :func:`dpcd.privacy.selection.calibrate_selection` splits the target
   between training and score and finds the training's per-candidate ε;
3. K and K configurations are drawn from the search's seed only
   (:func:`dpcd.sweep.private_search.draw_search`; the seed is the selection
   seed and the cell's identity, never the data);
4. each candidate runs as the sweep runs a configuration (its algorithm's
   ``run`` with the calibrated budget, its own stream), its ledger checked
   against the accounted event (noise never below), then its noisy score
   (:func:`score_mechanism`); a DP-CD-P candidate first releases its own
   smoothness constants from a third stream of its own
   (:func:`candidate_smoothness`, ``smoothness_fraction`` of its training
   budget), composed into its event;
5. the candidate with the best noisy score is released; its ledger is the
   whole release (``RepeatAndSelectDpEvent``, its ε end to end) and lists no
   ``hyperparameter_selection``.

The relative error to F* and the held-out metrics of the released model are
the researcher's evaluation of it (they read the data without noise) and are
not part of the release.
"""

import functools
import math
import time as clock

import numpy as np

from dpcd import algorithms, privacy
from dpcd.algorithms import Budget
from dpcd.privacy import selection
from dpcd.privacy.ledger import nonprivate_inputs
from dpcd.problems import make_problem
from dpcd.sweep.candidate import calibrate_candidates, check_trained
from dpcd.sweep.grid import configurations
from dpcd.streams import config_id, run_entropy, run_identity, run_seed
from dpcd.sweep.private_search import SearchSettings, candidate_entropy, draw_search
from dpcd.sweep.run import (
    ConfigRecord,
    _holdout,
    _holdout_columns,
    _stack_rows,
    _tidy_rows,
    epsilons_of,
    resolve_delta,
    support_counts,
)
from dpcd.sweep.problem import SeedProblems

#: Prefix of the released runs' config_id,
#: ``private_search_<solver entry>_eps<epsilon>_passes<passes>``: the tables'
#: one "configuration" per (solver, epsilon, passes), its seeds the selection
#: seeds (its hyperparameter columns: each selection seed's released ones).
#: Unique per cell, as the tables key runs by (solver, config_id, seed_index).
RELEASED_ID = "private_search"


def released_id(solver, epsilon, passes):
    """config_id of the released runs of solver entry ``solver`` at one cell."""
    return f"{RELEASED_ID}_{solver}_eps{float(epsilon):g}_passes{float(passes):g}"

#: Tag of every candidate run: the researcher's private record, not a release.
PRIVATE_RECORD = ("candidate run: the researcher's private record, not released; "
                  "publishing it, or the number of candidates, voids the release's epsilon")

# B when search_private.score_clip is null: the loss of the zero model on a
# unit label for the workflow's datafits (squares has no 1/2), a constant.
DEFAULT_SCORE_CLIP = {"squares": 1.0, "logistic": math.log(2.0), "hinge": 1.0}


def score_mechanism(problem, select_by, noise, clip=None, clip_from_data=False,
                    relation="replace_one"):
    """The candidates' score on the workflow's problem, private under ``relation``.

    ``last_objective``: the training objective with each record's loss
    clipped to B, ``(1/n) Σ min(ℓ_i(w), B) + R(w)`` (sensitivity B/n; n the
    public n of the problem, fixed also under add-or-remove-one);
    ``validation``: accuracy on the validation rows (1/n_val) for
    classification, their squared error clipped to B (B/n_val) for squares.
    """
    if select_by == "last_objective":
        b = DEFAULT_SCORE_CLIP[problem.loss] if clip is None else float(clip)
        return selection.ScoreMechanism("last_objective", "loss", noise, problem.n_samples, b,
                                        clip_from_data, relation)
    if problem.X_val is None:
        raise ValueError("select_by: validation needs a variant with a validation split")
    if problem.loss == "squares":
        b = 1.0 if clip is None else float(clip)
        return selection.ScoreMechanism("validation", "squared_error", noise,
                                        len(problem.y_val), b, clip_from_data, relation)
    return selection.ScoreMechanism("validation", "accuracy", noise, len(problem.y_val),
                                    relation=relation)


def score_value(problem, score, w):
    """The exact score of the final iterate ``w`` (before noise). A diverged
    model's losses count as B and its penalty as infinite (never selected
    over a finite one); the sensitivity is unchanged."""
    w = np.asarray(w, dtype=np.float64)
    if score.metric == "accuracy":
        margin = np.asarray(problem.X_val @ w).ravel()
        return score.value(np.where(margin >= 0, 1.0, -1.0) == problem.y_val)
    if score.metric == "squared_error":
        r = np.asarray(problem.X_val @ w).ravel() - problem.y_val
        losses = r * r
    else:
        losses = problem.datafit.loss(problem.y, np.asarray(problem.X @ w).ravel())
    losses = np.where(np.isnan(losses), score.clip, losses)
    penalty = 0.0
    if score.metric == "loss":
        penalty = float(problem.penalty.value(w)) if np.all(np.isfinite(w)) else math.inf
    return score.value(losses, penalty)


def search_seed(spec, selection_seed, epsilon, passes):
    """The integer seed of one cell's search: the selection seed and the cell's
    identity (experiment, solver, epsilon, passes), so cells draw independently."""
    identity = run_identity(spec["experiment"], {"solver": spec["solver"],
                                                 "epsilon": float(epsilon), "passes": passes},
                            stream="private_search")
    return int(np.random.SeedSequence(run_entropy(selection_seed, identity)).generate_state(1)[0])


def run_private_chunk(spec, chunk, problem, f_star, w_star=None):
    """Selection seed ``chunk``'s private searches of one solver entry.

    Returns
    -------
    table : pandas.DataFrame
        The released runs' rows (config_id :func:`released_id`, seed_index =
        ``chunk``, column ``k``: candidates run, ``role``: released).
    records : list of (ConfigRecord, dict)
        Every candidate's run and the released one, with their MLflow tags.
    """
    settings = spec["search_private"]
    name = spec.get("adapter", spec["solver"])
    algorithm = algorithms.get(name)
    delta = resolve_delta(spec["privacy"], problem.n_samples)
    neighbouring = spec["privacy"].get("neighbouring", "replace_one")
    if spec["privacy"].get("noise", "fast") != "fast":
        raise ValueError("privacy.noise: search private runs with noise fast only")
    selection_seed = run_seed(spec["base_seed"], chunk)
    search = SearchSettings(
        k_mean=float(settings["mean"]), k_distribution=settings["distribution"],
        shape=settings["shape"], score_fraction=float(settings["score_fraction"]),
        select_by=settings.get("select_by", "last_objective"),
        score_noise=settings["score_noise"], score_clip=settings["score_clip"]).checked()
    score = functools.partial(score_mechanism, problem, search.select_by, search.score_noise,
                              search.score_clip, settings.get("score_clip_from_data", False))
    cells = {}
    for config in configurations(spec["solver"], spec["grid"], spec["passes"],
                                 epsilons_of(spec["privacy"])):
        cells.setdefault((config["epsilon"], config["passes"]), []).append(config)
    rows, records = [], []
    for (epsilon, passes), configs in cells.items():
        released = _search(spec, algorithm, problem, configs, search, score, epsilon, passes,
                           delta, neighbouring, search_seed(spec, selection_seed, epsilon, passes),
                           f_star, w_star, records)
        if released is not None:
            rows.append(_released_rows(spec, released, chunk, selection_seed, delta, problem))
    from dpcd.sweep.run import _empty_table

    table = _stack_rows(rows) if rows else _empty_table().assign(role=[])
    return table, records


def _search(spec, algorithm, problem, configs, search, score_under, epsilon, passes, delta,
            neighbouring, seed, f_star, w_star, records):
    """One cell's search; appends its runs to ``records``; the released one.
    ``score_under(relation=...)`` is the score mechanism under a relation."""
    by_id = {config_id(config): config for config in configs}
    cal, specs, private_smoothness = calibrate_candidates(
        lambda key, eps: algorithm.calibrate(problem, by_id[key],
                                             Budget(eps, delta, "rdp", neighbouring)).ledger,
        list(by_id), problem.n_samples, epsilon, delta, search.k_mean, search.shape,
        search.score_fraction, search.score_noise,
        lambda relation: score_under(relation=relation))  # refuses what it cannot score
    score = score_under(relation=cal.relation)
    _, drawn = draw_search(configs, search, seed, epsilon, delta)
    budget = Budget(cal.train_epsilon, delta, "rdp", neighbouring)
    best = None
    for index, config in enumerate(drawn):
        fit_ss, score_ss, smooth_ss = candidate_streams(seed, search, epsilon, delta,
                                                        len(configs), index, config)
        start = int(clock.time() * 1000)
        extra = {}
        if private_smoothness:  # the candidate's own release, from its own stream
            fraction = config.get("smoothness_fraction",
                                  algorithm.hyperparameter("smoothness_fraction").default)
            extra["private_smoothness"] = candidate_smoothness(problem, fraction,
                                                               cal.train_epsilon, smooth_ss)
        result, ledger = algorithm.run(problem, config,
                                       [int(x) for x in fit_ss.generate_state(4)], budget,
                                       **extra)
        accounted = specs[config_id(config)][0]
        check_trained(ledger, problem.n_samples, accounted, cal.train_multipliers[accounted])
        for item in problem.nonprivate_inputs:
            ledger = ledger.add_nonprivate_input(item)
        noisy = score.noisy(score_value(problem, score, result.w), cal.score_multiplier,
                            np.random.default_rng(score_ss))
        record = _record(config, config_id(config), result, ledger, problem, f_star, start)
        tags = {"role": "candidate", "dpcd.search": "private", "dpcd.candidate": str(index),
                "privacy.released": "false", "privacy.private_record": PRIVATE_RECORD}
        records.append((record, tags))
        if best is None or (noisy > best[0] if score.higher_is_better else noisy < best[0]):
            best = (noisy, config, result, ledger, record)
    if best is None:  # K = 0 (Poisson): nothing is released
        return None
    noisy, config, result, ledger, record = best
    whole = selection.selection_ledger(cal, score, ledger, search.k_distribution,
                                       algorithm=f"private_search({spec['solver']})")
    out = ConfigRecord(config, released_id(spec["solver"], epsilon, passes), record.status,
                       record.objective, record.rel_error,
                       record.time, [whole], record.holdout, record.start_ms, record.end_ms)
    tags = {"role": "released", "dpcd.search": "private",
            "dpcd.released_config_id": config_id(config), "privacy.released": "true",
            "privacy.noisy_score": repr(noisy)}
    records.append((out, tags))
    support = support_counts(result.w, w_star) if w_star is not None else None
    return out, result, noisy, support


def candidate_streams(seed, search, epsilon, delta, n_configs, index, config):
    """Candidate ``index``'s three streams: its training, its score's noise and
    (DP-CD-P) its smoothness release, spawned from its own entropy
    (:func:`dpcd.sweep.private_search.candidate_entropy`: the search's seed,
    the candidate's index and configuration, never the data); the first two
    are those of a two-stream spawn, so other candidates' draws are unchanged."""
    return np.random.SeedSequence(candidate_entropy(
        seed, search, epsilon, delta, n_configs, index, config)).spawn(3)


def candidate_smoothness(problem, fraction, epsilon, stream):
    """A DP-CD-P candidate's own private smoothness constants (DP-CD Appendix
    F, :func:`dpcd.privacy.estimate_smoothness` as the private smoothness
    stage releases them: the crude bounds 2 max_i |x_ij|, recorded as the
    non-private input ``smoothness_bounds_from_data``) at ``fraction *
    epsilon``, its Laplace noise drawn from ``stream`` (a ``SeedSequence``)
    only, in the form :func:`dpcd.algorithms.dp_cd_p.run` takes."""
    if problem.is_sparse:
        raise ValueError("dp_cd_p: the private smoothness estimate takes dense data, and "
                         "sparse datasets are never densified")
    datafit, _ = make_problem(problem.loss, "none", 0.0)
    smoothness, ledger = privacy.estimate_smoothness(
        datafit, problem.X, fraction * epsilon, np.random.default_rng(stream))
    return {"smoothness": np.asarray(smoothness).tolist(),
            "smoothness_fraction": fraction, "ledger": ledger.to_dict()}


def _record(config, cid, result, ledger, problem, f_star, start):
    objective = np.asarray(result.objective, dtype=np.float64)[None, :]
    status = "done" if np.all(np.isfinite(objective)) else "diverged"
    holdout = _holdout(SeedProblems(problem, [0], "fixed"), [result.w])
    return ConfigRecord(config, cid, status, objective, (objective - f_star) / abs(f_star),
                        np.asarray([float(result.time)]), [ledger], holdout, start,
                        int(clock.time() * 1000))


def _released_rows(spec, released, chunk, selection_seed, delta, problem):
    record, result, noisy, support = released
    columns = _tidy_rows(spec, record.config, record.config_id, record.status, [selection_seed],
                         record.objective, record.rel_error, record.time, record.ledgers,
                         delta, result.passes_done, record.config["passes"])  # run whole
    _holdout_columns(columns, record.holdout, record.objective.shape[1])
    columns["seed_index"] = np.full(record.objective.shape[1], chunk)
    columns["nonprivate_inputs"] = nonprivate_inputs(problem, record.ledgers[0])
    for i, name in enumerate(("nnz_correct", "nnz_incorrect")):
        columns[name] = np.nan if support is None else float(support[i])
    columns.update(role="released", noisy_score=noisy)
    return columns
