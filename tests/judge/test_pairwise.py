"""The pairwise judge over real HTTP: the openai SDK against the local OpenAI-compatible server.

The server's scripted answers read the REPLY_A and REPLY_B blocks the judge sent, so each test
decides which reply a "judge" prefers (or that it always says A, whatever it reads) and checks
what was sent, what the comparison became, and the win rate computed from it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from evaluators.core.response_cache import JsonFileCache
from evaluators.core.retry import RetryPolicy
from evaluators.judge.client import JudgeSettings, LLMJudge, ModeMemory
from evaluators.judge.pairwise import (
    PairwiseJudge,
    candidate_outcome,
    judge_comparisons,
    parse_preference,
    plan_comparisons,
)
from evaluators.release.head_to_head import head_to_head
from evaluators.rubric.loader import default_rubric
from evaluators.store.records import TurnResult
from tests.servers.judge_answers import data_blocks, is_repair, pairwise_answer
from tests.servers.openai_compat import server_error
from tests.support.release_factory import make_case, rubric_with, scores

RUBRIC = default_rubric()


def prefers(word: str):
    """A judge that prefers the reply containing `word`, whichever position it is in."""
    def answer(call) -> str:
        blocks = data_blocks(call.messages)
        if word in blocks["REPLY_A"] and word not in blocks["REPLY_B"]:
            return pairwise_answer("A")
        if word in blocks["REPLY_B"] and word not in blocks["REPLY_A"]:
            return pairwise_answer("B")
        return pairwise_answer("tie")
    return answer


def make_pairwise(server, tmp_path: Path, *, cache: bool = True, rubric=RUBRIC) -> PairwiseJudge:
    judge = LLMJudge(rubric, JudgeSettings(model="judge-model"), base_url=server.base_url, api_key="test-key",
                     retry=RetryPolicy(max_attempts=2, base_delay_s=0.01),
                     cache=JsonFileCache(tmp_path / "judgements") if cache else None,
                     modes=ModeMemory(tmp_path / "modes.json"))
    return PairwiseJudge(judge)


def two_turn_case(version: str, scenario_id: str, replies: tuple[str, str], family: str = "basic"):
    case = make_case(version, scenario_id, scores(0.7), family=family)
    turns = [TurnResult(index=index, user=user, reply=reply, model="test")
             for index, (user, reply) in enumerate(zip(("I had a rough day.", "My boss yelled at me."), replies))]
    return case.model_copy(update={"turns": turns})


def compare(judge: PairwiseJudge, cases, candidate="v2", baseline="v1"):
    async def go():
        try:
            return await judge_comparisons(judge, plan_comparisons(candidate, baseline, cases, []))
        finally:
            await judge.aclose()
    return asyncio.run(go())


def test_every_comparison_is_sent_in_both_orders_with_each_side_its_own_history(openai_server, tmp_path):
    cases = [two_turn_case("v2", "s1", ("warm one", "warm two")), two_turn_case("v1", "s1", ("cold one", "cold two"))]
    server = openai_server(answers=prefers("warm"))
    comparisons = compare(make_pairwise(server, tmp_path), cases)
    assert len(server.calls) == 4  # two turns x two orders
    sent = sorted((blocks["REPLY_A"], blocks["REPLY_B"])
                  for blocks in (data_blocks(call.messages) for call in server.calls))
    assert sent == [("cold one", "warm one"), ("cold two", "warm two"), ("warm one", "cold one"),
                    ("warm two", "cold two")]
    second_turn = [data_blocks(call.messages) for call in server.calls
                   if data_blocks(call.messages)["REPLY_A"] == "warm two"][0]
    assert second_turn["HISTORY_A"] == "user: I had a rough day.\ncompanion: warm one"
    assert second_turn["HISTORY_B"] == "user: I had a rough day.\ncompanion: cold one"
    assert second_turn["USER_MESSAGE"] == "My boss yelled at me."
    request = server.calls[0].body
    assert request["response_format"]["type"] == "json_schema"
    assert list(request["response_format"]["json_schema"]["schema"]["properties"])[0] == "reasoning"
    assert [(c.turn, c.outcome, c.position_bias) for c in comparisons] == [(1, "win", False), (2, "win", False)]
    assert [order["a"] for order in comparisons[0].orders] == ["candidate", "baseline"]
    assert comparisons[0].orders[0]["reasoning"] == "A names the feeling; B lectures."


def test_a_verdict_that_flips_with_the_order_is_a_tie_and_counts_as_position_bias(openai_server, tmp_path):
    cases = [make_case("v2", "s1", scores(0.7), reply="s1 warm"), make_case("v1", "s1", scores(0.7), reply="s1 cold"),
             make_case("v2", "s2", scores(0.7), reply="s2 warm"), make_case("v1", "s2", scores(0.7), reply="s2 cold")]

    def answer(call):  # on s1 this judge prefers whatever it reads first: pure position
        return pairwise_answer("A") if data_blocks(call.messages)["REPLY_A"].startswith("s1") else prefers("warm")(call)
    server = openai_server(answers=answer)
    comparisons = compare(make_pairwise(server, tmp_path), cases)
    assert [(c.scenario_id, c.outcome, c.position_bias) for c in comparisons] == [("s1", "tie", True),
                                                                                  ("s2", "win", False)]
    figures = head_to_head("v2", "v1", comparisons, RUBRIC)
    assert figures.position_bias == 1 and figures.position_bias_rate == 0.5
    assert (figures.overall.wins, figures.overall.ties, figures.overall.losses) == (1, 1, 0)
    assert figures.overall.rate == 0.75  # (0.5 + 1) / 2 by hand


def test_win_rate_and_interval_match_a_hand_computation(openai_server, tmp_path):
    # Five scenarios: s0-s2 the candidate wins, s3 ties (both warm), s4 loses (only the baseline is warm).
    replies = {"s0": ("warm", "cold"), "s1": ("warm", "cold"), "s2": ("warm", "cold"), "s3": ("warm a", "warm b"),
               "s4": ("cold", "warm")}
    families = {"s0": "basic", "s1": "basic", "s2": "small_talk", "s3": "small_talk", "s4": "small_talk"}
    cases = [make_case(version, sid, scores(0.7), reply=pair[side], family=families[sid])
             for sid, pair in replies.items() for side, version in ((0, "v2"), (1, "v1"))]
    server = openai_server(answers=prefers("warm"))
    rubric = rubric_with(bootstrap={"resamples": 1000, "seed": 7})
    comparisons = compare(make_pairwise(server, tmp_path, rubric=rubric), cases)
    figures = head_to_head("v2", "v1", comparisons, rubric)
    overall = figures.overall
    assert (overall.wins, overall.ties, overall.losses, overall.scenarios) == (3, 1, 1, 5)
    assert overall.rate == pytest.approx((1 + 1 + 1 + 0.5 + 0) / 5)  # 0.7: ties count half
    # The interval, computed here independently: resample the five scenario scores 1000 times.
    rng = np.random.default_rng(7)
    values = np.array([1.0, 1.0, 1.0, 0.5, 0.0])
    means = values[rng.integers(0, 5, size=(1000, 5))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    assert (overall.low, overall.high) == (pytest.approx(low), pytest.approx(high))
    assert overall.low < 0.5 < overall.high  # five scenarios: not beyond noise
    assert figures.by_family["basic"].rate == 1.0 and (figures.by_family["basic"].low,
                                                       figures.by_family["basic"].high) == (1.0, 1.0)
    assert figures.by_family["small_talk"].rate == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    assert figures.position_bias == 0 and figures.position_bias_rate == 0.0


def test_a_rerun_is_served_from_the_cache_with_no_request(openai_server, tmp_path):
    cases = [two_turn_case("v2", "s1", ("warm one", "warm two")), two_turn_case("v1", "s1", ("cold one", "cold two"))]
    server = openai_server(answers=prefers("warm"))
    first = compare(make_pairwise(server, tmp_path), cases)
    assert len(server.calls) == 4
    again_judge = make_pairwise(server, tmp_path)
    again = compare(again_judge, cases)
    assert len(server.calls) == 4  # zero requests the second time
    assert [c.outcome for c in again] == [c.outcome for c in first]
    assert again_judge.stats.cached == 2 and again_judge.judge.stats.calls == 0
    assert all(order["cached"] for comparison in again for order in comparison.orders)


def test_unreadable_answers_get_one_repair_then_leave_the_comparison_unscored(openai_server, tmp_path):
    cases = [make_case("v2", "s1", scores(0.7), reply="warm"), make_case("v1", "s1", scores(0.7), reply="cold")]
    server = openai_server(answers=lambda call: "I like both of them, honestly.")
    judge = make_pairwise(server, tmp_path)
    (comparison,) = compare(judge, cases)
    assert comparison.outcome is None and not comparison.position_bias
    assert len(server.calls) == 4 and sum(is_repair(call.messages) for call in server.calls) == 2
    assert "preference not readable" in comparison.error and judge.stats.unscored == 1
    figures = head_to_head("v2", "v1", [comparison], RUBRIC)
    assert figures.unscored == 1 and figures.overall.rate is None and figures.position_bias_rate is None
    # Nothing unreadable is cached: asked again next time.
    compare(make_pairwise(server, tmp_path), cases)
    assert len(server.calls) == 8


def test_a_server_without_structured_output_is_answered_in_text(openai_server, tmp_path):
    cases = [make_case("v2", "s1", scores(0.7), reply="warm"), make_case("v1", "s1", scores(0.7), reply="cold")]

    def answer(call):
        winner = "A" if "warm" in data_blocks(call.messages)["REPLY_A"] else "B"
        return f"Reasoning: Reply {winner} is kinder.\nemotional_intelligence: {winner}\nWinner: Reply {winner}"
    server = openai_server(answers=answer, refused_formats=frozenset({"json_schema", "json_object"}))
    (comparison,) = compare(make_pairwise(server, tmp_path), cases)
    assert comparison.outcome == "win"
    assert {order["mode"] for order in comparison.orders} == {"text"}
    assert comparison.orders[0]["dimensions"]["emotional_intelligence"] == "A"
    assert "Winner: A|B|tie" in server.calls[-1].messages[0]["content"]


def test_a_failing_server_leaves_the_comparison_unscored_with_the_reason(openai_server, tmp_path):
    cases = [make_case("v2", "s1", scores(0.7), reply="warm"), make_case("v1", "s1", scores(0.7), reply="cold")]
    server = openai_server(faults=lambda call: server_error(500))
    (comparison,) = compare(make_pairwise(server, tmp_path), cases)
    assert comparison.outcome is None and "HTTP 500" in comparison.error


def test_a_simulated_conversation_is_compared_whole_once():
    candidate = two_turn_case("v2", "p1", ("warm one", "warm two"), family="basic")
    baseline = two_turn_case("v1", "p1", ("cold one", "cold two"), family="basic")
    baseline.turns[1] = baseline.turns[1].model_copy(update={"user": "Whatever, never mind."})  # the user reacted
    (planned,) = plan_comparisons("v2", "v1", [candidate, baseline], [])
    assert planned.item.kind == "conversation" and planned.turn is None
    assert planned.item.reply_a == "warm two" and planned.item.history_b[-1].text == "Whatever, never mind."


@pytest.mark.parametrize(("text", "winner"), [
    ('{"reasoning": "x", "winner": "Reply B"}', "B"),
    ("```json\n{\"winner\": \"tie\"}\n```", "tie"),
    ("Reasoning: both fine.\nWinner: draw", "tie"),
    ("**Winner:** A", "A"),
])
def test_preferences_are_read_in_the_shapes_models_write(text, winner):
    assert parse_preference(text).winner == winner


@pytest.mark.parametrize(("first", "second", "outcome", "biased"), [
    ("A", "B", "win", False), ("B", "A", "loss", False), ("tie", "tie", "tie", False),
    ("A", "A", "tie", True), ("B", "B", "tie", True), ("A", "tie", "tie", True), (None, "B", None, False),
])
def test_the_two_orders_resolve_to_the_candidates_outcome(first, second, outcome, biased):
    assert candidate_outcome(first, second) == (outcome, biased)
