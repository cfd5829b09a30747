"""Solvers: numba kernels for DP-CD, DP-SGD and a non-private reference."""
from dpcd.solvers.base import SolverResult
from dpcd.solvers.dp_cd import coordinate_clip, dp_cd
from dpcd.solvers.reference import reference_solve

__all__ = ["SolverResult", "coordinate_clip", "dp_cd", "reference_solve"]
