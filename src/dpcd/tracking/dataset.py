"""A processed dataset as an MLflow dataset input: its name, digest and
source, never its data (a private dataset's rows stay out of the store)."""

import hashlib
import json

import numpy as np
from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.data.http_dataset_source import HTTPDatasetSource
from mlflow.data.meta_dataset import MetaDataset

from dpcd.data.registry import get_entry

# MLflow keeps at most 36 characters of a digest: the SHA-256's first 32 hex digits
DIGEST_CHARS = 32


def processed_dataset(path):
    """The MLflow dataset of a processed dataset file (``dpcd data preprocess``).

    Name ``<dataset key>/<variant>``; digest: the file's SHA-256 (its first 32
    hex digits); source: the first download URL of its registry entry, or
    for a generated dataset (or one named by an OpenML id) a code source whose
    tags say which generator and settings, or which registry entry.
    """
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()[:DIGEST_CHARS]
    with np.load(path, allow_pickle=False) as npz:  # only the metadata is read
        meta = json.loads(str(npz["meta_json"]))
    urls = [f["url"] for f in get_entry(meta["source"]).get("files", []) if f.get("url")]
    if urls:
        source = HTTPDatasetSource(urls[0])
    else:
        tags = {"dpcd.source": meta["source"]}
        if meta.get("generator"):
            tags["dpcd.generator"] = json.dumps(meta["generator"], sort_keys=True)
        source = CodeDatasetSource(tags)
    return MetaDataset(source, name=f"{meta['dataset']}/{meta['variant']}", digest=digest)
