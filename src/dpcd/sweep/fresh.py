"""Re-run the selected configurations on fresh seeds, for unbiased tables.

The best configuration of a grid, reported by its mean over the seeds it was
selected on, is an optimistic estimate of that configuration's error (the
minimum of noisy means). Re-running each selected configuration on seeds it
was not selected on gives an unbiased one. The fresh seeds come from their own
``SeedSequence`` branch, one set per cell (experiment, solver, epsilon,
passes; :func:`dpcd.streams.fresh_seeds`), so the fresh runs of two cells
are independent releases; the runs go through the same algorithm specs as the sweep
(:func:`dpcd.sweep.runner.run_configurations`). The workflow runs them as the
solve stage ``fresh`` (:func:`run_fresh_chunk`: a job per chunk of the cells of
all an experiment's solvers, after the aggregation whose table selected them).

Each fresh run is a new private release with its own ledger, which records
``hyperparameter_selection`` among its non-private inputs: its hyperparameters
were chosen on the private data.
"""

import pandas as pd

from dpcd import algorithms
from dpcd.streams import config_id, fresh_cell, fresh_seeds
from dpcd.sweep.run import chunk_of
from dpcd.sweep.grid import configurations, epsilons_of
from dpcd.sweep.runner import run_configurations
from dpcd.sweep.smoothness import private_smoothness_estimates

NONPRIVATE = ("hyperparameter_selection",)


def selected_configurations(spec, table):
    """The configurations of ``spec``'s solver that a selection table chose.

    Parameters
    ----------
    spec : dict
        The solve rule's params of one solver (grid, passes, privacy, ...).
    table : pandas.DataFrame
        The aggregation's table (``results/tables/{experiment}.csv``), one
        row per selected (solver, epsilon, passes) cell with its ``config_id``.

    Returns
    -------
    list of dict
        The grid's configurations whose id the table selected, in the grid's
        order (rebuilt from the grid, so no value goes through the CSV).
    """
    wanted = set(table.loc[table["solver"] == spec["solver"], "config_id"].astype(str))
    configs = configurations(spec["solver"], spec["grid"], spec["passes"],
                             epsilons_of(spec["privacy"]))
    chosen = [config for config in configs if config_id(config) in wanted]
    missing = wanted - {config_id(config) for config in chosen}
    if missing:
        raise ValueError(
            f"solver {spec['solver']}: selected configuration(s) {sorted(missing)} are not "
            "in its grid; the selection table comes from another configuration"
        )
    return chosen


def fresh_cells(spec, table):
    """The cells (:func:`dpcd.streams.fresh_cell`) of ``spec``'s solver that
    ``table`` selected, in the grid's order: ``[(cell, configurations), ...]``."""
    cells = {}
    for config in selected_configurations(spec, table):
        cell = fresh_cell(spec["experiment"], config)
        cells.setdefault(tuple(sorted(cell.items())), (cell, []))[1].append(config)
    return list(cells.values())


def run_cells(spec, cells, problem, f_star, w_star=None):
    """Run each cell's configurations on the cell's fresh seeds.

    Parameters
    ----------
    spec : dict
        The solve params of one solver with ``seeds`` = the number of fresh
        seeds and ``seed_set`` = ``"fresh"``.
    cells : list of (dict, list of dict)
        :func:`fresh_cells`, or a chunk of them.
    problem : SweepProblem
    f_star : float
    w_star : array, optional

    Returns
    -------
    runs : pandas.DataFrame
        The tidy table of :func:`dpcd.sweep.run.run_chunk` with ``seed_set`` =
        ``"fresh"``.
    records : list of ConfigRecord
    """
    n_seeds = int(spec["seeds"])
    tables, records = [], []
    for cell, configs in cells:
        seeds = fresh_seeds(spec["base_seed"], n_seeds, cell)
        estimates = None
        if algorithms.get(spec.get("adapter", spec["solver"])).preparation.smoothness == "private":
            # a private smoothness estimate is part of each run's release: fresh too.
            estimates = private_smoothness_estimates(
                problem.X, spec["problem"]["loss"], spec["grid"]["smoothness_fraction"],
                [cell["epsilon"]], seeds, spec["experiment"],
                noise=spec["privacy"].get("noise", "fast"))
        # each run timed alone: Table 3 reports these times
        runs, cell_records = run_configurations(
            spec, configs, seeds, problem, f_star, estimates, w_star,
            nonprivate=NONPRIVATE, together=False)
        tables.append(runs)
        records += cell_records
    runs = pd.concat(tables, ignore_index=True) if tables else run_configurations(
        spec, [], [], problem, f_star)[0]
    runs["seed_set"] = "fresh"
    return runs, records


def run_fresh_chunk(spec, chunk, problem, f_star, w_star=None):
    """One job of the fresh stage: chunk ``chunk`` of the cells that the
    selection table ``spec["selection"]`` chose, across the experiment's
    solvers, on fresh seeds.

    Parameters
    ----------
    spec : dict
        The fresh_solve rule's params: ``solvers`` (each solver's solve params
        with ``seeds``: how many fresh seeds, ``seed_set``: ``"fresh"``),
        ``selection`` (the aggregation's table) and ``chunks``, which cut the
        cells of all the solvers together, round-robin.
    chunk : int
    problem, f_star, w_star
        As for :func:`dpcd.sweep.run.run_chunk`.

    Returns
    -------
    list of (dict, pandas.DataFrame, list of ConfigRecord)
        Per solver with cells in the chunk, in ``spec["solvers"]``' order:
        its spec and :func:`run_cells`' runs and records (a chunk without
        cells: the first solver's, without runs).
    """
    table = pd.read_csv(spec["selection"], dtype={"config_id": str})
    cells = [(k, cell) for k, solver in enumerate(spec["solvers"])
             for cell in fresh_cells(solver, table)]
    mine = chunk_of(cells, chunk, spec["chunks"])
    parts = []
    for k, solver in enumerate(spec["solvers"]):
        own = [cell for owner, cell in mine if owner == k]
        if own:
            parts.append((solver, *run_cells(solver, own, problem, f_star, w_star)))
    if not parts:  # a chunk without cells: an empty table with the runs' columns
        solver = spec["solvers"][0]
        parts.append((solver, *run_cells(solver, [], problem, f_star, w_star)))
    return parts


def run_fresh(spec, table, problem, f_star, w_star=None):
    """Run every configuration ``table`` selected for ``spec``'s solver on fresh
    seeds, in one process (what the fresh stage's jobs do in chunks).

    Parameters
    ----------
    spec : dict
        The solve params of one solver plus ``fresh_seeds`` (number of seeds).
    table : pandas.DataFrame
        The selection table of the experiment.
    problem : SweepProblem
    f_star : float
    w_star : array, optional

    Returns
    -------
    runs, records
        As for :func:`run_cells`.
    spec : dict
        ``spec`` with ``seeds`` = the number of fresh seeds and ``seed_set`` =
        ``"fresh"`` (what :func:`dpcd.tracking.payload.mlflow_runs` logs).
    """
    spec = {**spec, "seeds": int(spec["fresh_seeds"]), "seed_set": "fresh"}
    runs, records = run_cells(spec, fresh_cells(spec, table), problem, f_star, w_star)
    return runs, records, spec
