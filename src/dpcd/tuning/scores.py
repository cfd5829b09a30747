"""A candidate's score: what it measures, its sensitivity, its noise.

Each candidate releases a noisy score of its model; the best noisy score
picks the release.  The score mechanism (:class:`ScoreMechanism`) is shared;
its exact value is computed on the workflow's problem (:func:`score_value`)
or from a fitted estimator (:func:`candidate_values`).

Scores and their sensitivities
------------------------------
* ``"last_objective"``: the training objective of the candidate's final
  model with each sample's loss clipped to a public bound B,
  ``(1/n) Σ min(ℓ_i(w), B) + R(w)``.  Losses are ≥ 0, so each clipped
  term lies in [0, B] and replacing one record moves the mean by ≤ B/n;
  R(w) is a function of the candidate's released model only.  Lower is better.
  Under add-or-remove-one, n is a public constant fixed when the mechanism
  is built (as DP-SGD's sampling rate b/n): the clipped *sum* (sensitivity
  B) gets noise of scale z·B and is divided by that n, so a neighbour with
  one record more or less is scored with the same n and the same noise
  (not with its own n, which would make the noise scale a function of the
  data).
* ``"validation"``: a metric on a validation set of ``n_val`` records
  disjoint from the training records: accuracy (each term in {0, 1},
  sensitivity 1/n_val; higher is better) or the squared error clipped to B
  (sensitivity B/n_val; lower is better).

B is a public setting (:func:`default_score_clip` when not given: the loss
of the zero model on a unit label, chosen without looking at the data);
if a caller set it from the data it says so (``clip_from_data``) and the
ledger records the non-private input ``score_clip``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sklearn.base import is_classifier

from dpcd.privacy import secure

SELECT_BY = ("last_objective", "validation")


METRICS = ("loss", "accuracy", "squared_error")


SCORE_NOISES = ("laplace", "gaussian")


# ------------------------------------------------------------------ scores
def default_score_clip(select_by: str, loss: str) -> float:
    """Public B used when none is stated: the loss of the zero model on a
    unit label (log 2 for the logistic loss, 1 for the hinge loss, 1/2 for
    ½ r², 1 for the squared error of a validation score); a constant, never
    read off the data."""
    if select_by == "validation":
        return 1.0
    return {"logistic": math.log(2.0), "hinge": 1.0, "squares": 0.5}[loss]


@dataclass(frozen=True)
class ScoreMechanism:
    """How a candidate's score is computed and noised.

    Attributes
    ----------
    select_by : {"last_objective", "validation"}
    metric : {"loss", "accuracy", "squared_error"}
        ``"loss"``: mean clipped training loss (+ penalty); the others are
        validation metrics.
    noise : {"laplace", "gaussian"}
    n : int
        The public n the score averages over (training or validation
        records).  Under replace-one it is the number of records scored;
        under add-or-remove-one it is fixed here and a neighbour of another
        size is divided by it too (module docstring).
    clip : float or None
        B (None for accuracy).
    clip_from_data : bool
        Whether B was set from the data (then a non-private input).
    relation : str
        The neighbouring relation the score is private under.
    """

    select_by: str
    metric: str
    noise: str
    n: int
    clip: float | None = None
    clip_from_data: bool = False
    relation: str = "replace_one"

    def __post_init__(self):
        if self.select_by not in SELECT_BY:
            raise ValueError(f"select_by must be one of {', '.join(SELECT_BY)}, "
                             f"got {self.select_by!r}")
        allowed = ("loss",) if self.select_by == "last_objective" else METRICS[1:]
        if self.metric not in allowed:
            raise ValueError(f"metric must be one of {allowed} with select_by="
                             f"{self.select_by!r}, got {self.metric!r}")
        if self.noise not in SCORE_NOISES:
            raise ValueError(f"score_noise must be one of {', '.join(SCORE_NOISES)}, "
                             f"got {self.noise!r}")
        if isinstance(self.n, bool) or int(self.n) != self.n or self.n < 1:
            raise ValueError(f"n (records of the score) must be an integer >= 1, got {self.n!r}")
        if self.metric != "accuracy":
            if self.clip is None or not math.isfinite(self.clip) or self.clip <= 0:
                raise ValueError(f"score_clip must be a finite number > 0, got {self.clip!r}")
        if self.relation == "add_or_remove_one" and self.metric != "loss":
            # the validation rows are a random split of the n records: adding one
            # reshuffles every record's side, which the composition does not cover
            raise ValueError("select_by='validation' needs a fixed n (replace_one or "
                             "replace_special): under neighbouring='add_or_remove_one' "
                             "the random split of the records changes with n")

    @property
    def sensitivity(self) -> float:
        """Sensitivity of the score: B/n (or 1/n for accuracy) with the public n;
        under add-or-remove-one, the clipped sum's B divided by that n."""
        return (1.0 if self.metric == "accuracy" else float(self.clip)) / self.n

    @property
    def higher_is_better(self) -> bool:
        return self.metric == "accuracy"

    def value(self, losses, penalty: float = 0.0) -> float:
        """The exact score from per-record ``losses`` (for accuracy: 1 if the
        record is classified correctly, else 0), before noise."""
        losses = np.asarray(losses, dtype=float)
        fixed_n = self.relation != "add_or_remove_one"
        if losses.ndim != 1 or (fixed_n and losses.shape != (self.n,)):
            raise ValueError(f"need {self.n} per-record values, got shape {losses.shape}")
        if self.metric == "accuracy":
            return float(np.mean(losses))
        if np.any(losses < 0) or not np.all(np.isfinite(np.minimum(losses, self.clip))):
            raise ValueError("per-record losses must be >= 0 (clipping to [0, B] "
                             "is what bounds the sensitivity)")
        # the clipped sum over the public n (the records' own count under a fixed n)
        return float(np.sum(np.minimum(losses, self.clip)) / self.n) + float(penalty)

    def noisy(self, value: float, multiplier: float, rng: np.random.Generator) -> float:
        """``value`` plus noise of scale ``multiplier · sensitivity``."""
        scale = multiplier * self.sensitivity
        if self.noise == "laplace":
            return float(value + rng.laplace(0.0, scale))
        return float(value + rng.normal(0.0, scale))

    def secure_scale(self, multiplier: float) -> float:
        """Integer noise scale of :meth:`secure_noisy`, in grid steps: the
        discrete Gaussian's ``z·(m + 1)`` (its Rényi divergences at most the
        continuous Gaussian's, Canonne et al. 2020), the discrete Laplace's
        :func:`dpcd.privacy.secure.laplace_scale` (at most the continuous
        Laplace's at every order of the RDP accountant)."""
        steps = secure.RESOLUTION + 1
        if self.noise == "laplace":
            return secure.laplace_scale(float(multiplier), steps)
        return float(multiplier) * steps

    def secure_noisy(self, losses, penalty: float, multiplier: float) -> float:
        """The secure noisy score: the data's part of :meth:`value` (the
        clipped mean, or the accuracy) rounded to the grid ``γ = sensitivity/m``
        (``m`` = :data:`dpcd.privacy.secure.RESOLUTION`; it moves by at most
        ``m + 1`` steps between neighbours, as in docs/secure_noise.md), plus
        exact integer noise of :meth:`secure_scale` from the keystream, times
        ``γ``; then the penalty of the released model (post-processing)."""
        secure.check_grid(self.n)
        grid = self.sensitivity / secure.RESOLUTION
        q = float(secure.round_to_grid(self.value(losses), grid))
        draw = secure.discrete_laplace if self.noise == "laplace" else secure.discrete_gaussian
        k = float(draw(self.secure_scale(multiplier), 1)[0])
        return grid * (q + k) + float(penalty)


# ------------------------------------------------------------------ the workflow's problem
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
        return ScoreMechanism("last_objective", "loss", noise, problem.n_samples, b,
                              clip_from_data, relation)
    if problem.X_val is None:
        raise ValueError("select_by: validation needs a variant with a validation split")
    if problem.loss == "squares":
        b = 1.0 if clip is None else float(clip)
        return ScoreMechanism("validation", "squared_error", noise, len(problem.y_val), b,
                              clip_from_data, relation)
    return ScoreMechanism("validation", "accuracy", noise, len(problem.y_val),
                          relation=relation)


def score_value(problem, score, w):
    """The exact score of the final iterate ``w`` (before noise). A diverged
    model's losses count as B and its penalty as infinite (never selected
    over a finite one); the sensitivity is unchanged."""
    return score.value(*score_terms(problem, score, w))


def score_terms(problem, score, w):
    """The per-record values and the penalty :func:`score_value` is made of
    (what :meth:`ScoreMechanism.secure_noisy` takes)."""
    w = np.asarray(w, dtype=np.float64)
    if score.metric == "accuracy":
        margin = np.asarray(problem.X_val @ w).ravel()
        return np.where(margin >= 0, 1.0, -1.0) == problem.y_val, 0.0
    if score.metric == "squared_error":
        r = np.asarray(problem.X_val @ w).ravel() - problem.y_val
        losses = r * r
    else:
        losses = problem.datafit.loss(problem.y, np.asarray(problem.X @ w).ravel())
    losses = np.where(np.isnan(losses), score.clip, losses)
    penalty = 0.0
    if score.metric == "loss":
        penalty = float(problem.penalty.value(w)) if np.all(np.isfinite(w)) else math.inf
    return losses, penalty


# ------------------------------------------------------------------ a fitted estimator
def _penalty(est, w):
    alpha, kind = float(est.alpha), est.penalty
    if kind == "none":
        return 0.0
    l1, l2 = float(np.abs(w).sum()), 0.5 * float(w @ w)
    if kind == "l1":
        return alpha * l1
    if kind == "l2":
        return alpha * l2
    r = float(est.l1_ratio)
    return alpha * (r * l1 + (1 - r) * l2)


def candidate_values(est, X, y, metric):
    """Per-record values of the score of fitted ``est`` on (X, y), and the
    penalty term (last objective only): the loss dpcd's estimator minimises
    (½ r² for the regressor, logistic for the classifier), 0/1 correctness
    (accuracy) or the squared error."""
    if metric == "accuracy":
        return (est.predict(X) == y).astype(float), 0.0
    if is_classifier(est):
        margin = est.decision_function(X) * np.where(y == est.classes_[1], 1.0, -1.0)
        losses = (np.maximum(0.0, 1.0 - margin) if est.loss == "hinge"
                  else np.logaddexp(0.0, -margin))
    else:
        r = est.predict(X) - y
        losses = r * r if metric == "squared_error" else 0.5 * r * r
    if metric != "loss":
        return losses, 0.0
    w = np.append(np.ravel(est.coef_), np.ravel(est.intercept_)[:1]) if est.fit_intercept \
        else np.ravel(est.coef_)
    return losses, _penalty(est, w)


__all__ = ["DEFAULT_SCORE_CLIP", "METRICS", "SCORE_NOISES", "SELECT_BY", "ScoreMechanism",
           "candidate_values", "default_score_clip", "score_mechanism", "score_terms",
           "score_value"]
