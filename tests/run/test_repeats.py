"""Repeated runs (`run --repeat N`): every repeat stored, sampled with its own seed, cached apart,
and resumed on its own; repeat 0 sends exactly the request a run without --repeat sends."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.pipeline import run_evaluation
from evaluators.scoring.api import default_evaluator
from evaluators.store.run_store import RunStore
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


def test_a_crisis_handled_well_in_three_of_four_repeats_is_refused_with_its_rate(small_project, openai_server,
                                                                                 monkeypatch):
    """Acceptance 1: run --repeat 4 against a server that answers the crisis badly for one seed."""
    add_crisis_scenario(small_project)
    server = openai_server(answers=crisis_well_except({3}))
    use_server(monkeypatch, server)
    command = ["run", "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
               str(small_project["scenarios"]), "--output", str(small_project["runs"]), "--cache-dir",
               str(small_project["cache"]), "--repeat", "4", "--run-id", "first", "-c", "2"]
    first = CliRunner().invoke(app, command)
    assert first.exit_code == 0, first.output
    run_dir = small_project["runs"] / "first"
    cases = RunStore.open(run_dir).read_cases()
    crisis = [case for case in cases if case.scenario_id == "crisis-giving-up" and case.prompt_version == "v2"]
    assert sorted(case.repeat for case in crisis) == [0, 1, 2, 3]
    assert len(cases) == 2 * 4 * 4  # every version and scenario, four times
    stored = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]
    assert sorted(line["repeat"] for line in stored if line["scenario_id"] == "crisis-giving-up"
                  and line["prompt_version"] == "v2") == [0, 1, 2, 3]
    bad = next(line for line in stored if line["case_id"] == "v2/crisis-giving-up#r3")
    assert {"kind": "hard_flag", "name": "crisis_without_help"} in [
        {"kind": item["kind"], "name": item["name"]} for item in bad["failures"]]
    assert all(not line["failures"] for line in stored if line["case_id"].startswith("v2/crisis-giving-up")
               and line["repeat"] != 3)
    frame = pd.read_parquet(run_dir / "cases.parquet").set_index("case_id")
    assert frame.loc["v2/crisis-giving-up#r3", "repeat"] == 3
    assert "hard_flag" in frame.loc["v2/crisis-giving-up#r3", "failure_kinds"]

    decided = CliRunner().invoke(app, ["decide", "--json", str(run_dir), "-p", "v2"])
    decision = json.loads(decided.stdout)[0]
    rates = {row["scenario_id"]: row for row in decision["pass_rates"]}
    assert rates["crisis-giving-up"]["passed"] == 3 and rates["crisis-giving-up"]["scored"] == 4
    assert rates["crisis-giving-up"]["pass_rate"] == 0.75
    assert rates["crisis-giving-up"]["low"] < 0.75 < rates["crisis-giving-up"]["high"]
    assert decision["outcome"] == "revise"
    safety = next(rule for rule in decision["rules"] if rule["name"] == "safety_hard_criteria")
    assert not safety["passed"]
    assert "crisis-giving-up passed 3 of 4 repeats (75%)" in safety["message"]
    assert "crisis-giving-up" in decision["flaky"]
    assert decision["failure_kinds"]["hard_flag"] >= 1

    calls = len(server.calls)
    again = CliRunner().invoke(app, [*command[:-4], "--run-id", "second", "-c", "2"])
    assert again.exit_code == 0, again.output
    assert len(server.calls) == calls  # the same command again: 0 calls
    assert len(RunStore.open(small_project["runs"] / "second").read_cases()) == 32


def test_resume_keeps_the_runs_repeats_and_refuses_another_count(small_project):
    from evaluators.run.config import RunConfigError

    first = run_evaluation(config(small_project, responder="replay", prompt_versions=["v1"], repeats=2),
                           default_evaluator())
    assert first.store.manifest["config"]["repeats"] == 2
    with pytest.raises(RunConfigError, match=r"--repeat 3 \(the run has 2\)"):
        run_evaluation(config(small_project, resume=first.store.directory, repeats=3,
                              given=frozenset({"repeats"})), default_evaluator())
    resumed = run_evaluation(config(small_project, resume=first.store.directory), default_evaluator())
    assert resumed.outcome.ran == 0 and len(resumed.outcome.cases) == 2 * 3
