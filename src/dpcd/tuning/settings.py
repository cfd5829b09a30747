"""The settings of a private search: the workflow's ``search_private``, the estimator's."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dpcd.tuning.calibration import check_score_fraction
from dpcd.tuning.draws import check_k_distribution
from dpcd.tuning.scores import SCORE_NOISES, SELECT_BY


@dataclass(frozen=True)
class SearchSettings:
    """Settings of a private search (the workflow's ``search_private``).

    Attributes
    ----------
    k_mean : float
        Mean number of candidates (>= 1).
    k_distribution : {"poisson", "geometric", "logarithmic", "negative_binomial"}
    shape : float, optional
        The negative binomial's shape (0 < shape < ∞); fixed by the others.
    score_fraction : float in (0, 1)
        Share of the target the score's noise alone would spend.
    select_by : {"last_objective", "validation"}
    score_noise : {"laplace", "gaussian"}
    score_clip : float, optional
        B (public); None: :func:`dpcd.tuning.scores.default_score_clip`.
    score_clip_from_data : bool
        Say True if B was chosen by looking at this data (recorded as the
        non-private input ``score_clip``).
    validation_fraction : float in (0, 1)
        ``select_by="validation"``: share of the records held out for the
        score (drawn at random, independently of the data).
    """

    k_mean: float = 10.0
    k_distribution: str = "geometric"
    shape: float | None = None
    score_fraction: float = 0.1
    select_by: str = "last_objective"
    score_noise: str = "laplace"
    score_clip: float | None = None
    score_clip_from_data: bool = False
    validation_fraction: float = 0.2

    def checked(self) -> "SearchSettings":
        """A copy with the shape resolved; ``ValueError`` naming a bad setting."""
        mean, shape = check_k_distribution(self.k_distribution, self.k_mean, self.shape)
        check_score_fraction(self.score_fraction)
        if self.select_by not in SELECT_BY:
            raise ValueError(f"select_by must be one of {', '.join(SELECT_BY)}, "
                             f"got {self.select_by!r}")
        if self.score_noise not in SCORE_NOISES:
            raise ValueError(f"score_noise must be one of "
                             f"{', '.join(SCORE_NOISES)}, got {self.score_noise!r}")
        if self.score_clip is not None and not (
                isinstance(self.score_clip, (int, float)) and 0 < self.score_clip < math.inf):
            raise ValueError(f"score_clip must be a finite number > 0 or None, "
                             f"got {self.score_clip!r}")
        if not 0 < self.validation_fraction < 1:
            raise ValueError(f"validation_fraction must be in (0, 1), "
                             f"got {self.validation_fraction!r}")
        return replace(self, k_mean=mean, shape=shape)


__all__ = ["SearchSettings"]
