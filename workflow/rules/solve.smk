# Stage 4: a non-private reference solve for F*, then the solver sweeps. A solve
# job writes its MLflow runs to a file; the experiment's aggregate job ingests them.
# The {stage} of a solve job is empty for search: grid (the paths of finished
# workdirs) and "screen/", "refine/" or "confirm/" for search: staged, whose
# select rule keeps the best few after the screen (and after the refine, with
# search_stride > 1) for the next stage; the confirm runs the seeds after the
# first and reuses the first seed's runs of the stages its select ranked. The
# fresh-seed stage, after the aggregation, has its own rules (fresh.smk).


# The kernels compile once, before the jobs that run them, one job per kernel
# family (dpcd.algorithms.warmup): a solve job waits only for its solvers'
# families, so a config compiles only those, and adding or removing an
# experiment changes no other job's inputs. The reference stage's family goes
# first, so the reference jobs run while the solvers' families compile, one
# at a time (dpcd warmup locks the numba cache: numba/numba#4807).
rule warmup_reference:
    output:
        "results/.numba_cache/warmup_reference.done",
    log:
        "results/logs/warmup_numba/warmup_reference.log",
    benchmark:
        "results/benchmarks/warmup_numba/warmup_reference.tsv"
    priority: WARMUP_PRIORITY
    conda:
        "../../envs/dpcd.yaml"
    shell:
        "dpcd warmup --families reference --out {output} 2> {log}"


# Its own rule, not a family of warmup_numba's: `snakemake --until warmup_numba`
# stops short of a rule's jobs that need a job of the same rule ("Out of jobs
# ready to be started", Snakemake 9.27).
ruleorder: warmup_reference > warmup_numba


rule warmup_numba:
    input:
        "results/.numba_cache/warmup_reference.done",
    output:
        "results/.numba_cache/warmup_{family}.done",
    log:
        "results/logs/warmup_numba/warmup_{family}.log",
    benchmark:
        "results/benchmarks/warmup_numba/warmup_{family}.tsv"
    priority: WARMUP_PRIORITY
    conda:
        "../../envs/dpcd.yaml"
    shell:
        "dpcd warmup --families {wildcards.family} --out {output} 2> {log}"


rule reference:
    input:
        data=processed_path,
        smoothness=smoothness_path,
        warmup="results/.numba_cache/warmup_reference.done",
    output:
        "results/reference/{experiment}.json",
    log:
        "results/logs/reference/{experiment}.log",
    benchmark:
        "results/benchmarks/reference/{experiment}.tsv"
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        problem=problem_params,
    shell:
        "dpcd reference --data {input.data} --problem {params.problem:q}"
        " --out {output} 2> {log}"


rule solve:
    input:
        data=processed_path,
        smoothness=smoothness_path,
        private_smoothness=private_smoothness_inputs,
        reference="results/reference/{experiment}.json",
        warmup=warmup_inputs,
        calibration=calibration_input,
        selection=selection_input,
        reused=reused_runs,  # read from the spec (no option: the commands of finished jobs)
    output:
        runs="results/runs/{experiment}/{solver}/{stage}chunk{chunk}.parquet",
        mlflow_runs="results/runs/{experiment}/{solver}/{stage}chunk{chunk}.mlflow.jsonl.gz",
        timing="results/runs/{experiment}/{solver}/{stage}chunk{chunk}.timing.json",
    log:
        "results/logs/solve/{experiment}/{solver}/{stage}chunk{chunk}.log",
    benchmark:
        "results/benchmarks/solve/{experiment}/{solver}/{stage}chunk{chunk}.tsv"
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=solve_params,
    shell:
        "dpcd solve --spec {params.spec:q} --chunk {wildcards.chunk}"
        " --data {input.data} --smoothness {input.smoothness}"
        " --private-smoothness={input.private_smoothness}"
        " --reference {input.reference} --mlflow-runs {output.mlflow_runs}"
        " --out {output.runs} --timing {output.timing} 2> {log}"


rule select:
    input:
        runs=selected_results,
    output:
        "results/selection/{experiment}/{after}.csv",
    log:
        "results/logs/select/{experiment}/{after}.log",
    benchmark:
        "results/benchmarks/select/{experiment}/{after}.tsv"
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.select_spec(w.experiment, w.after)),
    shell:
        "dpcd select --spec {params.spec:q} --runs {input.runs} --out {output} 2> {log}"
