# Loads dpcd.plan as `plan`: by path from the repository's src/ (standard
# library and yaml only, so Snakemake's own interpreter plans the workflow even
# where dpcd is not installed: --sdm conda), else the installed dpcd's (a
# workflow copied without src/). Included by common.smk and data_common.smk.
import importlib.util
import os

_plan_path = os.path.join(str(workflow.current_basedir), "../../src/dpcd/plan.py")
if os.path.exists(_plan_path):
    _plan_spec = importlib.util.spec_from_file_location(
        "dpcd_plan", os.path.abspath(_plan_path)
    )
    plan = importlib.util.module_from_spec(_plan_spec)
    _plan_spec.loader.exec_module(plan)
else:
    from dpcd import plan
