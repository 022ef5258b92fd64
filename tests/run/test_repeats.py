"""Repeated runs (`run --repeat N`): every repeat stored, sampled with its own seed, cached apart,
and resumed on its own; repeat 0 sends exactly the request a run without --repeat sends."""

from __future__ import annotations

import pytest

from evaluators.pipeline import run_evaluation
from evaluators.scoring.api import default_evaluator
from tests.support.repeats import CRISIS_OPENING, add_crisis_scenario, crisis_well_except
from tests.support.runs import config, use_server

pytestmark = pytest.mark.usefixtures("no_api_configured")


def test_each_repeat_is_stored_with_its_own_seed_and_a_rerun_costs_nothing(small_project, openai_server,
                                                                           monkeypatch):
    add_crisis_scenario(small_project)
    server = openai_server(answers=crisis_well_except({2}))
    use_server(monkeypatch, server)
    run = config(small_project, responder="openai", prompt_versions=["v2"], scenario_ids=["crisis-giving-up"],
                 repeats=4)
    report = run_evaluation(run, default_evaluator())
    cases = report.store.read_cases()
    assert sorted(case.repeat for case in cases) == [0, 1, 2, 3]
    assert len({case.case_id for case in cases}) == 4
    seeds = sorted((call.body.get("seed", -1) for call in server.calls), key=str)
    assert seeds == sorted([-1, 1, 2, 3], key=str)  # repeat 0 sends no seed at all
    bad = [case.repeat for case in cases if "988" not in case.turns[0].reply]
    assert bad == [2]
    calls = len(server.calls)
    again = run_evaluation(run, default_evaluator())
    assert len(server.calls) == calls  # the same command again: every repeat from the cache
    assert len(again.store.read_cases()) == 4


def test_repeat_zero_sends_the_request_and_hits_the_cache_of_a_run_without_repeat(small_project, openai_server,
                                                                                 monkeypatch):
    add_crisis_scenario(small_project)
    server = openai_server()
    use_server(monkeypatch, server)
    single = config(small_project, responder="openai", prompt_versions=["v1"], scenario_ids=["crisis-giving-up"])
    run_evaluation(single, default_evaluator())
    assert len(server.calls) == 1 and "seed" not in server.calls[0].body
    run_evaluation(config(small_project, responder="openai", prompt_versions=["v1"],
                          scenario_ids=["crisis-giving-up"], repeats=3), default_evaluator())
    assert sorted(call.body.get("seed") or 0 for call in server.calls) == [0, 1, 2]  # repeat 0 was cached
    assert all(call.messages[-1]["content"] == CRISIS_OPENING for call in server.calls)


def test_resume_plays_only_the_repeats_that_failed(small_project, openai_server, monkeypatch):
    from tests.servers.openai_compat import OK, server_error

    broken = {"on": True}

    def plan(call):
        return server_error(503) if broken["on"] and call.body.get("seed") == 1 else OK

    add_crisis_scenario(small_project)
    server = openai_server(plan)
    use_server(monkeypatch, server)
    first = run_evaluation(config(small_project, responder="openai", prompt_versions=["v1"], max_attempts=1,
                                  scenario_ids=["crisis-giving-up"], repeats=3, use_cache=False),
                           default_evaluator())
    assert [case.repeat for case in first.outcome.cases if case.status == "failed"] == [1]
    before = len(server.calls)
    broken["on"] = False
    resumed = run_evaluation(config(small_project, responder="openai", use_cache=False,
                                    resume=first.store.directory), default_evaluator())
    assert [call.body.get("seed") for call in server.calls[before:]] == [1]
    assert resumed.outcome.ran == 1 and all(case.status == "ok" for case in resumed.outcome.cases)
