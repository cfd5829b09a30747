# Stage 4a: the noise of every configuration of each private solver entry's
# grid, calibrated once into the shared calibration cache (dpcd.privacy.cache)
# before its solve jobs run, which then only read it. It needs the training
# shape only: it runs beside the reference solve and the kernels' warm-up.
# Its params are keys of every solve spec of the entry, so it reruns only with
# a change that reruns its solve jobs too (a new event: only that one computed).


rule calibrate:
    input:
        smoothness=smoothness_path,
    output:
        "results/calibrated/{experiment}/{solver}.json",
    log:
        "results/logs/calibrate/{experiment}/{solver}.log",
    benchmark:
        "results/benchmarks/calibrate/{experiment}/{solver}.tsv"
    priority: sweep_priority
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.calibrate_spec(w.experiment, w.solver)),
    shell:
        "dpcd calibrate --spec {params.spec:q} --smoothness {input.smoothness}"
        " --out {output} 2> {log}"
