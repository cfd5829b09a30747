"""Problems: datafits, penalties, prox operators, smoothness constants, objective.

Datafits and penalties are plain Python classes that plug into every solver of
:mod:`dpcd.solvers` through an integer ``code`` (and penalty ``params``) on
which the numba kernels dispatch.
"""
from dpcd.lazy import lazy_names

_BASE = ("LOSSES", "PENALTIES", "check_smoothness", "duality_gap", "kkt_violation",
         "lambda_max", "make_problem", "objective", "prox_grad_mapping_norm")
_DATAFITS = ("BaseDatafit", "Hinge", "Logistic", "Squares", "require_smooth")
_PENALTIES = ("L1", "L2", "BasePenalty", "ElasticNet", "NoPenalty")
_NAMES = {**dict.fromkeys(_BASE, "dpcd.problems.base"),
          **dict.fromkeys(_DATAFITS, "dpcd.problems.datafits"),
          **dict.fromkeys(_PENALTIES, "dpcd.problems.penalties")}
__getattr__ = lazy_names(__name__, _NAMES)
__all__ = sorted(_NAMES)
