"""Aggregation of sweep results into tables and seaborn figures."""

from dpcd.report.figures import plot_rel_error
from dpcd.report.tables import best_configurations, markdown_table, summary_table

__all__ = ["best_configurations", "markdown_table", "plot_rel_error", "summary_table"]
