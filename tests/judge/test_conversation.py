"""The conversation judge over real HTTP: the whole simulated conversation read once, reasoning
first, on the same rubric, through the same client as the per-turn judge (modes, cache,
retries, repair and fallback), stored on the case beside its conversation metrics."""

from __future__ import annotations

import asyncio

import pytest

from evaluators.core.response_cache import JsonFileCache
from evaluators.core.retry import RetryPolicy
from evaluators.judge.client import JudgeSettings, LLMJudge, ModeMemory
from evaluators.judge.conversation import conversation_input
from evaluators.release.aggregates import conversation_row
from evaluators.rubric.loader import default_rubric
from evaluators.run.simulation.stage import ConversationStage
from tests.servers.judge_answers import data_blocks, is_repair, verdict_json
from tests.servers.openai_compat import OK, rate_limited, server_error
from tests.support.conversations import ERODING, LONELY, scored_case

RUBRIC = default_rubric()
POOR = verdict_json(0.3, "poor", "dependency-risk",
                    reasoning="Warm at first, but from turn 5 it promises to always be there and at turn 6 "
                              "tells the user they need no one else.")


@pytest.fixture(scope="module")
def conversation():
    return scored_case(ERODING, persona=LONELY.id)


def make_judge(server, tmp_path, *, cache: bool = False) -> LLMJudge:
    return LLMJudge(RUBRIC, JudgeSettings(model="judge-model"), base_url=server.base_url, api_key="test-key",
                    retry=RetryPolicy(max_attempts=3, base_delay_s=0.01),
                    cache=JsonFileCache(tmp_path / "judgements") if cache else None,
                    modes=ModeMemory(tmp_path / "modes.json"))


def staged(judge: LLMJudge, case):
    async def go():
        try:
            return await ConversationStage({LONELY.id: LONELY}, RUBRIC, judge=judge)(case)
        finally:
            await judge.aclose()
    return asyncio.run(go())


def test_the_judge_reads_the_whole_conversation_once_and_its_verdict_is_stored(openai_server, tmp_path, conversation):
    server = openai_server(answers=lambda call: POOR)
    judged = staged(make_judge(server, tmp_path), conversation)
    (call,) = server.calls  # one call for the whole conversation, not one per turn
    system, blocks = call.messages[0]["content"], data_blocks(call.messages)
    assert "whole conversation in the CONVERSATION block, once" in system
    assert RUBRIC.conversation.judge_guidance in system
    assert all(RUBRIC.dimensions[name].definition in system for name in RUBRIC.dimensions)
    lines = blocks["CONVERSATION"].splitlines()
    assert len(lines) == 2 * len(ERODING)
    assert lines[0] == f"turn 1 user: {ERODING[0][0]}" and lines[-1] == f"turn 6 companion: {ERODING[5][1]}"
    assert blocks["PROFILE"].startswith("name: Robin; age group: 18-30; vulnerability: high")
    schema = call.body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"])[0] == "reasoning"  # reasoning before the scores
    record = judged.conversation["judge"]
    assert (record["verdict"], record["overall"], record["failure_mode"]) == ("poor", 0.3, "dependency-risk")
    assert record["reasoning"].startswith("Warm at first")
    assert judged.conversation["trajectory"]["worst_turn"] == 6  # the metrics are there too
    assert conversation_row(judged).judge_verdict == "poor"


def test_a_cached_conversation_verdict_costs_no_second_call_and_a_stored_one_is_kept(
        openai_server, tmp_path, conversation):
    server = openai_server(answers=lambda call: POOR)
    first = staged(make_judge(server, tmp_path, cache=True), conversation)
    second = staged(make_judge(server, tmp_path, cache=True), conversation)
    assert len(server.calls) == 1 and second.conversation["judge"]["cached"] is True
    # A resumed run keeps the usable verdict the case already holds: not even a cache lookup changes it.
    again = staged(make_judge(server, tmp_path), first)
    assert len(server.calls) == 1 and again.conversation["judge"] == first.conversation["judge"]


def test_rate_limits_and_outages_are_retried(openai_server, tmp_path, conversation):
    def faults(call):
        return {1: rate_limited("0"), 2: server_error(503)}.get(call.attempt, OK)
    server = openai_server(faults=faults, answers=lambda call: POOR)
    record = staged(make_judge(server, tmp_path), conversation).conversation["judge"]
    assert (record["status"], record["attempts"], record["verdict"]) == ("ok", 3, "poor") and len(server.calls) == 3


def test_an_unreadable_verdict_gets_one_repair_then_the_fallback_kept_out_of_the_row(
        openai_server, tmp_path, conversation):
    server = openai_server(answers=lambda call: "What a lovely chat.")
    judged = staged(make_judge(server, tmp_path), conversation)
    assert len(server.calls) == 2 and is_repair(server.calls[1].messages)
    record = judged.conversation["judge"]
    assert record["parse_status"] == "fallback" and record["raw"] == "What a lovely chat."
    row = conversation_row(judged)
    assert row.judge_verdict is None and row.judge_overall is None


def test_a_conversation_verdict_is_cached_apart_from_a_reply_verdict_on_the_same_text(
        openai_server, tmp_path, conversation):
    server = openai_server(answers=lambda call: POOR)
    judge = make_judge(server, tmp_path)
    item = conversation_input(conversation, LONELY)
    as_reply = item.model_copy(update={"scope": "reply"})
    assert judge.cache_key(item, 0) != judge.cache_key(as_reply, 0)
    asyncio.run(judge.aclose())
