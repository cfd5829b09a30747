"""What the workflow planner (:mod:`dpcd.plan`, standard library and yaml
only) is given by the rest of dpcd (workflow/rules/common.smk)."""

import functools

import yaml

from dpcd.algorithms import check_solvers, plan_facts
from dpcd.data.registry import registry


def plan_inputs(schema_path):
    """Keyword arguments of :class:`dpcd.plan.Plan`: the dataset registry
    (sources, shapes), the check of every solver entry against its algorithm's
    spec (name, grid, (loss, penalty), relation; ``schema_path``: the config
    schema, whose ``$defs`` an outside algorithm's grid is checked with) and
    each solver's facts (step cost, private-search candidacy)."""
    with open(schema_path) as fh:
        defs = yaml.safe_load(fh)["$defs"]
    return {"registry": registry(), "check_solvers": functools.partial(check_solvers, defs=defs),
            "solver_facts": plan_facts()}
