"""Release reports: the terminal table, pandas frames and files, and the HTML page."""

from evaluators.report.frames import aggregates_frame, deltas_frame, rules_frame, write_release_files
from evaluators.report.html import render_html
from evaluators.report.terminal import comparison_table, decisions_table, print_notices, print_release

__all__ = [
    "aggregates_frame",
    "comparison_table",
    "decisions_table",
    "deltas_frame",
    "print_notices",
    "print_release",
    "render_html",
    "rules_frame",
    "write_release_files",
]
