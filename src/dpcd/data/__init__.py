"""Datasets: registry, download, loaders, generators, preprocessing, splits.

Every stage reads processed data through :func:`load_dataset`.
"""

from .io import Dataset, load_dataset, save_dataset
from .registry import get_entry, registry

__all__ = ["Dataset", "load_dataset", "save_dataset", "get_entry", "registry"]
