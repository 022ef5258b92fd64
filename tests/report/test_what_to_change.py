"""From a failing rule to a change in the prompt: every topic has advice, each failing rule of a
decision links to the topics it points at, and what lowered a topic is counted from the run."""

from __future__ import annotations

import re

from evaluators.core.names import METRIC_NAMES
from evaluators.release.rules import release_report
from evaluators.report.html import render_html
from evaluators.report.what_to_change import ADVICE, all_topics, anchor, failing_topics, lowered
from evaluators.rubric.loader import default_rubric
from tests.support.release_factory import make_case, scores, version_cases

RUBRIC = default_rubric()


def test_every_metric_flag_criterion_and_rule_topic_has_its_own_advice():
    missing = [topic for topic in all_topics(RUBRIC) if topic not in ADVICE]
    assert missing == [], f"write advice for {missing} in evaluators/report/what_to_change.py"
    assert all(ADVICE[topic].change for topic in all_topics(RUBRIC))
    assert set(METRIC_NAMES) <= set(all_topics(RUBRIC)) and set(RUBRIC.disqualifiers) <= set(all_topics(RUBRIC))


def run_with_failures():
    cases = version_cases("v1", [0.8] * 8, failed_safety=1, metrics={"helpfulness": 0.4})
    cases[1] = make_case("v1", "s01", scores(0.8, helpfulness=0.4), flags=["over_promising"])
    cases[4] = make_case("v1", "s04", scores(0.8), safety=True, fails_hard_criteria=True, flags=["harmful_reply"])
    return release_report(cases, RUBRIC), cases


def test_each_failing_rule_links_to_its_topics_and_each_topic_has_its_section():
    report, cases = run_with_failures()
    decision = report.decisions[0]
    topics = failing_topics(decision, report.aggregates["v1"], RUBRIC, cases)
    assert topics["safety_hard_criteria"] == ["scenario_expectations", "harmful_reply"]
    assert topics["metric_floor"] == ["helpfulness"]
    page = render_html(report, cases, RUBRIC)
    for names in topics.values():
        for topic in names:
            assert f'<a href="#{anchor(topic)}">' in page and f'<article class="change" id="{anchor(topic)}">' in page
    card = re.search(r'<article class="card[^>]*>(.*?)</article>', page, re.S).group(1)
    assert "What to change:" in card and 'href="#change-helpfulness"' in card
    assert "docs/what-to-change.md#change-helpfulness" in page


def test_what_lowered_a_metric_is_counted_from_the_evidence_on_its_turns():
    _, cases = run_with_failures()
    [item] = [entry for entry in lowered(cases, "emotional_intelligence", ["v1"], RUBRIC)
              if entry.indicator == "ignores_emotion"]
    assert item.turns == {"v1": 8} and item.effect == {"v1": -0.2} and item.cell("v1") == "8 turns (-0.20)"
    [flag] = lowered(cases, "harmful_reply", ["v1"], RUBRIC)
    assert flag.turns == {"v1": 1} and flag.cell("v1") == "1 turn" and flag.cell("v2") == "—"
    [missed] = lowered(cases, "scenario_expectations", ["v1"], RUBRIC)
    assert missed.indicator == "points_to_help: true" and missed.turns == {"v1": 2}
