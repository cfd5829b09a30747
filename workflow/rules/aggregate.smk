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
        solution=report(
            "results/figures/{experiment}_solution.png",
            caption="../report/solution.rst",
            category="Non-private solution",
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
        " --figure-time {output.rel_error_time} --figure-solution {output.solution}"
        " 2> {log}"


# Stage 6: Tables 2 and 3 across experiments, next to the published cells if
# config report.published names them; logged to the MLflow experiment <prefix>summary.
rule summary:
    input:
        tables=expand(
            "results/tables/{experiment}.csv", experiment=sorted(config["experiments"])
        ),
        published=published_input(),
        timings=solve_timings(),
    output:
        csv="results/summary.csv",
        md="results/summary.md",
    log:
        "results/logs/summary.log",
    benchmark:
        "results/benchmarks/summary.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        experiments=" ".join(sorted(config["experiments"])),
        published=lambda wildcards, input: (
            f"--published {input.published}" if input.published else ""
        ),
        mlflow_experiment=config["mlflow"]["experiment_prefix"] + "summary",
    shell:
        "dpcd summary --experiments {params.experiments} --tables {input.tables}"
        " {params.published} --mlflow-experiment {params.mlflow_experiment:q}"
        " --timings {input.timings}"
        " --csv {output.csv} --md {output.md} 2> {log}"
