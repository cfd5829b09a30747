# Loads the planner package dpcd.plan as `plan`: by path from the repository's
# src/ (standard library and yaml only, so Snakemake's own interpreter plans the
# workflow even where dpcd is not installed: --sdm conda), else the installed
# dpcd's (a workflow copied without src/). Included by common.smk and
# data_common.smk.
import importlib.util
import os
import sys

_plan_dir = os.path.abspath(
    os.path.join(str(workflow.current_basedir), "../../src/dpcd/plan")
)
if os.path.exists(os.path.join(_plan_dir, "__init__.py")):
    # its modules import each other relatively, under this name: a fresh copy
    for _name in [m for m in sys.modules if m.split(".")[0] == "dpcd_plan"]:
        del sys.modules[_name]
    _plan_spec = importlib.util.spec_from_file_location(
        "dpcd_plan",
        os.path.join(_plan_dir, "__init__.py"),
        submodule_search_locations=[_plan_dir],
    )
    plan = importlib.util.module_from_spec(_plan_spec)
    sys.modules["dpcd_plan"] = plan
    _plan_spec.loader.exec_module(plan)
else:
    from dpcd import plan
