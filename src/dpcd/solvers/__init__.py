"""Solvers: numba kernels for DP-CD, DP-GCD, DP-SGD, DP-SCD and a non-private reference.

Every solver takes a datafit and a penalty from :mod:`dpcd.problems` and
returns a :class:`SolverResult`. Each solver's module is imported when its
name is first read: a job loads the kernels of the solvers it runs, not all.
"""
from typing import TYPE_CHECKING

from dpcd.lazy import lazy_package

if TYPE_CHECKING:  # what the names are (readers, the API docs): imported on first read
    from dpcd.solvers.base import SolverResult
    from dpcd.solvers.dp_cd import dp_cd
    from dpcd.solvers.dp_gcd import dp_gcd
    from dpcd.solvers.dp_scd import dp_scd, scd
    from dpcd.solvers.dp_sgd import dp_sgd, dp_sgd_many
    from dpcd.solvers.reference import reference_hinge, reference_optimum, reference_solve

_MODULES = {
    "dpcd.solvers.base": ("SolverResult",),
    "dpcd.solvers.dp_cd": ("dp_cd",),
    "dpcd.solvers.dp_gcd": ("dp_gcd",),
    "dpcd.solvers.dp_scd": ("dp_scd", "scd"),
    "dpcd.solvers.dp_sgd": ("dp_sgd", "dp_sgd_many"),
    "dpcd.solvers.reference": ("reference_hinge", "reference_optimum", "reference_solve"),
}
lazy_package(__name__, {name: module for module, names in _MODULES.items() for name in names})

__all__ = ["SolverResult", "dp_cd", "dp_gcd", "dp_scd", "dp_sgd", "dp_sgd_many",
           "reference_hinge", "reference_optimum", "reference_solve", "scd"]
