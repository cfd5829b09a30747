"""Solvers: numba kernels for DP-CD, DP-GCD, DP-SGD, DP-SCD and a non-private reference.

Every solver takes a datafit and a penalty from :mod:`dpcd.problems` and
returns a :class:`SolverResult`.
"""
from dpcd.solvers.base import SolverResult
from dpcd.solvers.dp_cd import dp_cd
from dpcd.solvers.dp_gcd import dp_gcd
from dpcd.solvers.dp_scd import dp_scd, scd
from dpcd.solvers.dp_sgd import dp_sgd, dp_sgd_many
from dpcd.solvers.reference import reference_hinge, reference_optimum, reference_solve

__all__ = ["SolverResult", "dp_cd", "dp_gcd", "dp_scd", "dp_sgd", "dp_sgd_many",
           "reference_hinge", "reference_optimum", "reference_solve", "scd"]
