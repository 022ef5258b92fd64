"""Simulated users that are checked, against the local OpenAI-compatible server.

The server plays a simulator scripted to drift in one way at a time (into the assistant's role,
away from its persona's facts or style, misusing a stopping marker) and, for each check, a
faithful one. A drifting conversation is kept with the reasons, marked invalid (kind
invalid_simulation) and left out of the decision, whose coverage counts it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from evaluators.pipeline import RunReport, execute, prepare_run
from evaluators.release.rules import release_report
from evaluators.run.config import RunConfig
from evaluators.scoring.api import default_evaluator
from evaluators.store.records import CaseResult
from tests.servers.openai_compat import Call, scripted_reply
from tests.support.project import is_simulator_call

EVALUATOR = default_evaluator()
FAITHFUL = {
    2: "My dog Rufus chewed my slippers again, the little rascal.",
    3: "My sister Greta is coming over on Sunday with cake.",
    4: "Anyway, I should walk the dog before it gets dark.",
}


def faithful(turn: int) -> str:
    return FAITHFUL[turn]


def user_turn_number(call: Call) -> int:
    return sum(message["role"] == "assistant" for message in call.messages) + 1


def play(project: dict[str, Path], openai_server, user: Callable[[Call], str], *, families=("personas",),
         **server_options) -> tuple[RunReport, object]:
    server = openai_server(answers=lambda call: user(call) if is_simulator_call(call.messages)
                           else scripted_reply(call.messages), **server_options)
    config = RunConfig(prompts_dir=project["prompts"], scenarios_dir=project["scenarios"], families=list(families),
                       prompt_versions=["v2"], responder="openai", use_cache=False, output_dir=project["runs"],
                       concurrency=1, retry_base_delay_s=0.01, max_turns=4)
    environ = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "companion-key",
               "PENPAL_SIMULATOR_MODEL": "sim-model"}
    return asyncio.run(execute(prepare_run(config, EVALUATOR, environ), EVALUATOR)), server


def by_turn(write: Callable[[int], str]) -> Callable[[Call], str]:
    return lambda call: write(user_turn_number(call))


def simulated(report: RunReport) -> CaseResult:
    return next(case for case in report.outcome.cases if case.family == "personas")


def checks(case: CaseResult) -> dict[str, dict]:
    return {check["name"]: check for check in case.simulation["validity"]["checks"]}


def assert_caught(case: CaseResult, name: str) -> str:
    assert case.status == "failed" and case.invalid_simulation, case.error
    assert not checks(case)[name]["passed"]
    assert (("invalid_simulation", name) in {(failure["kind"], failure["name"]) for failure in case.failures})
    assert case.error.startswith("invalid simulation:") and name in case.error
    assert case.turns  # the conversation is kept, with its reasons, for a person to read
    return checks(case)[name]["reason"]


def test_a_faithful_simulator_passes_every_check_and_its_case_counts(persona_project, openai_server):
    report, _ = play(persona_project, openai_server, by_turn(faithful))
    case = simulated(report)
    assert case.status == "ok", case.error
    assert case.simulation["validity"]["valid"] is True
    assert all(check["passed"] for check in case.simulation["validity"]["checks"]), case.simulation["validity"]
    assert [check["name"] for check in case.simulation["validity"]["checks"]] == [
        "role_drift", "persona_facts", "persona_style", "stop_markers"]
    assert case.failures == []


def test_a_simulator_drifting_into_the_assistant_role_is_caught_and_left_out_of_the_decision(persona_project,
                                                                                              openai_server):
    def drifting(turn: int) -> str:
        if turn == 3:
            return ("As a digital assistant, I don't have personal data, but my sister Greta would say hi. "
                    "How can I help you today?")
        return faithful(turn)

    report, _ = play(persona_project, openai_server, by_turn(drifting), families=("personas", "basic"))
    case = simulated(report)
    reason = assert_caught(case, "role_drift")
    assert "turn 3 speaks as an assistant" in reason and "as a digital assistant" in reason
    # The decision leaves it out and says so in its counts.
    release = release_report(report.outcome.cases, EVALUATOR.rubric, run_id="test")
    (decision,) = release.decisions
    assert decision.coverage.invalid_simulations == 1 and decision.coverage.failed == 1
    assert decision.coverage.scored == decision.coverage.scenarios - 1
    assert "1 of them an invalid simulated conversation" in decision.coverage.message
    assert decision.outcome != "deploy"
    assert release.aggregates["v2"].scored == 2 and release.aggregates["v2"].failed == 1
    assert report.summaries["v2"]["invalid_simulations"] == 1


def test_a_simulator_mirroring_the_companion_is_caught(persona_project, openai_server):
    def mirroring(call: Call) -> str:
        turn = user_turn_number(call)
        if turn == 4:  # says the companion's last reply back to it
            return call.messages[-1]["content"]
        return faithful(turn)

    reason = assert_caught(simulated(play(persona_project, openai_server, mirroring)[0]), "role_drift")
    assert "turn 4 mirrors the companion's reply" in reason


def test_a_simulator_writing_the_companion_part_too_is_caught(persona_project, openai_server):
    def both_sides(turn: int) -> str:
        return faithful(turn) + ("\nCompanion: That's lovely, say hi to Greta!" if turn == 3 else "")

    reason = assert_caught(simulated(play(persona_project, openai_server, by_turn(both_sides))[0]), "role_drift")
    assert "message 3 also writes the companion's part" in reason


def test_a_simulator_that_forgets_a_fact_when_due_is_caught(persona_project, openai_server):
    def forgetful(turn: int) -> str:
        return "Just another long shift, nothing new to tell." if turn in (2, 3) else faithful(turn)

    reason = assert_caught(simulated(play(persona_project, openai_server, by_turn(forgetful))[0]), "persona_facts")
    assert "dog_name due on turn 2" in reason and "revealed never" in reason


def test_a_simulator_revealing_a_fact_before_its_turn_is_caught(persona_project, openai_server):
    def hasty(turn: int) -> str:
        return "My dog Rufus and my sister Greta both say hi." if turn == 2 else faithful(turn)

    reason = assert_caught(simulated(play(persona_project, openai_server, by_turn(hasty))[0]), "persona_facts")
    assert "sister_name revealed on turn 2, before its turn 3" in reason


def test_a_simulator_writing_like_the_companion_at_length_is_caught(persona_project, openai_server):
    long = ("My sister Greta is visiting, and " + "there is so much I would like to explain in detail " * 10).strip()

    def wordy(turn: int) -> str:
        return long if turn == 3 else faithful(turn)

    reason = assert_caught(simulated(play(persona_project, openai_server, by_turn(wordy))[0]), "persona_style")
    assert "turn 3 has" in reason and "at most 80" in reason


def test_a_marker_not_at_the_end_of_the_message_is_caught(persona_project, openai_server):
    def chatty_after_done(turn: int) -> str:
        return "My sister Greta is here. [DONE] Anyway, what else is new with you?" if turn == 3 else faithful(turn)

    case = simulated(play(persona_project, openai_server, by_turn(chatty_after_done))[0])
    reason = assert_caught(case, "stop_markers")
    assert "message 3 goes on after its marker [DONE]" in reason


def test_a_marker_at_the_end_of_the_message_passes(persona_project, openai_server):
    def done(turn: int) -> str:
        return "My sister Greta is here now, thanks for listening! [DONE]" if turn == 3 else faithful(turn)

    case = simulated(play(persona_project, openai_server, by_turn(done))[0])
    assert case.status == "ok", case.error
    assert case.simulation["stop_reason"] == "goal_reached" and checks(case)["stop_markers"]["passed"]


def test_the_model_that_actually_answered_is_recorded_beside_the_configured_one(persona_project, openai_server):
    report, _ = play(persona_project, openai_server, by_turn(faithful), model_name="tiny-local-model")
    case = simulated(report)
    assert case.simulation["model"] == "sim-model"
    assert case.simulation["answered_by"] == ["tiny-local-model"]
    assert case.simulation["raw_messages"] == [FAITHFUL[2], FAITHFUL[3], FAITHFUL[4]]


def test_the_run_output_names_the_invalid_conversation_and_the_model_that_answered(persona_project, openai_server,
                                                                                    monkeypatch):
    from typer.testing import CliRunner

    from evaluators.cli import app

    def drifting(call: Call) -> str:
        turn = user_turn_number(call)
        return "As an AI language model, I'm here to help you today." if turn == 2 else faithful(turn)

    server = openai_server(answers=lambda call: drifting(call) if is_simulator_call(call.messages)
                           else scripted_reply(call.messages), model_name="tiny-local-model")
    for name, value in {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "companion-key",
                        "PENPAL_SIMULATOR_MODEL": "sim-model"}.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["run", "--prompts-dir", str(persona_project["prompts"]), "--scenarios-dir",
                                      str(persona_project["scenarios"]), "--output", str(persona_project["runs"]),
                                      "-f", "personas", "-f", "basic", "--turns", "3", "-p", "v2", "--no-cache"])
    output = " ".join(result.output.split())
    assert result.exit_code == 1, output  # a case failed: the invalid conversation
    assert "answered by tiny-local-model" in output
    assert "1 conversation invalid" in output and "left out of the decisions" in output
    assert "1 of them an invalid simulated conversation" in output


def test_a_user_question_about_the_ai_or_a_distressed_statement_is_no_role_drift():
    """What a person says to an AI companion ("are you an AI?") or of themself in distress ("I don't
    have feelings any more") stays the user's: only assistant statements count."""
    from evaluators.run.simulation.validity import role_drift

    users = ["Hi there.", "Are you an AI? As an AI, do you even get tired?",
             "Some days I don't have feelings any more. I'm not a person who cries, though."]
    replies = ["Hello! How has your day been?", "I am an AI, yes. What's on your mind?"]
    assert role_drift(users, replies, [], EVALUATOR.rubric, EVALUATOR.meaning).passed
    drifted = [*users[:2], "As a digital assistant, I don't have personal data."]
    assert not role_drift(drifted, replies, [], EVALUATOR.rubric, EVALUATOR.meaning).passed


def test_a_rubric_exception_that_is_no_lexicon_entry_is_an_error_naming_the_key():
    import pytest

    from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH, RubricError, parse_rubric

    text = DEFAULT_RUBRIC_PATH.read_text(encoding="utf-8").replace(
        "assistant_lexicon_exceptions: [I don't experience,", "assistant_lexicon_exceptions: [I dont experiense,")
    with pytest.raises(RubricError, match=r"simulation_checks\.assistant_lexicon_exceptions: .I dont experiense. is no"):
        parse_rubric(text, "rubric.yaml")


def test_a_marker_the_persona_has_no_condition_for_is_caught(persona_project, openai_server):
    path = persona_project["scenarios"] / "personas" / "tester.yaml"
    path.write_text(path.read_text().replace("leaves_when: The companion is rude.\n", ""))  # Tess never leaves

    def leaving(turn: int) -> str:
        return "My sister Greta is here, bye now. [LEAVE]" if turn == 3 else faithful(turn)

    case = simulated(play(persona_project, openai_server, by_turn(leaving))[0])
    reason = assert_caught(case, "stop_markers")
    assert "ended as persona_left, which persona 'tester' has no condition for" in reason


def test_a_replayed_conversation_is_written_by_hand_and_not_checked(small_project):
    from evaluators.pipeline import execute, prepare_run
    from tests.support.project import PERSONA, write_files

    write_files(small_project["scenarios"] / "personas", {"tester.yaml": PERSONA.format(max_turns=5)})
    write_files(small_project["recorded"] / "personas", {"tester.yaml": """\
sample_data: true
persona: tester
conversations:
  v2:
    stopped: turn_limit
    exchanges:
      - {user: "Hi, I've had a long day with my dog.", reply: "Long days are tiring. How is the dog?"}
      - {user: "As a digital assistant, I don't have personal data.", reply: "That's an odd thing to say!"}
"""})
    config = RunConfig(prompts_dir=small_project["prompts"], scenarios_dir=small_project["scenarios"],
                       recorded_dir=small_project["recorded"], families=["personas"], prompt_versions=["v2"],
                       responder="replay", output_dir=small_project["runs"], max_turns=2)
    report = asyncio.run(execute(prepare_run(config, EVALUATOR, {}), EVALUATOR))
    case = simulated(report)
    assert case.status == "ok", case.error
    assert case.simulation["simulator"] == "replay" and len(case.turns) == 2
    assert "validity" not in case.simulation and case.failures == []
