"""Problems: datafits, penalties, prox operators, smoothness constants, objective.

Datafits and penalties are plain Python classes that plug into every solver of
:mod:`dpcd.solvers` through an integer ``code`` (and penalty ``params``) on
which the numba kernels dispatch.
"""
from typing import TYPE_CHECKING

from dpcd.lazy import lazy_names

if TYPE_CHECKING:  # what the names are (readers, the API docs): imported on first read
    from dpcd.problems.base import (
        LOSSES,
        PENALTIES,
        check_smoothness,
        duality_gap,
        kkt_violation,
        lambda_max,
        make_problem,
        objective,
        prox_grad_mapping_norm,
    )
    from dpcd.problems.datafits import BaseDatafit, Hinge, Logistic, Squares, require_smooth
    from dpcd.problems.penalties import L1, L2, BasePenalty, ElasticNet, NoPenalty

_MODULES = {
    "dpcd.problems.base": ("LOSSES", "PENALTIES", "check_smoothness", "duality_gap",
                           "kkt_violation", "lambda_max", "make_problem", "objective",
                           "prox_grad_mapping_norm"),
    "dpcd.problems.datafits": ("BaseDatafit", "Hinge", "Logistic", "Squares", "require_smooth"),
    "dpcd.problems.penalties": ("L1", "L2", "BasePenalty", "ElasticNet", "NoPenalty"),
}
__getattr__ = lazy_names(__name__, {name: module for module, names in _MODULES.items()
                                    for name in names})

__all__ = [
    "BaseDatafit",
    "BasePenalty",
    "ElasticNet",
    "Hinge",
    "L1",
    "L2",
    "LOSSES",
    "Logistic",
    "NoPenalty",
    "PENALTIES",
    "Squares",
    "check_smoothness",
    "duality_gap",
    "kkt_violation",
    "lambda_max",
    "make_problem",
    "objective",
    "prox_grad_mapping_norm",
    "require_smooth",
]
