# Helpers of the data stage's rules (data.smk), apart so the data stage can be
# included on its own (tests/test_data_workflow.py does).
import json
import os
import sys

# Rules call the `dpcd` console script installed beside the interpreter that
# runs Snakemake, so `.venv/bin/snakemake` works without an activated
# environment (with --sdm conda the job's environment comes first again).
os.environ.update(
    PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
)

# Registry entries that are generated from a seed rather than downloaded
# (tests/test_data_workflow.py checks this matches dpcd.data.registry).
DATA_GENERATED_SOURCES = (
    "log1",
    "log2",
    "mtp_standin",
    "sparse_binary",
    "sparse_lasso",
    "yearpredictionmsd_standin",
)

# Jobs read these from the environment (exported values win over the config).
_data_config = config.get("data") or {}
for _key, _env in (
    ("mirror", "DPCD_DATA_MIRROR"),
    ("cache", "DPCD_DATA_CACHE"),
    ("lock_file", "DPCD_DATA_LOCK_FILE"),
):
    if _data_config.get(_key) and not os.environ.get(_env):
        os.environ[_env] = str(_data_config[_key])


def data_dataset(wildcards):
    """Config entry of the requested dataset key, with a clear error if unknown."""
    if wildcards.dataset not in config["datasets"]:
        raise ValueError(
            f"unknown dataset key {wildcards.dataset!r}; "
            f"configured: {sorted(config['datasets'])}"
        )
    return config["datasets"][wildcards.dataset]


def data_generate_spec(wildcards):
    """Params of data_generate: the source and its generator settings only."""
    ds = data_dataset(wildcards)
    spec = {"source": ds["source"], "params": ds.get("params") or {}}
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def data_download_spec(wildcards):
    """Params of data_download: the registry source only."""
    spec = {"source": data_dataset(wildcards)["source"]}
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def data_preprocess_spec(wildcards):
    """Params of data_preprocess: the source and the split seed only."""
    ds = data_dataset(wildcards)
    spec = {"source": ds["source"], "split_seed": ds.get("split_seed", 0)}
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def data_raw_input(wildcards):
    """The raw stage's output for this dataset: generated file or download manifest."""
    if data_dataset(wildcards)["source"] in DATA_GENERATED_SOURCES:
        return f"results/data/raw/{wildcards.dataset}/generated.npz"
    return f"results/data/raw/{wildcards.dataset}/manifest.json"
