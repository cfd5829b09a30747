# Stage 3: coordinate-wise smoothness constants, exact and private (DP-CD App. F).


rule smoothness:
    input:
        "results/data/processed/{dataset}/{variant}.npz",
    output:
        "results/smoothness/{dataset}/{variant}/{loss}.json",
    log:
        "results/logs/smoothness/{dataset}/{variant}/{loss}.log",
    benchmark:
        "results/benchmarks/smoothness/{dataset}/{variant}/{loss}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    shell:
        "dpcd smoothness --data {input} --loss {wildcards.loss} --out {output} 2> {log}"


rule private_smoothness:
    input:
        processed_path,
    output:
        "results/smoothness/private/{experiment}.json",
    log:
        "results/logs/private_smoothness/{experiment}.log",
    benchmark:
        "results/benchmarks/private_smoothness/{experiment}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.private_smoothness_spec(w.experiment)),
    shell:
        "dpcd private-smoothness --data {input}"
        " --spec {params.spec:q} --out {output} 2> {log}"
