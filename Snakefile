# dpcd: datasets -> preprocessing -> smoothness -> solver sweeps -> tables, figures, MLflow.
# Set-up only: configuration, validation and the rules of each stage.
import os

from snakemake.utils import min_version

min_version("9.17")  # callable rule priorities


# The embedded default, unless a --configfile was given: Snakemake would merge
# the two recursively and leak default solvers into another configuration.
# Every config file names its datasets (a required key); a --config alone (the
# cluster profile's chunk_core_hours=2 search=grid) does not. The repository's
# files are found from the workflow's directory, so `snakemake -d DIR` runs
# any config in a working directory of its own.
DEFAULT_CONFIGFILE = os.path.join(workflow.basedir, "config", "config.yaml")
if "datasets" not in config:
    # Snakemake's own message names neither the file nor the line.
    import yaml

    try:
        _default = yaml.safe_load(open(DEFAULT_CONFIGFILE))
    except yaml.YAMLError as exc:
        raise ValueError(f"config/config.yaml: not valid YAML: {exc}") from None
    if not isinstance(_default, dict):
        raise ValueError(
            f"config/config.yaml: the top level must be a mapping of keys, "
            f"got {type(_default).__name__}"
        )

    configfile: DEFAULT_CONFIGFILE


include: "workflow/rules/common.smk"
include: "workflow/rules/data_common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/smoothness.smk"
include: "workflow/rules/calibrate.smk"
include: "workflow/rules/solve.smk"
include: "workflow/rules/private.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/fresh.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/report.smk"


# On a cluster, the rules of seconds run beside Snakemake on the submitting host
# rather than pay a cluster job each (a Snakemake of its own, then the status
# polling: docs/operations.md, "What a job costs on a cluster"); downloads too,
# as compute nodes often have no internet. The nodes run the solvers, the
# reference, the numba warm-up (compiled for their CPUs) and the aggregation.
localrules:
    all,
    data_download,
    data_generate,
    data_preprocess,
    smoothness,
    private_smoothness,
    select,
    fresh,
    fresh_report,
    lambda_table,
    summary,
    paper_report,


rule all:
    default_target: True
    input:
        final_outputs(),
