"""The select stage of ``search: staged``: the best few configurations per
(solver, epsilon, passes) by the paper's selection rule, on what the screen ran."""

import pandas as pd

from dpcd.report.tables import GROUP, best_configurations


def keep_best(runs, select_by, keep):
    """The ``keep`` best configurations per (solver, epsilon, passes).

    The paper's rule (:func:`dpcd.report.tables.best_configurations`, ties
    broken by ``config_id``) applied ``keep`` times, each time without the
    configurations already kept: rank 0 is what the tables would select on
    these runs.

    Parameters
    ----------
    runs : pandas.DataFrame
        Tidy table of the screen's solve jobs.
    select_by : {"last_objective", "validation"}
    keep : int
        Configurations kept per group (fewer where a group has fewer).

    Returns
    -------
    pandas.DataFrame
        Columns ``solver, epsilon, passes, config_id, rank``, the criterion,
        and ``screened`` (configurations the group ran).
    """
    if keep < 1:
        raise ValueError(f"search_keep must be >= 1, got {keep}")
    screened = runs.groupby(GROUP)["config_id"].nunique().rename("screened").reset_index()
    kept, remaining = [], runs
    for rank in range(keep):
        if remaining.empty:
            break
        best = best_configurations(remaining, select_by).assign(rank=rank)
        kept.append(best)
        remaining = remaining[~remaining["config_id"].isin(best["config_id"])]
    table = pd.concat(kept, ignore_index=True).merge(screened, on=GROUP)
    return table.sort_values(GROUP + ["rank"]).reset_index(drop=True)


def search_markdown(timings):
    """The summary's "search" section: per experiment and stage, how many of the
    grid's configurations ran on how many seeds (from the solve jobs' ledgers).
    Empty when every experiment searched its whole grid (``search: grid``)."""
    rows = [{"experiment": t["experiment"], "stage": t.get("stage", "grid"),
             "configurations": t["configurations"], "seeds": t.get("seeds")}
            for t in timings]
    if not any(row["stage"] != "grid" for row in rows):
        return ""
    table = (pd.DataFrame(rows).groupby(["experiment", "stage", "seeds"], as_index=False)
             ["configurations"].sum())
    table["runs"] = table["configurations"] * table["seeds"]
    order = {"grid": 0, "screen": 1, "confirm": 2}
    table = table.sort_values(["experiment", "stage"], key=lambda c: c.map(order)
                              if c.name == "stage" else c)
    return "\n".join([
        "",
        "## Search",
        "",
        "Configurations of each experiment's grid run per stage (search: staged screens "
        "every configuration on one seed, then confirms the kept ones on every seed):",
        "",
        table[["experiment", "stage", "configurations", "seeds", "runs"]]
        .to_markdown(index=False),
        "",
    ])
