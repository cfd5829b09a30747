"""The select stage of ``search: staged``: the best few configurations per
(solver, epsilon, passes) by the paper's selection rule, on what the screen
(and refine) ran; the summary's account of what each stage ran; and
:func:`replay_staged`, the staged selection replayed from an exhaustive run."""

import numpy as np
import pandas as pd

from dpcd.report.tables import GROUP, best_configurations, final_iterates, last_checkpoints


def _criteria(runs, select_by, prefix=False):
    """Each configuration's selection criterion (the value
    :func:`dpcd.report.tables.best_configurations` ranks by), indexed by
    ``GROUP + [config_id]``."""
    if select_by == "validation":
        return last_checkpoints(runs).groupby(GROUP + ["config_id"], dropna=False)[
            "val_metric"].median()
    last = last_checkpoints(runs) if prefix else final_iterates(runs)
    return last.groupby(GROUP + ["config_id"], dropna=False)["objective"].mean()


def keep_best(runs, select_by, keep, prefix=False):
    """The ``keep`` best configurations per (solver, epsilon, passes).

    The paper's rule (:func:`dpcd.report.tables.best_configurations`, ties
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


def search_markdown(timings):
    """The summary's "search" section: per experiment and stage, how many of the
    grid's configurations ran on how many seeds (from the solve jobs' ledgers).
    Empty when every experiment searched its whole grid (``search: grid``)."""
    rows = [{"experiment": t["experiment"], "stage": t.get("stage", "grid"),
             "solver": t.get("solver"), "configurations": t["configurations"],
             "grid": t.get("grid_configurations"), "seeds": t.get("seeds")}
            for t in timings]
    if not any(row["stage"] != "grid" for row in rows):
        return ""
    frame = pd.DataFrame(rows)
    table = frame.groupby(["experiment", "stage", "seeds"], as_index=False)["configurations"].sum()
    # the grid's size: one per solver (every job of a solver writes the same),
    # whichever stages the solver ran (one without a geomspace axis: no refine)
    grid = (frame.groupby(["experiment", "solver"])["grid"].max()
            .groupby("experiment").sum(min_count=1).rename("grid").reset_index())
    table = table.merge(grid, on="experiment", how="left")
    table["of the grid"] = [
        "" if pd.isna(g) or not g else f"{c / g:.1%} of {int(g)}"
        for c, g in zip(table["configurations"], table["grid"])]
    table["runs"] = table["configurations"] * table["seeds"]
    order = {"grid": 0, "screen": 1, "refine": 2, "promote": 3, "confirm": 4}
    table = table.sort_values(["experiment", "stage"], key=lambda c: c.map(order)
                              if c.name == "stage" else c)
    return "\n".join([
        "",
        "## Search",
        "",
        "Configurations of each experiment's grid run per stage (search: staged screens "
        "the grid, or its coarse lattice of search_stride, on one seed, refines around "
        "the best of a coarse screen on the same seed, then confirms the kept ones on "
        "every seed):",
        "",
        table[["experiment", "stage", "configurations", "of the grid", "seeds", "runs"]]
        .to_markdown(index=False),
        "",
    ])


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
        Solver -> (configurations, grid): its configurations
        (:func:`dpcd.sweep.grid.configurations`) and its grid entry.
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
    from dpcd.plan import prefix_passes
    from dpcd.streams import config_id
    from dpcd.sweep.search import coarse_configurations, refine_configurations

    first = runs[runs["seed_index"] == 0]
    prefix = fidelity < 1
    if prefix and select_by != "last_objective":
        raise ValueError("a multi-fidelity screen replays with select_by last_objective "
                         "only: an exhaustive run has no validation metric before its end")
    ranked = first
    if prefix:  # the screen's runs: each run's first passes
        ends = [prefix_passes(k, fidelity) for k in first["passes"]]
        ranked = first[first["pass"].to_numpy(float) <= np.asarray(ends, dtype=float)]
    screen = {config_id(c) for configs, grid in grids.values()
              for c in coarse_configurations(configs, grid, stride)}
    ran = {"screen": len(screen)}
    ids = screen
    if stride > 1:
        best = keep_best(ranked[ranked["config_id"].isin(screen)], select_by, refine, prefix)
        fine = {config_id(c) for solver, (configs, grid) in grids.items()
                for c in refine_configurations(
                    configs, grid, stride,
                    set(best.loc[best["solver"] == solver, "config_id"]))}
        ran["refine"] = len(fine)
        ids = screen | fine
    if prefix:
        promoted = keep_best(ranked[ranked["config_id"].isin(ids)], select_by, promote, True)
        ids = set(promoted["config_id"])
        ran["promote"] = len(ids)
    kept = keep_best(first[first["config_id"].isin(ids)], select_by, keep)
    ran["confirm"] = kept["config_id"].nunique()
    return kept, ran
