# Stage 5: best configuration per solver and passes, tables, figures, MLflow artifacts.


rule aggregate:
    input:
        runs=chunk_results,
        reference="results/reference/{experiment}.json",
        mlflow="results/mlflow/{experiment}.json",
    output:
        csv="results/tables/{experiment}.csv",
        md="results/tables/{experiment}.md",
        rel_error=report(
            "results/figures/{experiment}_rel_error.png",
            caption="../report/rel_error.rst",
            category="Relative error",
        ),
        rel_error_time=report(
            "results/figures/{experiment}_rel_error_time.png",
            caption="../report/rel_error_time.rst",
            category="Running time",
        ),
    log:
        "results/logs/aggregate/{experiment}.log",
    benchmark:
        "results/benchmarks/aggregate/{experiment}.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=aggregate_params,
    shell:
        "dpcd aggregate --experiment {wildcards.experiment} --spec {params.spec:q}"
        " --runs {input.runs} --reference {input.reference} --mlflow {input.mlflow}"
        " --csv {output.csv} --md {output.md} --figure-passes {output.rel_error}"
        " --figure-time {output.rel_error_time} 2> {log}"
