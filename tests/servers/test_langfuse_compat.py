"""The local Langfuse stand-in, driven only through the real `langfuse` SDK, the real OTLP
exporter and real HTTP: what arrives must be what Langfuse would store, and the answers must be
what the SDK can parse. Integration tests rely on this server, so it has to be right first."""

from __future__ import annotations

import gzip
import json
import socket
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from langfuse import Langfuse, propagate_attributes
from langfuse.api.commons.errors.not_found_error import NotFoundError
from langfuse.api.core.api_error import ApiError
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from tests.servers.langfuse_compat import (
    DROP,
    OK,
    SERVER_VERSION,
    LangfuseCompatServer,
    RecordedRequest,
    hang,
    rate_limited,
    server_error,
)

SCORES = "/api/public/scores"
OTLP = "/api/public/otel/v1/traces"


class _Capture(SpanExporter):
    """Keeps the finished spans, so a test can send the very same spans again."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


@pytest.fixture
def client(langfuse_server) -> Iterator[Callable[..., tuple[Langfuse, LangfuseCompatServer]]]:
    """client(server=None, **langfuse_options) -> (a Langfuse client on its own TracerProvider, the
    server). Clients are shut down before their servers stop. Afterwards, whatever the SDK sent
    must fit Langfuse's OpenAPI spec, and so must every answer of the server."""
    made: list[tuple[Langfuse, LangfuseCompatServer]] = []

    def make(server: LangfuseCompatServer | None = None, **options) -> tuple[Langfuse, LangfuseCompatServer]:
        server = server or langfuse_server()
        options.setdefault("tracer_provider", TracerProvider(shutdown_on_exit=False))
        langfuse = Langfuse(**server.sdk_kwargs(), **options)
        made.append((langfuse, server))
        return langfuse, server

    yield make
    for langfuse, server in made:
        if server.running:
            langfuse.shutdown()
        assert server.schema_errors == [], "the SDK sent a body Langfuse's spec refuses"
        assert server.response_schema_errors == [], "the stand-in answered outside Langfuse's spec"


def _get(server: LangfuseCompatServer, path: str, **params) -> httpx.Response:
    return httpx.get(server.base_url + path, params=params, headers=server.auth_header(), timeout=5)


def _post(server: LangfuseCompatServer, path: str, body: object) -> httpx.Response:
    return httpx.post(server.base_url + path, json=body, headers=server.auth_header(), timeout=5)


# --- traces and observations over OTLP ------------------------------------------------------------
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
    assert {s.name for s in server.spans} == {"case basic-hello", "reply"}
    span = next(s for s in server.spans if s.name == "reply")
    assert (span.trace_id, span.span_id, span.parent_span_id) == (trace_id, generation_id, root_id)
    assert len(span.trace_id) == 32 and len(span.span_id) == 16
    assert span.attributes["langfuse.observation.type"] == "generation"
    assert span.attributes["langfuse.observation.prompt.version"] == 1  # an OTLP int, not a string
    assert span.attributes["langfuse.trace.tags"] == ["penpal", "v2"]  # an OTLP array
    assert span.attributes["langfuse.trace.metadata.digits"] == '"123"'  # v5 JSON-encodes metadata values
    assert span.scope_name == "langfuse-sdk" and span.scope_attributes["public_key"] == server.public_key
    assert span.end_time_ns >= span.start_time_ns > 0

    observation = server.observations[generation_id]
    assert observation["type"] == "GENERATION" and observation["traceId"] == trace_id
    assert observation["parentObservationId"] == root_id
    assert observation["model"] == "smollm2"
    assert observation["modelParameters"] == {"temperature": 0.0, "max_tokens": 64}
    assert observation["usageDetails"] == {"input": 12, "output": 7, "total": 19}
    assert observation["costDetails"] == {"input": 0.001, "output": 0.002, "total": pytest.approx(0.003)}
    assert (observation["promptName"], observation["promptVersion"]) == ("companion/system", 1)
    assert observation["input"] == [{"role": "user", "content": "Hi"}] and observation["output"] == "Hello there!"
    assert observation["metadata"]["turn"] == 1 and observation["metadata"]["family"] == "basic"
    assert observation["environment"] == "ci"
    assert server.observations[root_id]["type"] == "SPAN"

    trace = server.traces[trace_id]
    assert trace["name"] == "case basic-hello"  # the root span's name
    assert (trace["userId"], trace["sessionId"], trace["tags"]) == ("user-1", "run-42", ["penpal", "v2"])
    assert trace["metadata"]["run_id"] == "run-42" and trace["metadata"]["turns"] == 3
    assert trace["metadata"]["digits"] == "123"  # still a string: decoded once, like Langfuse
    assert trace["input"] == {"scenario": "basic-hello"} and trace["output"] == {"verdict": "deploy"}
    assert (trace["environment"], trace["release"]) == ("ci", "r-7")
    assert set(trace["observations"]) == {root_id, generation_id}
    assert trace["timestamp"] == server.observations[root_id]["startTime"]


def test_trace_name_from_propagated_attributes_and_observations_v2_read_back(client):
    langfuse, server = client()
    with langfuse.start_as_current_observation(name="outer") as root:
        with propagate_attributes(trace_name="penpal-eval case"):
            with langfuse.start_as_current_observation(name="judge", as_type="evaluator"):
                pass
    langfuse.flush()

    assert server.traces[root.trace_id]["name"] == "penpal-eval case"
    page = langfuse.api.observations.get_many(trace_id=root.trace_id, fields="core,basic,io,metadata")
    assert {o.name for o in page.data} == {"outer", "judge"}
    assert {o.type for o in page.data} == {"SPAN", "EVALUATOR"}


def test_resending_the_same_span_ids_upserts(client):
    capture = _Capture()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(capture))
    langfuse, server = client(tracer_provider=provider)
    with langfuse.start_as_current_observation(name="case", input="first") as root:
        root.update(output="v1")
    langfuse.flush()
    assert len(server.spans) == 1

    # The real OTLP exporter sends the same span again, then a later version of it.
    exporter = OTLPSpanExporter(endpoint=server.base_url + OTLP, headers=server.auth_header())
    assert exporter.export(capture.spans) == SpanExportResult.SUCCESS
    span = capture.spans[0]
    later = ReadableSpan(name=span.name, context=span.context, parent=span.parent, resource=span.resource,
                         attributes={**span.attributes, "langfuse.observation.output": "v2"},
                         start_time=span.start_time, end_time=span.end_time,
                         instrumentation_scope=span.instrumentation_scope)
    assert exporter.export([later]) == SpanExportResult.SUCCESS

    assert len(server.spans) == 3  # every arrival is kept
    assert list(server.observations) == [root.id] and list(server.traces) == [root.trace_id]
    assert server.observations[root.id]["output"] == "v2"  # the later value wins
    assert server.observations[root.id]["input"] == "first"
    assert server.traces[root.trace_id]["observations"] == [root.id]


# --- scores ---------------------------------------------------------------------------------------
def test_scores_arrive_as_an_array_with_their_types_and_ids(client):
    langfuse, server = client()
    trace_id = langfuse.create_trace_id()
    langfuse.create_score(name="overall_quality", value=0.82, trace_id=trace_id, score_id="s-num",
                          data_type="NUMERIC", comment="good", metadata={"run": "r1"})
    langfuse.create_score(name="verdict", value="deploy", trace_id=trace_id, score_id="s-cat",
                          data_type="CATEGORICAL")
    langfuse.create_score(name="passed", value=True, trace_id=trace_id, score_id="s-bool", data_type="BOOLEAN")
    langfuse.create_score(name="verdict", value="revise", session_id="run-42", score_id="s-session",
                          data_type="CATEGORICAL")
    langfuse.flush()

    posts = server.requests_to(SCORES, "POST")
    assert posts and all(r.status == 202 and isinstance(r.body, list) for r in posts)
    assert sorted(s["id"] for r in posts for s in r.body) == ["s-bool", "s-cat", "s-num", "s-session"]
    assert server.schema_errors == []
    scores = server.scores
    assert scores["s-num"]["value"] == 0.82 and scores["s-num"]["dataType"] == "NUMERIC"
    assert scores["s-num"]["comment"] == "good" and scores["s-num"]["metadata"] == {"run": "r1"}
    assert scores["s-cat"]["stringValue"] == "deploy" and scores["s-cat"]["dataType"] == "CATEGORICAL"
    assert (scores["s-bool"]["value"], scores["s-bool"]["stringValue"]) == (1.0, "True")
    assert scores["s-session"]["sessionId"] == "run-42" and scores["s-session"]["traceId"] is None
    assert all(s["environment"] == "default" and s["source"] == "API" for s in scores.values())

    # Sending a score id again updates it in place, and the server counts both deliveries.
    langfuse.create_score(name="overall_quality", value=0.9, trace_id=trace_id, score_id="s-num")
    langfuse.flush()
    assert server.scores["s-num"]["value"] == 0.9
    assert server.score_deliveries == {"s-num": 2, "s-cat": 1, "s-bool": 1, "s-session": 1}

    read = langfuse.api.scores.get_many(trace_id=trace_id, fields="details,subject")
    assert {(s.id, type(s.value).__name__) for s in read.data} == {
        ("s-num", "float"), ("s-cat", "str"), ("s-bool", "bool")}
    listed = _get(server, "/api/public/v2/scores", traceId=trace_id, dataType="CATEGORICAL").json()
    assert [s["id"] for s in listed["data"]] == ["s-cat"] and listed["meta"]["totalItems"] == 1


def test_scores_that_break_their_config_or_type_are_accepted_then_dropped(client):
    """The API answers 202; the ingestion worker then drops what breaks its config or type
    (validateAndInflateScore.ts), without a word to the client."""
    langfuse, server = client()
    quality = langfuse.api.score_configs.create(name="overall_quality", data_type="NUMERIC", min_value=0, max_value=1)
    verdict = langfuse.api.score_configs.create(
        name="verdict", data_type="CATEGORICAL",
        categories=[{"label": "deploy", "value": 2}, {"label": "ab_test", "value": 1}, {"label": "revise", "value": 0}])
    trace_id = langfuse.create_trace_id()
    langfuse.create_score(name="overall_quality", value=0.5, trace_id=trace_id, config_id=quality.id, score_id="ok-1")
    langfuse.create_score(name="overall_quality", value=1.5, trace_id=trace_id, config_id=quality.id,
                          score_id="bad-range")
    langfuse.create_score(name="verdict", value="ab_test", trace_id=trace_id, config_id=verdict.id, score_id="ok-2")
    langfuse.create_score(name="verdict", value="ship it", trace_id=trace_id, config_id=verdict.id, score_id="bad-cat")
    langfuse.create_score(name="other_name", value=0.5, trace_id=trace_id, config_id=quality.id, score_id="bad-name")
    langfuse.create_score(name="passed", value=2, trace_id=trace_id, data_type="BOOLEAN", score_id="bad-bool")
    langfuse.create_score(name="verdict", value=3, trace_id=trace_id, data_type="CATEGORICAL", score_id="bad-type")
    langfuse.flush()

    assert set(server.scores) == {"ok-1", "ok-2"}
    assert server.scores["ok-2"]["value"] == 1.0 and server.scores["ok-2"]["configId"] == verdict.id
    [batch] = server.requests_to(SCORES, "POST")
    assert batch.status == 202
    errors = dict(server.dropped_scores)
    assert set(errors) == {"bad-range", "bad-cat", "bad-name", "bad-bool", "bad-type"}
    assert "range" in errors["bad-range"] and "categories" in errors["bad-cat"]
    assert "Name mismatch" in errors["bad-name"] and "0 or 1" in errors["bad-bool"]
    assert set(server.score_deliveries) == {"ok-1", "ok-2"}  # the dropped ones never count as delivered


def test_single_score_object_is_answered_like_the_spec(langfuse_server):
    server = langfuse_server()
    accepted = _post(server, SCORES, {"name": "overall_quality", "value": 0.7, "traceId": "trace-1"})
    assert accepted.status_code == 200 and server.scores[accepted.json()["id"]]["value"] == 0.7
    dropped = _post(server, SCORES, {"name": "passed", "value": 0.5, "traceId": "trace-1", "dataType": "BOOLEAN"})
    assert dropped.status_code == 200  # accepted; the worker drops it
    assert len(server.scores) == 1 and "0 or 1" in server.dropped_scores[0][1]
    refused = _post(server, SCORES, {"name": "passed", "traceId": "trace-1"})
    assert refused.status_code == 400


# --- score configs, datasets, prompts -------------------------------------------------------------
def test_score_configs_are_created_listed_and_updated(client):
    langfuse, server = client()
    numeric = langfuse.api.score_configs.create(name="emotional_intelligence", data_type="NUMERIC",
                                                min_value=0, max_value=1, description="0-1 from the rubric")
    boolean = langfuse.api.score_configs.create(name="hard_criteria_passed", data_type="BOOLEAN")
    again = langfuse.api.score_configs.create(name="emotional_intelligence", data_type="NUMERIC")

    assert again.id != numeric.id  # Langfuse allows one name twice: clients must look first
    assert [c.label for c in boolean.categories] == ["True", "False"]
    listed = langfuse.api.score_configs.get(page=1, limit=2)
    assert listed.meta.total_items == 3 and listed.meta.total_pages == 2 and len(listed.data) == 2
    stored = server.score_configs[numeric.id]
    assert (stored["minValue"], stored["maxValue"], stored["isArchived"]) == (0, 1, False)
    assert stored["description"] == "0-1 from the rubric"

    archived = langfuse.api.score_configs.update(numeric.id, is_archived=True)
    assert archived.is_archived and server.score_configs[numeric.id]["isArchived"] is True
    assert langfuse.api.score_configs.get_by_id(numeric.id).is_archived
    with pytest.raises(ApiError) as refused:  # categories for a numeric config
        langfuse.api.score_configs.create(name="x", data_type="NUMERIC", categories=[{"label": "a", "value": 1}])
    assert refused.value.status_code == 400


def test_datasets_and_items_upsert(client):
    langfuse, server = client()
    first = langfuse.create_dataset(name="penpal/scenarios", description="v1")
    second = langfuse.create_dataset(name="penpal/scenarios", description="v2", metadata={"families": 3})
    assert first.id == second.id and second.description == "v2"

    langfuse.create_dataset_item(dataset_name="penpal/scenarios", id="basic-hello", input={"turns": ["Hi"]},
                                 expected_output={"max_words": 40}, metadata={"family": "basic"})
    langfuse.create_dataset_item(dataset_name="penpal/scenarios", id="basic-joke", input={"turns": ["Joke?"]})
    langfuse.create_dataset_item(dataset_name="penpal/scenarios", id="basic-hello", input={"turns": ["Hello!"]})

    assert list(server.datasets) == ["penpal/scenarios"]
    assert server.datasets["penpal/scenarios"]["metadata"] == {"families": 3}
    items = server.dataset_items
    assert set(items) == {"basic-hello", "basic-joke"}
    assert items["basic-hello"]["input"] == {"turns": ["Hello!"]}  # the later value wins ...
    assert items["basic-hello"]["expectedOutput"] == {"max_words": 40}  # ... and unsent fields stay
    assert items["basic-hello"]["status"] == "ACTIVE" and items["basic-hello"]["datasetId"] == first.id

    dataset = langfuse.get_dataset("penpal/scenarios", fetch_items_page_size=1)  # pages through items
    assert sorted(item.id for item in dataset.items) == ["basic-hello", "basic-joke"]
    with pytest.raises(NotFoundError):
        langfuse.api.datasets.get("no-such-dataset")
    missing = _post(server, "/api/public/dataset-items", {"datasetName": "no-such-dataset", "input": 1})
    assert missing.status_code == 404 and missing.json()["message"] == "Dataset not found"


def test_prompts_versions_labels_and_chat(client):
    langfuse, server = client()
    langfuse.create_prompt(name="companion", prompt="v1 {{name}}", labels=["production"], config={"model": "a"})
    v2 = langfuse.create_prompt(name="companion", prompt="v2 {{name}}", labels=["staging"], config={"model": "b"})
    assert v2.version == 2 and set(v2.labels) == {"staging", "latest"}

    production = langfuse.get_prompt("companion")
    assert (production.version, production.config) == (1, {"model": "a"})
    assert langfuse.get_prompt("companion", label="staging").version == 2
    assert langfuse.get_prompt("companion", label="latest").compile(name="Ana") == "v2 Ana"
    assert langfuse.get_prompt("companion", version=1).prompt == "v1 {{name}}"

    langfuse.update_prompt(name="companion", version=2, new_labels=["production"])
    versions = server.prompts["companion"]
    assert versions[0]["labels"] == [] and set(versions[1]["labels"]) == {"staging", "latest", "production"}
    assert langfuse.get_prompt("companion", cache_ttl_seconds=0).version == 2

    v3 = langfuse.create_prompt(name="companion", prompt="v3", labels=["staging"], tags=["penpal"])
    labels = [set(v["labels"]) for v in server.prompts["companion"]]
    assert labels == [set(), {"production"}, {"staging", "latest"}]  # a new version takes its labels along
    assert all(v["tags"] == ["penpal"] for v in server.prompts["companion"])  # tags span all versions
    assert langfuse.get_prompt("companion", label="staging", cache_ttl_seconds=0).version == v3.version == 3

    chat = langfuse.create_prompt(name="judge", type="chat", labels=["production"], config={"temperature": 0},
                                  prompt=[{"role": "system", "content": "Judge {{rubric}}"},
                                          {"type": "placeholder", "name": "transcript"}])
    fetched = langfuse.get_prompt("judge", type="chat")
    assert fetched.version == chat.version == 1 and fetched.config == {"temperature": 0}
    assert fetched.compile(rubric="R", transcript=[{"role": "user", "content": "hi"}])[-1]["content"] == "hi"
    with pytest.raises(NotFoundError):
        langfuse.get_prompt("no-such-prompt", max_retries=0)
    listed = _get(server, "/api/public/v2/prompts").json()
    assert {m["name"]: m["versions"] for m in listed["data"]} == {"companion": [1, 2, 3], "judge": [1]}


# --- traces, annotation queues ---------------------------------------------------------------------
def test_traces_list_with_seeded_traces_time_filter_and_pagination(client):
    langfuse, server = client()
    start = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    for hour in range(5):
        server.add_trace(id=f"prod-{hour}", name="companion-chat", timestamp=start + timedelta(hours=hour),
                         user_id=f"u{hour}", session_id="s-1", tags=["prod"], input={"turn": hour},
                         scores=[{"name": "user_feedback", "value": 1, "dataType": "BOOLEAN"}])
    with langfuse.start_as_current_observation(name="from-sdk"):
        pass
    langfuse.flush()

    window = {"fromTimestamp": (start + timedelta(hours=1)).isoformat(),
              "toTimestamp": (start + timedelta(hours=4)).isoformat(), "limit": 2}
    first = _get(server, "/api/public/traces", **window, page=1).json()
    second = _get(server, "/api/public/traces", **window, page=2).json()
    assert [t["id"] for t in first["data"]] == ["prod-3", "prod-2"]  # newest first, end exclusive
    assert [t["id"] for t in second["data"]] == ["prod-1"]
    assert first["meta"] == {"page": 1, "limit": 2, "totalItems": 3, "totalPages": 2}
    assert len(first["data"][0]["scores"]) == 1 and first["data"][0]["input"] == {"turn": 3}

    everything = _get(server, "/api/public/traces", limit=50).json()["data"]
    assert len(everything) == 6 and everything[0]["name"] == "from-sdk"  # SDK traces are listed too
    oldest_first = _get(server, "/api/public/traces", orderBy="timestamp.asc", tags="prod").json()["data"]
    assert [t["id"] for t in oldest_first] == [f"prod-{hour}" for hour in range(5)]

    detail = _get(server, "/api/public/traces/prod-0").json()
    assert detail["scores"][0]["name"] == "user_feedback" and detail["observations"] == []
    assert _get(server, "/api/public/traces/nope").status_code == 404


def test_events_only_mode_hides_the_endpoints_langfuse_v4_removed(langfuse_server):
    server = langfuse_server(events_only=True)
    server.add_trace(id="t-1", name="x")
    gone = _get(server, "/api/public/traces")
    assert gone.status_code == 404 and "events_only" in gone.json()["message"]
    assert _get(server, "/api/public/v2/scores").status_code == 404
    assert _get(server, "/api/public/v3/scores").status_code == 200


def test_annotation_queue_items(client):
    langfuse, server = client()
    config = langfuse.api.score_configs.create(name="empathy", data_type="NUMERIC", min_value=1, max_value=5)
    queue = langfuse.api.annotation_queues.create_queue(name="low-empathy", score_config_ids=[config.id])
    seeded = server.add_annotation_queue("seeded-queue")
    assert set(server.annotation_queues) == {queue.id, seeded}

    langfuse.api.annotation_queues.create_queue_item(queue.id, object_id="trace-1", object_type="TRACE")
    langfuse.api.annotation_queues.create_queue_item(queue.id, object_id="trace-1", object_type="TRACE")
    done = langfuse.api.annotation_queues.create_queue_item(queue.id, object_id="obs-1", object_type="OBSERVATION",
                                                            status="COMPLETED")
    items = server.annotation_queue_items[queue.id]
    assert [(i["objectId"], i["objectType"], i["status"]) for i in items] == [
        ("trace-1", "TRACE", "PENDING"), ("trace-1", "TRACE", "PENDING"), ("obs-1", "OBSERVATION", "COMPLETED")]
    assert done.completed_at is not None
    pending = langfuse.api.annotation_queues.list_queue_items(queue.id, status="PENDING")
    assert pending.meta.total_items == 2
    assert langfuse.api.annotation_queues.get_queue(queue.id).score_config_ids == [config.id]
    with pytest.raises(ApiError) as unknown_config:
        langfuse.api.annotation_queues.create_queue(name="broken", score_config_ids=["no-such-config"])
    assert unknown_config.value.status_code == 400


# --- auth, health, bad bodies ----------------------------------------------------------------------
def test_auth_health_and_projects(client):
    langfuse, server = client()
    assert langfuse.auth_check() is True
    assert langfuse.api.health.health().status == "OK"
    assert langfuse.api.projects.get().data[0].id == server.project_id

    wrong = httpx.get(server.base_url + "/api/public/projects", auth=(server.public_key, "sk-wrong"))
    assert wrong.status_code == 401 and "Invalid credentials" in wrong.json()["message"]
    anonymous = httpx.get(server.base_url + "/api/public/v2/prompts/companion")
    assert anonymous.status_code == 401 and anonymous.json() == {"message": "No authorization header"}
    assert httpx.get(server.base_url + "/api/public/health").status_code == 200
    assert _get(server, "/api/public/no-such-thing").status_code == 404
    assert all("Authorization" not in json.dumps(r.body or {}) for r in server.requests)


def test_malformed_bodies_are_refused_and_recorded(langfuse_server):
    server = langfuse_server()
    if not server.validates_bodies:
        pytest.skip("Langfuse's OpenAPI spec is not available here")
    config = _post(server, "/api/public/score-configs", {"name": "empathy"})
    assert config.status_code == 400 and config.json()["message"] == "Invalid request data"
    scores = _post(server, SCORES, [{"name": "ok", "value": 0.5, "traceId": "t"},
                                    {"name": "broken", "value": True, "traceId": "t"}])
    assert scores.status_code == 207 and scores.json()["accepted"] == 1
    errors = server.schema_errors
    assert len(errors) >= 2
    assert errors[0].startswith("POST /api/public/score-configs:") and "dataType" in errors[0]
    assert any("scores[1]" in error for error in errors)
    assert server.score_configs == {}
    assert [s["name"] for s in server.scores.values()] == ["ok"]


def test_bodies_are_not_validated_without_the_spec(langfuse_server, tmp_path):
    server = langfuse_server(openapi_spec=tmp_path / "missing.yml")
    assert server.validates_bodies is False
    assert _post(server, "/api/public/score-configs", {"name": "empathy", "dataType": "NUMERIC"}).status_code == 200
    assert server.schema_errors == []


def test_uncompressed_and_gzip_otlp_requests_need_auth(langfuse_server):
    server = langfuse_server()
    payload = gzip.compress(b"")  # an empty ExportTraceServiceRequest
    answer = httpx.post(server.base_url + OTLP, content=payload,
                        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert answer.status_code == 401
    answer = httpx.post(server.base_url + OTLP, content=b"", headers={
        "Content-Type": "application/x-protobuf", **server.auth_header()})
    assert answer.status_code == 200 and answer.headers["Content-Type"] == "application/x-protobuf"


# --- faults ---------------------------------------------------------------------------------------
def _only(path: str, fault_for_attempt: Callable[[int], object]) -> Callable[[RecordedRequest], object]:
    return lambda request: fault_for_attempt(request.attempt) if request.path == path else OK


def test_server_errors_leave_state_unchanged_until_the_server_recovers(client, langfuse_server):
    server = langfuse_server(faults=lambda request: server_error() if request.method == "POST" else OK)
    langfuse, _ = client(server, timeout=2)
    trace_id = langfuse.create_trace_id()
    langfuse.create_score(name="overall_quality", value=0.5, trace_id=trace_id, score_id="lost")
    with langfuse.start_as_current_observation(name="lost-span"):
        pass
    langfuse.flush()  # never raises: the SDK retries, then drops the data

    attempts = server.requests_to(SCORES, "POST")
    assert len(attempts) == 3 and {r.status for r in attempts} == {500}  # the SDK tries three times
    assert server.requests_to(OTLP) and {r.status for r in server.requests_to(OTLP)} == {500}
    assert server.scores == {} and server.spans == [] and server.observations == {} and server.traces == {}
    assert not server.score_deliveries

    server.faults = lambda request: OK
    langfuse.create_score(name="overall_quality", value=0.6, trace_id=trace_id, score_id="kept")
    langfuse.flush()
    assert set(server.scores) == {"kept"}


def test_rate_limit_is_retried_and_stored_once(client, langfuse_server):
    server = langfuse_server(faults=_only(OTLP, lambda attempt: rate_limited("0") if attempt == 1 else OK))
    langfuse, _ = client(server, timeout=5)
    with langfuse.start_as_current_observation(name="retried") as span:
        pass
    langfuse.flush()
    assert [r.status for r in server.requests_to(OTLP)] == [429, 200]
    assert [s.name for s in server.spans] == ["retried"] and list(server.observations) == [span.id]


def test_hang_and_drop_are_retried_without_double_counting(client, langfuse_server):
    faults = {SCORES: hang(3), OTLP: DROP}
    server = langfuse_server(faults=lambda r: faults.get(r.path, OK) if r.attempt == 1 else OK)
    langfuse, _ = client(server, timeout=1)
    trace_id = langfuse.create_trace_id()
    langfuse.create_score(name="overall_quality", value=0.5, trace_id=trace_id, score_id="once")
    with langfuse.start_as_current_observation(name="after-drop"):
        pass
    started = time.monotonic()
    langfuse.flush()

    assert time.monotonic() - started < 10
    score_posts = server.requests_to(SCORES, "POST")
    assert [(r.status, r.fault) for r in score_posts] == [(None, "hang"), (202, "ok")]
    assert server.score_deliveries == {"once": 1}
    assert [(r.status, r.fault) for r in server.requests_to(OTLP)] == [(None, "drop"), (200, "ok")]
    assert [s.name for s in server.spans] == ["after-drop"]


def test_a_stopped_server_refuses_connections_and_a_new_one_takes_over(langfuse_server):
    server = langfuse_server()
    assert _get(server, "/api/public/health").status_code == 200
    port = int(server.base_url.rsplit(":", 1)[1])
    server.stop()
    server.stop()  # safe twice
    with pytest.raises(httpx.ConnectError):
        _get(server, "/api/public/health")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    replacement = langfuse_server()
    assert replacement.base_url != server.base_url
    assert _get(replacement, "/api/public/health").json() == {"status": "OK", "version": SERVER_VERSION}


def test_a_restarted_server_comes_back_on_the_same_address_with_its_state(client, langfuse_server):
    server = langfuse_server()
    langfuse, _ = client(server, timeout=1)
    langfuse.create_score(name="before", value=1.0, session_id="s", score_id="before")
    langfuse.flush()
    address = server.base_url
    server.stop()
    with pytest.raises(httpx.ConnectError):
        _get(server, "/api/public/health")

    server.start()
    assert server.base_url == address and set(server.scores) == {"before"}
    langfuse.create_score(name="after", value=1.0, session_id="s", score_id="after")
    langfuse.flush()  # the SDK's pooled connection was closed by stop(); it reconnects
    assert set(server.scores) == {"before", "after"}


# --- the server's own rules (each mirrors a file of langfuse/langfuse) ----------------------------
def test_a_span_sent_again_with_another_start_time_is_a_second_event_row(client):
    """The events table keys rows on span id and start time: the v2 observations API counts a
    resent span twice unless its start time is the same."""
    langfuse, server = client()
    capture = _Capture()
    langfuse._otel_tracer  # noqa: B018 - the client's tracer exists once the client does
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(capture))
    with provider.get_tracer("test").start_as_current_span("turn", start_time=1_700_000_000_000_000_000) as span:
        span.set_attribute("langfuse.observation.type", "span")
    exporter = OTLPSpanExporter(endpoint=server.base_url + OTLP, headers=server.auth_header())
    [original] = capture.spans
    assert exporter.export([original]) == SpanExportResult.SUCCESS
    assert exporter.export([original]) == SpanExportResult.SUCCESS  # same id and start: replaces its row
    moved = ReadableSpan(name=original.name, context=original.context, parent=original.parent,
                         resource=original.resource, attributes=original.attributes,
                         start_time=original.start_time + 5_000_000_000, end_time=original.end_time + 5_000_000_000,
                         instrumentation_scope=original.instrumentation_scope)
    assert exporter.export([moved]) == SpanExportResult.SUCCESS
    span_id = format(original.context.span_id, "016x")
    assert [event["id"] for event in server.observation_events] == [span_id, span_id]
    listed = _get(server, "/api/public/v2/observations", traceId=format(original.context.trace_id, "032x")).json()
    assert [row["id"] for row in listed["data"]] == [span_id, span_id]
    assert list(server.observations) == [span_id]  # the UI's deduplicated view


def test_a_boolean_config_with_null_categories_is_refused(langfuse_server):
    server = langfuse_server()
    refused = _post(server, "/api/public/score-configs", {"name": "passed", "dataType": "BOOLEAN", "categories": None})
    assert refused.status_code == 400 and "categories" in json.dumps(refused.json())
    refused = _post(server, "/api/public/score-configs",
                    {"name": "verdict", "dataType": "CATEGORICAL", "minValue": 0,
                     "categories": [{"label": "good", "value": 1}]})
    assert refused.status_code == 400
    created = _post(server, "/api/public/score-configs", {"name": "passed", "dataType": "BOOLEAN"})
    assert created.status_code == 200 and created.json()["categories"] == [
        {"label": "True", "value": 1}, {"label": "False", "value": 0}]
    numeric = _post(server, "/api/public/score-configs",
                    {"name": "quality", "dataType": "NUMERIC", "minValue": 0, "maxValue": 1, "categories": None})
    assert numeric.status_code == 200  # nullish there
    assert [config["name"] for config in server.score_configs.values()] == ["passed", "quality"]


def test_an_older_server_takes_one_score_per_request_and_ignores_its_timestamp(langfuse_server):
    server = langfuse_server(version="4.16.0")
    assert _get(server, "/api/public/health").json() == {"status": "OK", "version": "4.16.0"}
    batch = _post(server, SCORES, [{"id": "s1", "name": "quality", "value": 0.5, "traceId": "t1"}])
    assert batch.status_code == 400 and server.scores == {}
    single = _post(server, SCORES, {"id": "s1", "name": "quality", "value": 0.5, "traceId": "t1",
                                    "timestamp": "2020-01-01T00:00:00Z"})
    assert single.status_code == 200
    assert not server.scores["s1"]["timestamp"].startswith("2020")  # the receipt time, not the one sent


def test_annotation_queues_need_existing_score_configs(langfuse_server):
    server = langfuse_server()
    empty = _post(server, "/api/public/annotation-queues", {"name": "review", "scoreConfigIds": []})
    assert empty.status_code == 400
    unknown = _post(server, "/api/public/annotation-queues", {"name": "review", "scoreConfigIds": ["nope"]})
    assert unknown.status_code == 400 and server.annotation_queues == {}
    config = server.add_score_config(name="quality", data_type="NUMERIC")
    created = _post(server, "/api/public/annotation-queues", {"name": "review", "scoreConfigIds": [config["id"]]})
    assert created.status_code == 200 and created.json()["scoreConfigIds"] == [config["id"]]


@pytest.mark.parametrize("label", ["Staging", "a" * 37, "with space"])
def test_prompt_labels_follow_the_servers_pattern(langfuse_server, label):
    server = langfuse_server()
    refused = _post(server, "/api/public/v2/prompts", {"name": "companion", "prompt": "hi", "labels": [label]})
    assert refused.status_code == 400 and server.prompts == {}
    accepted = _post(server, "/api/public/v2/prompts", {"name": "companion", "prompt": "hi", "labels": ["a" * 36]})
    assert accepted.status_code == 200
    patched = httpx.patch(server.base_url + "/api/public/v2/prompts/companion/versions/1", json={"newLabels": [label]},
                          headers=server.auth_header(), timeout=5)
    assert patched.status_code == 400


def test_dashboards_and_widgets_follow_the_servers_types(client):
    langfuse, server = client()
    widget = langfuse.api.unstable.dashboard_widgets.create(
        name="Quality per version", view="scores-numeric", dimensions=[{"field": "name"}],
        metrics=[{"measure": "value", "agg": "avg"}],
        filters=[{"column": "name", "operator": "any of", "type": "stringOptions", "value": ["overall_quality"]}],
        chart_type="VERTICAL_BAR")
    assert widget.chart_config.type == "VERTICAL_BAR" and widget.description == ""
    dashboard = langfuse.api.unstable.dashboards.create(name="penpal-eval", description="scores")
    tile = langfuse.api.unstable.dashboards.add_placement(dashboard.id, request={"type": "widget",
                                                                                  "widgetId": widget.id})
    assert tile.widget_id == widget.id and (tile.x, tile.y, tile.width, tile.height) == (0, 0, 6, 6)
    again = langfuse.api.unstable.dashboards.add_placement(dashboard.id, request={"type": "widget",
                                                                                   "widgetId": widget.id})
    assert again.y == tile.y + tile.height  # appended below
    assert [t.id for t in langfuse.api.unstable.dashboards.get(dashboard.id).definition.widgets] == [tile.id, again.id]
    no_metric = _post(server, "/api/public/unstable/dashboard-widgets",
                      {"name": "x", "view": "scores-numeric", "dimensions": [], "metrics": [], "filters": [],
                       "chartType": "PIE"})
    assert no_metric.status_code == 400
    assert len(server.dashboard_widgets) == 1


def test_a_server_without_the_dashboards_api_answers_404(langfuse_server):
    server = langfuse_server(dashboards=False)
    assert _get(server, "/api/public/unstable/dashboards").status_code == 404
