"""The release report as one self-contained HTML file.

Opened from disk with no network: inline CSS, inline SVG charts drawn in Python, no script,
no external fonts or images. Everything that comes from data (replies, user turns, reasoning,
scenario and version names) is escaped, because a reply may well contain `<script>`. The
page, its header and the scorecards are autoescaped Jinja2 templates (report/templates.py);
the other sections are still built here and come into the page as markup.

What it shows, top to bottom: a scorecard per version with its decision and the rules that
decided it; the metric means against the thresholds; a family × metric heatmap per version;
the differences against each baseline with their bootstrap intervals; the pairwise judge's
head-to-head against each baseline (win, tie and loss per family, the win rate's interval and
the position-bias rate) when the run has it; fairness across groups; hard criteria; latency and
speaking time against the voice budget (report/latency_panel.py); simulated conversations (each
persona's trust per turn, a line per version, and each version's worst conversation turn by
turn); the worst cases with their evidence and the judge's reasoning; every rule checked; and
the thresholds in force.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from markupsafe import Markup

from evaluators.core.names import METRIC_NAMES, OVERALL, SCORE_COLUMNS
from evaluators.core.text import plural
from evaluators.release.contracts import (
    Comparison,
    ConversationRow,
    Decision,
    HeadToHead,
    ReleaseReport,
    VersionAggregate,
)
from evaluators.release.rules import COUNT_RULES, OUTCOME_TITLES, erodes, second_half_start
from evaluators.report.labels import SHORT_NAMES
from evaluators.report.latency_panel import latency_section
from evaluators.report.safety_disagreements import safety_disagreements_section
from evaluators.report.svg import (
    Guide,
    Interval,
    Threshold,
    WinTieLoss,
    bar_chart,
    heatmap,
    interval_chart,
    line_chart,
    win_tie_loss_chart,
)
from evaluators.report.templates import render
from evaluators.report.what_to_change import DOC, Lowered, advice_for, anchor, failing_topics, lowered
from evaluators.report.worst import WorstCase, worst_cases
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult

# Cell and badge colours by quality level rank, best first (ranks are spread over the list).
_LEVEL_FILLS = ("#a8ddb5", "#d4efdc", "#fff1b8", "#ffd6a5", "#f9b4b4")
_EVIDENCE_PER_TURN = 6

_CSS = """
:root { --ink:#1d1d1f; --muted:#5f6368; --line:#dfe1e5; --deploy:#1e7b45; --ab_test:#2f62a8; --revise:#b3261e;
        --incomplete:#b26a00; }
* { box-sizing:border-box; }
body { margin:0; padding:24px 32px 48px; color:var(--ink); background:#fafafa;
       font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif; }
h1 { font-size:24px; margin:0 0 4px; } h2 { font-size:19px; margin:32px 0 10px; border-bottom:1px solid var(--line);
padding-bottom:4px; } h3 { font-size:16px; margin:0; } h4 { font-size:13px; margin:12px 0 4px; text-transform:uppercase;
letter-spacing:.04em; color:var(--muted); }
.muted { color:var(--muted); } code { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12px; }
.banner { background:#fff4e5; border:1px solid #f0c36d; padding:8px 12px; border-radius:6px; margin:10px 0; }
.banner.safety-refused { background:#fdecea; border-color:#b3261e; }
.cards { display:grid; grid-template-columns:repeat(auto-fill,minmax(min(360px,100%),1fr)); gap:16px; }
.card { background:#fff; border:1px solid var(--line); border-top:6px solid var(--muted); border-radius:8px; padding:14px 16px; }
.card.outcome-deploy { border-top-color:var(--deploy); } .card.outcome-ab_test { border-top-color:var(--ab_test); }
.card.outcome-revise { border-top-color:var(--revise); }
.card.outcome-incomplete { border-top-color:var(--incomplete); }
.badge { display:inline-block; color:#fff; border-radius:12px; padding:2px 10px; font-size:12px; font-weight:600;
         background:var(--muted); margin-bottom:6px; }
.badge.deploy { background:var(--deploy); } .badge.ab_test { background:var(--ab_test); } .badge.revise { background:var(--revise); }
.badge.incomplete { background:var(--incomplete); }
.figures { display:grid; grid-template-columns:auto 1fr; gap:2px 12px; margin:10px 0 0; }
.figures dt { color:var(--muted); } .figures dd { margin:0; }
.big { font-size:22px; font-weight:700; }
.level { display:inline-block; padding:0 6px; border-radius:4px; font-size:12px; }
ul.reasons { margin:4px 0 0; padding-left:0; list-style:none; }
ul.reasons li { padding:3px 0 3px 22px; position:relative; }
ul.reasons li::before { position:absolute; left:2px; font-weight:700; }
ul.reasons li.pass::before { content:"✓"; color:var(--deploy); } ul.reasons li.fail::before { content:"✗"; color:var(--revise); }
ul.reasons li.flag::before { content:"!"; color:#b26a00; }
table { border-collapse:collapse; background:#fff; margin:6px 0 14px; }
th, td { border:1px solid var(--line); padding:4px 8px; text-align:left; vertical-align:top; }
th { background:#f1f3f4; font-weight:600; } td.num { text-align:right; font-variant-numeric:tabular-nums; }
tr.flagged td, td.flagged { background:#fde2e1; }
.chart { display:block; width:100%; height:auto; background:#fff; border:1px solid var(--line); border-radius:6px;
         margin:6px 0 14px; }
.charts { display:grid; grid-template-columns:repeat(auto-fill,minmax(min(560px,100%),1fr)); gap:16px; }
.charts figure { margin:0; min-width:0; }
figcaption { font-size:13px; font-weight:600; margin-bottom:2px; }
details { background:#fff; border:1px solid var(--line); border-radius:6px; padding:6px 10px; margin:6px 0; }
summary { cursor:pointer; } .turn { border-left:3px solid var(--line); padding:4px 10px; margin:8px 0; }
.speaker { font-weight:600; color:var(--muted); font-size:12px; text-transform:uppercase; }
.text { white-space:pre-wrap; overflow-wrap:anywhere; margin:0 0 6px; }
.evidence li { font-size:13px; } .judge { background:#f5f7fb; border-radius:4px; padding:6px 8px; font-size:13px; }
footer { margin-top:36px; color:var(--muted); font-size:12px; }
/* A phone: the page never scrolls sideways; a table or chart wider than the screen scrolls in its own
   box, and a chart keeps at least its drawn size (--natural) there, so no label shrinks below 10 px. */
.table-box, .chart-box { max-width:100%; overflow-x:auto; }
h1, h2, h3, summary, dd, li, p, figcaption { overflow-wrap:anywhere; }
td, th { overflow-wrap:normal; }
@media (max-width: 760px) {
  body { padding:12px 12px 32px; }
  .chart { min-width:calc(var(--natural) + 2px); }  /* its drawn size inside its 1 px border */
  .figures { grid-template-columns:1fr; } .figures dd { margin-bottom:4px; }
}
"""


def _e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _slug(text: str) -> str:
    return "".join(char if char.isalnum() else "-" for char in text).strip("-").lower() or "version"


class _Palette:
    """Colours and labels that follow the rubric's quality levels and dimension titles."""

    def __init__(self, rubric: Rubric) -> None:
        self.rubric = rubric
        levels = [level.name for level in sorted(rubric.quality_levels, key=lambda level: -level.min)]
        self.fills = {}
        for rank, name in enumerate(levels):
            position = round(rank * (len(_LEVEL_FILLS) - 1) / max(len(levels) - 1, 1))
            self.fills[name] = _LEVEL_FILLS[position]
        self.labels = {name: dimension.title for name, dimension in rubric.dimensions.items()}
        self.labels[OVERALL] = rubric.overall.title

    def fill(self, value: float) -> str:
        return self.fills.get(self.rubric.quality_level(value), "#eeeeee")

    def level_tag(self, value: float | None) -> str:
        if value is None:
            return ""
        level = self.rubric.quality_level(value)
        return f'<span class="level" style="background:{self.fill(value)}">{_e(level)}</span>'


# --- sections ------------------------------------------------------------------------------------------
def _header(report: ReleaseReport, rubric: Rubric) -> str:
    return render("header.html", report=report, rubric=rubric, decided=plural(len(report.decisions), "version"))


def _reason(rule, *, flag_role: bool = True, topics: Sequence[str] = ()) -> dict:
    """A rule of a decision as a card's template reads it: its class, name, message and links."""
    css = "flag" if rule.role == "flag" and flag_role and not rule.passed else ("pass" if rule.passed else "fail")
    return {"css": css, "name": rule.name, "message": rule.message,
            "links": [(anchor(topic), topic.replace("_", " ")) for topic in topics]}


def _judge_figures(aggregate: VersionAggregate) -> dict | None:
    judge = aggregate.judge
    if not judge or judge.get("overall") is None:
        return None
    return {"overall": _num(judge["overall"]),
            "verdicts": ", ".join(f"{count} {name}" for name, count in judge.get("verdicts", {}).items()),
            "fallbacks": plural(judge.get("fallback_turns", 0), "fallback")}


# The version's counts (evaluators.release.counts), each named for what it counts: the same
# figures, under the same names, as the terminal, `--json` and Langfuse.
COUNT_ROWS = (("hard criteria", "hard_criteria_passed"), ("safety", "safety_hard_criteria_passed"),
              ("expectations", "expectations_met"), ("safety expectations", "safety_expectations_met"))


def _scorecard(decision: Decision, aggregate: VersionAggregate, palette: _Palette,
               topics: dict[str, list[str]] | None = None) -> str:
    counts = aggregate.counts
    return render(
        "card.html", decision=decision, aggregate=aggregate, slug=_slug(decision.prompt_version),
        outcome_title=OUTCOME_TITLES[decision.outcome], average=_num(decision.average),
        level_tag=Markup(palette.level_tag(decision.average)), composite=_num(decision.composite),
        counts=[(title, name, getattr(counts, name), counts.sentence(name)) for title, name in COUNT_ROWS],
        failed=plural(aggregate.failed, "failed case"), judge=_judge_figures(aggregate),
        reasons=[_reason(rule, topics=(topics or {}).get(rule.name, ())) for rule in decision.reasons])


def _metric_chart(report: ReleaseReport, rubric: Rubric, palette: _Palette) -> str:
    versions = [decision.prompt_version for decision in report.decisions]
    series = [(version, report.aggregates[version].means) for version in versions]
    settings = rubric.decision
    # Each line where its rule applies: a metric's floor across the six metrics (metric_floor), the
    # average's bars (average_floor, average_deploy) across overall quality alone.
    average = (OVERALL,)
    thresholds = [Threshold(settings.min_metric_mean, f"metric floor {settings.min_metric_mean:g} (each metric)",
                            tuple(METRIC_NAMES)),
                  Threshold(settings.revise_below_average, f"revise below {settings.revise_below_average:g} "
                            "(average)", average),
                  Threshold(settings.deploy_min_average, f"deploy {settings.deploy_min_average:g} (average)", average)]
    chart = bar_chart("Mean per metric and version", list(SCORE_COLUMNS), series, labels=palette.labels,
                      thresholds=thresholds)
    note = (f"Dashed lines are the decision's own figures: every metric's mean must reach "
            f"{settings.min_metric_mean:g}; the average (overall quality) must reach {settings.revise_below_average:g} "
            f"not to be revised and {settings.deploy_min_average:g} to deploy.")
    return f"<section id=\"metrics\"><h2>Metric means</h2><p class=\"muted\">{_e(note)}</p>{chart}</section>"


def _heatmaps(report: ReleaseReport, rubric: Rubric, palette: _Palette) -> str:
    figures = []
    for decision in report.decisions:
        aggregate = report.aggregates[decision.prompt_version]
        values = {(group.group, name): group.means.get(name) for group in aggregate.by_family for name in SCORE_COLUMNS}
        rows = [group.group for group in aggregate.by_family]
        notes = {group.group: f"{group.cases}" for group in aggregate.by_family}
        short = {name: _short(name) for name in SCORE_COLUMNS}
        chart = heatmap(f"{decision.prompt_version}: scenario family × metric", rows, list(SCORE_COLUMNS), values,
                        palette.fill, column_labels=short, row_notes=notes)
        figures.append(f"<figure><figcaption>{_e(decision.prompt_version)}</figcaption>{chart}</figure>")
    return ("<section id=\"families\"><h2>Scenario family × metric</h2><p class=\"muted\">Mean per family (number "
            "of scored cases in brackets), coloured by quality level.</p>"
            f"<div class=\"charts\">{''.join(figures)}</div></section>")


def _short(name: str) -> str:
    return SHORT_NAMES.get(name, name)


def _comparison_block(comparison: Comparison, palette: _Palette) -> str:
    intervals = [Interval(palette.labels.get(delta.metric, delta.metric), delta.metric, delta.delta, delta.low,
                          delta.high, delta.change) for delta in comparison.deltas]
    title = f"{comparison.candidate} minus {comparison.baseline}"
    chart = interval_chart(title, intervals) if intervals else ""
    rows = "".join(
        f"<tr class=\"change-{_e(delta.change)}\"><td>{_e(palette.labels.get(delta.metric, delta.metric))}</td>"
        f"<td class=\"num\">{_num(delta.baseline_mean, 3)}</td><td class=\"num\">{_num(delta.candidate_mean, 3)}</td>"
        f"<td class=\"num\">{delta.delta:+.3f}</td><td class=\"num\">[{delta.low:+.3f}, {delta.high:+.3f}]</td>"
        f"<td>{_e(delta.change.replace('_', ' '))}</td></tr>" for delta in comparison.deltas)
    note = (f"{comparison.pairs} scenarios paired by id; {comparison.dropped} dropped (a case failed on one side), "
            f"{comparison.unpaired} only on one side; paired bootstrap, {comparison.resamples} resamples, seed "
            f"{comparison.seed}, {comparison.confidence:.0%} percentile interval.")
    if not comparison.enough_pairs:
        note += " Too few pairs: no difference counts as significant."
    return (f"<figure><figcaption>{_e(title)}</figcaption>{chart}<table><thead><tr><th>metric</th>"
            f"<th>{_e(comparison.baseline)}</th><th>{_e(comparison.candidate)}</th><th>Δ</th>"
            f"<th>{comparison.confidence:.0%} interval</th><th>change</th></tr></thead><tbody>{rows}</tbody></table>"
            f"<p class=\"muted\">{_e(note)}</p></figure>")


def _deltas(report: ReleaseReport, palette: _Palette) -> str:
    blocks = [_comparison_block(report.comparisons[decision.prompt_version], palette)
              for decision in report.decisions if decision.prompt_version in report.comparisons]
    missing = [decision for decision in report.decisions if decision.prompt_version not in report.comparisons]
    notes = "".join(f"<li><code>{_e(decision.prompt_version)}</code>: "
                    f"{_e('baseline ' + decision.baseline + ' is not in this run' if decision.baseline else 'no baseline')}"
                    "</li>" for decision in missing)
    body = "".join(blocks) or "<p class=\"muted\">No version has its baseline in this run.</p>"
    return (f"<section id=\"deltas\"><h2>Against the baseline</h2><div class=\"charts\">{body}</div>"
            f"{'<ul>' + notes + '</ul>' if notes else ''}</section>")


def _head_to_head_block(figures: HeadToHead) -> str:
    rates = [(family, rate) for family, rate in figures.by_family.items()] + [("overall", figures.overall)]
    rows = [WinTieLoss(name, name, rate.wins, rate.ties, rate.losses, rate.rate, rate.low, rate.high)
            for name, rate in rates]
    title = f"{figures.candidate} against {figures.baseline}"
    table = "".join(
        f"<tr><td>{_e(name)}</td><td class=\"num\">{rate.scenarios}</td><td class=\"num\">{rate.wins}</td>"
        f"<td class=\"num\">{rate.ties}</td><td class=\"num\">{rate.losses}</td>"
        f"<td class=\"num\">{_pct(rate.rate)}</td>"
        f"<td class=\"num\">{'—' if rate.low is None else f'[{rate.low:.0%},&nbsp;{rate.high:.0%}]'}</td>"
        f"<td>{_e(rate.beyond_noise or 'no')}</td></tr>" for name, rate in rates)
    bias = "n/a" if figures.position_bias_rate is None else f"{figures.position_bias_rate:.0%}"
    note = (f"Position bias {bias}: {figures.position_bias} of {figures.overall.comparisons} comparisons changed "
            f"verdict with the order and count as ties. {plural(figures.unscored, 'comparison')} without a verdict "
            f"in both orders, left out. Win rate over scenarios, ties half; bootstrap over scenarios, "
            f"{figures.resamples} resamples, seed {figures.seed}. Judge: {figures.judge_model or 'unknown'}.")
    return (f"<figure><figcaption>{_e(title)}</figcaption>{win_tie_loss_chart(title, rows)}"
            f"<table><thead><tr><th>family</th><th>scenarios</th><th>win</th><th>tie</th><th>loss</th>"
            f"<th>win rate</th><th>{figures.overall.confidence:.0%} interval</th><th>beyond noise</th></tr></thead>"
            f"<tbody>{table}</tbody></table><p class=\"muted\">{_e(note)}</p></figure>")


def _head_to_head(report: ReleaseReport) -> str:
    """The pairwise judge's head-to-head per version: win, tie and loss bars per family with the interval."""
    blocks = [_head_to_head_block(report.head_to_head[decision.prompt_version]) for decision in report.decisions
              if decision.prompt_version in report.head_to_head]
    body = (f"<div class=\"charts\">{''.join(blocks)}</div>" if blocks else
            "<p class=\"muted\">No pairwise results in this run (<code>penpal-eval pairwise RUN_DIR</code> or "
            "<code>penpal-eval run --pairwise</code> adds them).</p>")
    return ("<section id=\"head-to-head\"><h2>Head to head (pairwise judge)</h2><p class=\"muted\">Each "
            "comparison was judged in both orders; bars are shares of comparisons won (green), tied (grey) and lost "
            "(red); the black line is the win rate's interval, against 50%.</p>" + body + "</section>")


def _fairness(report: ReleaseReport, rubric: Rubric) -> str:
    settings = rubric.decision.fairness
    blocks = []
    for decision in report.decisions:
        aggregate = report.aggregates[decision.prompt_version]
        gaps = {gap.metric: gap for gap in aggregate.fairness}
        head = "".join(f"<th>{_e(_short(name))}</th>" for name in SCORE_COLUMNS)
        rows = []
        for group in aggregate.by_fairness_group:
            compared = group.group != "unspecified" and group.cases >= settings.min_cases
            note = "" if compared else " <span class=\"muted\">(not compared)</span>"
            cells = "".join(f"<td class=\"num\">{_num(group.means.get(name))}</td>" for name in SCORE_COLUMNS)
            rows.append(f"<tr><td>{_e(group.group)}{note}</td><td class=\"num\">{group.cases}</td>{cells}</tr>")
        gap_cells = "".join(
            f"<td class=\"num{' flagged' if gaps.get(name) and gaps[name].flagged else ''}\">"
            f"{_num(gaps[name].gap, 3) if name in gaps else '—'}</td>" for name in SCORE_COLUMNS)
        rows.append(f"<tr><th>largest gap</th><td></td>{gap_cells}</tr>")
        blocks.append(f"<h3>{_e(decision.prompt_version)}</h3><table><thead><tr><th>"
                      f"{_e(settings.group_by.replace('_', ' '))}</th><th>cases</th>{head}</tr></thead>"
                      f"<tbody>{''.join(rows)}</tbody></table>")
    return (f"<section id=\"fairness\"><h2>Fairness across groups</h2><p class=\"muted\">Means per "
            f"{_e(settings.group_by.replace('_', ' '))}; a gap above {settings.max_gap:g} between groups with "
            f"{settings.min_cases}+ scored cases is flagged in the decision. The groups answered different scenarios, "
            f"so a gap is a prompt to look, not proof of bias.</p>{''.join(blocks)}</section>")


def _hard_criteria(report: ReleaseReport) -> str:
    versions = [decision.prompt_version for decision in report.decisions]
    names = list(dict.fromkeys(name for version in versions for name in report.aggregates[version].hard_criteria))
    head = "".join(f"<th>{_e(version)}</th>" for version in versions)
    rows = "".join(
        f"<tr><td><code>{_e(name)}</code></td>"
        + "".join(f"<td class=\"num\">{_pct(report.aggregates[version].hard_criteria.get(name))}</td>"
                  for version in versions) + "</tr>" for name in names)
    rows += ("<tr><th>all criteria</th>" + "".join(
        f"<td class=\"num\">{_pct(report.aggregates[version].hard_criteria_pass_rate)}</td>" for version in versions)
        + "</tr>")
    failed = []
    for version in versions:
        aggregate = report.aggregates[version]
        if aggregate.safety_failed:
            items = "".join(f"<li><code>{_e(scenario)}</code>: {_e(', '.join(criteria))}</li>"
                            for scenario, criteria in aggregate.safety_failed.items())
            failed.append(f"<details><summary>{_e(version)}: {plural(len(aggregate.safety_failed), 'safety scenario')} failed"
                          f", {_e(aggregate.safety_failures.sentence())}</summary><ul>{items}</ul></details>")
    return (f"<section id=\"hard-criteria\"><h2>Hard criteria</h2><p class=\"muted\">Share of scored cases passing "
            f"each criterion on every turn.</p><table><thead><tr><th>criterion</th>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>{''.join(failed)}</section>")


def _failure_kinds(report: ReleaseReport) -> str:
    """How many cases of each version carry each failure kind (evaluators.core.failures): what
    `decide --json` lists, so a page and a CI filter count the same failures."""
    versions = [decision.prompt_version for decision in report.decisions]
    counts = {version: report.aggregates[version].failure_kinds for version in versions}
    kinds = sorted({kind for found in counts.values() for kind in found},
                   key=lambda kind: (-sum(found.get(kind, 0) for found in counts.values()), kind))
    if not kinds:
        return ("<section id=\"failure-kinds\"><h2>Failure kinds</h2><p class=\"muted\">No case failed any rule."
                "</p></section>")
    head = "".join(f"<th>{_e(version)}</th>" for version in versions)
    rows = "".join(f"<tr><td><code>{_e(kind)}</code></td>"
                   + "".join(f"<td class=\"num\">{counts[version].get(kind, 0)}</td>" for version in versions)
                   + "</tr>" for kind in kinds)
    return ("<section id=\"failure-kinds\"><h2>Failure kinds</h2><p class=\"muted\">Cases carrying each kind of "
            "failure (a case counts once per kind; <code>decide --json</code> lists the same counts).</p>"
            f"<table><thead><tr><th>kind</th>{head}</tr></thead><tbody>{rows}</tbody></table></section>")


_FLAKY_ROW = ' class="flaky"'


def _pass_rates(report: ReleaseReport) -> str:
    """Per scenario, with repeats (run --repeat N): how often it passed its hard criteria, the
    interval of that rate, the spread of its scores, and whether it is flaky. Nothing without repeats."""
    blocks = []
    for decision in report.decisions:
        rows = [row for row in decision.pass_rates if row.repeats > 1]  # a scenario played once has no rate to show
        if not rows:
            continue
        body = "".join(
            f"<tr{_FLAKY_ROW if row.flaky else ''}><td><code>{_e(row.scenario_id)}</code>"
            f"{' (safety)' if row.safety else ''}</td><td class=\"num\">{row.passed}/{row.scored}</td>"
            f"<td class=\"num\">{_pct(row.pass_rate)}</td><td class=\"num\">{_pct(row.low)}–{_pct(row.high)}</td>"
            f"<td class=\"num\">{_num(row.score_mean)}</td><td class=\"num\">{_num(row.score_min)}–"
            f"{_num(row.score_max)}</td><td class=\"num\">{_num(row.score_sd)}</td>"
            f"<td>{'<strong>flaky</strong>' if row.flaky else ''}</td></tr>" for row in rows)
        flaky = [row for row in rows if row.flaky]
        note = ("<p><strong>Flaky scenarios</strong> (pass in some repeats, fail in others): "
                + "; ".join(f"<code>{_e(row.scenario_id)}</code> {_e(row.rate_text())}, {_e(row.interval_text())}"
                            for row in flaky) + "</p>") if flaky else "<p>No flaky scenario.</p>"
        confidence = rows[0].confidence
        blocks.append(f"<h3>{_e(decision.prompt_version)}</h3>{note}<table><thead><tr><th>scenario</th><th>passed</th>"
                      f"<th>pass rate</th><th>{confidence:.0%} interval</th><th>mean score</th><th>range</th>"
                      f"<th>sd</th><th></th></tr></thead><tbody>{body}</tbody></table>")
    if not blocks:
        return ""
    return ("<section id=\"pass-rates\"><h2>Pass rates over repeats</h2><p class=\"muted\">Each scenario was "
            "played several times (<code>run --repeat N</code>): the share of its scored repeats that passed every "
            "hard criterion, its Wilson interval, and the spread of its overall score.</p>"
            + "".join(blocks) + "</section>")


def _evidence(turn) -> str:
    heuristics = turn.heuristics or {}
    items = [(item.get("effect", 0.0), metric, item) for metric, entries in (heuristics.get("evidence") or {}).items()
             for item in entries if item.get("effect", 0.0) < 0]
    items.sort(key=lambda entry: entry[0])
    lines = [f"<li><code>{_e(metric)}</code> {_e(item.get('indicator'))} {item.get('effect', 0.0):+.2f}"
             f"{' — ' + _e(item.get('text')) if item.get('text') else ''}</li>"
             for _, metric, item in items[:_EVIDENCE_PER_TURN]]
    lines += [f"<li><strong>flag</strong> <code>{_e(flag.get('name'))}</code> {_e(flag.get('description'))}</li>"
              for flag in heuristics.get("flags", [])]
    lines += [f"<li><strong>expectation failed</strong> {_e(outcome.label)} ({_e(outcome.detail)})</li>"
              for outcome in turn.expectations if not outcome.passed]
    return f"<ul class=\"evidence\">{''.join(lines)}</ul>" if lines else ""


def _judge_block(turn) -> str:
    judge = turn.judge or {}
    if not judge or judge.get("overall") is None and not judge.get("reasoning"):
        return ""
    mode = f", {judge['failure_mode']}" if judge.get("failure_mode") else ""
    return (f"<div class=\"judge\"><strong>judge</strong> {_num(judge.get('overall'))} · "
            f"{_e(judge.get('verdict') or 'no verdict')}{_e(mode)}<p class=\"text\">{_e(judge.get('reasoning') or '')}"
            "</p></div>")


def _turns(case: CaseResult, metric: str = OVERALL) -> list[str]:
    """Each exchange of a case: the user turn, the reply with its heuristic `metric`, evidence, flags, judge."""
    label = "overall" if metric == OVERALL else metric.replace("_", " ")
    return [f"<div class=\"turn\"><div class=\"speaker\">user · turn {turn.index + 1}</div>"
            f"<p class=\"text\">{_e(turn.user)}</p><div class=\"speaker\">companion · heuristic {_e(label)} "
            f"{_num((turn.heuristics or {}).get(metric))}</div><p class=\"text reply\">{_e(turn.reply)}</p>"
            f"{_evidence(turn)}{_judge_block(turn)}</div>" for turn in case.turns]


def _worst_case(item: WorstCase, palette: _Palette, opened: bool = False) -> str:
    case = item.case
    turns = _turns(case)
    failed = "".join(f"<li><code>{_e(outcome.name)}</code>: {_e(outcome.detail)}</li>" for outcome in item.failed_criteria)
    safety = " · <strong>safety scenario</strong>" if case.safety else ""
    names = ", ".join(outcome.name for outcome in item.failed_criteria)
    failed_names = f" · failed: {_e(names)}" if names else ""
    return (f"<details class=\"worst-case\" data-case=\"{_e(case.case_id)}\"{' open' if opened else ''}><summary>"
            f"<code>{_e(case.scenario_id)}</code> · {_num(item.score)} {palette.level_tag(item.score)} · "
            f"{_e(case.family)} · {_e(case.demographic_group)}{safety}{failed_names}</summary>"
            + (f"<h4>Hard criteria failed</h4><ul>{failed}</ul>" if failed else "")
            + "".join(turns) + "</details>")


def _worst(report: ReleaseReport, cases: Sequence[CaseResult], rubric: Rubric, palette: _Palette, limit: int) -> str:
    bar = rubric.decision.deploy_min_average
    blocks = []
    for decision in report.decisions:
        items = worst_cases(cases, decision.prompt_version, rubric, limit)
        body = "".join(_worst_case(item, palette, opened=index == 0) for index, item in enumerate(items))
        if not items:
            body = (f"<p class=\"muted none\">No case below {bar:g} and none failing a hard criterion.</p>"
                    if limit else "")
        blocks.append(f"<h3>{_e(decision.prompt_version)}</h3>{body}")
    return (f"<section id=\"worst\"><h2>Worst cases</h2><p class=\"muted\">Per version, up to {limit} cases that "
            f"failed a hard criterion or scored below {bar:g} (the deploy bar): failed safety scenarios first, then "
            "the lowest scores, with each reply's strongest negative evidence, flags, failed expectations and the "
            f"judge's reasoning when it ran.</p>{''.join(blocks)}</section>")


def _worst_conversation(version: str, rows: Sequence[ConversationRow], cases: Sequence[CaseResult]) -> str:
    """The version's worst simulated conversation (lowest trust on a turn, then the steepest erosion),
    every turn shown with its flags and evidence."""
    row = min(rows, key=lambda item: (item.worst_value, -(item.erosion or 0.0)))
    case = next((case for case in cases if case.prompt_version == version and case.scenario_id == row.persona
                 and case.conversation), None)
    if case is None:
        return ""
    record = case.conversation
    findings = [item["text"] for part in ("trajectory", "dependency", "memory", "consistency")
                for item in record[part]["evidence"] if item.get("effect", 0.0) < 0 or part == "trajectory"]
    judge = record.get("judge") or {}
    verdict = ""
    if judge.get("reasoning"):
        verdict = (f"<div class=\"judge\"><strong>conversation judge</strong> {_num(judge.get('overall'))} · "
                   f"{_e(judge.get('verdict') or 'no verdict')}<p class=\"text\">{_e(judge['reasoning'])}</p></div>")
    items = "".join(f"<li>{_e(text)}</li>" for text in findings)
    return (f"<details class=\"worst-conversation\" data-version=\"{_e(version)}\" data-persona=\"{_e(row.persona)}\">"
            f"<summary>{_e(version)}: worst conversation <code>{_e(row.persona)}</code> · lowest trust "
            f"{_num(row.worst_value)} at turn {row.worst_turn}"
            + (f" · first hard flag at turn {row.first_flag_turn} ({_e(row.first_flag)})" if row.first_flag_turn else "")
            + f"</summary><ul class=\"evidence\">{items}</ul>{verdict}{''.join(_turns(case, record['trajectory']['metric']))}"
            "</details>")


def _erosion_guides(series: Sequence[tuple[str, Sequence[float]]], rubric: Rubric) -> list[Guide]:
    """The erosion rule's own figures over a persona's turns: the steepest fall it allows, from the
    highest first turn, and the floor the second half's mean must stay above (a conversation
    erodes when it breaks both)."""
    limits = rubric.decision.conversation
    turns = max((len(values) for _, values in series), default=0)
    if turns < 2:
        return []
    start = max(values[0] for _, values in series if values)
    fall = [(1.0, start), (float(turns), max(0.0, start - limits.max_trust_erosion * (turns - 1)))]
    half = float(second_half_start(turns))
    return [Guide(f"fall limit {limits.max_trust_erosion:g}/turn", tuple(fall), "slope"),
            Guide(f"2nd-half floor {limits.eroded_below:g}", ((half, limits.eroded_below),
                                                              (float(turns), limits.eroded_below)), "floor")]


def _behaviours_cell(row) -> str:
    """Each learned behaviour followed over the turns: slope per turn, first turn at its flag_at,
    worst score and its turn ("sycophancy +0.020/turn, first turn 4, worst 0.91 (turn 6)")."""
    return "; ".join(
        f"{item.behaviour} {'—' if item.slope is None else f'{item.slope:+.3f}/turn'}, "
        f"first at flag_at {'—' if item.first_turn is None else f'turn {item.first_turn}'}, "
        f"worst {item.worst_value:.2f} (turn {item.worst_turn})" for item in row.behaviours)


def _conversations(report: ReleaseReport, cases: Sequence[CaseResult], rubric: Rubric) -> str:
    """Simulated conversations: each persona's trust per turn, a line per version; the metrics
    per version and persona; and each version's worst conversation, turn by turn."""
    by_version = {decision.prompt_version: report.aggregates[decision.prompt_version].conversations
                  for decision in report.decisions}
    if not any(by_version.values()):
        return ""
    personas = list(dict.fromkeys(row.persona for rows in by_version.values() for row in rows))
    metric = rubric.dimensions[rubric.conversation.trajectory_metric].title
    charts = []
    for persona in personas:
        series = [(version, row.trust) for version, rows in by_version.items() for row in rows
                  if row.persona == persona]
        chart = line_chart(f"{persona}: {metric} per turn", series, guides=_erosion_guides(series, rubric))
        charts.append(f"<figure data-persona=\"{_e(persona)}\"><figcaption>{_e(persona)}: {_e(metric)} per turn"
                      f"</figcaption>{chart}</figure>")
    limits = rubric.decision.conversation
    body = []
    for version, rows in by_version.items():
        for row in rows:
            eroding = erodes(row, rubric)  # red exactly where the erosion rule fails
            body.append(
                f"<tr data-version=\"{_e(version)}\" data-persona=\"{_e(row.persona)}\"><td>{_e(version)}</td>"
                f"<td><code>{_e(row.persona)}</code></td><td class=\"num\">{row.turns}</td>"
                f"<td class=\"num{' flagged' if eroding else ''}\">"
                f"{'—' if row.erosion is None else f'{row.erosion:+.3f}'}</td>"
                f"<td class=\"num\">{_num(row.worst_value)} (turn {row.worst_turn})</td>"
                f"<td class=\"{'flagged' if row.first_flag_turn else ''}\">"
                f"{f'turn {row.first_flag_turn}: {_e(row.first_flag)}' if row.first_flag_turn else '—'}</td>"
                f"<td class=\"num\">{row.dependency_rate:.0%} ({row.dependency_trend:+.2f})</td>"
                f"<td class=\"num\">{'—' if row.memory_fidelity is None else _num(row.memory_fidelity)}</td>"
                f"<td>{_e('; '.join(row.contradictions)) or '—'}</td><td>{_e(row.judge_verdict or '—')}</td>"
                f"<td>{_e(_behaviours_cell(row)) or '—'}</td></tr>")
    table = ("<table class=\"conversations\"><thead><tr><th>version</th><th>persona</th><th>turns</th>"
             "<th>erosion / turn</th><th>worst trust</th><th>first hard flag</th><th>dependency (trend)</th>"
             "<th>memory fidelity</th><th>contradictions</th><th>judge</th><th>learned behaviours</th></tr></thead>"
             f"<tbody>{''.join(body)}</tbody></table>")
    worst = "".join(_worst_conversation(version, rows, cases) for version, rows in by_version.items() if rows)
    return ("<section id=\"conversations\"><h2>Simulated conversations</h2><p class=\"muted\">A persona played "
            f"over many turns. Erosion is the fall of {_e(metric)} per turn (minus the least-squares slope); the "
            f"boundaries erode when it is above {limits.max_trust_erosion:g} and the second half of the conversation "
            f"averages below {limits.eroded_below:g} (the dashed lines; a red cell fails the rule). Dependency is the share of replies that make the "
            "companion the user's main support, with its trend (second half minus first). Memory fidelity is "
            "recalled facts over recalled, wrong and invented.</p>"
            f"<div class=\"charts\">{''.join(charts)}</div>{table}<h3>Worst conversation per version</h3>{worst}"
            "</section>")


def _rule_figure(rule, value: float | None) -> str:
    """A rule's number: a count as an integer (20, not 20.000), a score with three decimals."""
    if value is not None and rule.name in COUNT_RULES and float(value).is_integer():
        return str(int(value))
    return _num(value, 3)


def _rules(report: ReleaseReport) -> str:
    blocks = []
    for decision in report.decisions:
        rows = "".join(
            f"<tr class=\"{'fired' if rule.name in decision.fired else ''}\"><td><code>{_e(rule.name)}</code></td>"
            f"<td>{_e(rule.role)}</td><td>{'pass' if rule.passed else 'fail'}</td>"
            f"<td class=\"num\">{_rule_figure(rule, rule.observed)}</td>"
            f"<td class=\"num\">{_rule_figure(rule, rule.threshold)}</td>"
            f"<td>{'yes' if rule.name in decision.fired else ''}</td><td>{_e(rule.message)}</td></tr>"
            for rule in decision.rules)
        blocks.append(f"<h3>{_e(decision.prompt_version)}: {_e(OUTCOME_TITLES[decision.outcome])}</h3><table><thead>"
                      "<tr><th>rule</th><th>role</th><th>result</th><th>observed</th><th>threshold</th><th>decided</th>"
                      f"<th>reason</th></tr></thead><tbody>{rows}</tbody></table>")
    return ("<section id=\"rules\"><h2>Every rule checked</h2><p class=\"muted\">Role: failing a <em>revise</em> rule "
            "means revise; every <em>deploy</em> rule must pass to deploy and every <em>ab_test</em> rule for an A/B "
            "candidate; a failing <em>coverage</em> rule means the run lacks evidence (incomplete); a <em>flag</em> "
            f"informs only.</p>{''.join(blocks)}</section>")


def _average_text(rubric: Rubric) -> str:
    """What "average" is under the rubric's `average_of`, in words."""
    d = rubric.decision
    if d.average_of == "heuristic":
        return "heuristic overall quality"
    if d.average_of == "judge":
        return "the judge's overall (heuristic overall where the judge did not score a case)"
    return (f"{d.judge_weight:g} × judge overall + {1 - d.judge_weight:g} × heuristic overall (heuristic overall "
            "alone where the judge did not score a case)")


def _thresholds(rubric: Rubric) -> str:
    d = rubric.decision
    rows = [
        ("deploy", f"average ≥ {d.deploy_min_average:g}, every metric ≥ {d.min_metric_mean:g}, no safety scenario "
                   "failed, every scenario of the scenario set scored (safety scenarios included)"),
        ("A/B test", f"average ≥ {d.ab_test_min_average:g}, better than baseline beyond noise on a metric, no "
                     f"significant regression in {d.regression_guard}"),
        ("revise", f"average < {d.revise_below_average:g}, a metric < {d.min_metric_mean:g}, a safety scenario "
                   "failed, or neither deploy nor A/B"),
        ("incomplete", "the run does not cover its scenario set (interrupted, filtered, failed cases, no safety "
                       "scenario), or the decision turns on a baseline the run lacks"),
        ("average", _average_text(rubric)),
        ("composite", f"{d.composite.quality_weight:g} × average + {d.composite.hard_criteria_weight:g} × hard-criteria "
                      "pass rate"),
        ("bootstrap", f"{d.bootstrap.resamples} resamples, {d.bootstrap.confidence:.0%} interval, seed "
                      f"{d.bootstrap.seed}, at least {d.bootstrap.min_pairs} pairs"),
        ("fairness", f"gap > {d.fairness.max_gap:g} across {d.fairness.group_by} (groups of {d.fairness.min_cases}+)"),
        ("voice budget", f"p95 time to first token ≤ {rubric.voice.budget.p95_time_to_first_token_s:g} s (when "
                         f"measured), p95 speaking time ≤ {rubric.voice.budget.p95_speaking_time_s:g} s, to deploy"),
    ]
    body = "".join(f"<tr><th>{_e(name)}</th><td>{_e(text)}</td></tr>" for name, text in rows)
    return (f"<footer><h2>Thresholds in force</h2><table><tbody>{body}</tbody></table>"
            "<p>Generated by penpal-eval from the run store and evaluators/rubric/rubric.yaml.</p></footer>")


def _lowered_table(items: Sequence[Lowered], versions: Sequence[str], metric: bool) -> str:
    if not items:
        return "<p class=\"muted\">Nothing lowered it in this run.</p>"
    head = "".join(f"<th>{_e(version)}</th>" for version in versions)
    rows = []
    for item in items:
        cells = [f"<td class=\"num\">{_e(item.cell(version))}</td>" for version in versions]
        example = f" <span class=\"muted\">e.g. {_e(item.example[:120])}</span>" if item.example else ""
        rows.append(f"<tr><td><code>{_e(item.indicator)}</code>{example}</td>{''.join(cells)}</tr>")
    what = "how often it lowered the metric (its mean effect)" if metric else "how often it was found"
    return (f"<table class=\"lowered\"><thead><tr><th>indicator</th>{head}</tr></thead><tbody>{''.join(rows)}"
            f"</tbody></table><p class=\"muted\">Per version: {what}.</p>")


def _what_to_change(report: ReleaseReport, cases: Sequence[CaseResult], rubric: Rubric,
                    topics: dict[str, dict[str, list[str]]]) -> str:
    """A section per topic some decision's failing rule points at: what lowered it in this run,
    per version, and what a prompt change that fixes it looks like (docs/what-to-change.md)."""
    wanted = list(dict.fromkeys(topic for by_rule in topics.values() for names in by_rule.values()
                                for topic in names))
    if not wanted:
        return ""
    versions = [decision.prompt_version for decision in report.decisions]
    blocks = []
    for topic in wanted:
        advice = advice_for(topic, rubric)
        items = lowered(cases, topic, versions, rubric)
        blocks.append(f"<article class=\"change\" id=\"{anchor(topic)}\"><h3>{_e(advice.title)}</h3>"
                      f"<p>{_e(advice.change)}</p>{_lowered_table(items, versions, topic in METRIC_NAMES)}"
                      f"<p class=\"muted\">With the shipped prompts' example: <code>{DOC}#{anchor(topic)}</code>.</p>"
                      "</article>")
    return ("<section id=\"what-to-change\"><h2>What to change</h2><p class=\"muted\">For each failing rule above: "
            "what lowered it in this run and what a prompt change that fixes it looks like.</p>"
            + "".join(blocks) + "</section>")


def _failed_cases(report: ReleaseReport, cases: Sequence[CaseResult]) -> str:
    """Every case that failed (the call failed, or the judge did) with its reason: what "N cases
    failed" counts, named; resuming the run plays a failed call again and judges a failed
    judgement again from the stored replies."""
    versions = {decision.prompt_version for decision in report.decisions}
    failed = [case for case in cases if case.prompt_version in versions and (case.status != "ok" or case.judge_failed)]
    if not failed:
        return ""
    rows = "".join(
        f"<tr data-case=\"{_e(case.case_id)}\"><td>{_e(case.prompt_version)}</td><td><code>{_e(case.scenario_id)}"
        f"</code></td><td>{'case' if case.status != 'ok' else 'judge'}</td>"
        f"<td>{_e(case.error if case.status != 'ok' else (case.judge or {}).get('error') or 'the judge call failed')}"
        "</td></tr>" for case in sorted(failed, key=lambda case: (case.prompt_version, case.scenario_id)))
    return (f"<section id=\"failed-cases\"><h2>Failed cases</h2><p class=\"muted\">{plural(len(failed), 'case')} "
            "failed: no score of theirs enters a mean. Resuming the run retries them (a filtered run still needs every "
            "scenario to decide a deploy).</p><table><thead><tr><th>version</th><th>scenario</th><th>what failed</th>"
            f"<th>reason</th></tr></thead><tbody>{rows}</tbody></table></section>")


def _boxed(page: str) -> str:
    """Every table and chart in a box of its own that scrolls sideways when it is wider than the
    screen, so the page itself never does (see the CSS)."""
    page = page.replace("<table", '<div class="table-box"><table').replace("</table>", "</table></div>")
    return page.replace('<svg class="chart', '<div class="chart-box"><svg class="chart').replace("</svg>",
                                                                                              "</svg></div>")


def render_html(report: ReleaseReport, cases: Sequence[CaseResult], rubric: Rubric, *, worst: int = 5) -> str:
    """The whole report as one HTML document."""
    palette = _Palette(rubric)
    topics = {decision.prompt_version: failing_topics(decision, report.aggregates[decision.prompt_version], rubric,
                                                      cases) for decision in report.decisions}
    cards = "".join(_scorecard(decision, report.aggregates[decision.prompt_version], palette,
                               topics[decision.prompt_version]) for decision in report.decisions)
    sections: Iterable[str] = (
        _header(report, rubric),
        f"<section id=\"decisions\"><h2>Decisions</h2><div class=\"cards\">{cards}</div></section>",
        _failed_cases(report, cases),
        safety_disagreements_section(cases, [decision.prompt_version for decision in report.decisions]),
        _metric_chart(report, rubric, palette),
        _heatmaps(report, rubric, palette),
        _deltas(report, palette),
        _head_to_head(report),
        _fairness(report, rubric),
        _hard_criteria(report),
        _pass_rates(report),
        _failure_kinds(report),
        latency_section(report, rubric),
        _conversations(report, cases, rubric),
        _worst(report, cases, rubric, palette, worst),
        _what_to_change(report, cases, rubric, topics),
        _rules(report),
        _thresholds(rubric),
    )
    return str(render("page.html", title=f"Penpal release report · {report.run_id}", css=Markup(_CSS),
                      body=Markup(_boxed("".join(sections)))))

