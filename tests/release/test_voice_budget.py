"""The voice budget's release rules (evaluators.release.voice_budget): over budget never deploys, and the
reasons give the observed p95 against the budget; latency nobody measured neither blocks nor passes."""

from __future__ import annotations

import pytest

from evaluators.pipeline import run_evaluation
from evaluators.release.rules import release_report
from evaluators.release.voice_budget import VOICE_FIRST_TOKEN, VOICE_SPEAKING_TIME, seconds_against
from evaluators.rubric.loader import default_rubric
from evaluators.scoring.api import default_evaluator
from tests.support.release_factory import decide_one, rule, timed, version_cases
from tests.support.runs import config, use_server

pytestmark = pytest.mark.usefixtures("no_api_configured")  # runs replay unless pointed at the server


def budget(**values: float):
    rubric = default_rubric()
    voice = rubric.voice.model_copy(update={"budget": rubric.voice.budget.model_copy(update=values)})
    return rubric.model_copy(update={"voice": voice})


# Twenty turns, nineteen fast: the p95 lands between the 19th (0.5 s) and the slow 20th.
FAST_THEN_SLOW = [0.3] * 10 + [0.5] * 9 + [3.0]


def test_a_version_over_the_time_to_first_token_budget_is_not_deployed_and_says_by_how_much():
    cases = timed(version_cases("cand", [0.9] * 20), FAST_THEN_SLOW)
    decision = decide_one(cases)  # everything else would deploy it
    first_token = rule(decision, VOICE_FIRST_TOKEN)
    # p95 by linear interpolation: rank 0.95 x 19 = 18.05 -> 0.5 + 0.05 x (3.0 - 0.5) = 0.625
    assert first_token.observed == pytest.approx(0.625) and first_token.threshold == 1.0 and first_token.passed
    assert decision.outcome == "deploy"

    slower = timed(version_cases("cand", [0.9] * 20), [0.3] * 10 + [1.2] * 10)
    decision = decide_one(slower)
    first_token = rule(decision, VOICE_FIRST_TOKEN)
    assert decision.outcome == "revise" and VOICE_FIRST_TOKEN in decision.fired
    assert (first_token.role, first_token.passed, first_token.observed) == ("deploy", False, pytest.approx(1.2))
    assert first_token.message == ("p95 time to first token 1.20 s, over the budget of 1 s "
                                   "(p50 0.75 s over 20 timed turns).")


def test_cached_replies_count_with_the_timings_of_the_calls_that_made_them():
    cases = timed(version_cases("cand", [0.9] * 8), [1.5] * 8, cached=True)
    first_token = rule(decide_one(cases), VOICE_FIRST_TOKEN)
    assert not first_token.passed
    assert "8 timed turns, 8 of them timed when first made and now served from the response cache" in \
        first_token.message


def test_a_version_over_the_speaking_time_budget_is_not_deployed_even_on_replayed_replies():
    long_reply = " ".join(["word"] * 60)  # 24 s at 2.5 words per second
    cases = version_cases("cand", [0.9] * 8)
    cases = [case.model_copy(update={"turns": [turn.model_copy(update={"reply": long_reply})
                                                for turn in case.turns]}) for case in cases]
    decision = decide_one(cases)
    speaking = rule(decision, VOICE_SPEAKING_TIME)
    assert decision.outcome == "revise" and VOICE_SPEAKING_TIME in decision.fired
    assert speaking.message == ("p95 speaking time 24.00 s, over the budget of 20 s "
                                "(p50 24.00 s over 8 replies at 2.5 words per second).")


def test_replayed_replies_leave_the_time_to_first_token_unchecked_and_say_so():
    decision = decide_one(version_cases("cand", [0.9] * 8))
    first_token = rule(decision, VOICE_FIRST_TOKEN)
    assert decision.outcome == "deploy"  # not blocked...
    assert first_token.role == "flag" and not first_token.passed and first_token.observed is None  # ...nor passed
    assert first_token.message == ("No latency measured (replayed replies): the p95 budget of 1 s was not checked.")
    assert VOICE_FIRST_TOKEN in decision.fired  # shown with the reasons, as a note


def test_a_figure_just_over_the_budget_does_not_look_equal_to_it():
    assert seconds_against(1.004, 1.0) == "1.004 s"
    assert seconds_against(1.0, 1.0) == "1.00 s"
    assert seconds_against(0.996, 1.0) == "1.00 s"


def test_a_real_run_over_the_budget_gets_the_measured_numbers_in_its_reasons(small_project, openai_server,
                                                                            monkeypatch):
    server = openai_server(first_token_s=0.3)
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", timeout_s=10.0), default_evaluator())
    release = release_report(report.outcome.cases, budget(p95_time_to_first_token_s=0.2),
                             baselines={"v2": "v1"}, partial=True)
    decision = release.decision("v2")
    first_token = rule(decision, VOICE_FIRST_TOKEN)
    assert decision.outcome != "deploy" and not first_token.passed and first_token.observed >= 0.3
    assert first_token.message.startswith(f"p95 time to first token {first_token.observed:.2f} s, over the "
                                          "budget of 0.2 s (p50 ")
