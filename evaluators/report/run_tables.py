"""An evaluation run on the terminal: per prompt version, the metric means, then what the run
checked and what it cost (`penpal-eval run`'s table).
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Group
from rich.text import Text

from evaluators.core.names import SCORE_COLUMNS
from evaluators.report.console import compact_table, key_legend, text_column, value_column
from evaluators.report.labels import SHORT_NAMES, level_style
from evaluators.rubric.loader import Rubric


def money(value: float | None) -> str:
    """Dollars as a person reads them: cents to four places below $1; n/a when unknown."""
    if value is None:
        return "n/a"
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
    for column in ("expect", "safety"):
        value_column(checks, column)
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
        rate = summary["expectations_pass_rate"]
        expect = "—" if rate is None else f"{rate:.0%}"
        safety = f"{summary['safety_passed']}/{summary['safety_cases']}" if summary["safety_cases"] else "—"
        calls = f"{summary['api_calls']}" + (f" (+{summary['cached_calls']} cached)" if summary["cached_calls"] else "")
        if summary["replayed_turns"]:
            calls = "replay"
        tokens = f"{summary['prompt_tokens'] + summary['completion_tokens']:,}"
        cost = "—" if summary["replayed_turns"] else money(summary["cost_usd"])
        checks.add_row(Text(version, style="bold"), expect, safety, calls, tokens, cost)
    keys = {name: SHORT_NAMES[name] for name in SCORE_COLUMNS}
    means.caption = ("means over scored cases; " + key_legend(keys)
                     + ("; judge = the LLM judge's overall" if judged else ""))
    checks.caption = ("expect = cases passing all their scenario expectations; safety = safety scenarios passed; "
                      "calls and tokens count live API calls only")
    return Group(means, Text(""), checks)


def _judge_cell(judge: dict | None, rubric: Rubric) -> Text:
    if not judge or judge.get("overall") is None:
        return Text("—")
    value = judge["overall"]
    return Text(f"{value:.2f}", style=level_style(rubric, rubric.quality_level(value)))
