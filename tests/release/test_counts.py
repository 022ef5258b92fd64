"""One figure each: a count is computed once (evaluators.release.counts) and every output shows it
under the one name and legend that say what it counts.

The run's "Checks" table once showed `safety 3/23` (safety scenarios whose *expectations* were
met) above a decision table showing `safety 1/23` (those passing their *hard criteria*), under
one legend. These tests fail if any output can show a different safety figure than another, or
one legend for two counts.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from evaluators.release.counts import COUNT_KEYS, COUNT_LEGENDS, version_counts
from evaluators.release.rules import SAFETY_HARD_CRITERIA, release_report
from evaluators.release.summaries import version_summaries
from evaluators.report.html import render_html
from evaluators.report.run_tables import versions_table
from evaluators.report.terminal import decisions_table
from evaluators.rubric.loader import default_rubric
from tests.support.release_factory import make_case, scores

RUBRIC = default_rubric()
MARKDOWN_REPLY = "**Please** call a crisis line:\n\n- 988\n- or text HOME to 741741"  # meets expectations, not voice_ready

# A case: (safety, expectations met, reply fit for voice, a hard flag, failed call).
CASE = st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans())


def build(version: str, specs: list[tuple[bool, bool, bool, bool, bool]]) -> list:
    cases = []
    for index, (safety, met, speakable, flagged, failed) in enumerate(specs):
        cases.append(make_case(version, f"s{index:02d}", scores(0.8), safety=safety, fails_hard_criteria=not met,
                               reply="That sounds hard. What would help right now?" if speakable else MARKDOWN_REPLY,
                               flags=["harmful_reply"] if flagged else (), status="failed" if failed else "ok"))
    return cases


def screen(renderable) -> str:
    console = Console(width=200, record=True, force_terminal=False)
    console.print(renderable)
    return console.export_text()


def cell(text: str, version: str, key: str) -> str:
    """The value under column `key` in `version`'s row of the table printed in `text`."""
    lines = text.splitlines()
    start = next(index for index, line in enumerate(lines)
                 if line.strip().startswith("version") and key in line.split())
    header = lines[start]
    row = next(line for line in lines[start:] if line.strip().startswith(version + " "))
    columns = header.split()
    values = row.split()
    # Rows align with their header from the right (every count column is right-justified).
    return values[len(values) - len(columns) + columns.index(key)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(CASE, min_size=1, max_size=10).filter(lambda specs: any(not s[4] for s in specs)))
def test_the_safety_figure_is_one_count_wherever_it_is_shown(specs):
    cases = build("v1", specs)
    counts = version_counts(cases, RUBRIC)
    summary = version_summaries(cases, rubric=RUBRIC)["v1"]
    report = release_report(cases, RUBRIC)
    decision, aggregate = report.decisions[0], report.aggregates["v1"]
    # One computation behind every output.
    assert summary["counts"] == aggregate.counts.model_dump() == decision.counts.model_dump() == counts.model_dump()
    safety = counts.fraction("safety_hard_criteria_passed")
    key = COUNT_KEYS["safety_hard_criteria_passed"]
    run_table, decision_table = screen(versions_table({"v1": summary}, RUBRIC)), screen(decisions_table(report, RUBRIC))
    assert cell(run_table, "v1", key) == cell(decision_table, "v1", key) == safety
    # The decision's rule counts the same scenarios as failing.
    rule = next(item for item in decision.rules if item.name == SAFETY_HARD_CRITERIA)
    assert rule.observed == counts.safety_scored - counts.safety_hard_criteria_passed == len(aggregate.safety_failed)
    # The report and the run's summary line name it alike.
    page = render_html(report, cases, RUBRIC)
    shown = re.search(r'data-count="safety_hard_criteria_passed" data-value="(\d+)"', page)
    assert shown and int(shown.group(1)) == counts.safety_hard_criteria_passed
    assert f"{safety} scored safety scenarios" in decision.summary if counts.safety_scored else True


def test_expectations_met_and_hard_criteria_passed_differ_and_are_never_shown_under_one_legend():
    """A markdown reply meets its expectations and still fails voice_ready: two figures, two names."""
    specs = [(True, True, False, False, False), (True, True, True, False, False), (True, False, True, False, False)]
    cases = build("v1", specs)
    counts = version_counts(cases, RUBRIC)
    assert (counts.safety_expectations_met, counts.safety_hard_criteria_passed) == (2, 1)
    report = release_report(cases, RUBRIC)
    run_table = screen(versions_table(version_summaries(cases, rubric=RUBRIC), RUBRIC))
    decision_table = screen(decisions_table(report, RUBRIC))
    for text in (run_table, decision_table):
        legend = " ".join(text.split())
        for name, key in COUNT_KEYS.items():
            if re.search(rf"\b{re.escape(key)} =", legend):
                assert f"{key} = {COUNT_LEGENDS[name]}" in legend or f"{key} = share of {COUNT_LEGENDS[name]}" in legend
    assert cell(run_table, "v1", "safety") == cell(decision_table, "v1", "safety") == "1/3"


def test_each_key_and_each_legend_names_one_count():
    assert len(set(COUNT_KEYS.values())) == len(COUNT_KEYS) == len(COUNT_LEGENDS)
    assert len(set(COUNT_LEGENDS.values())) == len(COUNT_LEGENDS)
    assert set(COUNT_KEYS) == set(COUNT_LEGENDS)


def test_a_failed_case_is_in_no_count_and_the_denominator_is_what_was_scored():
    cases = build("v1", [(True, True, True, False, False), (True, True, True, False, True)])
    counts = version_counts(cases, RUBRIC)
    assert (counts.safety_scenarios, counts.safety_scored, counts.safety_hard_criteria_passed) == (2, 1, 1)
    assert counts.fraction("safety_hard_criteria_passed") == "1/1"
    assert counts.sentence("safety_hard_criteria_passed").startswith("1 of 1 scored safety scenarios")
