"""Resuming a run whose judge failed for some cases: the stored replies are judged again, the
companion is not called for them (a live companion would answer differently, and the judgement
must be of the replies on record). A case whose companion call failed is played again.

The companion and the judge are two local OpenAI-compatible servers, reached through the real
openai SDK. Each companion reply carries the number of the call that made it, so a reply asked
for again could never equal the stored one.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.judge.factory import JudgeConfig
from evaluators.pipeline import RunReport, execute, prepare_run, run_evaluation
from evaluators.scoring.api import default_evaluator
from evaluators.store.run_store import RunStore
from tests.servers.judge_answers import judged_reply, verdict_json
from tests.servers.openai_compat import OK, OpenAICompatServer, scripted_reply, server_error
from tests.support.judge_runs import config, use_judge
from tests.support.runs import conversation, use_server

pytestmark = pytest.mark.usefixtures("no_api_configured")
runner = CliRunner()
JUDGE = JudgeConfig(model="judge-model", use_cache=False, retry_base_delay_s=0.01, max_attempts=2, safety=False)
HELLO = ("v1", "Hello, how are you today?")
JOKES = {"v1/basic-joke", "v2/basic-joke"}  # the judge fails on their replies in the first run


def numbered_reply(call) -> str:
    return f"{scripted_reply(call.messages)} (call {call.number})"


def judge_fails_on_jokes(call):
    return server_error(500) if "tell me a joke" in judged_reply(call.messages) else OK


def companion_fails_on_hello(call):
    return server_error(500) if conversation(call) == HELLO else OK


def first_run(small_project, openai_server, monkeypatch) -> tuple[RunReport, OpenAICompatServer, OpenAICompatServer]:
    """The small project against a live companion that fails v1's greeting, judged by a judge that
    fails on the joke replies."""
    companion = openai_server(companion_fails_on_hello, answers=numbered_reply)
    judge = openai_server(judge_fails_on_jokes, answers=lambda call: verdict_json(0.8, "good"))
    use_server(monkeypatch, companion)
    use_judge(monkeypatch, judge)
    report = run_evaluation(config(small_project, judge=JUDGE, responder="openai", use_cache=False),
                            default_evaluator())
    cases = {case.case_id: case for case in report.outcome.cases}
    assert cases["v1/basic-hello"].status == "failed"
    assert {case_id for case_id, case in cases.items() if case.status == "ok" and case.judge_failed} == JOKES
    assert sum(case.finished for case in cases.values()) == 3
    companion.faults = judge.faults = lambda call: OK
    return report, companion, judge


def test_a_resume_judges_the_stored_replies_again_and_plays_only_the_case_the_companion_failed(
        small_project, openai_server, monkeypatch):
    first, companion, judge = first_run(small_project, openai_server, monkeypatch)
    stored = {case.case_id: case for case in first.outcome.cases}
    companion_before, judge_before = len(companion.calls), len(judge.calls)

    resumed = run_evaluation(config(small_project, judge=JUDGE, responder="openai", use_cache=False,
                                    resume=first.store.directory), default_evaluator())

    # The companion is asked only for the case it failed: one call for the one-turn greeting.
    again = companion.calls[companion_before:]
    assert [conversation(call) for call in again] == [HELLO]
    cases = {case.case_id: case for case in RunStore.open(first.store.directory).read_cases()}
    assert all(case.finished for case in cases.values()) and len(cases) == 6
    # The judge is asked for the joke replies as stored, and for the greeting played again; no other.
    judged = [judged_reply(call.messages) for call in judge.calls[judge_before:]]
    expected = [turn.reply for case_id in JOKES for turn in stored[case_id].turns] + [cases["v1/basic-hello"].turns[0].reply]
    assert sorted(judged) == sorted(expected)
    for case_id in JOKES:
        case = cases[case_id]
        assert [turn.reply for turn in case.turns] == [turn.reply for turn in stored[case_id].turns]
        assert [turn.usage for turn in case.turns] == [turn.usage for turn in stored[case_id].turns]
        assert case.judge["overall"] == 0.8 and case.judge["verdict"] == "good" and not case.judge["failed"]
        assert case.scores == stored[case_id].scores and case.failures == []
    assert resumed.outcome.ran == 3 and resumed.outcome.rejudged == 2 and resumed.outcome.skipped == 3
    # The replies the store holds are the first run's, byte for byte (the calls that made them named).
    lines = [json.loads(line) for line in (first.store.directory / "cases.jsonl").read_text().splitlines()]
    latest = {line["case_id"]: line for line in lines}
    first_lines = {line["case_id"]: line for line in lines[:6]}
    for case_id in JOKES:
        assert [t["reply"] for t in latest[case_id]["turns"]] == [t["reply"] for t in first_lines[case_id]["turns"]]


def test_the_gate_and_the_resume_line_say_the_stored_replies_are_judged_again(small_project, openai_server,
                                                                            monkeypatch, tmp_path):
    first, companion, judge = first_run(small_project, openai_server, monkeypatch)
    decided = runner.invoke(app, ["decide", str(first.store.directory), "-p", "v2", "--json"])
    finish = json.loads(decided.stdout)[0]["coverage"]["finish"]
    assert any(step.startswith(f"finish the run: penpal-eval run --resume {first.store.directory}")
               and "judges the stored replies of the 1 case the judge failed on again, without calling the "
                   "companion" in step for step in finish), finish
    monkeypatch.setenv("PENPAL_EVAL_CACHE", str(tmp_path / "cli-cache"))
    companion_before = len(companion.calls)
    result = runner.invoke(app, ["run", "--resume", str(first.store.directory)])
    assert result.exit_code == 0, result.output
    stderr = " ".join(result.stderr.split())
    assert "3 already finished; 2 re-judged from their stored replies" in stderr
    assert "3 run now, 2 of them re-judged from their stored replies, 3 already finished" in stderr
    assert [conversation(call) for call in companion.calls[companion_before:]] == [HELLO]


def test_a_case_the_pipeline_does_not_name_for_rejudging_is_played_again(small_project, openai_server,
                                                                         monkeypatch):
    """The runner re-judges only the cases the pipeline names (when it has a judge to ask): a runner
    told none plays them again, as it did before."""
    first, companion, _ = first_run(small_project, openai_server, monkeypatch)
    evaluator = default_evaluator()
    prepared = prepare_run(config(small_project, judge=JUDGE, responder="openai", use_cache=False,
                                  resume=first.store.directory), evaluator)
    assert prepared.rejudge == JOKES
    prepared.rejudge = set()
    before = len(companion.calls)
    report = asyncio.run(execute(prepared, evaluator))
    assert sorted(conversation(call) for call in companion.calls[before:]) == sorted(
        [HELLO, ("v1", "Can you tell me a joke?"), ("v2", "Can you tell me a joke?")])
    assert report.outcome.rejudged == 0 and report.outcome.ran == 3
