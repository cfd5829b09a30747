# Stage 5b (report.fresh_seeds > 0): the solve stage "fresh", after the
# aggregation, re-runs every selected configuration on that many new seeds (a
# new private release each); the fresh rules put both numbers side by side.
# Its plan: dpcd.plan.fresh; its entry points: dpcd.stages.fresh (and solve).


# A job re-runs a chunk of the cells its experiment's table selected, across
# all its solvers (dpcd.plan.fresh: a cell's re-runs are often shorter than a
# job's start-up).
rule fresh_solve:
    input:
        data=processed_path,
        smoothness=smoothness_path,
        reference="results/reference/{experiment}.json",
        warmup=warmup_inputs,
        selection="results/tables/{experiment}.csv",
    output:
        runs="results/fresh/{experiment}/chunk{chunk}.parquet",
        mlflow_runs="results/fresh/{experiment}/chunk{chunk}.mlflow.jsonl.gz",
        timing="results/fresh/{experiment}/chunk{chunk}.timing.json",
    log:
        "results/logs/fresh_solve/{experiment}/chunk{chunk}.log",
    benchmark:
        "results/benchmarks/fresh_solve/{experiment}/chunk{chunk}.tsv"
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.fresh_solve_spec(w.experiment)),
    shell:
        "dpcd solve --spec {params.spec:q} --chunk {wildcards.chunk}"
        " --data {input.data} --smoothness {input.smoothness}"
        " --reference {input.reference} --mlflow-runs {output.mlflow_runs}"
        " --out {output.runs} --timing {output.timing} 2> {log}"


# Every experiment's fresh solve jobs' runs beside its selection; one job for
# all (each would pay a second of imports for less work). Then, beside the jobs that read those tables, their curves, and
# their MLflow runs ingested into each experiment's parent run with the tables
# and curves as its artifacts.
rule fresh:
    input:
        **PLAN.fresh_inputs(),
    output:
        **fresh_outputs(),
    log:
        "results/logs/fresh.log",
    benchmark:
        "results/benchmarks/fresh.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.fresh_spec()),
        experiments=" ".join(PLAN.fresh_experiments()),
    shell:
        "dpcd fresh --spec {params.spec:q} --experiments {params.experiments}"
        " --runs {input.runs} --selection {input.selection} --out {output.fresh_runs}"
        " --csv {output.fresh_csv} --md {output.fresh_md} 2> {log}"


rule fresh_report:
    input:
        **PLAN.fresh_report_inputs(),
    output:
        **fresh_report_outputs(),
    log:
        "results/logs/fresh_report.log",
    benchmark:
        "results/benchmarks/fresh_report.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.fresh_spec()),
        experiments=" ".join(PLAN.fresh_experiments()),
        tracking_uri=os.environ.get("MLFLOW_TRACKING_URI"),
    shell:
        "dpcd fresh-report --spec {params.spec:q} --experiments {params.experiments}"
        " --mlflow-runs {input.mlflow_runs} --runs {input.fresh_runs}"
        " --csv {input.fresh_csv} --md {input.fresh_md} --selection {input.selection}"
        " --mlflow-info {input.mlflow} --mlflow {output.mlflow}"
        " --figure {output.fresh_figure} --data {input.data} 2> {log}"
