"""A simulated conversation whose judge failed: resuming judges its stored turns again, with
neither the simulated user nor the companion asked again (a new play would be another
conversation). The companion and the simulated user are one local server, the judge another."""

from __future__ import annotations

import asyncio
from pathlib import Path

from evaluators.judge.factory import JudgeConfig
from evaluators.pipeline import RunReport, execute, prepare_run
from evaluators.run.config import RunConfig
from evaluators.scoring.api import default_evaluator
from evaluators.store.run_store import RunStore
from tests.servers.judge_answers import data_blocks, verdict_json
from tests.servers.openai_compat import OK, OpenAICompatServer, scripted_reply, server_error
from tests.support.project import faithful_tester_message, is_simulator_call

EVALUATOR = default_evaluator()


def answer(call) -> str:
    """The faithful tester persona, and a companion whose reply names the call that made it."""
    if is_simulator_call(call.messages):
        return faithful_tester_message(call)
    return f"{scripted_reply(call.messages)} (call {call.number})"


def play(project: dict[str, Path], server: OpenAICompatServer, judge: OpenAICompatServer, **options) -> RunReport:
    config = RunConfig(prompts_dir=project["prompts"], scenarios_dir=project["scenarios"], families=["personas"],
                       prompt_versions=["v2"], responder="openai", use_cache=False, output_dir=project["runs"],
                       concurrency=1, retry_base_delay_s=0.01, max_turns=3,
                       judge=JudgeConfig(model="judge-model", use_cache=False, retry_base_delay_s=0.01,
                                         max_attempts=2, safety=False), **options)
    environ = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "companion-key",
               "PENPAL_SIMULATOR_MODEL": "sim-model", "PENPAL_JUDGE_BASE_URL": judge.base_url,
               "PENPAL_JUDGE_API_KEY": "judge-key"}
    return asyncio.run(execute(prepare_run(config, EVALUATOR, environ), EVALUATOR))


def test_a_simulated_conversation_whose_judge_failed_is_judged_again_without_being_played_again(
        persona_project, openai_server):
    server = openai_server(answers=answer)
    judge = openai_server(lambda call: server_error(500), answers=lambda call: verdict_json(0.7, "good"))
    first = play(persona_project, server, judge)
    (stored,) = first.outcome.cases
    assert stored.status == "ok" and stored.judge_failed and len(stored.turns) == 3
    played = len(server.calls)
    judge.faults = lambda call: OK
    judge_before = len(judge.calls)

    resumed = play(persona_project, server, judge, resume=first.store.directory)

    assert len(server.calls) == played  # neither the simulated user nor the companion was asked again
    assert resumed.outcome.rejudged == 1
    (case,) = RunStore.open(first.store.directory).read_cases()
    assert case.finished and case.judge["overall"] == 0.7 and [turn.judge["status"] for turn in case.turns] == ["ok"] * 3
    assert [(turn.user, turn.reply) for turn in case.turns] == [(turn.user, turn.reply) for turn in stored.turns]
    assert case.simulation == stored.simulation
    # Each stored reply judged once, then the conversation as a whole.
    asked = [data_blocks(call.messages) for call in judge.calls[judge_before:]]
    assert sorted(blocks["REPLY"] for blocks in asked if "REPLY" in blocks) == sorted(turn.reply for turn in stored.turns)
    assert sum("CONVERSATION" in blocks for blocks in asked) == 1
    assert case.conversation["judge"]["status"] == "ok"
