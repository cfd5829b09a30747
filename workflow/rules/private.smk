# search: private: one solve job per solver entry and selection seed
# (chunk k = selection seed k) runs the private searches of every epsilon and
# passes: K candidates drawn from the grid, each a private run with a noisy
# score, the best released under repeat-and-select accounting. Its table holds
# the released runs; its MLflow runs file every candidate (role=candidate) and
# the released runs (role=released), which the aggregate job ingests.


rule solve_private:
    input:
        data=processed_path,
        smoothness=smoothness_path,
        reference="results/reference/{experiment}.json",
        warmup=warmup_inputs,
    output:
        runs="results/runs/{experiment}/{solver}/private/chunk{chunk}.parquet",
        mlflow_runs="results/runs/{experiment}/{solver}/private/chunk{chunk}.mlflow.jsonl.gz",
        timing="results/runs/{experiment}/{solver}/private/chunk{chunk}.timing.json",
    log:
        "results/logs/solve/{experiment}/{solver}/private/chunk{chunk}.log",
    benchmark:
        "results/benchmarks/solve/{experiment}/{solver}/private/chunk{chunk}.tsv"
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.solve_spec(w.experiment, w.solver, "private")),
    shell:
        "dpcd solve-private --spec {params.spec:q} --chunk {wildcards.chunk}"
        " --data {input.data} --smoothness {input.smoothness}"
        " --reference {input.reference} --mlflow-runs {output.mlflow_runs}"
        " --out {output.runs} --timing {output.timing} 2> {log}"


# report.private_baseline: the released models beside the
# same experiments tuned on the data in another working directory (its fresh
# tables and runs): the paired cells, which conclusions survive, one figure per
# paper, and the section the summary appends.
if PLAN.private_baseline():

    rule private_compare:
        input:
            **PLAN.private_compare_inputs(),
        output:
            csv=report(
                "results/private_tuning.csv",
                caption="../report/private_tuning.rst",
                category="Private tuning",
            ),
            conclusions=report(
                "results/private_tuning_conclusions.csv",
                caption="../report/private_tuning.rst",
                category="Private tuning",
            ),
            md=report(
                "results/private_tuning.md",
                caption="../report/private_tuning.rst",
                category="Private tuning",
            ),
            figures=report(
                directory("results/figures/private_tuning"),
                patterns=["{name}.png"],
                caption="../report/private_tuning.rst",
                category="Private tuning",
            ),
        log:
            "results/logs/private_compare.log",
        benchmark:
            "results/benchmarks/private_compare.tsv"
        conda:
            "../../envs/dpcd.yaml"
        params:
            baseline=PLAN.private_baseline().rstrip("/"),
        shell:
            "dpcd private-compare --baseline {params.baseline}/results/tables/fresh"
            " --baseline-runs {params.baseline}/results/fresh --private results/tables"
            " --private-runs results/runs --section {output.md} --out {output.csv}"
            " --figures {output.figures} 2> {log}"
