"""The simulated user's side: its instructions, how its markers are read, when the companion ends."""

from __future__ import annotations

import asyncio

import pytest

from evaluators.core.retry import CallFailed, MalformedResponse
from evaluators.inputs.personas import load_personas
from evaluators.run.simulation.simulator import (
    GOAL_REACHED,
    PERSONA_LEFT,
    RecordedConversation,
    ReplaySimulator,
    UserTurnRequest,
    companion_ended,
    parse_user_message,
    render_instructions,
)

LONELY = load_personas().get("lonely-young-only-friend")


@pytest.mark.parametrize(("text", "expected"), [
    ("ok that's all i wanted [DONE]", ("ok that's all i wanted", GOAL_REACHED)),
    ("Sam: fine, bye then (leave)", ("fine, bye then", PERSONA_LEFT)),
    ("[LEAVE]", ("", PERSONA_LEFT)),
    ("<done> thanks", ("thanks", GOAL_REACHED)),
    ("honestly it's nice talking\nAssistant: I'm glad!", ("honestly it's nice talking", None)),
    ('"just a normal message"', ("just a normal message", None)),
])
def test_a_simulated_message_loses_its_marker_and_labels_and_keeps_its_words(text, expected):
    assert parse_user_message(text, "Sam") == expected


@pytest.mark.parametrize("text", ["", "   ", "...", "Sam:", "12 34"])
def test_a_message_without_words_or_marker_is_malformed_so_the_call_is_retried(text):
    with pytest.raises(MalformedResponse):
        parse_user_message(text, "Sam")


@pytest.mark.parametrize(("reply", "ends"), [
    ("It was lovely talking. Goodbye, Sam!", True),
    ("Sleep well, and talk soon.", True),
    ("Good night! Take care of Biscuit.", True),  # a short closing after the farewell
    ("Good night is hours away for you, so tell me more about the shift.", False),
    ("Before you say bye, how was the shift?", False),
    ("See you tomorrow?", False),
    ("I'm here to listen. What happened?", False),
])
def test_the_companion_ends_the_conversation_only_with_a_closing_farewell(reply, ends):
    assert companion_ended(reply) is ends


def test_instructions_carry_the_persona_step_and_due_facts_and_nothing_of_scoring():
    early = render_instructions(LONELY, 2, 12)
    late = render_instructions(LONELY, 7, 12)
    assert "Sam" in early and "Leeds" in early
    assert "In this message, mention: Their sister Maya" in early and "Biscuit" not in early
    assert "Biscuit" in late and "stop calling Maya" in late and "stop calling Maya" not in early
    assert "message 7 of at most 12" in late
    assert "[DONE]" in late and "[LEAVE]" in late
    for text in (early, late):
        assert not any(word in text.lower() for word in ("score", "rubric", "metric", "judge", "flag"))


def test_the_replay_simulator_plays_the_recording_and_ends_where_it_ends():
    recorded = RecordedConversation(users=("hello", "second", "third"), replies=("a", "b", "c"), stopped=PERSONA_LEFT)
    simulator = ReplaySimulator({("v1", LONELY.id): recorded})

    def turn(number: int, version: str = "v1"):
        return asyncio.run(simulator.next_turn(UserTurnRequest(LONELY, version, number, 12, [])))

    assert (turn(2).text, turn(2).stop) == ("second", None)
    assert (turn(3).text, turn(3).stop) == ("third", PERSONA_LEFT)
    with pytest.raises(CallFailed, match="3 recorded user messages, turn 4 has none"):
        turn(4)
    with pytest.raises(CallFailed, match="no recorded conversation"):
        turn(2, "v9")


def test_one_model_family_in_every_role_is_warned_about():
    from evaluators.judge.reliability import one_family_warning

    warning = one_family_warning("gpt-4o-mini", ["gpt-4o"], "gpt-4.1")
    assert warning and "the simulator (gpt-4o-mini), the companion (gpt-4o) and the judge (gpt-4.1)" in warning
    assert "PENPAL_SIMULATOR_MODEL" in warning
    assert one_family_warning("claude-3-5-haiku", ["gpt-4o"], "gpt-4.1") is None
    assert one_family_warning("gpt-4o-mini", ["gpt-4o"], "claude-3-5-sonnet") is None
    assert one_family_warning("gpt-4o-mini", ["gpt-4o"], None)  # no judge: simulator and companion are all of it


def test_a_run_whose_simulator_shares_the_companion_family_says_so(persona_project):
    from evaluators.pipeline import prepare_run
    from evaluators.run.config import RunConfig
    from evaluators.scoring.api import default_evaluator

    config = RunConfig(prompts_dir=persona_project["prompts"], scenarios_dir=persona_project["scenarios"],
                       responder="openai", use_cache=False, output_dir=persona_project["runs"])
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"}
    same = prepare_run(config, default_evaluator(), environ | {"PENPAL_SIMULATOR_MODEL": "test-model-small"})
    assert any("all of one model family" in notice for notice in same.notices)
    other = prepare_run(config, default_evaluator(), environ | {"PENPAL_SIMULATOR_MODEL": "claude-3-5-haiku"})
    assert not any("all of one model family" in notice for notice in other.notices)
