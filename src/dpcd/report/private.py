"""The summary's "Private tuning" section (``search: private``, issue 29).

A private search's table cell is the mean ± std over its selection seeds of
the released model's error: one independent search per selection seed, each
released with its whole price (``epsilon_achieved`` is the ε of the
repeat-and-select release, hyperparameter selection included). The relative
error to F* and the test metric are the researcher's evaluation of the
released model (F* and the test rows are read without noise): they are not
part of the release.
"""

import pandas as pd

from dpcd.report.tables import RELATION, with_relation
from dpcd.tuning.release import RELEASED_ID

EVALUATION_NOTE = (
    "The relative error to F* and the test metric below are the researcher's "
    "evaluation of the released model (F* and the held-out rows are read without "
    "noise); they are not part of the release. What is released, per selection "
    "seed, is one model and its noisy score, at the end-to-end epsilon shown "
    "(dp_accounting's RepeatAndSelectDpEvent on the RDP accountant: every "
    "candidate's training and score, and the selection). Its ledger lists no "
    "hyperparameter_selection."
)


def private_cells(tables):
    """The released cells of every private-search experiment, stacked
    (``{experiment: table}`` of :func:`dpcd.report.tables.summary_table`)."""
    frames = [with_relation(t).assign(experiment=name) for name, t in tables.items()
              if "config_id" in t and _released(t).any()]
    if not frames:
        return pd.DataFrame()
    cells = pd.concat(frames, ignore_index=True)
    return cells[_released(cells)].reset_index(drop=True)


def _released(table):
    return table["config_id"].astype(str).str.startswith(RELEASED_ID + "_")


def private_markdown(tables):
    """The "Private tuning" section (empty without a ``search: private``
    experiment)."""
    cells = private_cells(tables)
    if cells.empty:
        return ""
    cells = cells.assign(
        rel_error=[f"{m:.3g} ± {s:.2g}" for m, s in zip(cells["rel_error_mean"],
                                                     cells["rel_error_std"].fillna(0.0))],
        epsilon_end_to_end=cells["epsilon_achieved"].map(lambda e: f"{e:.4g}"),
        selection_seeds=cells["n_seeds"])
    columns = ["experiment", "solver", RELATION, "epsilon", "passes", "rel_error",
               "selection_seeds", "epsilon_end_to_end"]
    if "test_metric_median" in cells:
        columns.insert(6, "test_metric_median")
    return "\n".join([
        "",
        "## Private tuning",
        "",
        "Experiments with search: private: per (solver, epsilon, passes), relative "
        "error at the last iterate of the released model, mean ± std over independent "
        "private searches (selection seeds). " + EVALUATION_NOTE,
        "",
        cells[columns].sort_values(["experiment", "solver", "epsilon", "passes"])
        .to_markdown(index=False),
        "",
    ])
