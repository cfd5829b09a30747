"""Workflow planning: what the Snakemake rules run, as plain data.

Standard library and yaml only (workflow/rules/common.smk and data_common.smk
import it in Snakemake's own process, which runs no kernel). It knows no
solver: a solver entry is ``{solver: name, <hyperparameter grids>...}``, and
what the planner reads of a solver's spec (its measured step cost, its
private-search candidacy) comes in as ``solver_facts``.

Modules, each importing only those before it: :mod:`.lattice` (the staged
search's lattice arithmetic, which the sweep reads too), :mod:`.config`
(solver entries, data params, rendering), :mod:`.search` and one module per
search mode (:mod:`.grid`, :mod:`.staged`, :mod:`.private`), :mod:`.fresh`
(the fresh-seed stage every re-runnable search shares), :mod:`.cost`,
:mod:`.checks`, and :mod:`.jobs` (the :class:`Plan`).
"""

from .config import (
    GENERATED_SOURCES,
    algorithm_modules,
    data_spec,
    expand_lambda_grids,
    experiment_prefix,
    raw_path,
    render,
    solver_entry,
    workflow_path,
)
from .cost import Cost
from .fresh import FreshJob
from .jobs import SEARCHES, WARMUP_PRIORITY, Job, Plan, after_wildcard, stage_wildcard
from .lattice import LATTICE_DECADES, axis_stride, coarse_indices, grid_size, prefix_passes
from .private import PRIVATE_DEFAULTS, PRIVATE_DISTRIBUTIONS

__all__ = ["Cost", "FreshJob", "GENERATED_SOURCES", "Job", "LATTICE_DECADES",
           "PRIVATE_DEFAULTS", "PRIVATE_DISTRIBUTIONS", "Plan", "SEARCHES", "WARMUP_PRIORITY",
           "after_wildcard", "algorithm_modules", "axis_stride", "coarse_indices",
           "data_spec", "expand_lambda_grids", "experiment_prefix", "grid_size", "prefix_passes",
           "raw_path", "render", "solver_entry", "stage_wildcard", "workflow_path"]
