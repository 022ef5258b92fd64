"""Spans in through the real OTLP exporter: observations, traces, the events table, the root
event a score's trace fields come from, and the v2 observations read with `filter`."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest
from langfuse import propagate_attributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from tests.support.langfuse_http import OTLP, Capture, get


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_span_and_generation_arrive_decoded_with_trace_fields(client, compression):
    langfuse, server = client(environment="ci", release="r-7", otel_compression=compression)
    prompt = langfuse.create_prompt(name="companion/system", prompt="Hi {{name}}", labels=["production"])

    with langfuse.start_as_current_observation(name="case basic-hello", input={"scenario": "basic-hello"}) as root:
        with propagate_attributes(user_id="user-1", session_id="run-42", tags=["penpal", "v2"],
                                  metadata={"run_id": "run-42", "turns": 3, "digits": "123"}):
            with langfuse.start_as_current_observation(
                    name="reply", as_type="generation", model="smollm2", input=[{"role": "user", "content": "Hi"}],
                    model_parameters={"temperature": 0.0, "max_tokens": 64}, prompt=prompt,
                    usage_details={"input": 12, "output": 7}, cost_details={"input": 0.001, "output": 0.002},
                    metadata={"turn": 1, "family": "basic"}) as generation:
                generation.update(output="Hello there!")
        root.update(output={"verdict": "deploy"})
        trace_id, root_id, generation_id = root.trace_id, root.id, generation.id
    langfuse.flush()

    otlp = server.requests_to(OTLP)
    assert otlp and all(r.status == 200 and r.body is None for r in otlp)
    span = next(s for s in server.spans if s.name == "reply")
    assert (span.trace_id, span.span_id, span.parent_span_id) == (trace_id, generation_id, root_id)
    assert span.attributes["langfuse.observation.prompt.version"] == 1  # an OTLP int, not a string
    assert span.attributes["langfuse.trace.tags"] == ["penpal", "v2"]  # an OTLP array
    assert span.attributes["langfuse.trace.metadata.digits"] == '"123"'  # v5 JSON-encodes metadata values

    observation = server.observations[generation_id]
    assert observation["type"] == "GENERATION" and observation["parentObservationId"] == root_id
    assert observation["modelParameters"] == {"temperature": 0.0, "max_tokens": 64}
    assert observation["usageDetails"] == {"input": 12, "output": 7, "total": 19}
    assert observation["costDetails"] == {"input": 0.001, "output": 0.002, "total": pytest.approx(0.003)}
    assert (observation["promptName"], observation["promptVersion"]) == ("companion/system", 1)
    assert observation["input"] == [{"role": "user", "content": "Hi"}] and observation["output"] == "Hello there!"
    assert observation["metadata"]["turn"] == 1 and observation["environment"] == "ci"

    trace = server.traces[trace_id]
    assert trace["name"] == "case basic-hello"  # the root span's name
    assert (trace["userId"], trace["sessionId"], trace["tags"]) == ("user-1", "run-42", ["penpal", "v2"])
    assert trace["metadata"]["digits"] == "123"  # still a string: decoded once, like Langfuse
    assert trace["input"] == {"scenario": "basic-hello"} and trace["output"] == {"verdict": "deploy"}
    assert (trace["environment"], trace["release"]) == ("ci", "r-7")
    assert set(trace["observations"]) == {root_id, generation_id}


def test_the_exporter_headers_are_recorded(client):
    langfuse, server = client()
    with langfuse.start_as_current_observation(name="x"):
        pass
    langfuse.flush()
    [headers] = server.otlp_headers()[:1]
    assert headers["x-langfuse-sdk-name"] == "python" and headers["x-langfuse-ingestion-version"] == "4"
    assert headers["x-langfuse-public-key"] == server.public_key and headers["x-langfuse-sdk-version"]
    assert all("authorization" not in request.headers for request in server.requests)


def test_an_ingestion_version_above_4_and_a_wrong_content_type_are_refused(langfuse_server):
    server = langfuse_server()
    newer = httpx.post(server.base_url + OTLP, content=b"", headers={
        "Content-Type": "application/x-protobuf", "x-langfuse-ingestion-version": "5", **server.auth_header()})
    assert newer.status_code == 400 and "Maximum supported" in newer.json()["error"]
    text = httpx.post(server.base_url + OTLP, content=b"x", headers={"Content-Type": "text/plain",
                                                                      **server.auth_header()})
    assert text.status_code == 400


def test_uncompressed_and_gzip_otlp_requests_need_auth(langfuse_server):
    server = langfuse_server()
    answer = httpx.post(server.base_url + OTLP, content=gzip.compress(b""),
                        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert answer.status_code == 401
    answer = httpx.post(server.base_url + OTLP, content=b"", headers={
        "Content-Type": "application/x-protobuf", **server.auth_header()})
    assert answer.status_code == 200 and answer.headers["Content-Type"] == "application/x-protobuf"


def test_resending_the_same_span_ids_upserts_and_another_start_time_adds_an_event_row(client):
    capture = Capture()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(capture))
    langfuse, server = client(tracer_provider=provider)
    with langfuse.start_as_current_observation(name="case", input="first") as root:
        root.update(output="v1")
    langfuse.flush()
    exporter = OTLPSpanExporter(endpoint=server.base_url + OTLP, headers=server.auth_header())
    [span] = capture.spans
    later = ReadableSpan(name=span.name, context=span.context, parent=span.parent, resource=span.resource,
                         attributes={**span.attributes, "langfuse.observation.output": "v2"},
                         start_time=span.start_time, end_time=span.end_time,
                         instrumentation_scope=span.instrumentation_scope)
    assert exporter.export([later]) == SpanExportResult.SUCCESS
    assert list(server.observations) == [root.id] and server.observations[root.id]["output"] == "v2"
    assert len(server.observation_events) == 1  # same span id and start time: the row is replaced

    moved = ReadableSpan(name=span.name, context=span.context, parent=span.parent, resource=span.resource,
                         attributes=span.attributes, start_time=span.start_time + 5_000_000_000,
                         end_time=span.end_time + 5_000_000_000, instrumentation_scope=span.instrumentation_scope)
    assert exporter.export([moved]) == SpanExportResult.SUCCESS
    assert [event["id"] for event in server.observation_events] == [root.id, root.id]
    listed = get(server, "/api/public/v2/observations", traceId=root.trace_id).json()
    assert [row["id"] for row in listed["data"]] == [root.id, root.id]  # the v2 API lists both rows
    assert list(server.observations) == [root.id]  # the UI's deduplicated view


def test_only_a_span_without_a_parent_is_a_root_event(client):
    """traceRoot.test.ts: a span with a parent of its own is never the root, even marked as_root
    (what SDK 5 does with trace_context); only the parentless root gives a score its trace fields."""
    langfuse, server = client()
    with_parent = langfuse.create_trace_id(seed="with trace_context")
    with langfuse.start_as_current_observation(name="remote-child", trace_context={"trace_id": with_parent}):
        with propagate_attributes(version="v7", tags=["version:v7"]):
            pass
    with langfuse.start_as_current_observation(name="true-root") as root:
        with propagate_attributes(version="v8", tags=["version:v8"], trace_name="penpal-eval"):
            pass
    langfuse.flush()
    langfuse.create_score(name="quality", value=0.5, trace_id=with_parent, score_id="s-old")
    langfuse.create_score(name="quality", value=0.5, trace_id=root.trace_id, score_id="s-new")
    langfuse.flush()

    [remote] = [span for span in server.spans if span.name == "remote-child"]
    assert remote.parent_span_id is not None and remote.attributes["langfuse.internal.as_root"] is True
    assert [event["name"] for event in server.root_events()] == ["true-root"]
    fields = {row["id"]: row for row in server.score_view_v2()}
    assert fields["s-new"]["traceVersion"] == "v8" and fields["s-new"]["tags"] == ["version:v8"]
    assert fields["s-new"]["traceName"] == "penpal-eval"
    assert fields["s-old"]["traceVersion"] is None and fields["s-old"]["tags"] == []




def test_the_observations_filter_excludes_an_environment_and_wins_over_query_parameters(langfuse_server, client):
    server = langfuse_server()
    for environment in ("production", "staging", "penpal-eval"):
        langfuse, _ = client(server, environment=environment)
        with langfuse.start_as_current_observation(name="companion-reply", as_type="generation", input="hi"):
            pass
        langfuse.flush()
        langfuse.shutdown()
    none_of = [{"type": "stringOptions", "column": "environment", "operator": "none of", "value": ["penpal-eval"]},
               {"type": "string", "column": "type", "operator": "=", "value": "GENERATION"}]
    rows = get(server, "/api/public/v2/observations", filter=json.dumps(none_of), fields="core,basic").json()["data"]
    assert sorted(row["environment"] for row in rows) == ["production", "staging"]
    # the filter wins: the environment parameter is ignored when a filter is given
    rows = get(server, "/api/public/v2/observations", filter=json.dumps(none_of), environment="penpal-eval",
               fields="core,basic").json()["data"]
    assert sorted(row["environment"] for row in rows) == ["production", "staging"]
    unknown = get(server, "/api/public/v2/observations",
                  filter=json.dumps([{"type": "number", "column": "latency", "operator": ">", "value": 1}]))
    assert unknown.status_code == 400
