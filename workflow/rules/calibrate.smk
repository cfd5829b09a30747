# Stage 4a: the noise of every configuration of a private solver entry's grid,
# calibrated into the shared calibration cache (dpcd.privacy.cache) before its
# solve jobs run, which then only read it. It needs the training shape only:
# it runs beside the reference solves and the kernels' warm-up. Its output is
# named by what the events depend on (PLAN.calibration_path): entries that
# calibrate alike on the same data share one job, and an edit that changes the
# events makes a new job (its old events read from the cache) and reruns only
# the solve jobs whose events changed.


rule calibrate:
    input:
        "results/smoothness/{dataset}/{variant}/{loss}.json",
    output:
        "results/calibrated/{dataset}/{variant}/{loss}/{calibration}.json",
    log:
        "results/logs/calibrate/{dataset}/{variant}/{loss}/{calibration}.log",
    benchmark:
        "results/benchmarks/calibrate/{dataset}/{variant}/{loss}/{calibration}.tsv"
    priority: WARMUP_PRIORITY  # it gates solve jobs, as the warm-up does
    conda:
        "../../envs/dpcd.yaml"
    params:
        spec=lambda w: _json(PLAN.calibrate_spec(w.calibration)),
    shell:
        "dpcd calibrate --spec {params.spec:q} --smoothness {input}"
        " --out {output} 2> {log}"
