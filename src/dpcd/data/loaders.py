"""Read raw dataset files as distributed, with library parsers.

Each loader takes the registry entry and the raw directory
(``results/data/raw/<dataset>/``) and returns a
:class:`~dpcd.data.preprocess.RawData` with labels already mapped to
{-1, +1} for binary tasks. Errors name the dataset, the file and the line or
column at fault.
"""

import os

import numpy as np

from .io import load_dataset
from .preprocess import RawData, check_finite, check_labels


def load_generated(entry, raw_dir):
    """Load ``generated.npz`` written by ``dpcd data generate``."""
    ds = load_dataset(os.path.join(raw_dir, "generated.npz"))
    names = [f"x{j}" for j in range(ds.X.shape[1])]
    return RawData(
        X=ds.X,
        y=ds.y,
        task=entry["task"],
        feature_names=names,
        notes={"generator": ds.meta.get("generator", {})},
    )


LOADERS = {"generated": load_generated}


def load_raw(entry, raw_dir, files=None):
    """Load the raw files of registry ``entry`` from ``raw_dir``.

    Parameters
    ----------
    entry : dict
        Registry entry (with ``name``).
    raw_dir : str
        Directory holding the downloaded (or generated) files.
    files : dict, optional
        ``{file name: sha256}`` recorded by the download, kept as provenance.

    Returns
    -------
    RawData
    """
    kind = "generated" if "generator" in entry else entry["loader"]
    raw = LOADERS[kind](entry, raw_dir)
    where = f"dataset {entry['name']!r}"
    check_finite(raw.X, where, raw.feature_names)
    raw.y = check_labels(raw.y, raw.task, where)
    if raw.X_test is not None:
        check_finite(raw.X_test, where + " (test file)", raw.feature_names)
        raw.y_test = check_labels(raw.y_test, raw.task, where + " (test file)")
    if files:
        raw.files = dict(files)
    return raw
