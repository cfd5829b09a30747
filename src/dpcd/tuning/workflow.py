"""``search: private`` in the workflow: one selection seed's private searches.

For each (epsilon, passes) of a solver entry, one private search (Papernot &
Steinke 2022; :mod:`dpcd.tuning`) on the experiment's problem:

1. every configuration of the grid at that (epsilon, passes) is a possible
   candidate; its training event is read off its calibration under the RDP
   accountant (:func:`dpcd.tuning.candidates.candidate_spec`, the rule
   :class:`dpcd.PrivateSearch` shares: the ``dp_accounting`` event the
   calibration accounted, or a refusal with the reason);
2. :func:`dpcd.tuning.calibration.calibrate_selection` splits the target
   between training and score and finds the training's per-candidate ε;
3. K and K configurations are drawn from the search's seed only
   (:func:`dpcd.tuning.draws.draw_search`; the seed is the selection
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

With ``privacy.noise: secure`` each search runs as
:func:`dpcd.tuning.search.private_search` in its secure mode: the draws' seed
and each candidate's from the OS (never recorded; the released rows' seed is
``-1 - selection seed``), the selection calibrated on the candidates' secure
ledgers, K drawn exactly, the scores on the grid with exact noise, exact ties
broken uniformly.

The relative error to F* and the held-out metrics of the released model are
the researcher's evaluation of it (they read the data without noise) and are
not part of the release.
"""

import functools
import time as clock

import numpy as np

from dpcd import algorithms, privacy
from dpcd.algorithms import Budget
from dpcd.privacy.ledger import nonprivate_inputs
from dpcd.problems import make_problem
from dpcd.streams import config_id, run_seed
from dpcd.sweep.grid import configurations, epsilons_of
from dpcd.sweep.metrics import seed_holdout, support_counts
from dpcd.sweep.problem import SeedProblems
from dpcd.sweep.runner import resolve_delta
from dpcd.sweep.tidy import ConfigRecord, empty_table, record_columns, stack_rows
from dpcd.tuning.calibration import calibrate_candidates
from dpcd.tuning.candidates import check_trained
from dpcd.tuning.draws import candidate_streams, draw_search, search_seed
from dpcd.tuning.release import released_id, selection_ledger
from dpcd.tuning.scores import score_mechanism, score_terms, score_value
from dpcd.tuning.search import keeps
from dpcd.tuning.settings import SearchSettings


def run_private_chunk(spec, chunk, problem, f_star, w_star=None):
    """Selection seed ``chunk``'s private searches of one solver entry.

    Returns
    -------
    table : pandas.DataFrame
        The released runs' rows (config_id :func:`released_id`, seed_index =
        ``chunk``, ``role``: released, ``noisy_score``).
    records : list of (ConfigRecord, dict)
        Every candidate's run and the released one, with its role in the
        search (``{"role": "candidate", "candidate": index}`` or ``{"role":
        "released", "config_id": ..., "noisy_score": ...}``), which
        :func:`dpcd.tracking.payload.private_search_runs` turns into MLflow tags.
    """
    settings = spec["search_private"]
    name = spec.get("adapter", spec["solver"])
    algorithm = algorithms.get(name)
    delta = resolve_delta(spec["privacy"], problem.n_samples)
    neighbouring = spec["privacy"].get("neighbouring", "replace_one")
    noise = spec["privacy"].get("noise", "fast")
    if noise == "secure":  # the draws' seed from the OS, never recorded (the runner's rule)
        algorithms.check_secure(name, "privacy.noise: 'secure'")
        selection_seed = -1 - chunk
    else:
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
        seed = (privacy.secure.secure_entropy() if noise == "secure"
                else search_seed(spec, selection_seed, epsilon, passes))
        released = _search(spec, algorithm, problem, configs, search, score, epsilon, passes,
                           delta, neighbouring, seed, f_star, w_star, records, noise)
        if released is not None:
            rows.append(_released_rows(spec, released, chunk, selection_seed, delta, problem))
    table = stack_rows(rows) if rows else empty_table().assign(role=[])
    return table, records


def _search(spec, algorithm, problem, configs, search, score_under, epsilon, passes, delta,
            neighbouring, seed, f_star, w_star, records, noise="fast"):
    """One cell's search; appends its runs to ``records``; the released one.
    ``score_under(relation=...)`` is the score mechanism under a relation.
    ``noise="secure"``: as :func:`dpcd.tuning.search.private_search`'s (``seed``
    from the OS, each candidate's from the OS too)."""
    secure_mode = noise == "secure"
    by_id = {config_id(config): config for config in configs}
    cal, specs, private_smoothness = calibrate_candidates(
        lambda key, eps: algorithm.privacy.calibrate(
            problem, by_id[key], Budget(eps, delta, "rdp", neighbouring, noise)).ledger,
        list(by_id), problem.n_samples, epsilon, delta, search.k_mean, search.shape,
        search.score_fraction, search.score_noise,
        lambda relation: score_under(relation=relation))  # refuses what it cannot score
    score = score_under(relation=cal.relation)
    _, drawn = draw_search(configs, search, seed, epsilon, delta, exact_k=secure_mode)
    budget = Budget(cal.train_epsilon, delta, "rdp", neighbouring, noise)
    ties = 1
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
                                                               cal.train_epsilon, smooth_ss,
                                                               noise)
        streams = (privacy.secure.secure_entropy() if secure_mode
                   else [int(x) for x in fit_ss.generate_state(4)])
        result, ledger = algorithm.run(problem, config, streams, budget, **extra)
        accounted = specs[config_id(config)][0]
        check_trained(ledger, problem.n_samples, accounted, cal.train_multipliers[accounted])
        for item in problem.nonprivate_inputs:
            ledger = ledger.add_nonprivate_input(item)
        if secure_mode:
            noisy = score.secure_noisy(*score_terms(problem, score, result.w),
                                       cal.score_multiplier)
        else:
            noisy = score.noisy(score_value(problem, score, result.w), cal.score_multiplier,
                                np.random.default_rng(score_ss))
        record = _record(config, config_id(config), result, ledger, problem, f_star, start)
        records.append((record, {"role": "candidate", "candidate": index}))
        better, ties = keeps(noisy, None if best is None else best[0], ties,
                             score.higher_is_better, uniform_ties=secure_mode)
        if better:
            best = (noisy, config, result, ledger, record)
    if best is None:  # K = 0 (Poisson): nothing is released
        return None
    noisy, config, result, ledger, record = best
    whole = selection_ledger(cal, score, ledger, search.k_distribution,
                             algorithm=f"private_search({spec['solver']})", noise=noise)
    out = ConfigRecord(config, released_id(spec["solver"], epsilon, passes), record.status,
                       record.objective, record.rel_error,
                       record.time, [whole], record.holdout, record.start_ms, record.end_ms)
    records.append((out, {"role": "released", "config_id": config_id(config),
                          "noisy_score": noisy}))
    support = support_counts(result.w, w_star) if w_star is not None else None
    return out, result, noisy, support


def candidate_smoothness(problem, fraction, epsilon, stream, noise="fast"):
    """A DP-CD-P candidate's own private smoothness constants (DP-CD Appendix
    F, :func:`dpcd.privacy.estimate_smoothness` as the private smoothness
    stage releases them: the crude bounds 2 max_i |x_ij|, recorded as the
    non-private input ``smoothness_bounds_from_data``) at ``fraction *
    epsilon``, its Laplace noise drawn from ``stream`` (a ``SeedSequence``)
    only (``noise="secure"``: exact discrete Laplace noise from the OS), in
    the form :func:`dpcd.algorithms.dp_cd_p.run` takes."""
    if problem.is_sparse:
        raise ValueError("dp_cd_p: the private smoothness estimate takes dense data, and "
                         "sparse datasets are never densified")
    datafit, _ = make_problem(problem.loss, "none", 0.0)
    smoothness, ledger = privacy.estimate_smoothness(
        datafit, problem.X, fraction * epsilon, np.random.default_rng(stream), noise=noise)
    return {"smoothness": np.asarray(smoothness).tolist(),
            "smoothness_fraction": fraction, "ledger": ledger.to_dict()}


def _record(config, cid, result, ledger, problem, f_star, start):
    objective = np.asarray(result.objective, dtype=np.float64)[None, :]
    status = "done" if np.all(np.isfinite(objective)) else "diverged"
    holdout = seed_holdout(SeedProblems(problem, [0], "fixed"), [result.w])
    return ConfigRecord(config, cid, status, objective, (objective - f_star) / abs(f_star),
                        np.asarray([float(result.time)]), [ledger], holdout, start,
                        int(clock.time() * 1000))


def _released_rows(spec, released, chunk, selection_seed, delta, problem):
    record, result, noisy, support = released
    columns = record_columns(spec, record, [selection_seed], delta, result.passes_done,
                             record.config["passes"])  # run whole
    columns["seed_index"] = np.full(record.objective.shape[1], chunk)
    columns["nonprivate_inputs"] = nonprivate_inputs(problem, record.ledgers[0])
    for i, name in enumerate(("nnz_correct", "nnz_incorrect")):
        columns[name] = np.nan if support is None else float(support[i])
    columns.update(role="released", noisy_score=noisy)
    return columns


__all__ = ["candidate_smoothness", "run_private_chunk"]
