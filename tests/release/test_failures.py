"""Typed failures: each way a case can fail maps to one kind of evaluators.core.failures, with
the rule's name where the kind has several, so CI and dashboards group failures without
parsing sentences."""

from __future__ import annotations

import pytest

from evaluators.core.failures import FailureKind
from evaluators.release.failures import case_failures, failure_counts, with_failures
from evaluators.rubric.loader import default_rubric
from tests.support.release_factory import make_case, rubric_with, scores

RUBRIC = default_rubric()


def kinds(case, rubric=RUBRIC) -> list[tuple[str, str]]:
    return [(failure.kind.value, failure.name) for failure in case_failures(case, rubric)]


def test_a_case_that_broke_no_rule_has_no_failure():
    assert kinds(make_case("v", "s", scores(0.8))) == []


@pytest.mark.parametrize(("error", "kind"), [
    ("turn 1: timeout: no answer within the per-call timeout (gave up after 3 attempts)", FailureKind.TIMEOUT),
    ("turn 1: HTTP 500: boom (gave up after 5 attempts)", FailureKind.TRANSPORT_ERROR),
    ("turn 2: truncated reply: the stream ended without a finish reason", FailureKind.TRUNCATED),
    ("turn 1 not scored: unsupported language", FailureKind.UNSCORED),
    ("scoring failed: ValueError: bad", FailureKind.SCORING_ERROR),
    ("JudgeStage failed: RuntimeError: bug", FailureKind.SCORING_ERROR),
    ("turn 3: simulated user: connection error: refused", FailureKind.TRANSPORT_ERROR),
])
def test_a_case_without_scores_gets_the_kind_of_what_went_wrong(error, kind):
    case = make_case("v", "s", scores(0.8), status="failed").model_copy(update={"error": error})
    failures = case_failures(case, RUBRIC)
    assert [failure.kind for failure in failures] == [kind]
    assert failures[0].reason == error and kind.is_missing_evidence


def test_each_flag_and_each_expectation_is_named():
    case = make_case("v", "s", scores(0.1), fails_hard_criteria=True, flags=["crisis_without_help", "dependency"])
    found = kinds(case)
    assert ("hard_flag", "crisis_without_help") in found and ("hard_flag", "dependency") in found
    assert ("expectation", "points_to_help: true") in found
    assert ("hard_criterion", "crisis_gets_help") not in found  # the flag says it already


def test_voice_failures_are_not_voice_ready_and_over_voice_budget():
    unspeakable = make_case("v", "s", scores(0.8), reply="**Here are tips:**\n- breathe\n- walk")
    assert ("not_voice_ready", "") in kinds(unspeakable)
    long = make_case("v", "s", scores(0.8), reply=" ".join(["word"] * 80))
    failure = next(item for item in case_failures(long, RUBRIC) if item.kind is FailureKind.OVER_VOICE_BUDGET)
    assert "32 s of speech, over the 20 s budget" in failure.reason
    assert ("over_voice_budget", "") not in kinds(make_case("v", "s", scores(0.8), reply=" ".join(["w"] * 40)))


def test_a_failed_judge_and_too_few_passing_turns_have_their_kinds():
    judged = make_case("v", "s", scores(0.8), judge={"failed": True, "error": "judge: HTTP 503"})
    assert [(f.kind, f.reason) for f in case_failures(judged, RUBRIC)] == [(FailureKind.JUDGE_FAILED, "judge: HTTP 503")]
    poor = make_case("v", "s", scores(0.2))
    assert ("below_turn_pass_share", "") in kinds(poor, rubric_with(min_turn_pass_share=0.5))
    assert ("below_turn_pass_share", "") not in kinds(poor)


def test_kinds_another_stage_stored_are_kept_and_derived_ones_recomputed():
    case = make_case("v", "s", scores(0.8)).model_copy(update={"failures": [
        {"kind": "barge_in_recovery", "name": "repeats_itself", "reason": "turn 2 repeats turn 1"},
        {"kind": "invalid_simulation", "name": "role_drift", "reason": "the user spoke as an assistant"},
        {"kind": "hard_flag", "name": "stale", "reason": "from an older rubric"}]})
    assert kinds(case) == [("barge_in_recovery", "repeats_itself"), ("invalid_simulation", "role_drift")]
    stored = with_failures(case, RUBRIC).failures
    assert [item["kind"] for item in stored] == ["barge_in_recovery", "invalid_simulation"]


def test_failure_counts_count_each_case_once_per_kind():
    cases = [make_case("v", "a", scores(0.1), fails_hard_criteria=True, flags=["dependency", "over_promise"]),
             make_case("v", "b", scores(0.8), status="failed"), make_case("v", "c", scores(0.8))]
    assert failure_counts(cases, RUBRIC) == {"expectation": 1, "hard_flag": 1, "transport_error": 1}
