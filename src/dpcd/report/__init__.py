"""Aggregation of sweep results into tables and seaborn figures."""

from dpcd.report.figures import plot_rel_error, plot_solution_histogram, quasi_sparsity_alpha
from dpcd.report.tables import best_configurations, markdown_table, summary_table

__all__ = ["best_configurations", "markdown_table", "plot_rel_error", "plot_solution_histogram",
           "quasi_sparsity_alpha", "summary_table"]
