# Helpers of the data stage's rules (data.smk), apart so the data stage can be
# included on its own (tests/test_data_workflow.py does).
import os
import sys

from dpcd import plan  # the planner: standard library and yaml only

# Rules call the `dpcd` console script installed beside the interpreter that
# runs Snakemake, so `.venv/bin/snakemake` works without an activated
# environment (with --sdm conda the job's environment comes first again).
os.environ.update(
    PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
)


# Jobs read these from the environment (exported values win over the config).
_data_config = config.get("data") or {}
for _key, _env in (
    ("mirror", "DPCD_DATA_MIRROR"),
    ("cache", "DPCD_DATA_CACHE"),
    ("lock_file", "DPCD_DATA_LOCK_FILE"),
):
    if _data_config.get(_key) and not os.environ.get(_env):
        os.environ[_env] = str(_data_config[_key])


# The data rules' params and inputs, from the plan.
data_generate_spec = lambda w: plan.render(
    plan.data_spec(config["datasets"], w.dataset, "generate")
)
data_download_spec = lambda w: plan.render(
    plan.data_spec(config["datasets"], w.dataset, "download")
)
data_preprocess_spec = lambda w: plan.render(
    plan.data_spec(config["datasets"], w.dataset, "preprocess")
)
data_raw_input = lambda w: plan.raw_path(config["datasets"], w.dataset)
