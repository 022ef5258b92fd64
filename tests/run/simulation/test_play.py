"""Simulated conversations through the runner, against the local OpenAI-compatible server.

The server plays both sides from scripts: the simulated user's messages (its calls open with
the simulator's instructions) and the companion's replies. Each stopping rule, retries of
the simulator's calls, its own endpoint and its own token count are checked on what the run
stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from evaluators.pipeline import RunReport, execute, prepare_run
from evaluators.run.config import RunConfig
from evaluators.scoring.api import default_evaluator
from evaluators.store.records import CaseResult
from tests.servers.openai_compat import OK, Call, OpenAICompatServer, scripted_reply, server_error
from tests.support.project import is_simulator_call

EVALUATOR = default_evaluator()


def user_turn_number(call: Call) -> int:
    """The user turn a simulator call is asked to write (its own earlier messages are the assistant's)."""
    return sum(message["role"] == "assistant" for message in call.messages) + 1


def answers(user: Callable[[int], str], companion: Callable[[Call], str] = lambda call: scripted_reply(call.messages)):
    """An answer plan: `user(turn number)` for the simulator's calls, `companion(call)` for the rest."""
    return lambda call: user(user_turn_number(call)) if is_simulator_call(call.messages) else companion(call)


def play(project: dict[str, Path], server: OpenAICompatServer, simulator_server: OpenAICompatServer | None = None,
         **options) -> RunReport:
    config = RunConfig(prompts_dir=project["prompts"], scenarios_dir=project["scenarios"], families=["personas"],
                       prompt_versions=["v2"], responder="openai", use_cache=False, output_dir=project["runs"],
                       concurrency=1, retry_base_delay_s=0.01, **options)
    environ = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "companion-key",
               "PENPAL_SIMULATOR_MODEL": "sim-model"}
    if simulator_server is not None:
        environ |= {"PENPAL_SIMULATOR_BASE_URL": simulator_server.base_url, "PENPAL_SIMULATOR_API_KEY": "sim-key"}
    return asyncio.run(execute(prepare_run(config, EVALUATOR, environ), EVALUATOR))


def only_case(report: RunReport) -> CaseResult:
    (case,) = report.outcome.cases
    return case


# What a faithful simulator of the tester persona reveals when due (dog on turn 2, sister on 3):
# one that never does is an invalid simulation (evaluators.run.simulation.validity).
FACTS_DUE = {2: " with my dog Rufus", 3: " and my sister Greta"}


def chatty(turn: int) -> str:
    return f"This is my message number {turn}, still chatting about my day{FACTS_DUE.get(turn, '')}."


def test_the_turn_limit_stops_a_conversation_and_every_exchange_is_stored_and_scored(persona_project,
                                                                                   openai_server):
    server = openai_server(answers=answers(chatty))
    case = only_case(play(persona_project, server, max_turns=3))
    assert case.status == "ok", case.error
    assert case.family == "personas" and case.scenario_id == "tester"
    assert [turn.user for turn in case.turns] == ["Hi, I've had a long day with my dog.", chatty(2), chatty(3)]
    assert all(turn.reply.startswith(f"Reply {turn.index + 1}:") for turn in case.turns)
    assert all(turn.heuristics is not None for turn in case.turns) and case.scores
    assert case.simulation["stop_reason"] == "turn_limit" and case.simulation["max_turns"] == 3
    # The opening is fixed: two simulator calls wrote turns 2 and 3, three companion calls answered.
    simulator_calls = [call for call in server.calls if is_simulator_call(call.messages)]
    assert len(simulator_calls) == case.simulation["calls"] == 2 and len(server.calls) == 5
    assert {call.model for call in simulator_calls} == {"sim-model"}


def test_without_a_turn_limit_flag_the_persona_own_limit_holds(persona_project, openai_server):
    server = openai_server(answers=answers(chatty))
    case = only_case(play(persona_project, server))
    assert len(case.turns) == 5 and case.simulation["stop_reason"] == "turn_limit"


def test_the_goal_marker_ends_the_conversation_after_the_companion_answers_it(persona_project, openai_server):
    server = openai_server(answers=answers(lambda turn: "Thanks, that's all I wanted! [DONE]" if turn == 3
                                          else chatty(turn)))
    case = only_case(play(persona_project, server))
    assert case.simulation["stop_reason"] == "goal_reached"
    assert len(case.turns) == 3 and case.turns[-1].user == "Thanks, that's all I wanted!"
    assert "[DONE]" not in " ".join(turn.user for turn in case.turns)


def test_a_persona_that_leaves_without_a_word_ends_the_conversation_there(persona_project, openai_server):
    server = openai_server(answers=answers(lambda turn: "[LEAVE]" if turn == 2 else chatty(turn)))
    case = only_case(play(persona_project, server))
    assert case.status == "ok", case.error
    assert case.simulation["stop_reason"] == "persona_left" and len(case.turns) == 1
    assert case.simulation["calls"] == 1


def test_a_companion_goodbye_ends_the_conversation(persona_project, openai_server):
    def companion(call: Call) -> str:
        users = sum(message["role"] == "user" for message in call.messages)
        return "It was lovely talking, Tess. Goodbye for now!" if users == 2 else scripted_reply(call.messages)

    server = openai_server(answers=answers(chatty, companion))
    case = only_case(play(persona_project, server))
    assert case.simulation["stop_reason"] == "companion_ended" and len(case.turns) == 2


def test_failed_and_wordless_simulator_answers_are_retried(persona_project, openai_server):
    def faults(call: Call):
        return server_error(500) if is_simulator_call(call.messages) and call.attempt == 1 else OK

    wordless = {2: 0}

    def user(turn: int) -> str:
        if turn == 2 and wordless[2] < 1:
            wordless[2] += 1
            return "..."  # no words: the simulator's check rejects it and the call is made again
        return chatty(turn)

    server = openai_server(faults=faults, answers=answers(user))
    case = only_case(play(persona_project, server, max_turns=3))
    assert case.status == "ok", case.error
    assert [turn.user for turn in case.turns][1:] == [chatty(2), chatty(3)]
    simulator_calls = [call for call in server.calls if is_simulator_call(call.messages)]
    # Turn 2: a 500, a wordless answer, then a message; turn 3: a 500, then a message.
    assert [user_turn_number(call) for call in simulator_calls] == [2, 2, 2, 3, 3]


def test_a_simulator_that_never_answers_with_words_fails_the_case_with_the_reason(persona_project,
                                                                                openai_server):
    server = openai_server(answers=answers(lambda turn: "   ---   "))
    case = only_case(play(persona_project, server, max_attempts=2))
    assert case.status == "failed"
    assert "turn 2: simulated user:" in case.error and "no words" in case.error
    assert len(case.turns) == 1  # the answered opening is kept with the failed case


def test_the_simulator_has_its_own_endpoint_key_model_and_token_count(persona_project, openai_server):
    companion_server = openai_server()
    simulator_server = openai_server(answers=lambda call: chatty(user_turn_number(call)))
    report = play(persona_project, companion_server, simulator_server, max_turns=3)
    case = only_case(report)
    assert case.status == "ok", case.error
    assert not any(is_simulator_call(call.messages) for call in companion_server.calls)
    assert len(simulator_server.calls) == 2 and all(is_simulator_call(call.messages) for call in simulator_server.calls)
    assert case.simulation["endpoint"] == simulator_server.base_url and case.simulation["model"] == "sim-model"
    # The simulator's tokens are its own: the companion's count only the companion's calls.
    summary = report.summaries["v2"]
    simulator_tokens = sum(len(chatty(user_turn_number(call)).split())
                           for call in simulator_server.calls)
    assert summary["simulator"]["completion_tokens"] == simulator_tokens
    assert summary["simulator"]["calls"] == 2 and summary["api_calls"] == 3
    assert summary["completion_tokens"] == sum(turn.usage.completion_tokens for turn in case.turns)
    manifest = report.store.manifest["config"]["simulator"]
    assert manifest == {"kind": "openai", "model": "sim-model", "endpoint": simulator_server.base_url}
    assert "sim-key" not in (report.store.directory / "manifest.json").read_text()


def test_the_simulator_is_told_the_persona_and_the_facts_due_never_a_score(persona_project, openai_server):
    server = openai_server(answers=answers(chatty))
    play(persona_project, server, max_turns=3)
    instructions = {user_turn_number(call): call.messages[0]["content"]
                    for call in server.calls if is_simulator_call(call.messages)}
    assert "Tess" in instructions[2] and "Rufus" in instructions[2] and "Greta" not in instructions[2]
    assert "Greta" in instructions[3] and "remember the dog's name" in instructions[3]
    assert all("[DONE]" in text and "[LEAVE]" in text for text in instructions.values())
    for text in instructions.values():
        assert not any(word in text.lower() for word in ("score", "rubric", "metric", "judge"))


@pytest.mark.parametrize("flags", [["--persona", "nobody"], ["--turns", "0"]])
def test_bad_persona_flags_are_refused_naming_the_flag(persona_project, flags, tmp_path):
    from typer.testing import CliRunner

    from evaluators.cli import app

    result = CliRunner().invoke(app, ["run", "--prompts-dir", str(persona_project["prompts"]), "--scenarios-dir",
                                      str(persona_project["scenarios"]), "--output", str(tmp_path), *flags])
    assert result.exit_code == 2
    assert flags[0] in " ".join(result.output.split())


def test_the_run_command_names_who_plays_the_personas_and_what_the_simulator_cost(persona_project, openai_server,
                                                                                 monkeypatch):
    from typer.testing import CliRunner

    from evaluators.cli import app

    server = openai_server(answers=answers(chatty))
    for name, value in {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "companion-key",
                        "PENPAL_SIMULATOR_MODEL": "sim-model",
                        "PENPAL_EVAL_CACHE": str(persona_project["cache"])}.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["run", "--prompts-dir", str(persona_project["prompts"]), "--scenarios-dir",
                                      str(persona_project["scenarios"]), "--output", str(persona_project["runs"]),
                                      "--persona", "tester", "--turns", "2", "-p", "v2", "--no-cache"])
    output = " ".join(result.output.split())
    assert result.exit_code == 0, output
    assert "1 scenario = 1 case via openai (1 persona played by sim-model)" in output
    assert "simulated users: 1 call," in output and "not counted in the versions' calls and cost" in output
    assert "companion-key" not in output
