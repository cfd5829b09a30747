"""The staged search's whole rule (``search: staged``, config): which
configurations each solve stage runs, which ones each select keeps, and the
search replayed from an exhaustive run.

The screen runs the grid on the first seed; with ``search_stride`` k > 1 only
its coarse lattice (every k-th value of each geomspace axis, both ends
included, at most :data:`dpcd.plan.lattice.LATTICE_DECADES` apart:
:func:`coarse_configurations`). A select job keeps the best few per (solver,
epsilon, passes) (:func:`keep_best`, the paper's rule of
:mod:`dpcd.problems.selection` applied repeatedly) and writes them to a CSV: after a
coarse screen ``search_refine`` of them, whose full-resolution neighbours the
refine runs (:func:`refine_configurations`); with ``search_fidelity`` < 1 the
screen and refine run each run's first passes and a promote runs the best
``search_promote`` whole; the last select keeps ``search_keep`` for the
confirm, which runs them on every seed. A solve spec names its stage, its
``stride`` and the selection CSV it reads (``selection``):
:func:`stage_configurations` reads them. Which configurations lie on the
lattice is :class:`dpcd.plan.lattice.Lattice`'s to say; how many each stage
runs is planned by :mod:`dpcd.plan.staged` from the same lattice.
"""

import csv

import numpy as np

from dpcd.plan.lattice import CONFIRM, PROMOTE, REFINE, SCREEN, Lattice, prefix_passes
from dpcd.streams import config_id
from dpcd.problems.selection import GROUP, best_configurations, final_iterates, last_checkpoints


# --- the configurations each solve stage runs ------------------------------------
def read_selection(path, solvers):
    """The ``config_id`` of the rows of ``solvers`` in a selection file."""
    with open(path, newline="") as fh:
        return {row["config_id"] for row in csv.DictReader(fh) if row["solver"] in solvers}


def _kept(configs, keep, path):
    """The configurations of ``configs`` whose ids are in ``keep``, in grid order.

    Raises
    ------
    ValueError
        If ``keep`` holds a configuration of these solvers that is not in
        ``configs`` (a grid edited after the selection ran): the stage would
        silently run less than was selected.
    """
    ids = {config_id(config): config for config in configs}
    missing = set(keep) - set(ids)
    if missing:
        raise ValueError(
            f"{path}: {len(missing)} selected configurations are not in this grid "
            f"(edited after the screen ran?); rerun the select rule"
        )
    return [config for cid, config in ids.items() if cid in keep]


def selected(configs, path):
    """The configurations of ``configs`` (one solver's grid) that the selection
    file kept, in grid order (see :func:`_kept` for the error raised)."""
    return _kept(configs, read_selection(path, {c["solver"] for c in configs}), path)


def coarse_configurations(configs, grid, axes, stride):
    """The configurations on the coarse lattice of stride ``stride``, in grid order.

    Parameters
    ----------
    configs : list of dict
        One solver's configurations (:func:`dpcd.sweep.grid.configurations`).
    grid, axes, stride
        Its grid, the values its axes expand to
        (:func:`dpcd.sweep.grid.expanded_grid`) and ``search_stride``
        (:class:`dpcd.plan.lattice.Lattice`).
    """
    return Lattice(grid, axes, stride).coarse(configs)


def refine_configurations(configs, grid, axes, stride, keep, path="selection"):
    """The full-resolution neighbours of the kept configurations, in grid order
    (:meth:`dpcd.plan.lattice.Lattice.neighbours`).

    Parameters
    ----------
    configs, grid, axes, stride
        As for :func:`coarse_configurations`.
    keep : set of str
        ``config_id`` of the kept configurations (on the coarse lattice).
    path : str
        Where ``keep`` was read from, for the error message.
    """
    return Lattice(grid, axes, stride).neighbours(configs, _kept(configs, keep, path))


def stage_configurations(spec, configs, axes):
    """The configurations of one solver's grid (``configs``, its axes
    ``axes``: :func:`dpcd.sweep.grid.expanded_grid`) that a solve spec runs,
    read from what the spec carries (its stage is the planner's to name:
    :mod:`dpcd.plan.staged`).

    With a ``stride``: the coarse lattice, or with a ``selection`` file the
    full-resolution neighbours of its configurations; without one: the
    ``selection`` file's configurations, or all.
    """
    kept = selected(configs, spec["selection"]) if "selection" in spec else None
    if "stride" not in spec:
        return configs if kept is None else kept
    lattice = Lattice(spec["grid"], axes, spec["stride"])
    return lattice.coarse(configs) if kept is None else lattice.neighbours(configs, kept)


def with_first_seed(table, reused):
    """A confirm job's table (the seeds after the first; a DataFrame or its
    columns) with its configurations' first-seed runs from the stages before
    (``reused``: the paths of their tables), in the order of a run of every
    seed: per configuration, by seed.

    Raises
    ------
    ValueError
        If a configuration has no first-seed run among ``reused``.
    """
    import pandas as pd  # here only: a solve job's tables need none (dpcd.sweep.tidy)

    table = pd.DataFrame(table)
    reused = [pd.read_parquet(path) for path in reused]
    order = {cid: k for k, cid in enumerate(pd.unique(table["config_id"]))}
    first = pd.concat(reused, ignore_index=True) if reused else table.iloc[:0]
    first = first[(first["seed_index"] == 0) & first["config_id"].isin(order)]
    missing = set(order) - set(first["config_id"])
    if missing:
        raise ValueError(f"{len(missing)} configurations have no first-seed run in "
                         "the tables of the stages before the confirm (reused_runs)")
    both = pd.concat([first, table], ignore_index=True)
    position = both["config_id"].map(order).to_numpy() * (both["seed_index"].max() + 1)
    return both.iloc[np.argsort(position + both["seed_index"].to_numpy(),
                                 kind="stable")].reset_index(drop=True)


# --- the selects: the best few per (solver, epsilon, passes) ----------------------
def _criteria(runs, select_by, prefix=False):
    """Each configuration's selection criterion (the value
    :func:`dpcd.problems.selection.best_configurations` ranks by), indexed by
    ``GROUP + [config_id]``."""
    if select_by == "validation":
        return last_checkpoints(runs).groupby(GROUP + ["config_id"], dropna=False)[
            "val_metric"].median()
    last = last_checkpoints(runs) if prefix else final_iterates(runs)
    return last.groupby(GROUP + ["config_id"], dropna=False)["objective"].mean()


def keep_best(runs, select_by, keep, prefix=False):
    """The ``keep`` best configurations per (solver, epsilon, passes).

    The paper's rule (:func:`dpcd.problems.selection.best_configurations`, ties
    broken by ``config_id``) applied ``keep`` times, each time without the
    configurations already kept: rank 0 is what the tables would select on
    these runs. Exact ties count once: with a configuration, the others of its
    group whose criterion equals its own to the last bit leave too (on one
    seed these are runs that never moved, e.g. from w = 0 when the threshold
    clips every update away: keeping several would spend the kept places on
    one outcome).

    Parameters
    ----------
    runs : pandas.DataFrame
        Tidy table of the screen's solve jobs.
    select_by : {"last_objective", "validation"}
    keep : int
        Configurations kept per group (fewer where a group has fewer
        distinct ones).
    prefix : bool, default=False
        The runs are prefixes of their passes (``search_fidelity`` < 1):
        ranked at their last pass.

    Returns
    -------
    pandas.DataFrame
        Columns ``solver, epsilon, passes, config_id, rank``, the criterion,
        and ``screened`` (configurations the group ran).
    """
    import pandas as pd

    if keep < 1:
        raise ValueError(f"search_keep must be >= 1, got {keep}")
    screened = runs.groupby(GROUP)["config_id"].nunique().rename("screened").reset_index()
    criteria = _criteria(runs, select_by, prefix).rename("criterion").reset_index()
    kept, remaining = [], runs
    for rank in range(keep):
        if remaining.empty:
            break
        best = best_configurations(remaining, select_by, prefix).assign(rank=rank)
        kept.append(best)
        value = criteria.merge(best[GROUP + ["config_id"]], on=GROUP + ["config_id"])
        tied = criteria.merge(value[GROUP + ["criterion"]], on=GROUP + ["criterion"])
        remaining = remaining[~remaining["config_id"].isin(tied["config_id"])]
    table = pd.concat(kept, ignore_index=True).merge(screened, on=GROUP)
    return table.sort_values(GROUP + ["rank"]).reset_index(drop=True)

# --- the search replayed from an exhaustive run -----------------------------------
def replay_staged(runs, grids, select_by, keep, stride=1, refine=2, fidelity=1, promote=6):
    """The staged search's selection, replayed from an exhaustive run.

    A run's streams depend on its seed and configuration only (not on its
    stage), so the screen and the refine of ``search: staged`` are the grid's
    first-seed runs of their configurations, and its confirm the grid's runs
    of the kept ones on every seed (tests/workflow/test_staged_search.py
    checks both against the workflow).

    Parameters
    ----------
    runs : pandas.DataFrame
        Tidy table of a ``search: grid`` run of one experiment (every seed).
    grids : dict
        Solver -> (configurations, grid, axes): its configurations
        (:func:`dpcd.sweep.grid.configurations`), its grid entry and the values
        its axes expand to (:func:`dpcd.sweep.grid.expanded_grid`).
    select_by : {"last_objective", "validation"}
    keep, stride, refine, promote : int
        ``search_keep``, ``search_stride``, ``search_refine``, ``search_promote``.
    fidelity : float
        ``search_fidelity``: below 1 the screen and refine are the runs'
        first passes (``select_by: last_objective`` only: an exhaustive run
        records the validation metric at its last pass alone), and the
        promote's runs are the grid's whole first-seed runs.

    Returns
    -------
    kept : pandas.DataFrame
        What the last select keeps (:func:`keep_best`): the confirm's configurations.
    ran : dict
        Stage -> number of configurations it runs.
    """
    first = runs[runs["seed_index"] == 0]
    prefix = fidelity < 1
    if prefix and select_by != "last_objective":
        raise ValueError("a multi-fidelity screen replays with select_by last_objective "
                         "only: an exhaustive run has no validation metric before its end")
    ranked = first
    if prefix:  # the screen's runs: each run's first passes
        ends = [prefix_passes(k, fidelity) for k in first["passes"]]
        ranked = first[first["pass"].to_numpy(float) <= np.asarray(ends, dtype=float)]
    screen = {config_id(c) for configs, grid, axes in grids.values()
              for c in coarse_configurations(configs, grid, axes, stride)}
    ran = {SCREEN: len(screen)}
    ids = screen
    if stride > 1:
        best = keep_best(ranked[ranked["config_id"].isin(screen)], select_by, refine, prefix)
        fine = {config_id(c) for solver, (configs, grid, axes) in grids.items()
                for c in refine_configurations(
                    configs, grid, axes, stride,
                    set(best.loc[best["solver"] == solver, "config_id"]))}
        ran[REFINE] = len(fine)
        ids = screen | fine
    if prefix:
        promoted = keep_best(ranked[ranked["config_id"].isin(ids)], select_by, promote, True)
        ids = set(promoted["config_id"])
        ran[PROMOTE] = len(ids)
    kept = keep_best(first[first["config_id"].isin(ids)], select_by, keep)
    ran[CONFIRM] = kept["config_id"].nunique()
    return kept, ran
