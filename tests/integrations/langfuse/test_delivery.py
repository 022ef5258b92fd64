"""Nothing lost: with Langfuse failing (500s, 429s, hanging, dropping, down) a run finishes with
its store whole and reports what it could not deliver; a later `penpal-eval push` delivers
every score exactly once."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.ids import turn_trace_id
from evaluators.integrations.langfuse.ledger import LEDGER
from tests.servers.langfuse import DROP, OK, hang, rate_limited, server_error
from tests.support.langfuse_runs import run_replay

pytestmark = pytest.mark.slow  # Langfuse failing until timeouts and retries give up

runner = CliRunner()
UNDELIVERED = re.compile(r"NOT DELIVERED: (\d+) spans?, (\d+) scores?")

FAILURES = {
    "500": lambda request: server_error(500),
    "503": lambda request: server_error(503),
    "429": lambda request: rate_limited("1"),
    "hang": lambda request: hang(30),
    "drop": lambda request: DROP,
}


def turn_traces(store) -> set[str]:
    run_id = store.manifest["run_id"]
    return {turn_trace_id(run_id, case.prompt_version, case.scenario_id, turn.index)
            for case in store.read_cases() for turn in case.turns}


def check_everything_arrived_once(server, store) -> None:
    assert set(server.traces) == turn_traces(store)
    assert len(server.observations) == 3 * len(turn_traces(store))
    assert len(server.observation_events) == len(server.observations)  # each span stored once
    trace_scores = [score for score in server.scores.values() if score.get("traceId")]
    assert {score["traceId"] for score in trace_scores} == turn_traces(store)
    assert server.score_deliveries == Counter({score_id: 1 for score_id in server.scores})  # exactly once each
    assert any(score.get("datasetRunId") for score in server.scores.values())  # run-level scores too
    assert server.schema_errors == []


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_failing_langfuse_loses_nothing_and_push_delivers_it_later(small_project, langfuse, capsys, failure):
    server = langfuse(timeout_s=1.0, flush_timeout_s=10.0)
    server.faults = FAILURES[failure]
    code, store = run_replay(small_project)

    assert code == 0  # every case scored; Langfuse's trouble is reported, not fatal
    cases = store.read_cases()
    assert len(cases) == 6 and all(case.status == "ok" for case in cases)
    err = capsys.readouterr().err
    spans, scores = map(int, UNDELIVERED.search(err).groups())
    assert spans == 3 * len(turn_traces(store))
    assert scores > 0
    assert "penpal-eval push" in err
    assert server.scores == {} and server.traces == {}
    ledger = json.loads((store.directory / LEDGER).read_text())
    assert ledger["traces"] == {} and ledger["scores"] == {}

    server.faults = lambda request: OK
    result = runner.invoke(app, ["push", str(store.directory)])
    assert result.exit_code == 0, result.output
    check_everything_arrived_once(server, store)
    counted = sum(1 for score in server.scores.values() if score.get("traceId") or score.get("sessionId"))
    assert scores == counted  # the run counted every trace and conversation score it could not deliver


def test_langfuse_down_then_back_on_the_same_address(small_project, langfuse, capsys):
    server = langfuse(timeout_s=1.0, flush_timeout_s=10.0)
    server.stop()  # the port refuses connections
    code, store = run_replay(small_project)
    assert code == 0
    assert UNDELIVERED.search(capsys.readouterr().err)

    server.start()  # same address, same keys
    result = runner.invoke(app, ["push", str(store.directory)])
    assert result.exit_code == 0, result.output
    check_everything_arrived_once(server, store)


def test_a_partly_failed_delivery_is_completed_by_push_without_duplicates(small_project, langfuse, capsys):
    server = langfuse(timeout_s=1.0)

    def second_score_batch_fails(request):
        failing = request.method == "POST" and request.path.endswith("/scores") and request.attempt >= 2
        return server_error(500) if failing else OK

    server.faults = second_score_batch_fails
    code, store = run_replay(small_project)
    assert code == 0
    err = capsys.readouterr().err
    spans, scores = map(int, UNDELIVERED.search(err).groups())
    assert spans == 0 and scores > 0
    delivered_first = dict(server.score_deliveries)
    assert delivered_first  # the first batch arrived

    server.faults = lambda request: OK
    result = runner.invoke(app, ["push", str(store.directory)])
    assert result.exit_code == 0, result.output
    check_everything_arrived_once(server, store)
    assert len(server.scores) - len(delivered_first) >= scores - 0  # the rest came with the push


def test_push_reports_undelivered_and_exits_1_when_langfuse_still_fails(small_project, langfuse):
    server = langfuse(timeout_s=1.0)
    code, store = run_replay(small_project)
    assert code == 0
    server.faults = lambda request: server_error(502)
    result = runner.invoke(app, ["push", "--all", str(store.directory)])
    assert result.exit_code == 1
    assert UNDELIVERED.search(result.output)


def test_one_failed_call_does_not_stop_the_rest_of_the_push(small_project, langfuse):
    """A score batch the server chokes on is reported; the batches after it are still sent."""
    server = langfuse(timeout_s=1.0)
    code, store = run_replay(small_project, langfuse=False)
    assert code == 0

    def first_score_batch_fails(request):  # every attempt of it: the client's 4
        first = request.method == "POST" and request.path.endswith("/scores") and request.attempt <= 4
        return server_error(500) if first else OK

    server.faults = first_score_batch_fails
    result = runner.invoke(app, ["push", str(store.directory)])
    assert result.exit_code == 1
    spans, scores = map(int, UNDELIVERED.search(result.output).groups())
    batches = [ids for kind, ids in server.received_batches if kind == "scores"]
    assert spans == 0 and len(batches) >= 2 and all(batches)  # every later batch arrived
    assert scores == 100  # the first batch alone, counted
    assert "skipped, Langfuse is unreachable" not in result.output

    server.faults = lambda request: OK
    again = runner.invoke(app, ["push", str(store.directory)])
    assert again.exit_code == 0, again.output
    check_everything_arrived_once(server, store)


def test_a_207_names_the_rejected_scores_grouped_by_reason_and_push_sends_only_those(small_project, langfuse):
    reasons = {"helpfulness": "ingestion paused for this metric", "appropriateness": "ingestion paused for this metric",
               "hard_criteria": "score quota exceeded for BOOLEAN scores"}
    server = langfuse(score_rejections=lambda score: reasons.get(score.get("name")))
    code, store = run_replay(small_project, langfuse=False)
    assert code == 0
    result = runner.invoke(app, ["push", str(store.directory)])
    assert result.exit_code == 1
    out = result.output
    turns = sum(len(case.turns) for case in store.read_cases())
    rejected = [line for line in out.splitlines() if "Langfuse rejected" in line]
    assert len(rejected) == 2, out  # one line per reason, not one per score
    paused = next(line for line in rejected if "ingestion paused" in line)
    assert f"Langfuse rejected {2 * turns} scores (" in paused
    assert f"helpfulness x{turns}" in paused and f"appropriateness x{turns}" in paused
    assert f"on {turns} subjects" in paused
    quota = next(line for line in rejected if "quota" in line)
    assert f"Langfuse rejected {turns} scores (hard_criteria x{turns}; on {turns} subjects)" in quota
    spans, scores = map(int, UNDELIVERED.search(out).groups())
    assert spans == 0 and scores == 3 * turns  # exactly the rejected ones; the rest of each batch arrived

    delivered = dict(server.score_deliveries)
    server.score_rejections = None
    again = runner.invoke(app, ["push", str(store.directory)])
    assert again.exit_code == 0, again.output
    resent = Counter(server.score_deliveries) - Counter(delivered)
    assert len(resent) == 3 * turns and not set(resent) & set(delivered)  # only the rejected ones went again
    check_everything_arrived_once(server, store)
