"""Hyperparameter sweeps: grids, chunks, seeds, many configurations in one process."""

from dpcd.sweep.grid import chunk_of, config_id, configurations, expand_grid, run_seed
from dpcd.sweep.run import run_chunk

__all__ = [
    "chunk_of",
    "config_id",
    "configurations",
    "expand_grid",
    "run_chunk",
    "run_seed",
]
