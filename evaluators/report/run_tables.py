"""An evaluation run on the terminal: per prompt version, the metric means, then what the run
checked and what it cost (`penpal-eval run`'s table).
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Group
from rich.text import Text

from evaluators.core.names import SCORE_COLUMNS
from evaluators.release.counts import COUNT_KEYS, VersionCounts
from evaluators.release.counts import legend as count_legend
from evaluators.report.console import compact_table, key_legend, text_column, value_column
from evaluators.report.labels import SHORT_NAMES, level_style
from evaluators.rubric.loader import Rubric

# The counts the run's table shows: the same figures, under the same keys and legends, as the
# release decision table (evaluators.release.counts).
CHECK_COUNTS = ("expectations_met", "safety_hard_criteria_passed")


def money(value: float | None) -> str:
    """Dollars as a person reads them: cents to four places below $1; unknown when some price or
    token count is."""
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def versions_table(summaries: Mapping[str, dict], rubric: Rubric) -> Group:
    """Per prompt version: the metric means, then what the run checked and what it cost.

    Two tables stacked rather than one: fifteen columns cannot all be read at 80 columns.
    """
    judged = any(summary.get("judge") for summary in summaries.values())
    means = compact_table("Penpal rubric means per prompt version")
    text_column(means, "version", min_width=10)
    value_column(means, "cases")
    for name in SCORE_COLUMNS:
        value_column(means, SHORT_NAMES[name])
    if judged:
        value_column(means, "judge")
    checks = compact_table("Checks, calls and cost per prompt version")
    text_column(checks, "version", min_width=10)
    for name in CHECK_COUNTS:
        value_column(checks, COUNT_KEYS[name])
    text_column(checks, "calls")
    for column in ("tokens", "cost"):
        value_column(checks, column)
    for version, summary in summaries.items():
        cases = Text(f"{summary['scored']}/{summary['cases']}", style="red" if summary["failed"] else "")
        cells = []
        for name in SCORE_COLUMNS:
            value = summary["means"][name]
            cells.append(Text("—") if value is None else
                         Text(f"{value:.2f}", style=level_style(rubric, rubric.quality_level(value))))
        if judged:
            cells.append(_judge_cell(summary.get("judge"), rubric))
        means.add_row(Text(version, style="bold"), cases, *cells)
        counts = VersionCounts.model_validate(summary["counts"])
        calls = f"{summary['api_calls']}" + (f" (+{summary['cached_calls']} cached)" if summary["cached_calls"] else "")
        replayed = bool(summary["replayed_turns"])
        if replayed:
            calls = "replay"
        checks.add_row(Text(version, style="bold"), *(counts.fraction(name) for name in CHECK_COUNTS), calls,
                       tokens_cell(summary), "—" if replayed else money(summary["cost_usd"]))
    keys = {name: SHORT_NAMES[name] for name in SCORE_COLUMNS}
    means.caption = ("means over scored cases; " + key_legend(keys)
                     + ("; judge = the LLM judge's overall" if judged else ""))
    checks.caption = (f"{count_legend(CHECK_COUNTS)}; calls and tokens count live API calls only (— for replayed "
                      "replies; unknown when the server reported no usage)")
    return Group(means, Text(""), checks)


def tokens_cell(summary: dict) -> str:
    """Tokens of the version's live calls: — for replayed replies (no call), unknown when some
    call's server reported none (a count that leaves them out would read as the total)."""
    if summary["replayed_turns"]:
        return "—"
    if summary.get("usage_unknown_calls"):
        return "unknown"
    return f"{summary['prompt_tokens'] + summary['completion_tokens']:,}"


def _judge_cell(judge: dict | None, rubric: Rubric) -> Text:
    if not judge or judge.get("overall") is None:
        return Text("—")
    value = judge["overall"]
    return Text(f"{value:.2f}", style=level_style(rubric, rubric.quality_level(value)))
