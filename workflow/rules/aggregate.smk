# Stage 5: best configuration per solver and passes, the tables; then the
# figures, the MLflow experiment with its solve jobs' runs ingested (the one
# writer of its child runs) and the tables and figures as artifacts of its
# parent run. Two rules, so that what reads only the tables (the fresh-seed
# stage that follows, fresh.smk) waits for neither seaborn nor MLflow, and the
# table job pays for neither's imports.


rule aggregate:
    input:
        runs=chunk_results,
    output:
        csv=report(
            "results/tables/{experiment}.csv",
            caption="../report/table.rst",
            category="Tables",
        ),
        md=report(
            "results/tables/{experiment}.md",
            caption="../report/table.rst",
            category="Tables",
        ),
    log:
        "results/logs/aggregate/{experiment}.log",
    benchmark:
        "results/benchmarks/aggregate/{experiment}.tsv"
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.aggregate_spec(w.experiment)),
    shell:
        "dpcd aggregate --experiment {wildcards.experiment} --spec {params.spec:q}"
        " --runs {input.runs} --csv {output.csv} --md {output.md} 2> {log}"


rule aggregate_report:
    input:
        runs=chunk_results,
        mlflow_runs=chunk_mlflow_runs,
        reference="results/reference/{experiment}.json",
        # the runs' MLflow dataset input (its name, digest and source)
        data=processed_path,
        csv="results/tables/{experiment}.csv",
        md="results/tables/{experiment}.md",
    output:
        mlflow="results/mlflow/{experiment}.json",
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
        "results/logs/aggregate_report/{experiment}.log",
    benchmark:
        "results/benchmarks/aggregate_report/{experiment}.tsv"
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.aggregate_spec(w.experiment)),
        name=lambda w: EXPERIMENT_PREFIX + w.experiment,
        # another tracking store (e.g. a shared server) reruns the tracked stages
        tracking_uri=os.environ.get("MLFLOW_TRACKING_URI"),
    shell:
        "dpcd aggregate-report --experiment {wildcards.experiment} --spec {params.spec:q}"
        " --runs {input.runs} --mlflow-runs {input.mlflow_runs}"
        " --mlflow-experiment {params.name:q}"
        " --reference {input.reference} --data {input.data}"
        " --csv {input.csv} --md {input.md} --mlflow {output.mlflow}"
        " --figure-passes {output.rel_error} --figure-time {output.rel_error_time}"
        " --figure-solution {output.solution} 2> {log}"
