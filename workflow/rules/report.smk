# Stage 7: a paper's cross-experiment figures (config report.figures) and its
# report page with the tuning cost and the values the paper states, logged to
# the MLflow experiment <prefix>paper. Only when report.figures is set.
from types import SimpleNamespace


def paper_figures():
    return config["report"].get("figures") or {}


def paper_figure_runs(wildcards):
    """Solve tables of the experiments the figures draw from (curves, grids)."""
    names = sorted(
        {e for spec in paper_figures().values() for e in spec["experiments"]}
    )
    for name in names:
        _experiment(name)
    return [
        path
        for name in names
        for path in chunk_results(SimpleNamespace(experiment=name))
    ]


def paper_published_input():
    path = config["report"].get("published_figures")
    return [path] if path else []


rule paper_report:
    input:
        tables=expand(
            "results/tables/{experiment}.csv", experiment=sorted(config["experiments"])
        ),
        runs=paper_figure_runs,
        published=paper_published_input(),
    output:
        md="results/paper/report.md",
        figures=[f"results/paper/{name}.png" for name in sorted(paper_figures())],
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
        mlflow_experiment=config["mlflow"]["experiment_prefix"] + "paper",
    shell:
        "dpcd paper-report --experiments {params.experiments} --tables {input.tables}"
        " --runs {input.runs} --figures {params.figures:q}"
        " --figure-paths {output.figures} {params.published}"
        " --mlflow-experiment {params.mlflow_experiment:q} --md {output.md} 2> {log}"
