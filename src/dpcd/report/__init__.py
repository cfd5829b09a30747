"""Aggregation of sweep results into tables and seaborn figures.

The figures' names load seaborn and matplotlib (about 2 s a job) on first use,
so a job that writes tables only (``dpcd fresh``) never does.
"""

from dpcd.lazy import lazy_names

_LAZY = {
    "best_configurations": "dpcd.report.tables",
    "markdown_table": "dpcd.report.tables",
    "summary_table": "dpcd.report.tables",
    "plot_rel_error": "dpcd.report.figures",
    "plot_solution_histogram": "dpcd.report.figures",
    "quasi_sparsity_alpha": "dpcd.report.figures",
}

__all__ = sorted(_LAZY)
__getattr__ = lazy_names(__name__, _LAZY)
