# Stage 7: a paper's cross-experiment figures (config report.figures) and its
# report page with the tuning cost and the values the paper states, logged to
# the MLflow experiment <prefix>paper. Only when report.figures is set.


rule paper_report:
    input:
        tables=expand(
            "results/tables/{experiment}.csv", experiment=sorted(config["experiments"])
        ),
        runs=paper_figure_runs,
        published=optional(workflow_path(config["report"].get("published_figures"))),
    output:
        md=report(
            "results/paper/report.md",
            caption="../report/paper_report.rst",
            category="Paper figures",
        ),
        figures=[
            report(
                f"results/paper/{name}.png",
                caption="../report/paper_figure.rst",
                category="Paper figures",
            )
            for name in sorted(paper_figures())
        ],
    log:
        "results/logs/paper_report.log",
    benchmark:
        "results/benchmarks/paper_report.tsv"
    conda:
        "../../envs/dpcd.yaml"
    params:
        experiments=" ".join(sorted(config["experiments"])),
        figures=lambda wildcards: _json(paper_figures()),
        published=lambda wildcards, input: (
            f"--published {input.published}" if input.published else ""
        ),
        mlflow_experiment=EXPERIMENT_PREFIX + "paper",
    shell:
        "dpcd paper-report --experiments {params.experiments} --tables {input.tables}"
        " --runs {input.runs} --figures {params.figures:q}"
        " --figure-paths {output.figures} {params.published}"
        " --mlflow-experiment {params.mlflow_experiment:q} --md {output.md} 2> {log}"
