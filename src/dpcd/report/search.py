"""The summary's account of the staged search: what each stage ran (the
search's rule itself is :mod:`dpcd.sweep.staged`)."""

import pandas as pd


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
