# Data stage: generate or download each configured dataset, then preprocess it
# into results/data/processed/{dataset}/{variant}.npz (see `dpcd data list`).
#
# Where files come from (mirror, shared cache, pin file) is passed on the command
# line, not in params: it never changes the bytes (every file is checksummed),
# so switching an offline machine to a mirror must not rerun anything.
import json
import os

# Registry entries that are generated from a seed rather than downloaded
# (tests/test_data_workflow.py checks this matches dpcd.data.registry).
DATA_GENERATED_SOURCES = ("log1", "log2", "sparse_lasso", "square")

_data_config = config.get("data") or {}
DATA_MIRROR = os.environ.get("DPCD_DATA_MIRROR") or _data_config.get("mirror") or ""
DATA_CACHE = os.environ.get("DPCD_DATA_CACHE") or _data_config.get("cache") or ""
DATA_LOCK_FILE = _data_config.get("lock_file") or "results/data/checksums.lock.json"


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


rule data_generate:
    output:
        "results/data/raw/{dataset}/generated.npz",
    params:
        spec=data_generate_spec,
    log:
        "results/logs/data_generate/{dataset}.log",
    benchmark:
        "results/benchmarks/data_generate/{dataset}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    shell:
        "dpcd data generate --dataset {wildcards.dataset} --spec {params.spec:q}"
        " --out {output} > {log} 2>&1"


rule data_download:
    output:
        "results/data/raw/{dataset}/manifest.json",
    params:
        spec=data_download_spec,
    log:
        "results/logs/data_download/{dataset}.log",
    benchmark:
        "results/benchmarks/data_download/{dataset}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    shell:
        "dpcd data download --dataset {wildcards.dataset} --spec {params.spec:q}"
        " --out-dir results/data/raw/{wildcards.dataset}"
        " --mirror={DATA_MIRROR:q} --cache={DATA_CACHE:q} --lock-file={DATA_LOCK_FILE:q}"
        " > {log} 2>&1"


rule data_preprocess:
    input:
        data_raw_input,
    output:
        "results/data/processed/{dataset}/{variant}.npz",
    params:
        spec=data_preprocess_spec,
    log:
        "results/logs/data_preprocess/{dataset}/{variant}.log",
    benchmark:
        "results/benchmarks/data_preprocess/{dataset}/{variant}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    shell:
        "dpcd data preprocess --dataset {wildcards.dataset} --spec {params.spec:q}"
        " --variant {wildcards.variant} --raw-dir results/data/raw/{wildcards.dataset}"
        " --out {output} > {log} 2>&1"
