"""Hyperparameter sweeps: grids, chunks, many configurations in one process
(their identities and seeds: :mod:`dpcd.streams`).

Each name's module is imported when the name is first read: a job that reads
a problem or a grid (the reference, smoothness and calibrate jobs) does not
import the runner and its tables (pandas)."""
from typing import TYPE_CHECKING

from dpcd.lazy import lazy_names

if TYPE_CHECKING:  # what the names are (readers, the API docs): imported on first read
    from dpcd.sweep.grid import configurations, expand_grid
    from dpcd.sweep.run import chunk_of, run_chunk

__getattr__ = lazy_names(__name__, {"configurations": "dpcd.sweep.grid",
                                    "expand_grid": "dpcd.sweep.grid",
                                    "chunk_of": "dpcd.sweep.run",
                                    "run_chunk": "dpcd.sweep.run"})

__all__ = [
    "chunk_of",
    "configurations",
    "expand_grid",
    "run_chunk",
]
