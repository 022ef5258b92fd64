"""The triggered phase against stored cases: a detector's judge band and a risk cue choose a reply,
with the reason in words; the budget caps and says what it left out, by reason.

Cases are built as the run store keeps them (turn records with the score record's `detectors`
and `user_risk`); the safety judge answers from the local OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from evaluators.core.retry import RetryPolicy
from evaluators.judge.client import JudgeSettings, LLMJudge, ModeMemory
from evaluators.judge.safety_judge import SafetyJudge
from evaluators.judge.safety_stage import SafetyBudget, SafetyJudgeStage, planned_items, safety_summary
from evaluators.judge.safety_triggers import (
    DETECTOR_BAND,
    QUALITY_JUDGED,
    RISK_CUE,
    reason_kind,
    safety_relevant,
)
from evaluators.rubric.loader import default_rubric
from evaluators.store.records import CaseResult, TurnResult
from tests.servers.judge_answers import is_safety_request
from tests.support.release_factory import make_case, scores

RUBRIC = default_rubric()
HARM = RUBRIC.detectors.behaviours["harmful_advice"].judge_from
QUESTIONS = list(RUBRIC.judge.safety.questions)
LOW = {name: 0.0 for name in RUBRIC.detectors.behaviours}  # every detector far under its band
CRISIS = {"crisis_risk": {"passive_wish": ["I don't want to be here anymore."]}}


def stored(scenario: str, turns: list[tuple[dict, dict]], *, judged: bool = False) -> CaseResult:
    """A stored case whose turns carry these detector scores and user-risk readings."""
    case = make_case("v1", scenario, scores(0.8))
    records = []
    for index, (detectors, risk) in enumerate(turns):
        heuristics = {**case.turns[0].heuristics, "detectors": {**LOW, **detectors},
                      **({"user_risk": risk} if risk else {})}
        records.append(TurnResult(index=index, user=f"user message {index + 1}", reply=f"reply {index + 1}",
                                  model="test", heuristics=heuristics,
                                  judge={"verdict": "good"} if judged else None))
    return case.model_copy(update={"turns": records, "judge": {"verdict": "good"} if judged else None})


def test_a_reply_in_a_detectors_judge_band_is_chosen_with_its_reason_and_one_below_is_not():
    case = stored("band", [({"harmful_advice": HARM + 0.05}, {}), ({"harmful_advice": HARM - 0.01}, {})])
    planned = planned_items(case)
    assert [item.id for item, _ in planned] == ["v1/band#1"]
    (_, why), = planned
    assert why == [f"harmful_advice {HARM + 0.05:.2f} in its judge band (from {HARM:g})"]
    assert reason_kind(why[0]) == DETECTOR_BAND and safety_relevant(why)


def test_a_good_move_in_its_band_triggers_nothing_only_the_rubrics_judge_triggers_do():
    assert "pushback" not in RUBRIC.detectors.judge_triggers
    case = stored("good-move", [({"pushback": 0.99, "referral": 0.99}, {})])
    assert planned_items(case) == []


def test_a_risk_cue_in_the_users_message_chooses_the_reply_and_says_what_was_read():
    case = stored("cue", [({}, CRISIS), ({}, {"cue_words": {"risk_cue": ["alone", "scared", "pills"]}}), ({}, {})])
    planned = planned_items(case)
    assert [item.id for item, _ in planned] == ["v1/cue#1", "v1/cue#2"]
    assert planned[0][1] == [f"{RISK_CUE}: crisis risk (passive wish: \"I don't want to be here anymore.\")"]
    assert planned[1][1] == [f'{RISK_CUE}: risk cue "alone", "scared"']  # two words shown per kind
    assert all(reason_kind(why[0]) == RISK_CUE for _, why in planned)


def test_the_quality_judges_reason_alone_is_not_safety_relevant():
    case = stored("judged", [({}, {})], judged=True)
    (_, why), = planned_items(case)
    assert why == [QUALITY_JUDGED] and not safety_relevant(why)


def test_the_score_record_keeps_the_users_risk_reading_the_triggers_read():
    from evaluators import score_reply
    at_risk = score_reply("I don't want to be here anymore.", "Tell me more.")
    assert "passive_wish" in at_risk.to_record()["user_risk"]["crisis_risk"]
    assert "user_risk" not in score_reply("What should I cook tonight?", "Try pasta.").to_record()


# --- through the stage, with the local server answering ------------------------------------------------
def answer(call) -> str:
    answers = {name: {"answer": "no", "strength": 1, "quote": ""} for name in QUESTIONS}
    return json.dumps({"reasoning": "Scripted safety answer for the test.", "answers": answers})


def judge_on(server, tmp_path: Path) -> SafetyJudge:
    return SafetyJudge(LLMJudge(RUBRIC, JudgeSettings(model="judge-model"), base_url=server.base_url,
                                api_key="test-key", retry=RetryPolicy(max_attempts=2, base_delay_s=0.01),
                                modes=ModeMemory(tmp_path / "modes.json")))


def run_stage(judge: SafetyJudge, budget: SafetyBudget, cases: list[CaseResult]) -> list[CaseResult]:
    async def go():
        try:
            stage = SafetyJudgeStage(judge, budget=budget)
            return [await stage(case) for case in cases]
        finally:
            await judge.judge.aclose()
    return asyncio.run(go())


def test_the_case_record_shows_each_judged_reply_with_why_and_the_summary_counts_by_reason(openai_server, tmp_path):
    server = openai_server(answers=answer)
    cases = [stored("band", [({"sycophancy": 0.99}, {}), ({}, {})]), stored("cue", [({}, CRISIS)])]
    budget = SafetyBudget(None)
    done = run_stage(judge_on(server, tmp_path), budget, cases)
    assert sum(is_safety_request(call) for call in server.calls) == 2  # the quiet reply is not asked
    items = [item for case in done for item in case.safety_judge["items"]]
    assert [(item["id"], [reason_kind(r) for r in item["reasons"]]) for item in items] == [
        ("v1/band#1", [DETECTOR_BAND]), ("v1/cue#1", [RISK_CUE])]
    assert items[0]["reasons"] == [f"sycophancy 0.99 in its judge band (from "
                                   f"{RUBRIC.detectors.behaviours['sycophancy'].judge_from:g})"]
    summary = safety_summary(done, budget)
    assert summary["judged_by_reason"][DETECTOR_BAND] == 1 and summary["judged_by_reason"][RISK_CUE] == 1
    assert summary["share_judged"] == round(2 / 3, 4)


def test_the_budget_caps_the_calls_and_reports_what_it_left_out_with_the_new_reasons(openai_server, tmp_path):
    server = openai_server(answers=answer)
    cases = [stored("band", [({"harmful_advice": 0.9}, {}), ({"emotional_escalation": 0.9}, CRISIS)]),
             stored("cue", [({}, CRISIS)])]
    budget = SafetyBudget(1)
    done = run_stage(judge_on(server, tmp_path), budget, cases)
    assert sum(is_safety_request(call) for call in server.calls) == 1
    summary = safety_summary(done, budget)
    assert summary["calls_spent"] == 1 and summary["left_out"] == 2
    assert summary["left_out_ids"] == ["v1/band#2", "v1/cue#1"]
    assert summary["left_out_by_reason"][DETECTOR_BAND] == 1 and summary["left_out_by_reason"][RISK_CUE] == 2
    left = done[0].safety_judge["left_out"][0]
    assert [reason_kind(reason) for reason in left["reasons"]] == [DETECTOR_BAND, RISK_CUE]


def test_the_bands_are_the_runs_rubric_a_rubric_naming_no_trigger_detector_sends_no_band_reason():
    case = stored("band", [({"harmful_advice": 0.99}, {})])
    quiet = RUBRIC.model_copy(update={"detectors": RUBRIC.detectors.model_copy(update={"judge_triggers": []})})
    assert planned_items(case, rubric=quiet) == [] and len(planned_items(case)) == 1
