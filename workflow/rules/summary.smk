# Across experiments: the regularisation table (experiments' alpha_grid) and
# the summary (Tables 2 and 3 beside the published cells, the search, the
# overhead and private tuning sections).


# Stage 5c: best relative error per solver against lambda (experiments' alpha_grid).
rule lambda_table:
    input:
        tables=expand(
            "results/tables/{experiment}.csv", experiment=lambda_experiments()
        ),
        fresh=fresh_tables(lambda_experiments()),
        references=expand(
            "results/reference/{experiment}.json", experiment=lambda_experiments()
        ),
    output:
        csv=report(
            "results/tables/lambda/sensitivity.csv",
            caption="../report/lambda_sensitivity.rst",
            category="Regularisation",
        ),
        figure=report(
            "results/figures/lambda_sensitivity.png",
            caption="../report/lambda_sensitivity.rst",
            category="Regularisation",
        ),
    log:
        "results/logs/lambda_table.log",
    benchmark:
        "results/benchmarks/lambda_table.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        experiments=" ".join(lambda_experiments()),
        groups=lambda wildcards: _json(LAMBDA_GROUPS),
        fresh=lambda wildcards, input: (
            f"--fresh-tables {' '.join(input.fresh)}" if input.fresh else ""
        ),
    shell:
        "dpcd lambda-table --experiments {params.experiments} --tables {input.tables}"
        " --references {input.references} {params.fresh} --groups {params.groups:q}"
        " --csv {output.csv} --figure {output.figure} 2> {log}"


# Stage 6: Tables 2 and 3 across experiments, next to the published cells if
# config report.published names them; logged to the MLflow experiment <prefix>summary.
rule summary:
    input:
        tables=expand(
            "results/tables/{experiment}.csv", experiment=sorted(config["experiments"])
        ),
        published=optional(workflow_path(config["report"]["published"])),
        timings=PLAN.job_paths(".timing.json"),
        ingests=expand(
            "results/mlflow/{experiment}.json",
            experiment=sorted(config["experiments"]),
        ),
        fresh=fresh_tables(),
        lambdas=lambda_outputs(),
        private_compare=[
            out for out in PLAN.private_compare_outputs() if out.endswith(".md")
        ],
    output:
        csv=report(
            "results/summary.csv", caption="../report/summary.rst", category="Summary"
        ),
        md=report(
            "results/summary.md", caption="../report/summary.rst", category="Summary"
        ),
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
        mlflow_experiment=EXPERIMENT_PREFIX + "summary",
        fresh=lambda wildcards, input: (
            f"--fresh-tables {' '.join(input.fresh)}" if input.fresh else ""
        ),
        lambdas=lambda wildcards, input: (
            f"--lambda-table {input.lambdas}" if input.lambdas else ""
        ),
        sections=lambda wildcards, input: (
            f"--sections {input.private_compare}" if input.private_compare else ""
        ),
    shell:
        "dpcd summary --experiments {params.experiments} --tables {input.tables}"
        " {params.published} {params.fresh} {params.lambdas} {params.sections}"
        " --mlflow-experiment {params.mlflow_experiment:q}"
        " --timings {input.timings} --ingests {input.ingests}"
        " --csv {output.csv} --md {output.md} 2> {log}"
