"""Which trainings can be private-search candidates: the one rule.

A candidate of repeat-and-select (:mod:`dpcd.tuning.calibration`) must be a
training whose Rényi DP the RDP accountant knows.  :func:`refusal` says
which solvers cannot be one at all (their spec says why);
:func:`candidate_spec` reads the event of a configuration off its
*calibrated ledger* (the workflow's ``algorithm.privacy.calibrate``, or the
estimator's data-free calibration, :func:`calibrated_ledger`) and refuses,
with the reason, every other: so the workflow's ``search: private`` and
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

Secure trainings (``noise="secure"``) are read as the same events: a discrete
Gaussian's Rényi divergences are at most the continuous one's (Canonne,
Kamath, Steinke 2020), and the secure smoothness release's discrete Laplace
has a scale at which they are at most the continuous Laplace's
(:func:`dpcd.privacy.secure.laplace_scale`, checked here from the ledger);
the secure feature bound is the same exponential mechanism drawn exactly.
Secure DP-GCD (discrete report-noisy-max and a discrete Laplace entry, both
ε′-DP) is ``("pure_rr_pair", T)``: both accounted as randomized response,
as its own RDP composition does. A secure lattice training (DP-SGD, the
DP-SCD variants: :func:`dpcd.privacy.secure.secure_lattice`) is read as its
continuous event (the line before its ``lattice_rounding`` line), which
bounds the *rounded continuous* run; the search accounts the closeness of
the secure run to that one itself (:func:`lattice_slack`,
:func:`dpcd.tuning.calibration.lattice_bound`).

Refused: paper scales (``invalid_bound``), PLD-only events, a δ tail charged
outside the event (seqDP-SCD's max_batch_size).
"""

import dataclasses
import math

import numpy as np

from dpcd import algorithms
from dpcd.algorithms import Budget
from dpcd.algorithms.defaults import is_auto, label_epsilon
from dpcd.algorithms.problem import Probe
from dpcd.privacy import accounting, labels, secure
from dpcd.privacy.ledger import Ledger
from dpcd.problems import make_problem


# Kinds of a training's Gaussian steps read as GaussianDpEvent under RDP
# (the discrete one's Rényi divergences are at most the continuous one's).
GAUSSIANS = ("gaussian", "discrete_gaussian")

# The budget line of a secure lattice release's closeness slack
# (dpcd.privacy.secure.secure_lattice).
LATTICE_GROUP = "lattice_rounding"

# DP-GCD's two releases per iteration, fast and secure.
_GCD_KINDS = {("report_noisy_max", "laplace"): "pure_pair",
              ("discrete_report_noisy_max", "discrete_laplace"): "pure_rr_pair"}


def lattice_slack(ledger):
    """``a`` of a secure lattice training (its ``lattice_rounding`` line states
    ``2a``: the secure run's law is within ``e^{±a}`` of the rounded
    continuous run's, pointwise, off the tails), or 0 for any other training.
    Only the search's own accounting may use a lattice candidate's
    :func:`candidate_spec` (which reads its continuous event), with this slack."""
    lines = [b for b in ledger.budget if b.group == LATTICE_GROUP]
    if not lines:
        return 0.0
    (line,) = lines
    if line.accountant != "closeness" or not 0 <= line.epsilon_achieved < math.inf:
        raise ValueError(f"{ledger.algorithm}: lattice line {line} is not a closeness slack")
    return 0.5 * float(line.epsilon_achieved)


def refusal(solver):
    """Why ``solver`` cannot be a private-search candidate, or None when it may
    be (then each configuration's event decides, :func:`candidate_spec`): not
    a private solver, refused by its spec, or without a calibration of its own."""
    if solver not in algorithms.names(private=True):
        return "it is not a private solver"
    spec = algorithms.get(solver)
    reason = spec.privacy.refusal
    if reason is None and spec.privacy.calibrate is None:
        reason = "it has no calibration of its own"
    return reason


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
    if any(b.group == LATTICE_GROUP for b in ledger.budget):
        # the rounded continuous run's event: the line the slack line follows
        lattice_slack(ledger)
        # (after a label count, whose law the slack leaves as it is)
        rest = [b for b in ledger.budget if b.group != LATTICE_GROUP]
        steps = [b for b in rest if b.group != "labels"]
        trained = [m for m in ledger.mechanisms if m.group != "labels"]
        if len(steps) != 1 or len(trained) != 1 or trained[0].kind != "discrete_gaussian" \
                or len(rest) - len(steps) != len(ledger.mechanisms) - len(trained):
            raise ValueError(f"{ledger.algorithm}: a lattice candidate needs one discrete "
                             "Gaussian release and its continuous event")
        ledger = dataclasses.replace(ledger, budget=rest, delta=steps[0].delta)
    if any(m.group in ("smoothness", "bounds", "labels") for m in ledger.mechanisms):
        return _smoothness_spec(ledger, n_samples)
    if tuple(m.kind for m in ledger.mechanisms) in _GCD_KINDS:
        return _pure_pair_spec(ledger)
    if len(ledger.mechanisms) != 1 or len(ledger.budget) != 1:
        raise ValueError(f"{ledger.algorithm}: {len(ledger.mechanisms)} mechanisms and "
                         f"{len(ledger.budget)} budget lines; a candidate needs one training "
                         "event")
    m, line = ledger.mechanisms[0], ledger.budget[0]
    if m.kind not in GAUSSIANS or line.accountant != "rdp":
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
    z = _accounted_z(m, spec, line,
                     m.noise_multiplier / accounting.sensitivity_unit(spec, ledger.neighbouring))
    if repr(accounting.make_event(spec, z)) != line.dp_event:
        raise ValueError(f"{ledger.algorithm}: derived event {spec} at z={z} is not the "
                         f"accounted one, {line.dp_event}")
    return spec, z


def _accounted_z(m, spec, line, z):
    """The multiplier the budget line accounted. A lattice release states its
    multiplier as scale over charged sensitivity, a few ulps from the
    accounted one: the accounted one is taken when it is that near."""
    if m.kind != "discrete_gaussian" or repr(accounting.make_event(spec, z)) == line.dp_event:
        return z
    near = []
    for toward in (-math.inf, math.inf):
        x = z
        for _ in range(8):
            x = math.nextafter(x, toward)
            near.append(x)
    return next((x for x in near if repr(accounting.make_event(spec, x)) == line.dp_event), z)


def _smoothness_spec(ledger, n_samples):
    """DP-CD-P's release (``("smoothness_gaussian", z_s, p, eps_b, T)``, z the
    steps'), when its ledger is: an optional pure feature-bound line, one pure
    Laplace line of p smoothness means (multiplier p/ε_s each), then one
    Gaussian event under RDP; every line checked against the rebuilt event.
    A classifier whose default falls back (primal DP-SCD) has the same form:
    one pure Laplace count of its labels (``"labels"``, multiplier 1/ε_l),
    then its Gaussian steps."""
    if ledger.neighbouring != "replace_one":
        raise ValueError(f"{ledger.algorithm}: its smoothness release is accounted under "
                         f"replace_one, not {ledger.neighbouring}")
    groups = {}
    for m, line in zip(ledger.mechanisms, ledger.budget):
        groups.setdefault(m.group, []).append((m, line))
    laplace = groups.get("smoothness", []) + groups.get("labels", [])
    if len(ledger.mechanisms) != len(ledger.budget) or len(laplace) != 1 \
            or len(groups.get("bounds", [])) > 1 \
            or len(ledger.mechanisms) != 2 + len(groups.get("bounds", [])):
        raise ValueError(f"{ledger.algorithm}: a candidate with private smoothness needs "
                         "one bound release at most, one smoothness (or label count) release "
                         "and one training event, got mechanisms "
                         f"{[m.name for m in ledger.mechanisms]}")
    (smooth, s_line), = laplace
    if smooth.kind not in ("laplace", "discrete_laplace") or s_line.accountant != "pure":
        raise ValueError(f"{ledger.algorithm}: its {smooth.kind} smoothness release "
                         "has no RDP event here; a candidate needs Laplace noise")
    z_s, count = float(smooth.noise_multiplier), int(smooth.count)
    if smooth.kind == "discrete_laplace":  # dominated by Laplace(z_s) at its scale only
        # the means are rounded (charged m + 1 steps), the label count is not (m)
        steps = secure.RESOLUTION + (smooth.group != "labels")
        least = secure.laplace_scale(z_s, steps) / steps * np.asarray(smooth.sensitivity)
        if np.any(np.asarray(smooth.noise_scale) < least * (1 - 1e-12)):
            raise ValueError(f"{ledger.algorithm}: its discrete Laplace smoothness noise "
                             "is below the scale the continuous Laplace event dominates")
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
             if m.group not in ("smoothness", "bounds", "labels")]
    (m, line), = steps
    if m.kind not in GAUSSIANS or line.accountant != "rdp" or line.delta != ledger.delta:
        raise ValueError(f"{ledger.algorithm}: its steps are {m.kind} accounted by "
                         f"{line.accountant}; a candidate needs a Gaussian event under RDP "
                         "carrying the whole delta")
    gauss = ("gaussian", m.count)
    z = _accounted_z(m, gauss, line, float(m.noise_multiplier))
    if repr(accounting.make_event(gauss, z)) != line.dp_event:
        raise ValueError(f"{ledger.algorithm}: steps' event {line.dp_event} is not {gauss} "
                         f"at z={z}")
    return ("smoothness_gaussian", z_s, count, eps_b, int(m.count)), z


def _pure_pair_spec(ledger):
    """DP-GCD's T iterations of an ε′-DP selection and an ε′-DP Laplace entry
    (``("pure_pair", T)``, z = 1/ε′; secure: ``("pure_rr_pair", T)``, its
    discrete entry of scale ``(m + 1)/ε′`` steps at sensitivity ``m + 1``
    accounted as randomized response), when its ledger says so: the correct
    selection scale (no ``invalid_bound``), the RDP composition, one budget
    line whose ε is that of the rebuilt event."""
    select, grad = ledger.mechanisms
    kind = _GCD_KINDS[(select.kind, grad.kind)]
    line = ledger.budget[0] if len(ledger.budget) == 1 else None
    if "invalid_bound" in ledger.caveats:
        raise ValueError(f"{ledger.algorithm}: the paper's selection scale is no valid "
                         "bound (invalid_bound); a candidate needs mode correct")
    if line is None or line.accountant != "rdp" or not line.dp_event.endswith(", rdp"):
        raise ValueError(f"{ledger.algorithm}: its pure-DP steps are composed by "
                         f"{line and line.accountant}; a candidate needs the rdp composition")
    if select.count != grad.count or ledger.neighbouring != "replace_one":
        raise ValueError(f"{ledger.algorithm}: not T pairs of releases under replace_one")
    spec, z = (kind, grad.count), grad.noise_multiplier
    if not math.isclose(select.noise_multiplier, 2.0 * z, rel_tol=1e-12):
        raise ValueError(f"{ledger.algorithm}: selection scale {select.noise_multiplier} is "
                         f"not the eps_step-DP one, 2/eps_step = {2.0 * z}")
    if kind == "pure_rr_pair":  # each release's scale over its charged sensitivity
        for m, ratio in ((select, 2.0 * z), (grad, z)):
            got = np.asarray(m.noise_scale, float) / np.asarray(m.sensitivity, float)
            if not np.allclose(got, ratio, rtol=1e-12, atol=0.0):
                raise ValueError(f"{ledger.algorithm}: its {m.kind} scale is not "
                                 f"{ratio:g} times its charged sensitivity")
    rebuilt = accounting.epsilon_of(spec, z, ledger.delta, "rdp", "replace_one")
    if not math.isclose(rebuilt, line.epsilon_achieved, rel_tol=1e-9):
        raise ValueError(f"{ledger.algorithm}: rebuilt event gives epsilon {rebuilt}, the "
                         f"ledger {line.epsilon_achieved}")
    return spec, z


def check_trained(ledger, n_samples, accounted, z_accounted):
    """The fitted candidate's ledger is the accounted event, its noise not below."""
    got, z = candidate_spec(ledger, n_samples)
    if got != accounted or z < z_accounted * (1 - 1e-12):
        raise RuntimeError(f"candidate trained with {got} at z={z}; the selection "
                           f"accounted {accounted} at {z_accounted}")
    return got, z


# ------------------------------------------------------------------ the estimator's trainings
def _relation(estimator):
    rel = estimator.neighbouring
    if rel == "paper":
        rel = algorithms.get(estimator.solver).paper_relation()
    return rel


def calibrated_ledger(estimator, n_samples, n_features, epsilon, delta, noise="fast"):
    """The ledger of ``estimator``'s training calibrated at (``epsilon``,
    ``delta``) under the RDP accountant, from its settings and the data's
    shape only (no record is read): its algorithm's own ``calibrate`` on a
    probe of unit smoothness constants (the noise multipliers do not depend
    on them: thresholds and noise scale together); for ``dp_cd_p``, the
    release of its ``n_features`` constants (and of a feature bound when
    ``bounds`` is None) at the estimator's ``smoothness_fraction``.
    ``ValueError`` for a solver without a calibration of its own, naming the
    reason. ``noise="secure"``: the secure mode's calibration (what a secure
    candidate's fit will state)."""
    solver = estimator.solver
    reason = refusal(solver)
    if reason is not None:
        raise ValueError(f"solver={solver!r} cannot be a private-search candidate: {reason}")
    spec = algorithms.get(solver)
    relation = _relation(estimator)
    spec.check_neighbouring(relation)
    config = estimator._config(spec, n_samples, n_features)
    p = n_features + bool(estimator.fit_intercept)
    penalty = "l2" if spec.preparation.record_norm else estimator.penalty
    _, penalty = make_problem(estimator._loss, penalty, estimator._internal_alpha(),
                              estimator.l1_ratio)
    probe = Probe(n_samples, p, penalty)
    extra = {}
    if spec.preparation.smoothness == "private":  # each fit releases its own constants (not the
        # intercept's, public), after a private feature bound without public bounds
        config["smoothness_fraction"] = float(estimator.smoothness_fraction)
        # step="auto" releases one constant, the mean (algorithms.prepare)
        count = 1 if is_auto(estimator.step) else n_features
        extra = {"smoothness_count": count, "private_bound": estimator.bounds is None}
    try:
        budget = Budget(epsilon, delta, "rdp", relation, noise)
        # a classifier whose default falls back counts its labels first
        eps_labels = label_epsilon(spec, probe, config, budget, estimator._loss,
                                   estimator.fit_intercept, is_auto(estimator.clip))
        if eps_labels:
            budget = dataclasses.replace(budget, epsilon=epsilon - eps_labels)
        ledger = spec.privacy.calibrate(probe, config, budget, **extra).ledger
        if eps_labels:
            ledger = Ledger.combine([labels.count_ledger(n_samples, eps_labels, noise), ledger],
                                    algorithm=ledger.algorithm)
        return ledger
    except ValueError as err:
        raise ValueError(f"solver={solver!r} cannot be a private-search candidate with "
                         f"neighbouring={relation!r}: {err}") from err


def secure_refusal(estimator, n_samples, n_features, epsilon, delta):
    """Why ``estimator``'s training cannot be a secure private-search
    candidate, or None: its solver has no secure mode, or its secure
    calibration (:func:`calibrated_ledger` with ``noise="secure"``) is no
    event :func:`candidate_spec` reads (data-free)."""
    solver = estimator.solver
    if solver not in algorithms.names(secure=True):
        return f"solver {solver!r} has no secure mode"
    try:
        candidate_spec(calibrated_ledger(estimator, n_samples, n_features, epsilon, delta,
                                         noise="secure"), n_samples)
    except ValueError as err:
        return f"its secure training is no candidate event ({err})"
    return None


def training_spec(estimator, n_samples, n_features, epsilon=1.0, delta=None):
    """Accounting spec of ``estimator``'s training and its relation, by the
    rule the workflow applies (:func:`candidate_spec` on
    :func:`calibrated_ledger`); ``ValueError`` with the reason for trainings
    repeat-and-select cannot compose."""
    delta = 1.0 / n_samples ** 2 if delta is None else delta
    ledger = calibrated_ledger(estimator, n_samples, n_features, epsilon, delta)
    return candidate_spec(ledger, n_samples)[0], ledger.neighbouring


__all__ = ["GAUSSIANS", "LATTICE_GROUP", "calibrated_ledger", "candidate_spec",
           "check_trained", "lattice_slack", "refusal", "secure_refusal", "training_spec"]
