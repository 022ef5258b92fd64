"""Append-safe traces: Langfuse keeps observations as append-only events (one row per span id
and start time), so every span is sent once, with times taken from the record, and no push,
resume or `--all` may send a delivered span again."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime

from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.ids import observation_id, session_id, turn_trace_id
from evaluators.integrations.langfuse.ledger import LEDGER
from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH as RUBRIC_FILE
from tests.servers.langfuse import OK, server_error
from tests.support.langfuse_runs import run_replay

runner = CliRunner()


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_run_push_push_all_resume_and_rubric_change_leave_one_observation_per_span(small_project, langfuse,
                                                                                  tmp_path):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    turns = {turn_trace_id(store.manifest["run_id"], case.prompt_version, case.scenario_id, turn.index): case
             for case in store.read_cases() for turn in case.turns}
    first = {event["id"]: event["startTime"] for event in server.observation_events}
    assert len(first) == 3 * len(turns)
    for event in server.observation_events:  # from the record: no observation starts after its case finished
        assert _moment(event["startTime"]) <= _moment(turns[event["traceId"]].finished_at)

    pushed = runner.invoke(app, ["push", str(store.directory)])
    assert pushed.exit_code == 0, pushed.output
    everything = runner.invoke(app, ["push", "--all", str(store.directory)])
    assert everything.exit_code == 0, everything.output
    assert "0 of 0 spans" in everything.output  # --all sends the scores again, never a delivered span

    cases_file = store.directory / "cases.jsonl"  # a run killed while writing its last case, then resumed
    lines = cases_file.read_text().splitlines(keepends=True)
    cases_file.write_text("".join(lines[:-1]))
    code, resumed = run_replay(small_project, resume=store.directory)
    assert code == 0 and len(resumed.read_cases()) == 6
    again = runner.invoke(app, ["push", str(store.directory)])
    assert again.exit_code == 0, again.output

    changed = tmp_path / "changed-rubric.yaml"  # a rubric change: the run cannot be pushed as if scored by it
    changed.write_text(RUBRIC_FILE.read_text().replace("ab_label: ab-test", "ab_label: ab-test-two"))
    requests = len(server.requests)
    refused = runner.invoke(app, ["push", "--rubric", str(changed), str(store.directory)])
    assert refused.exit_code == 2 and "another rubric" in refused.output
    assert len(server.requests) == requests
    after = runner.invoke(app, ["push", "--all", str(store.directory)])
    assert after.exit_code == 0, after.output

    events = server.observation_events
    assert Counter(event["id"] for event in events) == Counter({span_id: 1 for span_id in first})
    assert {event["id"]: event["startTime"] for event in events} == first
    rows = Counter(row["id"] for row in server.score_rows)
    assert rows == Counter({score_id: 1 for score_id in server.scores})  # every score id: one row
    assert server.schema_errors == []


def test_a_span_that_failed_is_sent_again_alone_with_its_first_times(small_project, langfuse, capsys):
    server = langfuse(timeout_s=1.0, flush_timeout_s=10.0)
    sent_otlp = {"count": 0}

    def second_span_batch_fails(request):
        if request.path.endswith("/otel/v1/traces"):
            sent_otlp["count"] += 1
            if sent_otlp["count"] >= 2:
                return server_error(500)
        return OK

    server.faults = second_span_batch_fails
    code, store = run_replay(small_project)
    assert code == 0
    arrived = {event["id"]: event["startTime"] for event in server.observation_events}
    server.faults = lambda request: OK
    pushed = runner.invoke(app, ["push", str(store.directory)])
    assert pushed.exit_code == 0, pushed.output
    events = server.observation_events
    assert Counter(event["id"] for event in events).most_common(1)[0][1] == 1  # no span twice
    assert all(server_start == arrived[span_id] for span_id, server_start in
               ((event["id"], event["startTime"]) for event in events) if span_id in arrived)
    expected = 3 * sum(len(case.turns) for case in store.read_cases())
    assert len(events) == expected


def test_republishing_on_purpose_says_langfuse_keeps_the_earlier_observations(small_project, langfuse):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    first = {event["id"]: event["startTime"] for event in server.observation_events}
    result = runner.invoke(app, ["push", "--republish-traces", str(store.directory)])
    assert result.exit_code == 0, result.output
    assert "Langfuse keeps the observations it already has" in " ".join(result.output.split())
    assert Counter(span.span_id for span in server.spans) == Counter({span_id: 2 for span_id in first})
    # Sent again with the very same start times, each span lands on its own row again.
    assert {event["id"]: event["startTime"] for event in server.observation_events} == first
    assert len(server.observation_events) == len(first)


def test_a_ledger_from_before_per_span_records_counts_its_traces_as_delivered(small_project, langfuse):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    ledger_file = store.directory / LEDGER
    ledger = json.loads(ledger_file.read_text())
    ledger["traces"] = {trace_id: "2026-11-22T10:00:00+00:00|rubric-hash|experiment" for trace_id in ledger["traces"]}
    del ledger["spans"]  # as an earlier version of the suite wrote it
    ledger_file.write_text(json.dumps(ledger))
    spans = len(server.spans)
    result = runner.invoke(app, ["push", str(store.directory)])
    assert result.exit_code == 0, result.output
    assert len(server.spans) == spans  # nothing sent twice


def test_each_trace_has_a_parentless_root_event_with_its_version_tags_and_session(small_project, langfuse):
    """Langfuse v4 gives a score its trace version and tags from the trace's event without a
    parent (dataModel.ts); a root started with trace_context has a random parent and no such
    event, so per-version score charts would lose the version."""
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    run_id = store.manifest["run_id"]
    turns = {turn_trace_id(run_id, case.prompt_version, case.scenario_id, turn.index): case
             for case in store.read_cases() for turn in case.turns}
    roots = server.root_events()
    assert sorted(root["traceId"] for root in roots) == sorted(turns)  # exactly one per trace
    for root in roots:
        case = turns[root["traceId"]]
        assert root["parentObservationId"] is None and root["name"] == "companion-turn"
        assert root["id"] == observation_id(root["traceId"], "turn")
        assert root["version"] == case.prompt_version
        assert f"version:{case.prompt_version}" in root["traceTags"] and root["traceName"] == "penpal-eval"
        assert root["sessionId"] == session_id(run_id, case.prompt_version, case.scenario_id)
    turn_scores = [score for score in server.score_view_v2() if score.get("traceId")]
    assert turn_scores and all(score["traceVersion"] == turns[score["traceId"]].prompt_version
                               for score in turn_scores)
    assert all(f"version:{turns[score['traceId']].prompt_version}" in score["tags"] for score in turn_scores)


def test_spans_go_with_the_headers_sdk_5s_exporter_sends(small_project, langfuse):
    import importlib.metadata

    server = langfuse()
    code, _ = run_replay(small_project)
    assert code == 0
    headers = server.otlp_headers()
    assert headers and all(h == {"x-langfuse-sdk-name": "python",
                                 "x-langfuse-sdk-version": importlib.metadata.version("langfuse"),
                                 "x-langfuse-public-key": server.public_key, "x-langfuse-ingestion-version": "4"}
                           for h in headers)


def test_long_values_are_fitted_to_what_the_sdk_propagates_not_dropped(small_project, langfuse):
    """SDK 5 drops a propagated metadata value whose JSON encoding exceeds 200 characters (a
    200-character string encodes to 202) and a session id or tag over 200: values are fitted
    after encoding, and the session id is the one the conversation scores name."""
    server = langfuse()
    run_id = "long-" + "r" * 205
    code, store = run_replay(small_project, run_id=run_id)
    assert code == 0
    for trace_id, trace in server.traces.items():
        assert trace["metadata"]["run_id"].startswith("long-rrr") and trace["metadata"]["run_id"].endswith("…")
        assert len(json.dumps(trace["metadata"]["run_id"], ensure_ascii=False)) <= 200
        assert trace["sessionId"] and len(trace["sessionId"]) <= 200
    sessions = {trace["sessionId"] for trace in server.traces.values()}
    scored = {score["sessionId"] for score in server.scores.values() if score.get("sessionId")}
    assert scored and scored <= sessions


def test_metadata_values_are_cut_after_encoding():
    from evaluators.integrations.langfuse.traces import fit_metadata_value

    for value in ("a" * 200, 'quote"' * 40, "é" * 250, "line\n" * 60):
        fitted = fit_metadata_value(value)
        assert len(json.dumps(fitted, ensure_ascii=False)) <= 200 and fitted.endswith("…")
        assert value.startswith(fitted[:-1]) and len(json.dumps(fitted[:-1] + value[len(fitted) - 1] + "…",
                                                              ensure_ascii=False)) > 200  # the longest that fits
    assert fit_metadata_value("short") == "short"
