# Data stage: generate or download each configured dataset, then preprocess it
# into results/data/processed/{dataset}/{variant}.npz (see `dpcd data list`).
#
# Where files come from (mirror, shared cache, pin file) is passed through the
# environment, not in params: it never changes the bytes (every file is checksummed),
# so switching an offline machine to a mirror must not rerun anything.
# The helpers these rules call are in data_common.smk.
rule data_generate:
    output:
        "results/data/raw/{dataset}/generated.npz",
    log:
        "results/logs/data_generate/{dataset}.log",
    benchmark:
        "results/benchmarks/data_generate/{dataset}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=data_generate_spec,
    shell:
        "dpcd data generate --dataset {wildcards.dataset} --spec {params.spec:q}"
        " --out {output} > {log} 2>&1"


rule data_download:
    output:
        "results/data/raw/{dataset}/manifest.json",
    log:
        "results/logs/data_download/{dataset}.log",
    benchmark:
        "results/benchmarks/data_download/{dataset}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=data_download_spec,
    shell:
        "dpcd data download --dataset {wildcards.dataset} --spec {params.spec:q}"
        " --out-dir results/data/raw/{wildcards.dataset} > {log} 2>&1"


rule data_preprocess:
    input:
        data_raw_input,
    output:
        "results/data/processed/{dataset}/{variant}.npz",
    log:
        "results/logs/data_preprocess/{dataset}/{variant}.log",
    benchmark:
        "results/benchmarks/data_preprocess/{dataset}/{variant}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=data_preprocess_spec,
    shell:
        "dpcd data preprocess --dataset {wildcards.dataset} --spec {params.spec:q}"
        " --variant {wildcards.variant} --raw-dir results/data/raw/{wildcards.dataset}"
        " --out {output} > {log} 2>&1"
