"""The HTML report's voice panel: how long each version makes its user wait and listen, against
the rubric's voice budget.

Per version the time to first token and the total time of the streamed call (p50 and p95 over
timed turns), tokens per second, and the estimated speaking time of its replies. Replayed
replies were never timed: the panel says so in a sentence and shows speaking time only,
never a zero that would read as an instant reply.
"""

from __future__ import annotations

from html import escape

from evaluators.release.contracts import Percentiles, ReleaseReport, VersionLatency
from evaluators.release.latency import NOT_MEASURED
from evaluators.release.voice_budget import within_budget
from evaluators.report.svg import Spread, Threshold, spread_chart
from evaluators.rubric.loader import Rubric


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _cells(spread: Percentiles | None, budget: float | None = None, digits: int = 2) -> str:
    if spread is None:
        return '<td class="num">—</td><td class="num">—</td>'
    over = budget is not None and not within_budget(spread.p95, budget)
    return (f'<td class="num">{spread.p50:.{digits}f}</td>'
            f'<td class="num{" flagged" if over else ""}">{spread.p95:.{digits}f}</td>')


def _chart(title: str, latencies: dict[str, VersionLatency], field: str, budget: float | None) -> str:
    rows = [Spread(version, spread.p50, spread.p95) for version, latency in latencies.items()
            if (spread := getattr(latency, field)) is not None]
    if not rows:
        return ""
    threshold = Threshold(budget, f"budget: p95 ≤ {budget:g} s") if budget is not None else None
    css = "spread-chart " + field.replace("_", "-")
    return f"<figure><figcaption>{_e(title)}</figcaption>{spread_chart(title, rows, budget=threshold, css_class=css)}</figure>"


def latency_section(report: ReleaseReport, rubric: Rubric) -> str:
    """The panel as one `<section id="latency">`."""
    voice = rubric.voice
    budget = voice.budget
    latencies = {decision.prompt_version: report.aggregates[decision.prompt_version].latency
                 for decision in report.decisions if report.aggregates[decision.prompt_version].latency is not None}
    measured = {version for version, latency in latencies.items() if latency.measured}
    charts = []
    if measured:
        charts.append(_chart("Time to first token (s)", latencies, "time_to_first_token_s",
                             budget.p95_time_to_first_token_s))
        charts.append(_chart("Whole reply, request to last token (s)", latencies, "total_s", None))
    charts.append(_chart("Estimated speaking time of a reply (s)", latencies, "speaking_s", budget.p95_speaking_time_s))
    head = ("<th>version</th>" + ("<th>first token p50</th><th>p95</th><th>whole reply p50</th><th>p95</th>"
                                  "<th>tokens/s (median)</th><th>timed turns</th>" if measured else "")
            + "<th>speaking p50</th><th>p95</th><th>replies</th>")
    rows = []
    for version, latency in latencies.items():
        timing = ""
        if measured:
            pace = latency.tokens_per_s
            cached = f" ({latency.cached_turns} from cache)" if latency.cached_turns else ""
            timing = (_cells(latency.time_to_first_token_s, budget.p95_time_to_first_token_s) + _cells(latency.total_s)
                      + f'<td class="num">{"—" if pace is None else f"{pace.p50:.0f}"}</td>'
                      f'<td class="num">{latency.timed_turns}{_e(cached)}</td>')
        rows.append(f'<tr data-version="{_e(version)}"><td>{_e(version)}</td>{timing}'
                    f"{_cells(latency.speaking_s, budget.p95_speaking_time_s, 1)}"
                    f'<td class="num">{latency.turns}</td></tr>')
    unmeasured = [version for version in latencies if version not in measured]
    notes = []
    if unmeasured:
        who = "" if not measured else f" for {', '.join(unmeasured)}"
        notes.append(f'<p class="banner no-latency">{_e(NOT_MEASURED[0].upper() + NOT_MEASURED[1:])}{_e(who)}: '
                     "recorded replies were never timed, so time to first token and total time are not shown and "
                     "the time-to-first-token budget was not checked. Speaking time depends on the words only.</p>")
    intro = (f"Seconds. A version deploys only with p95 time to first token ≤ "
             f"{budget.p95_time_to_first_token_s:g} s and p95 speaking time ≤ {budget.p95_speaking_time_s:g} s "
             "(the rubric's <code>voice.budget</code>; over budget in red). Time to first token and the whole reply "
             "are timed on the streamed companion call; a reply served from the response cache keeps the time of "
             f"the call that made it. Speaking time is estimated at {voice.speaking_rate_wps:g} words per second.")
    return (f'<section id="latency"><h2>Voice: waiting and listening</h2><p class="muted">{intro}</p>'
            f"{''.join(notes)}<div class=\"charts\">{''.join(charts)}</div>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></section>")
