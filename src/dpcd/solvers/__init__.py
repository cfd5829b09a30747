"""Solvers: numba kernels for DP-CD, DP-GCD, DP-SGD, DP-SCD and a non-private reference.

Every solver takes a datafit and a penalty from :mod:`dpcd.problems` and
returns a :class:`SolverResult`. Each solver's module is imported when its
name is first read: a job loads the kernels of the solvers it runs, not all.
"""
from dpcd.lazy import lazy_package

_NAMES = {
    "SolverResult": "dpcd.solvers.base",
    "dp_cd": "dpcd.solvers.dp_cd",
    "dp_gcd": "dpcd.solvers.dp_gcd",
    "dp_scd": "dpcd.solvers.dp_scd",
    "scd": "dpcd.solvers.dp_scd",
    "dp_sgd": "dpcd.solvers.dp_sgd",
    "dp_sgd_many": "dpcd.solvers.dp_sgd",
    "reference_hinge": "dpcd.solvers.reference",
    "reference_optimum": "dpcd.solvers.reference",
    "reference_solve": "dpcd.solvers.reference",
}
lazy_package(__name__, _NAMES)
__all__ = sorted(_NAMES)
