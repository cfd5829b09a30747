"""Which trainings can be private-search candidates: the one rule.

A candidate of repeat-and-select (:mod:`dpcd.privacy.selection`) must be a
training whose Rényi DP the RDP accountant knows.  :func:`candidate_spec`
reads that event off a *calibrated ledger* (the workflow's
``algorithm.calibrate``, or the estimator's data-free calibration in
:func:`dpcd.sweep.private_search.training_spec`) and refuses, with the
reason, every other: so the workflow's ``search: private`` and
:class:`dpcd.PrivateSearch` accept exactly the same trainings.  Accepted:

* one Gaussian event under RDP at the ledger's δ: DP-CD and primal DP-SCD
  (unsampled), DP-SGD under replace-one with ``accountant="rdp"`` (unsampled
  Gaussians of sensitivity 2C, no amplification) or with Poisson batches
  under add-or-remove-one or the zero record, DP-SCD without replacement;
* DP-GCD at its correct selection scale composed by RDP: T pairs of an
  ε′-DP report-noisy-max (randomized response at ε′) and an ε′-DP Laplace
  entry (``("pure_pair", T)``);
* DP-CD-P under replace-one: its own smoothness release (the p clipped
  means, each a Laplace release of multiplier p/ε_s relative to its
  sensitivity b_j/n; with the estimators' private feature bound first, an
  ε_b-DP exponential mechanism accounted as randomized response at ε_b)
  composed in RDP with its Gaussian steps
  (``("smoothness_gaussian", z_s, p, ε_b, T)``, z the steps').  Each
  candidate releases its own estimate; the split between the estimate and
  the steps is the run's own (``smoothness_fraction`` of the candidate's
  training budget, :func:`dpcd.algorithms.dp_cd_p.calibrate`).

Refused: paper scales (``invalid_bound``), PLD-only events, a δ tail charged
outside the event (seqDP-SCD's max_batch_size), secure (discrete) smoothness
noise.
"""

import math
from dataclasses import replace

from dpcd.privacy import accounting, selection


def candidate_spec(ledger, n_samples):
    """The ``dp_accounting`` spec (:mod:`dpcd.privacy.accounting`) of a
    calibrated training, from its ledger, and its noise multiplier.

    Raises ``ValueError`` with the reason when the training is not one
    Gaussian release accounted by RDP at the ledger's δ (then repeat-and-select
    cannot compose it). The spec is checked to be the event the calibration
    accounted: its ``dp_accounting`` repr equals the ledger's budget line.
    """
    if ledger is None:
        raise ValueError("a non-private run cannot be a private-search candidate")
    if any(m.group in ("smoothness", "bounds") for m in ledger.mechanisms):
        return _smoothness_spec(ledger, n_samples)
    if [m.kind for m in ledger.mechanisms] == ["report_noisy_max", "laplace"]:
        return _pure_pair_spec(ledger)
    if len(ledger.mechanisms) != 1 or len(ledger.budget) != 1:
        raise ValueError(f"{ledger.algorithm}: {len(ledger.mechanisms)} mechanisms and "
                         f"{len(ledger.budget)} budget lines; a candidate needs one training "
                         "event")
    m, line = ledger.mechanisms[0], ledger.budget[0]
    if m.kind != "gaussian" or line.accountant != "rdp":
        raise ValueError(f"{ledger.algorithm}: its {m.kind} release is accounted by "
                         f"{line.accountant}; a candidate needs a Gaussian event under RDP")
    if line.delta != ledger.delta:
        raise ValueError(f"{ledger.algorithm}: part of delta is charged outside the "
                         "accounted event (a tail), which repeat-and-select does not account")
    if line.dp_event.startswith("SelfComposedDpEvent(event=GaussianDpEvent"):
        spec = ("gaussian", m.count)
    elif m.sampling == "poisson":
        spec = ("poisson_gaussian", m.sampling_rate, m.count)
    elif m.sampling == "without_replacement":
        spec = ("wor_gaussian", n_samples, int(round(m.sampling_rate * n_samples)), m.count)
    else:
        raise ValueError(f"{ledger.algorithm}: unknown event {line.dp_event}")
    z = m.noise_multiplier / accounting.sensitivity_unit(spec, ledger.neighbouring)
    if repr(accounting.make_event(spec, z)) != line.dp_event:
        raise ValueError(f"{ledger.algorithm}: derived event {spec} at z={z} is not the "
                         f"accounted one, {line.dp_event}")
    return spec, z


def _smoothness_spec(ledger, n_samples):
    """DP-CD-P's release (``("smoothness_gaussian", z_s, p, eps_b, T)``, z the
    steps'), when its ledger is: an optional pure feature-bound line, one pure
    Laplace line of p smoothness means (multiplier p/ε_s each), then one
    Gaussian event under RDP; every line checked against the rebuilt event."""
    if ledger.neighbouring != "replace_one":
        raise ValueError(f"{ledger.algorithm}: its smoothness release is accounted under "
                         f"replace_one, not {ledger.neighbouring}")
    groups = {}
    for m, line in zip(ledger.mechanisms, ledger.budget):
        groups.setdefault(m.group, []).append((m, line))
    if len(ledger.mechanisms) != len(ledger.budget) or len(groups.get("smoothness", [])) != 1 \
            or len(groups.get("bounds", [])) > 1 \
            or len(ledger.mechanisms) != 2 + len(groups.get("bounds", [])):
        raise ValueError(f"{ledger.algorithm}: a candidate with private smoothness needs "
                         "one bound release at most, one smoothness release and one training "
                         f"event, got mechanisms {[m.name for m in ledger.mechanisms]}")
    (smooth, s_line), = groups["smoothness"]
    if smooth.kind != "laplace" or s_line.accountant != "pure":
        raise ValueError(f"{ledger.algorithm}: its {smooth.kind} smoothness release "
                         "(noise secure?) has no RDP event here; a candidate needs Laplace noise")
    z_s, count = float(smooth.noise_multiplier), int(smooth.count)
    if not math.isclose(count / z_s, s_line.epsilon_achieved, rel_tol=1e-12) \
            or s_line.dp_event != f"SelfComposed(Laplace({z_s:.6g}), {count})":
        raise ValueError(f"{ledger.algorithm}: smoothness line {s_line.dp_event} at "
                         f"eps {s_line.epsilon_achieved} is not {count} Laplace releases "
                         f"of multiplier {z_s}")
    eps_b = 0.0
    for bound, b_line in groups.get("bounds", []):
        eps_b = 2.0 / float(bound.noise_multiplier)
        if bound.kind != "exponential" or b_line.accountant != "pure" \
                or not math.isclose(eps_b, b_line.epsilon_achieved, rel_tol=1e-12):
            raise ValueError(f"{ledger.algorithm}: bound release {bound.kind} at "
                             f"{b_line.epsilon_achieved} is not the eps-DP exponential "
                             "mechanism a candidate accounts")
    steps = [(m, line) for m, line in zip(ledger.mechanisms, ledger.budget)
             if m.group not in ("smoothness", "bounds")]
    (m, line), = steps
    if m.kind != "gaussian" or line.accountant != "rdp" or line.delta != ledger.delta:
        raise ValueError(f"{ledger.algorithm}: its steps are {m.kind} accounted by "
                         f"{line.accountant}; a candidate needs a Gaussian event under RDP "
                         "carrying the whole delta")
    z, gauss = float(m.noise_multiplier), ("gaussian", m.count)
    if repr(accounting.make_event(gauss, z)) != line.dp_event:
        raise ValueError(f"{ledger.algorithm}: steps' event {line.dp_event} is not {gauss} "
                         f"at z={z}")
    return ("smoothness_gaussian", z_s, count, eps_b, int(m.count)), z


def _pure_pair_spec(ledger):
    """DP-GCD's T iterations of an ε′-DP selection and an ε′-DP Laplace entry
    (``("pure_pair", T)``, z = 1/ε′), when its ledger says so: the correct
    selection scale (no ``invalid_bound``), the RDP composition, one budget
    line whose ε is that of the rebuilt event."""
    select, grad = ledger.mechanisms
    line = ledger.budget[0] if len(ledger.budget) == 1 else None
    if "invalid_bound" in ledger.caveats:
        raise ValueError(f"{ledger.algorithm}: the paper's selection scale is no valid "
                         "bound (invalid_bound); a candidate needs mode correct")
    if line is None or line.accountant != "rdp" or not line.dp_event.endswith(", rdp"):
        raise ValueError(f"{ledger.algorithm}: its pure-DP steps are composed by "
                         f"{line and line.accountant}; a candidate needs the rdp composition")
    if select.count != grad.count or ledger.neighbouring != "replace_one":
        raise ValueError(f"{ledger.algorithm}: not T pairs of releases under replace_one")
    spec, z = ("pure_pair", grad.count), grad.noise_multiplier
    if not math.isclose(select.noise_multiplier, 2.0 * z, rel_tol=1e-12):
        raise ValueError(f"{ledger.algorithm}: selection scale {select.noise_multiplier} is "
                         f"not the eps_step-DP one, 2/eps_step = {2.0 * z}")
    rebuilt = accounting.epsilon_of(spec, z, ledger.delta, "rdp", "replace_one")
    if not math.isclose(rebuilt, line.epsilon_achieved, rel_tol=1e-9):
        raise ValueError(f"{ledger.algorithm}: rebuilt event gives epsilon {rebuilt}, the "
                         f"ledger {line.epsilon_achieved}")
    return spec, z


def aligned(cal, zs_at, k_mean, shape):
    """``cal`` with each training's noise multiplier the one its own calibration
    gives at ``cal.train_epsilon`` (``zs_at(eps) -> {spec: z}``; DP-GCD searches
    its ε′ itself, a few 1e-9 from the selection's search) and the total
    recomputed from them; ``train_epsilon`` lowered by 1e-6 (then 1e-5, ...)
    until the total meets the target. Never more than the target: what runs is
    what is accounted."""
    eps_t = cal.train_epsilon
    for attempt in range(6):
        zs = zs_at(eps_t)
        total = selection.selection_epsilon(list(zs.items()), cal.score_spec,
                                            cal.score_multiplier, k_mean, shape, cal.delta,
                                            cal.relation)
        if total <= cal.epsilon:
            return replace(cal, train_epsilon=eps_t, train_multipliers=zs,
                           epsilon_achieved=total)
        eps_t *= 1.0 - 1e-6 * 10**attempt
    raise RuntimeError(f"the trainings' own calibrations overshoot the target {cal.epsilon}")


def calibrate_candidates(ledger_of, keys, n_samples, epsilon, delta, k_mean, shape,
                         score_fraction, score_noise, check_relation=None):
    """The selection's calibration over the candidates ``keys`` (every
    configuration of the grid, drawn or not: the mixture), for the workflow
    and the estimator alike.

    ``ledger_of(key, eps)`` is a configuration's calibrated training ledger at
    ``eps``; its event is read by :func:`candidate_spec`. DP-CD-P's event
    changes with its budget (its smoothness release spends a fraction of it):
    the selection then searches the trainings' own calibrations. The
    candidates must share one neighbouring relation (``check_relation(rel)``
    may refuse it further).

    Returns
    -------
    cal : SelectionCalibration
        :func:`aligned` with the trainings' own multipliers.
    specs : dict
        key -> (spec, z) of each training at ``cal.train_epsilon``.
    private_smoothness : bool
        Whether the candidates release their own smoothness constants.
    """
    def specs_at(eps):
        out, relations = {}, set()
        for key in keys:
            ledger = ledger_of(key, eps)
            out[key] = candidate_spec(ledger, n_samples)
            relations.add(ledger.neighbouring)
        return out, relations

    def zs_at(eps_t):  # the trainings' own calibrations (DP-GCD: its eps'; DP-CD-P: its split)
        zs = {}
        for spec, z in specs_at(eps_t)[0].values():
            zs[spec] = min(z, zs.get(spec, math.inf))
        return zs

    specs, relations = specs_at(epsilon)
    private_smoothness = any(s[0] == "smoothness_gaussian" for s, _ in specs.values())
    if len(relations) != 1:
        raise ValueError(f"neighbouring: the grid mixes relations {sorted(relations)}")
    relation = relations.pop()
    if check_relation is not None:
        check_relation(relation)
    cal = selection.calibrate_selection(
        [s for s, _ in specs.values()], epsilon, delta, k_mean, shape, score_fraction,
        score_noise, relation, trainings_at=zs_at if private_smoothness else None)
    cal = aligned(cal, zs_at, k_mean, shape)
    if private_smoothness:
        specs = specs_at(cal.train_epsilon)[0]
    return cal, specs, private_smoothness


def check_trained(ledger, n_samples, accounted, z_accounted):
    """The fitted candidate's ledger is the accounted event, its noise not below."""
    got, z = candidate_spec(ledger, n_samples)
    if got != accounted or z < z_accounted * (1 - 1e-12):
        raise RuntimeError(f"candidate trained with {got} at z={z}; the selection "
                           f"accounted {accounted} at {z_accounted}")
    return got, z


__all__ = ["aligned", "calibrate_candidates", "candidate_spec", "check_trained"]
