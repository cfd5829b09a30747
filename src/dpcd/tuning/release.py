"""What a private search releases, and what it never does.

What goes out with a release
----------------------------
The released model, its noisy score and its ledger, which records the law
of K (distribution, mean, shape) and the calibration, never K itself, the
configurations drawn, the other candidates or the seed the noise came from.
The bound covers the best candidate with K as internal randomness; given
K = k the output is a best-of-k mechanism whose loss grows with k, so
publishing K turns the mixture's guarantee into the average of the
best-of-k's (docs/method/private_tuning.md, "What a release carries").

The candidates' runs are the researcher's private record (their MLflow tags
say so, :mod:`dpcd.tracking.payload`); the released run of a workflow cell
is keyed by :func:`released_id`, the estimator's by :class:`SearchResult`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dpcd.privacy import secure
from dpcd.privacy.ledger import BudgetLine, Ledger, Mechanism
from dpcd.tuning.calibration import SelectionCalibration, selection_event
from dpcd.tuning.candidates import LATTICE_GROUP
from dpcd.tuning.scores import ScoreMechanism

#: Prefix of the released runs' config_id,
#: ``private_search_<solver entry>_eps<epsilon>_passes<passes>``: the tables'
#: one "configuration" per (solver, epsilon, passes), its seeds the selection
#: seeds (its hyperparameter columns: each selection seed's released ones).
#: Unique per cell, as the tables key runs by (solver, config_id, seed_index).
RELEASED_ID = "private_search"


def released_id(solver, epsilon, passes):
    """config_id of the released runs of solver entry ``solver`` at one cell."""
    return f"{RELEASED_ID}_{solver}_eps{float(epsilon):g}_passes{float(passes):g}"


@dataclass(frozen=True)
class SearchResult:
    """What a private search releases, and nothing else.

    Attributes
    ----------
    estimator : estimator or None
        The best candidate's fitted model; None when K = 0 (Poisson).  Its
        ``random_state`` is the template's, not the seed its noise came from,
        and it has no ``history_`` (the exact training objective is the
        selection score before clipping and noise).
    params : dict or None
    noisy_score : float or None
        The released candidate's noisy score.
    ledger : Ledger
        The whole release: the released candidate's training mechanisms, the
        score and one ``selection`` budget line (repeat-and-select, RDP),
        with the law of K but not K.
    calibration : dpcd.tuning.calibration.SelectionCalibration
    score : dpcd.tuning.scores.ScoreMechanism
    """

    estimator: object
    params: dict | None
    noisy_score: float | None
    ledger: Ledger
    calibration: object
    score: object


def selection_ledger(calibration: SelectionCalibration, score: ScoreMechanism,
                     training: Ledger, distribution: str,
                     algorithm: str | None = None, noise: str = "fast") -> Ledger:
    """The released candidate's ledger: its training mechanisms, the score,
    and one budget line for the whole repeat-and-select release.

    ``training`` is the released candidate's own training ledger (its
    mechanisms; its budget is superseded by the selection's).  The law of K,
    the split and the score mechanism are recorded in the selection
    mechanism's ``note``; K itself is not (module docstring).
    ``noise="secure"``: the score was released on a grid with exact integer
    noise (:meth:`ScoreMechanism.secure_noisy`), the training in the secure
    mode; the ledger says so.
    """
    cal = calibration
    note = (f"repeat_and_select: K drawn from {distribution}(mean={cal.mean:g}, "
            f"shape={cal.shape:g}); score_fraction={cal.score_fraction:g} "
            f"(score alone eps={cal.score_epsilon:.6g}); training per-candidate "
            f"eps={cal.train_epsilon:.6g} at delta; select_by={score.select_by}, "
            f"metric={score.metric}, score_clip={score.clip}, "
            f"clip_from_data={score.clip_from_data}")
    record = selection_record(cal, score, distribution)
    # DP-CD-P: the candidate's own smoothness release (and feature bound) spent
    # smoothness_fraction of its training budget train_epsilon, pure DP,
    # composed in RDP with its steps and the score (not added up)
    pure = [b.epsilon_achieved for b in training.budget if b.group in ("smoothness", "bounds")]
    if pure:
        record.update(smoothness_epsilon=float(sum(pure)),
                      smoothness_fraction=float(sum(pure)) / cal.train_epsilon,
                      smoothness_fraction_of="train_epsilon")
        note += (f"; smoothness: each candidate's own release, pure eps={sum(pure):.6g} = "
                 f"smoothness_fraction {sum(pure) / cal.train_epsilon:.6g} of its training "
                 "budget train_epsilon, composed in RDP with its steps and score")
    kind, sensitivity, z = score.noise, score.sensitivity, cal.score_multiplier
    if noise == "secure":
        if training.noise != "secure":
            raise ValueError("a secure search's released candidate must have trained securely")
        m, scale = secure.RESOLUTION, score.secure_scale(cal.score_multiplier)
        kind, sensitivity, z = f"discrete_{score.noise}", score.sensitivity * (m + 1) / m, \
            scale / (m + 1)
        note += (f"; secure: the score's data part rounded to the grid sensitivity/{m}, "
                 f"sensitivity {m + 1} grid steps, exact discrete {score.noise} of scale "
                 f"{scale:.6g} steps (its Renyi divergences at most the continuous "
                 f"{score.noise}'s at multiplier {cal.score_multiplier:.6g}, which the "
                 "selection accounts); K drawn exactly; exact ties broken uniformly at "
                 "random (docs/secure_noise.md)")
    score_mech = Mechanism(
        name=f"score_{score.metric}", kind=kind, sensitivity=sensitivity,
        sensitivity_norm="l1" if score.noise == "laplace" else "l2",
        noise_multiplier=z, noise_scale=z * sensitivity, count=1,
        relation=training.neighbouring, group="selection", note=note)
    specs = cal.trainings()
    event = repr(selection_event(specs[0][0], specs[0][1], cal.score_spec,
                                 cal.score_multiplier, cal.mean, cal.shape)) \
        if len(specs) == 1 else f"max over {len(specs)} training events: {specs!r}; " \
        f"RepeatAndSelect(mean={cal.mean}, shape={cal.shape})"
    lines = [BudgetLine(group="selection", accountant="rdp", epsilon_target=cal.epsilon,
                        epsilon_achieved=cal.epsilon_achieved, delta=cal.delta, dp_event=event)]
    if cal.lattice is not None:  # the rounded continuous search, then the closeness
        lat = cal.lattice
        lines = [replace(lines[0], epsilon_target=cal.epsilon - 2.0 * lat["k_max"] * lat["slack"],
                         epsilon_achieved=lat["rdp_epsilon"], delta=lat["rdp_delta"]),
                 BudgetLine(
                     group=LATTICE_GROUP, accountant="closeness",
                     epsilon_target=2.0 * lat["k_max"] * lat["slack"],
                     epsilon_achieved=2.0 * lat["k_max"] * lat["slack"],
                     delta=cal.delta - lat["rdp_delta"],
                     dp_event=(f"secure lattice candidates, each within exp(+-a) of its "
                               f"rounded continuous run off its tails, a <= {lat['slack']:.3g}; "
                               f"K cut at k0 = {lat['k_max']} (P(K > k0) <= "
                               f"{lat['k_tail']:.3g}): eps_R + 2 k0 a, delta: e^(k0 a) "
                               "delta_R + (1 + e^(eps_R + k0 a))(P(K > k0) + E[K] N tau) "
                               "(docs/secure_noise.md, Private search)"))]
    nonprivate = [x for x in training.nonprivate_inputs if x != "hyperparameter_selection"]
    if score.clip_from_data:
        nonprivate.append("score_clip")
    return Ledger(algorithm=algorithm or f"private_search({training.algorithm})",
                  neighbouring=training.neighbouring, accountant="rdp",
                  epsilon_target=cal.epsilon, epsilon_achieved=cal.epsilon_achieved,
                  delta=cal.delta, mechanisms=[*training.mechanisms, score_mech],
                  budget=lines, nonprivate_inputs=nonprivate, caveats=training.caveats,
                  noise="secure" if noise == "secure" else "fast", selection=record)


def selection_record(calibration: SelectionCalibration, score: ScoreMechanism | None,
                     distribution: str) -> dict:
    """The ledger's ``selection`` entry: the law of K (never K), the split, the score."""
    cal = calibration
    out = {"k_distribution": distribution, "k_mean": cal.mean,
           "k_shape": cal.shape if math.isfinite(cal.shape) else "inf",
           "score_fraction": cal.score_fraction, "score_epsilon": cal.score_epsilon,
           "train_epsilon": cal.train_epsilon, "train_delta": cal.delta,
           "score_multiplier": cal.score_multiplier,
           "n_training_events": len(cal.train_multipliers)}
    if cal.lattice is not None:
        out["lattice"] = dict(cal.lattice)
    if score is not None:
        out.update(select_by=score.select_by, score_metric=score.metric,
                   score_noise=score.noise, score_sensitivity=score.sensitivity,
                   score_n=score.n, score_clip=score.clip,
                   score_clip_from_data=score.clip_from_data, score_relation=score.relation)
    return out


def nothing_released(calibration: SelectionCalibration, score: ScoreMechanism,
                     distribution: str, algorithm: str, epsilon, delta) -> Ledger:
    """The ledger of a search that drew K = 0 (Poisson): nothing is released,
    and the ledger says at what price (the law of K, not K)."""
    return Ledger(algorithm=algorithm, neighbouring=calibration.relation, accountant="rdp",
                  epsilon_target=float(epsilon), delta=float(delta),
                  epsilon_achieved=calibration.epsilon_achieved,
                  selection=selection_record(calibration, score, distribution))


def released_estimator(estimator, template):
    """The best candidate's fitted ``estimator`` as it is released: it keeps
    neither its noise's seed (fast noise assumes it secret; the template's
    ``random_state`` instead) nor its exact training objective ``history_``
    (the selection score before clipping and noise)."""
    estimator.set_params(random_state=template.random_state)
    del estimator.history_
    return estimator


__all__ = ["RELEASED_ID", "SearchResult", "nothing_released", "released_estimator",
           "released_id", "selection_ledger", "selection_record"]
