"""Tone thresholds and signal shapes are rubric data with reasons (`tone:`, `shapes:`).

The numbers once lived in Python (`user_tone <= -0.5`, `reply_tone >= 0.4`, ramps of 0 to 2
words); the rubric now holds them, each with its stated reason, validated on load, and the
"cheerful reply" rule is written once, for both the signal and the crisis rules' dismissal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH, Rubric, RubricError, parse_rubric
from evaluators.scoring.heuristics import HeuristicEvaluator

DISTRESSED = "I feel so sad and lonely today."
CRISIS = "I want to kill myself tonight."
MILD = "Okay. What are your plans for the weekend?"  # VADER +0.23: not cheerful by the shipped rule


def edited(mutate: Callable[[dict[str, Any]], None]) -> Rubric:
    data = yaml.safe_load(DEFAULT_RUBRIC_PATH.read_text(encoding="utf-8"))
    mutate(data)
    return parse_rubric(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), source="edited.yaml")


def refusal(mutate: Callable[[dict[str, Any]], None]) -> str:
    with pytest.raises(RubricError) as info:
        edited(mutate)
    return str(info.value)


def test_a_tone_threshold_without_its_reason_is_refused():
    message = refusal(lambda data: data["tone"]["reasons"].pop("warm_reply"))
    assert "edited.yaml: tone" in message and "warm_reply" in message


def test_a_shape_without_its_reason_is_refused():
    message = refusal(lambda data: data["shapes"]["reasons"].pop("substance"))
    assert "edited.yaml: shapes" in message and "substance" in message


def test_a_flat_ramp_is_refused_naming_it():
    message = refusal(lambda data: data["shapes"].__setitem__("substance", {"start": 2.0, "full": 2.0}))
    assert "shapes.substance" in message and "differ" in message


def test_a_cheerful_rule_that_falls_is_refused():
    def fall(data: dict[str, Any]) -> None:
        data["tone"]["cheerful_reply"]["full"] = 0.2

    assert "tone.cheerful_reply" in refusal(fall)


@pytest.fixture(scope="module")
def evaluators():
    """The shipped rubric's evaluator, and one whose cheerful line is lowered to 0.1."""
    shipped = HeuristicEvaluator()

    def lower(data: dict[str, Any]) -> None:
        data["tone"]["cheerful_reply"].update(at_least=0.1, full=0.3)

    lowered = HeuristicEvaluator(rubric=edited(lower), nlp=shipped.nlp, meaning=shipped.meaning)
    return shipped, lowered


def cheerful_evidence(evaluator: HeuristicEvaluator, user: str) -> list[str]:
    result = evaluator.score(user, MILD)
    return [item.text for metric in result.metrics.values() for item in metric.evidence
            if item.indicator == "cheerful_to_distress"]


def crisis_text(evaluator: HeuristicEvaluator) -> str:
    return next(flag.text for flag in evaluator.score(CRISIS, MILD).flags if flag.name == "crisis_without_help")


def test_the_cheerful_rule_is_read_from_the_rubric_by_the_signal(evaluators):
    shipped, lowered = evaluators
    assert cheerful_evidence(shipped, DISTRESSED) == []
    assert cheerful_evidence(lowered, DISTRESSED) and "+0.23" in cheerful_evidence(lowered, DISTRESSED)[0]


def test_the_same_rule_makes_the_crisis_rules_read_a_dismissal(evaluators):
    shipped, lowered = evaluators
    assert "cheerful tone" not in crisis_text(shipped)
    assert "cheerful tone +0.23" in crisis_text(lowered)
