# Stage 5: best configuration per solver and passes, tables, figures; the MLflow
# experiment, its solve jobs' runs ingested (the one writer of its child runs)
# and the tables and figures as artifacts of its parent run. With
# report.fresh_seeds > 0, the same job then re-runs every selected configuration
# on that many new seeds (a new private release each) and writes both numbers
# side by side: one job per experiment, not two, as each pays seconds of the
# same imports (MLflow 1.4 s, seaborn with matplotlib 0.8 s).


# The aggregate rule's fresh-seed arguments, when report.fresh_seeds > 0.
FRESH_ARGUMENTS = (
    " --fresh-spec {params.fresh:q} --data {input.data} --smoothness {input.smoothness}"
    " --fresh-out {output.fresh_runs} --fresh-csv {output.fresh_csv}"
    " --fresh-md {output.fresh_md} --fresh-figure {output.fresh_figure}"
)


rule aggregate:
    input:
        runs=chunk_results,
        mlflow_runs=chunk_mlflow_runs,
        reference="results/reference/{experiment}.json",
        # the fresh re-runs' problem and kernels
        data=processed_path,
        smoothness=smoothness_path,
        warmup="results/.numba_cache/warmup.done",
    output:
        **fresh_outputs(),
        mlflow="results/mlflow/{experiment}.json",
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
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.aggregate_spec(w.experiment)),
        name=lambda w: config["mlflow"]["experiment_prefix"] + w.experiment,
        # another tracking store (e.g. a shared server) reruns the tracked stages
        tracking_uri=os.environ.get("MLFLOW_TRACKING_URI"),
        fresh=lambda w: _json(PLAN.fresh_spec(w.experiment)) if PLAN.fresh_seeds else "",
    shell:
        "dpcd aggregate --experiment {wildcards.experiment} --spec {params.spec:q}"
        " --runs {input.runs} --mlflow-runs {input.mlflow_runs}"
        " --mlflow-experiment {params.name:q}"
        " --reference {input.reference} --mlflow {output.mlflow}"
        " --csv {output.csv} --md {output.md} --figure-passes {output.rel_error}"
        " --figure-time {output.rel_error_time} --figure-solution {output.solution}"
        + (FRESH_ARGUMENTS if PLAN.fresh_seeds else "")
        + " 2> {log}"
