"""A persona played several times (`run --repeat N`): the simulated user samples anew per repeat as
well as the companion (both send the repeat's seed), each repeat is its own case, and the same
command again costs no call on either side."""

from __future__ import annotations

import pytest

from evaluators.pipeline import run_evaluation
from evaluators.scoring.api import default_evaluator
from tests.servers.openai_compat import scripted_reply
from tests.support.project import faithful_tester_message, is_simulator_call
from tests.support.runs import config, use_server

pytestmark = pytest.mark.usefixtures("no_api_configured")


def answer(call) -> str:
    if is_simulator_call(call.messages):
        return faithful_tester_message(call, seed=True)
    return scripted_reply(call.messages)


def test_each_repeat_of_a_persona_has_its_own_seed_on_both_sides_and_a_rerun_costs_nothing(persona_project,
                                                                                           openai_server, monkeypatch):
    server = openai_server(answers=answer)
    use_server(monkeypatch, server)
    monkeypatch.setenv("PENPAL_SIMULATOR_MODEL", "sim-model")
    run = config(persona_project, responder="openai", prompt_versions=["v1"], families=["personas"], repeats=2)
    report = run_evaluation(run, default_evaluator())
    cases = sorted(report.store.read_cases(), key=lambda case: case.repeat)
    assert [case.repeat for case in cases] == [0, 1] and all(case.status == "ok" for case in cases)
    simulated = [call for call in server.calls if is_simulator_call(call.messages)]
    companion = [call for call in server.calls if not is_simulator_call(call.messages)]
    assert {call.body.get("seed") for call in simulated} == {None, 1}
    assert {call.body.get("seed") for call in companion} == {None, 1}
    assert "(seed 1)" in cases[1].turns[1].user and "(seed 0)" in cases[0].turns[1].user
    calls = len(server.calls)
    run_evaluation(run, default_evaluator())
    assert len(server.calls) == calls
