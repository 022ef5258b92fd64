"""The release decisions on the terminal: one row per version, then the reasons.

Shared by `penpal-eval decide`, `report`, `compare`, `pairwise` and the end of `penpal-eval run`.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evaluators.core.text import plural
from evaluators.release.contracts import Comparison, Decision, HeadToHead, ReleaseReport, RuleOutcome
from evaluators.release.counts import COUNT_KEYS
from evaluators.release.counts import legend as count_legend
from evaluators.release.latency import NOT_MEASURED
from evaluators.release.rules import COVERAGE, OUTCOME_TITLES, REFUSED_TITLES, SAFETY_EVIDENCE, erodes
from evaluators.release.voice_budget import within_budget
from evaluators.report.console import compact_table, key_legend, text_column, value_column
from evaluators.report.labels import SHORT_NAMES, level_style
from evaluators.rubric.loader import Rubric

# The counts the decision table shows (evaluators.release.counts): the safety figure is the run
# table's own, under the same key and legend.
DECISION_COUNTS = ("hard_criteria_passed", "safety_hard_criteria_passed")
OUTCOME_STYLES = {"deploy": "bold green", "ab_test": "bold cyan", "revise": "bold red", "incomplete": "bold yellow"}
_CHANGE_STYLES = {"improved": "green", "regressed": "red", "no_difference": "dim"}


def decisions_table(report: ReleaseReport, rubric: Rubric) -> Table:
    """Decision, average and level, composite, hard criteria and safety per version.

    Each version's baseline is named on its headline below (`decision_lines`), which keeps
    the table within 80 columns with every decision whole.
    """
    table = compact_table("Release decision per prompt version")
    text_column(table, "version", min_width=10)
    value_column(table, "decision", justify="left")
    value_column(table, "avg")
    value_column(table, "level", justify="left")
    value_column(table, "comp")
    for name in DECISION_COUNTS:
        value_column(table, COUNT_KEYS[name])
    for decision in report.decisions:
        counts = report.aggregates[decision.prompt_version].counts
        style = level_style(rubric, decision.quality_level)
        table.add_row(Text(decision.prompt_version, style="bold"),
                      Text(OUTCOME_TITLES[decision.outcome], style=OUTCOME_STYLES[decision.outcome]),
                      Text(f"{decision.average:.3f}", style=style), Text(decision.quality_level, style=style),
                      f"{decision.composite:.3f}", counts.share("hard_criteria_passed"),
                      counts.fraction("safety_hard_criteria_passed"))
    averages = {decision.average_of for decision in report.decisions}
    table.caption = ("avg = " + "; ".join(sorted(averages)) + "; comp = composite; "
                     + count_legend(DECISION_COUNTS, shares=["hard_criteria_passed"]))
    return table


def conversations_table(report: ReleaseReport, version: str, rubric: Rubric, *, caption: bool = True) -> Table | None:
    """One version's simulated conversations, a row each; None when it has none.

    One table per version keeps the persona names whole at 80 columns. Turns are 1-based; a
    figure that could not be measured (too short, nothing to recall) is "—".
    """
    rows = report.aggregates[version].conversations
    if not rows:
        return None
    thresholds = rubric.decision.conversation
    table = compact_table(f"Simulated conversations: {version}")
    text_column(table, "persona", min_width=12)
    for column in ("n", "erode", "worst", "flag", "dep", "mem", "ctr", "judge"):
        value_column(table, column)
    for row in rows:
        eroding = erodes(row, rubric)  # red exactly where the erosion rule fails
        table.add_row(
            row.persona, str(row.turns),
            Text("—" if row.erosion is None else f"{row.erosion:+.3f}", style="red" if eroding else ""),
            f"{row.worst_value:.2f}@{row.worst_turn}",
            Text("—" if row.first_flag_turn is None else f"@{row.first_flag_turn}", style="red"),
            Text(f"{row.dependency_rate:.0%}", style="red" if row.dependency_rate > thresholds.max_dependency_rate
                 else ""),
            "—" if row.memory_fidelity is None else f"{row.memory_fidelity:.2f}",
            str(len(row.contradictions)), row.judge_verdict or "—")
    if caption:  # once, under the last of the tables, not repeated per version
        table.caption = ("n = turns; erode = fall of trust per turn (minus the slope); worst = lowest trust @ its "
                         "turn; flag = turn of the first hard flag; dep = share of replies making the companion "
                         "the main support; mem = memory fidelity; ctr = contradictions of its own statements; "
                         "judge = the conversation judge's verdict")
    return table


def behaviours_table(report: ReleaseReport, version: str, *, caption: bool = True) -> Table | None:
    """One version's learned behaviours over its simulated conversations (the detectors the
    rubric's `conversation.behaviour_trajectories` follows), a row per conversation and
    behaviour; None when no conversation has them. Its own table keeps each at 80 columns."""
    rows = [(row.persona, item) for row in report.aggregates[version].conversations for item in row.behaviours]
    if not rows:
        return None
    table = compact_table(f"Learned behaviours over the turns: {version}")
    text_column(table, "persona", min_width=12)
    text_column(table, "behaviour")
    for column in ("slope", "first", "worst"):
        value_column(table, column)
    for persona, item in rows:
        table.add_row(persona, item.behaviour, "—" if item.slope is None else f"{item.slope:+.3f}",
                      Text("—" if item.first_turn is None else f"@{item.first_turn}", style="red"),
                      f"{item.worst_value:.2f}@{item.worst_turn}")
    if caption:
        table.caption = ("slope = change of the detector's score per turn (least squares); first = first turn at "
                         "or above its flag_at; worst = highest score @ its turn")
    return table


def _rule_line(rule: RuleOutcome) -> Text:
    if rule.role == "flag" and not rule.passed:
        mark, style = "!", "yellow"
    else:
        mark, style = ("✓", "green") if rule.passed else ("✗", "red")
    line = Text(f"  {mark} ", style=style)
    line.append(f"{rule.name}: ", style="bold")
    line.append(rule.message)
    return line


def decision_lines(decision: Decision) -> list[Text]:
    """The decision's headline and the rules that decided it, one line each."""
    head = Text(f"{decision.prompt_version}: ", style="bold")
    head.append(decision.summary, style=OUTCOME_STYLES[decision.outcome])
    if decision.baseline:
        head.append(f" Baseline: {decision.baseline}.")
    return [head, *(_rule_line(rule) for rule in decision.reasons), *coverage_lines(decision),
            *safety_evidence_lines(decision)]


def safety_evidence_lines(decision: Decision) -> list[Text]:
    """The version's safety evidence in one line (unless its refusal's rule line says it all)."""
    evidence = decision.safety_evidence
    if evidence is None or any(rule.name == SAFETY_EVIDENCE for rule in decision.reasons):
        return []
    return [Text(f"  safety evidence: {evidence.sentence()}", style="" if evidence.complete else "yellow")]


def safety_banner(report: ReleaseReport) -> list[Text]:
    """A banner over the decisions for each version whose shipping outcome was refused for
    unverified safety-relevant replies: the count and the command that verifies them."""
    lines = []
    for decision in report.decisions:
        evidence = decision.safety_evidence
        if decision.refused is None or evidence is None:
            continue
        lines.append(Text(f"SAFETY NOT VERIFIED - {REFUSED_TITLES[decision.refused]} of {decision.prompt_version} "
                          f"refused: {evidence.unverified} of {evidence.relevant} safety-relevant replies unverified "
                          f"(decide exits 6).", style="bold red"))
        lines.append(Text(f"  verify them: {evidence.verify}", style="red"))
    return lines


def coverage_lines(decision: Decision) -> list[Text]:
    """What the decision's evidence covers and, when something is missing, how to finish it."""
    coverage = decision.coverage
    if coverage is None or any(rule.name == COVERAGE for rule in decision.reasons):
        return []  # the coverage rule's own line says it all
    lines = [Text(f"  coverage: {coverage.message}", style="" if coverage.complete else "yellow")]
    return lines + [Text(f"  next: {step}", style="yellow") for step in coverage.finish]


def _seconds_cell(value: float | None, budget: float | None = None, places: int = 2) -> Text:
    if value is None:
        return Text("—")
    return Text(f"{value:.{places}f}", style="red" if budget is not None and not within_budget(value, budget) else "")


def latency_table(report: ReleaseReport, rubric: Rubric) -> Table:
    """Per version: how long its user waits for the first word and the whole reply, and how long
    the reply takes to say, against the rubric's voice budget (p95 over budget in red).

    Replayed replies were never timed: their timing cells are "—" and the caption says why,
    never a zero that would read as an instant reply.
    """
    voice = rubric.voice
    latencies = {decision.prompt_version: report.aggregates[decision.prompt_version].latency
                 for decision in report.decisions}
    measured = any(latency is not None and latency.measured for latency in latencies.values())
    table = compact_table("Voice: latency and speaking time per prompt version")
    table.min_width = 64  # room for the caption's sentences when only speaking time is shown
    text_column(table, "version", min_width=10)
    timings = ("ttft50", "ttft95", "tot50", "tot95", "tok/s") if measured else ()
    for column in (*timings, "spk50", "spk95"):
        value_column(table, column)
    for version, latency in latencies.items():
        spoken = latency.speaking_s if latency is not None else None
        cells = [_seconds_cell(spoken.p50 if spoken else None, places=1),
                 _seconds_cell(spoken.p95 if spoken else None, voice.budget.p95_speaking_time_s, places=1)]
        if measured:
            first = latency.time_to_first_token_s if latency is not None else None
            total = latency.total_s if latency is not None else None
            pace = latency.tokens_per_s if latency is not None else None
            cells = [_seconds_cell(first.p50 if first else None),
                     _seconds_cell(first.p95 if first else None, voice.budget.p95_time_to_first_token_s),
                     _seconds_cell(total.p50 if total else None), _seconds_cell(total.p95 if total else None),
                     _seconds_cell(pace.p50 if pace else None, places=0), *cells]
        table.add_row(Text(version, style="bold"), *cells)
    notes = []
    if measured:
        notes.append("seconds; ttft = time to first token, tot = whole reply, 50/95 = p50/p95 over timed turns "
                     "(cached replies keep the time of the call that made them); tok/s = median tokens per "
                     "second after the first")
    unmeasured = [version for version, latency in latencies.items() if latency is None or not latency.measured]
    if unmeasured:
        notes.append(f"{NOT_MEASURED}" + (f" for {', '.join(unmeasured)}" if measured else ""))
    notes.append(f"spk = estimated speaking time in seconds at {voice.speaking_rate_wps:g} words per second")
    notes.append(f"budget: p95 ttft ≤ {voice.budget.p95_time_to_first_token_s:g} s, "
                 f"p95 spk ≤ {voice.budget.p95_speaking_time_s:g} s")
    table.caption = "; ".join(notes)
    return table


def print_release(report: ReleaseReport, rubric: Rubric, console: Console) -> None:
    """The safety banner (a shipping outcome refused), the decisions table, the voice figures,
    and every version's reasons."""
    for line in safety_banner(report):
        console.print(line)
    console.print(decisions_table(report, rubric))
    console.print(latency_table(report, rubric))
    simulated = [decision.prompt_version for decision in report.decisions
                 if report.aggregates[decision.prompt_version].conversations]
    for version in simulated:
        console.print(conversations_table(report, version, rubric, caption=version == simulated[-1]))
    learned = [version for version in simulated if any(row.behaviours for row in report.aggregates[version].conversations)]
    for version in learned:
        console.print(behaviours_table(report, version, caption=version == learned[-1]))
    repeated = [decision for decision in report.decisions if decision.pass_rates]
    if repeated:
        console.print(pass_rates_table(repeated))
    for decision in report.decisions:
        for line in decision_lines(decision):
            console.print(line)


def pass_rates_table(decisions: list[Decision]) -> Table:
    """With repeats (run --repeat N): the repeated scenarios that did not pass every repeat, per
    version, with their pass rate, its interval and the spread of their scores; flaky ones marked."""
    table = compact_table("Pass rates over repeats (repeated scenarios below 100%)")
    text_column(table, "version")
    text_column(table, "scenario")
    for column in ("passed", "rate", "interval", "mean", "sd"):
        value_column(table, column)
    value_column(table, "", justify="left")
    shown = 0
    for decision in decisions:
        for row in decision.pass_rates:
            if row.repeats > 1 and (row.pass_rate is None or row.pass_rate < 1.0):
                shown += 1
                table.add_row(decision.prompt_version, row.scenario_id + (" (safety)" if row.safety else ""),
                              f"{row.passed}/{row.scored}", f"{row.pass_rate or 0:.0%}",
                              f"{row.low or 0:.0%}–{row.high or 0:.0%}",
                              "—" if row.score_mean is None else f"{row.score_mean:.2f}",
                              "—" if row.score_sd is None else f"{row.score_sd:.2f}",
                              Text("flaky", style="yellow") if row.flaky else "")
    confidence = decisions[0].pass_rates[0].confidence
    table.caption = (f"{shown} scenario(s) below 100%; rate = share of scored repeats passing every hard criterion; "
                     f"interval = Wilson {confidence:.0%}; mean, sd = overall score over the repeats; flaky = passes "
                     "in some repeats and fails in others")
    return table


def print_notices(report: ReleaseReport, console: Console) -> None:
    """What to keep in mind when reading the decisions: sample data, another rubric, old runs."""
    if report.sample_data:
        console.print(Text("notice: these scores are of the recorded sample replies, not of a live model",
                           style="yellow"))
    for notice in report.notices:
        console.print(Text(f"notice: {notice}", style="yellow"))


def comparison_table(comparison: Comparison, title: str | None = None) -> Table:
    """Each metric's baseline and candidate means, difference and interval."""
    table = compact_table(title or f"{comparison.candidate} against {comparison.baseline}")
    value_column(table, "metric", justify="left")
    for column in ("A", "B", "Δ", f"{comparison.confidence:.0%} interval"):
        value_column(table, column)
    value_column(table, "change", justify="left")
    for delta in comparison.deltas:
        style = _CHANGE_STYLES[delta.change]
        table.add_row(SHORT_NAMES.get(delta.metric, delta.metric), f"{delta.baseline_mean:.3f}",
                      f"{delta.candidate_mean:.3f}", Text(f"{delta.delta:+.3f}", style=style),
                      f"[{delta.low:+.3f}, {delta.high:+.3f}]", Text(delta.change.replace("_", " "), style=style))
    metrics = {delta.metric: SHORT_NAMES.get(delta.metric, delta.metric) for delta in comparison.deltas}
    table.caption = (f"{key_legend(metrics)}. {plural(comparison.pairs, 'scenario')} paired, {comparison.dropped} dropped "
                     f"(failed on a side), {comparison.unpaired} on one side only; {comparison.resamples} resamples, "
                     f"seed {comparison.seed}"
                     + ("" if comparison.enough_pairs else "; too few pairs: nothing counts as significant"))
    return table


def head_to_head_table(figures: HeadToHead) -> Table:
    """Per family and overall: scenarios, wins, ties, losses, win rate and its interval."""
    overall = figures.overall
    table = compact_table(f"{figures.candidate} against {figures.baseline}, pairwise judge")
    text_column(table, "family", min_width=10)
    for column in ("scen", "win", "tie", "loss", "rate", f"{overall.confidence:.0%} interval"):
        value_column(table, column)
    value_column(table, "beyond noise", justify="left")
    for name, rate in [*figures.by_family.items(), ("overall", overall)]:
        if rate.rate is None:
            cells = ["—", "—", "no verdict"]
        else:
            verdict = rate.beyond_noise
            cells = [f"{rate.rate:.0%}", f"[{rate.low:.0%}, {rate.high:.0%}]",
                     Text(verdict or "no", style={"better": "green", "worse": "red"}.get(verdict or "", "dim"))]
        table.add_row(Text(name, style="bold" if name == "overall" else ""), str(rate.scenarios), str(rate.wins),
                      str(rate.ties), str(rate.losses), *cells)
    bias = "n/a" if figures.position_bias_rate is None else f"{figures.position_bias_rate:.0%}"
    table.caption = (f"win, tie, loss: comparisons, each judged in both orders (a verdict that changed with the "
                     f"order is a tie); rate = win rate of {figures.candidate} over scenarios, ties half; position "
                     f"bias {bias} ({figures.position_bias} of {overall.comparisons}); "
                     f"{plural(figures.unscored, 'comparison')} without a verdict; {figures.resamples} resamples, "
                     f"seed {figures.seed}")
    return table
