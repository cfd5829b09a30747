"""The staged search's confirm stage: the configurations a selection kept.

``search: staged`` (config) screens every configuration of the grid on the
first seed, a select job keeps the best few per (solver, epsilon, passes)
(:func:`dpcd.report.search.keep_best`) and writes them to a CSV, and the
confirm jobs run those on every seed. A confirm spec names that CSV
(``selection``); :func:`selected` reads it.
"""

import csv


def read_selection(path, solvers):
    """The ``config_id`` of the rows of ``solvers`` in a selection file."""
    with open(path, newline="") as fh:
        return {row["config_id"] for row in csv.DictReader(fh) if row["solver"] in solvers}


def selected(configs, path):
    """The configurations of ``configs`` (one solver's grid) that the selection
    file kept, in grid order.

    Raises
    ------
    ValueError
        If the file keeps a configuration of these solvers that is not in
        ``configs`` (a grid edited after the screen ran): the confirm would
        silently run less than was selected.
    """
    from dpcd.sweep.grid import config_id

    ids = {config_id(config): config for config in configs}
    keep = read_selection(path, {config["solver"] for config in configs})
    missing = keep - set(ids)
    if missing:
        raise ValueError(
            f"{path}: {len(missing)} selected configurations are not in this grid "
            f"(edited after the screen ran?); rerun the select rule"
        )
    return [config for cid, config in ids.items() if cid in keep]
