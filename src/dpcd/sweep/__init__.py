"""Hyperparameter sweeps: grids, chunks, many configurations in one process
(their identities and seeds: :mod:`dpcd.streams`)."""

from dpcd.sweep.grid import configurations, expand_grid
from dpcd.sweep.run import chunk_of, run_chunk

__all__ = [
    "chunk_of",
    "configurations",
    "expand_grid",
    "run_chunk",
]
