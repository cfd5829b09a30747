# Stage 4: a non-private reference solve for F*, then the solver sweeps.


rule warmup_numba:
    output:
        "results/.numba_cache/warmup.done",
    log:
        "results/logs/warmup_numba/warmup.log",
    benchmark:
        "results/benchmarks/warmup_numba/warmup.tsv"
    conda:
        "../../envs/dpcd.yaml"
    shell:
        "dpcd warmup --out {output} 2> {log}"


rule reference:
    input:
        data=processed_path,
        smoothness=smoothness_path,
        warmup="results/.numba_cache/warmup.done",
    output:
        "results/reference/{experiment}.json",
    log:
        "results/logs/reference/{experiment}.log",
    benchmark:
        "results/benchmarks/reference/{experiment}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        problem=problem_params,
    shell:
        "dpcd reference --data {input.data} --problem {params.problem:q}"
        " --out {output} 2> {log}"


rule mlflow_experiment:
    output:
        "results/mlflow/{experiment}.json",
    log:
        "results/logs/mlflow_experiment/{experiment}.log",
    benchmark:
        "results/benchmarks/mlflow_experiment/{experiment}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        name=mlflow_experiment_name,
        # another tracking store (e.g. a shared server) reruns the tracked stages
        tracking_uri=os.environ.get("MLFLOW_TRACKING_URI"),
    shell:
        "dpcd track --experiment {params.name:q} --out {output} 2> {log}"


rule solve:
    input:
        data=processed_path,
        smoothness=smoothness_path,
        private_smoothness=private_smoothness_inputs,
        reference="results/reference/{experiment}.json",
        mlflow="results/mlflow/{experiment}.json",
        warmup="results/.numba_cache/warmup.done",
    output:
        runs="results/runs/{experiment}/{solver}/chunk{chunk}.parquet",
        timing="results/runs/{experiment}/{solver}/chunk{chunk}.timing.json",
    log:
        "results/logs/solve/{experiment}/{solver}/chunk{chunk}.log",
    benchmark:
        "results/benchmarks/solve/{experiment}/{solver}/chunk{chunk}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=solve_params,
    shell:
        "dpcd solve --spec {params.spec:q} --chunk {wildcards.chunk}"
        " --data {input.data} --smoothness {input.smoothness}"
        " --private-smoothness={input.private_smoothness}"
        " --reference {input.reference} --mlflow {input.mlflow}"
        " --out {output.runs} --timing {output.timing} 2> {log}"
