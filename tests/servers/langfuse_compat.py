"""A local Langfuse-compatible HTTP server for tests.

Langfuse itself cannot run here (it needs ClickHouse and Prisma downloads), yet our Langfuse
integration must be tested over the real wire: the real `langfuse` SDK and the real
OpenTelemetry OTLP exporter talk to this server over HTTP on 127.0.0.1. It stands in for the
public API where the suite relies on it:

- OTLP/HTTP span ingestion (protobuf, gzip or not), turned into Langfuse-like observations and
  traces the way Langfuse's OTel ingestion does for SDK v5 spans;
- scores (the SDK's JSON-array batches and the spec's single object), score configs, datasets
  and dataset items, prompts with versions and labels, traces, annotation queues, projects and
  health; reads through both the v3-era endpoints (GET traces, GET v2 scores, deprecated) and
  the ones Langfuse v4 keeps (GET v2 observations, GET v3 scores; `events_only=True` hides the
  deprecated ones, as a v4 deployment does);
- HTTP Basic auth, Langfuse-shaped error bodies, and request bodies checked against Langfuse's
  own OpenAPI spec (when the spec file is there), so a client that sends what the real server
  would refuse fails here too;
- injected failures (5xx, 429 with Retry-After, hangs, dropped connections) that never change
  state, like a request that never reached the database.

    with LangfuseCompatServer(public_key="pk-lf-this-test") as server:  # one key per SDK client
        langfuse = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
        ...
        langfuse.flush()
        assert server.scores[...]

Everything the server received is exposed as thread-safe snapshots (`requests`, `spans`,
`observations`, `traces`, `scores`, ...). Tests may read them but changing a snapshot changes
nothing on the server.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import math
import os
import re
import socket
import threading
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

try:  # the dev extra brings jsonschema; without it the server skips body validation
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover - depends on the environment
    jsonschema = None
    Draft202012Validator = None

try:  # comes with the langfuse SDK (opentelemetry-exporter-otlp-proto-http)
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
except ImportError:  # pragma: no cover - depends on the environment
    trace_service_pb2 = None
    json_format = None

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SPEC_ENV_VAR = "PENPAL_LANGFUSE_OPENAPI"
SERVER_VERSION = "4.59.0"  # the oldest server SDK 5 supports; `version=` plays another one
# Before 4.59, POST /api/public/scores takes one object per request and ignores `timestamp`
# (web/src/pages/api/public/scores/index.ts in 4.16); SDK 5 sends arrays with timestamps.
ARRAY_SCORES_SINCE = (4, 59)


def version_tuple(version: str) -> tuple[int, ...]:
    """"4.16.0" -> (4, 16, 0); what cannot be read counts as 0."""
    return tuple(int(part) if part.isdigit() else 0 for part in re.split(r"[.\-+]", version.lstrip("v"))[:3])


def default_spec_path() -> Path:
    """Langfuse's public OpenAPI spec, kept beside the project (never copied into it)."""
    configured = os.environ.get(SPEC_ENV_VAR)
    return Path(configured) if configured else PROJECT_ROOT.parent / "shared" / "langfuse-openapi.yml"


DEFAULT_SPEC = default_spec_path()


# --- faults ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fault:
    """What the server does with one request: answer normally or fail in a given way.

    Every failing kind answers (or not) before the request is processed, so a faulted request
    never changes server state, like a request that never reached Langfuse's database.
    """

    kind: str = "ok"  # ok | status | hang | drop | delay
    status: int = 200
    retry_after: str | None = None  # Retry-After header value, with a status fault
    hang_s: float = 0.0  # hang: seconds before the connection is closed unanswered; delay: pause


OK = Fault()
# Close the connection without an answer, as a crashing proxy or server would.
DROP = Fault("drop")


def server_error(status: int = 500) -> Fault:
    return Fault("status", status)


def rate_limited(retry_after: str = "1") -> Fault:
    return Fault("status", 429, retry_after=retry_after)


def hang(seconds: float) -> Fault:
    """Hold the request `seconds` (past the client's timeout), then close it unanswered."""
    return Fault("hang", hang_s=seconds)


def delay(seconds: float) -> Fault:
    """Pause `seconds`, then process and answer normally (a slow but working server)."""
    return Fault("delay", hang_s=seconds)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it. The Authorization header is never kept.

    A fault plan receives it with `status=None`; the copy in `server.requests` gets the status
    that was answered (None while in flight, or when the connection was hung up or dropped).
    """

    method: str
    path: str  # the URL path as sent (percent-encoding kept), without the query string
    query: dict[str, str | list[str]]  # a repeated parameter gives a list
    body: Any  # the parsed JSON body; None for OTLP protobuf, an empty or a non-JSON body
    attempt: int  # 1 for the first request with this (method, path), 2 for the next, ...
    status: int | None = None
    fault: str = "ok"  # the kind of fault applied
    response: Any = None  # the JSON the server answered (None for protobuf, empty or no answer)

    @property
    def json(self) -> Any:
        return self.body


# A fault plan decides per request; it sees the request (method, path, query, body, attempt).
FaultPlan = Callable[[RecordedRequest], Fault]


def no_faults(request: RecordedRequest) -> Fault:
    return OK


@dataclass(frozen=True)
class ReceivedSpan:
    """One OTLP span as it arrived, attribute values decoded from OTLP AnyValue."""

    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str | None
    name: str
    start_time_ns: int
    end_time_ns: int
    attributes: dict[str, Any]
    resource_attributes: dict[str, Any]
    scope_name: str
    scope_attributes: dict[str, Any]
    scope_version: str = ""
    status_code: int = 0  # OTLP status code: 0 unset, 1 ok, 2 error
    status_message: str = ""


# --- small helpers --------------------------------------------------------------------------------
def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime) -> str:
    """UTC with milliseconds and a Z, as Langfuse (JavaScript's toISOString) writes times."""
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _iso_from_ns(nanoseconds: int) -> str:
    return _iso(datetime.fromtimestamp(nanoseconds / 1e9, tz=timezone.utc))


def _parse_time(value: Any, *, require_offset: bool = False) -> datetime | None:
    """An ISO 8601 string as an aware datetime; None when it is not one.

    Naive times are UTC, unless `require_offset` (Langfuse refuses score timestamps without one).
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        if require_offset:
            return None
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


def _decode_json_string(value: Any) -> Any:
    """A JSON-encoded string as its value; anything else (and plain text) unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _new_id() -> str:
    return str(uuid.uuid4())


class _HttpError(Exception):
    """Answer the request with this status and a Langfuse-shaped JSON error body."""

    def __init__(self, status: int, message: str, error: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {"message": message}
        if error is not None:
            self.body["error"] = error


def _not_found(what: str) -> _HttpError:
    return _HttpError(404, f"{what} not found", "LangfuseNotFoundError")


def _bad_request(message: str) -> _HttpError:
    return _HttpError(400, message, "InvalidRequestError")


# --- the OpenAPI spec: request (and response) validation ------------------------------------------
_OPENAPI_ONLY_KEYS = frozenset({"discriminator", "example", "examples", "xml", "externalDocs"})

# Where the spec and the real server disagree, the server wins (the SDK is written against it):
# score metadata may be any JSON value ("Unlike the generated request model, the API accepts any
# JSON value as score metadata", langfuse/_task_manager/score_consumer.py).
_SPEC_OVERRIDES: dict[tuple[str, ...], Any] = {
    ("CreateScoreRequest", "properties", "metadata"): {"description": "any JSON value"},
}


def _to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema → JSON Schema 2020-12: `nullable` becomes a null alternative, component
    `$ref`s point into `$defs`, and OpenAPI-only keywords go."""
    if isinstance(node, list):
        return [_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _to_json_schema(value) for key, value in node.items() if key not in _OPENAPI_ONLY_KEYS}
    nullable = out.pop("nullable", False)
    if "$ref" in out:
        out["$ref"] = out["$ref"].replace("#/components/schemas/", "#/$defs/")
    if not nullable:
        return out
    if any(key in out for key in ("$ref", "allOf", "oneOf", "anyOf")):
        return {"anyOf": [out, {"type": "null"}]}
    if isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


class OpenAPISpec:
    """Langfuse's public API spec, loaded once, answering "is this body what the server takes?"."""

    def __init__(self, path: Path) -> None:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is ~10x faster on 17k lines
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - a safe loader
        schemas = copy.deepcopy(document.get("components", {}).get("schemas", {}))
        for keys, replacement in _SPEC_OVERRIDES.items():
            target = schemas
            for key in keys[:-1]:
                target = target.get(key, {})
            if keys[-1] in target:
                target[keys[-1]] = replacement
        self.defs = {name: _to_json_schema(schema) for name, schema in schemas.items()}
        self.paths: dict[str, dict] = document.get("paths", {})
        self._validators: dict[int, tuple[Any, dict]] = {}
        self._lock = threading.Lock()

    def _operation(self, method: str, template: str) -> dict:
        return (self.paths.get(template) or {}).get(method.lower()) or {}

    def request_schema(self, method: str, template: str) -> dict | None:
        content = ((self._operation(method, template).get("requestBody") or {}).get("content") or {})
        schema = (content.get("application/json") or {}).get("schema")
        return _to_json_schema(schema) if schema else None

    def response_schema(self, method: str, template: str, status: int) -> dict | None:
        response = (self._operation(method, template).get("responses") or {}).get(str(status)) or {}
        schema = ((response.get("content") or {}).get("application/json") or {}).get("schema")
        return _to_json_schema(schema) if schema else None

    def component(self, name: str) -> dict:
        return {"$ref": f"#/$defs/{name}"}

    def errors(self, schema: dict, instance: Any) -> list[str]:
        """Why `instance` does not fit `schema` (empty when it fits); at most three reasons."""
        with self._lock:
            cached = self._validators.get(id(schema))
            if cached is None:
                # The schema is kept beside its validator so that its id() is never reused.
                cached = (Draft202012Validator({"$defs": self.defs, "allOf": [schema]}), schema)
                self._validators[id(schema)] = cached
        validator = cached[0]
        found = sorted(validator.iter_errors(instance), key=lambda e: (len(e.absolute_path), e.message))
        reasons = []
        for error in found[:3]:
            where = "/".join(str(part) for part in error.absolute_path) or "$"
            best = jsonschema.exceptions.best_match([error])
            reasons.append(f"{best.message} (at {where})")
        return reasons


_SPECS: dict[tuple[str, float], _SchemaCache] = {}
_SPECS_LOCK = threading.Lock()


def _load_spec(path: Path) -> _SchemaCache:
    """The spec at `path`, parsed once per process (and again only when the file changes)."""
    key = (str(path.resolve()), path.stat().st_mtime)
    with _SPECS_LOCK:
        if key not in _SPECS:
            _SPECS[key] = _SchemaCache(OpenAPISpec(path))
        return _SPECS[key]


class _SchemaCache:
    """Request/response schemas per route, translated once."""

    def __init__(self, spec: OpenAPISpec) -> None:
        self.spec = spec
        self._cache: dict[tuple, dict | None] = {}
        self._lock = threading.Lock()

    def _cached(self, key: tuple, make: Callable[[], dict | None]) -> dict | None:
        with self._lock:
            if key not in self._cache:
                self._cache[key] = make()
            return self._cache[key]

    def request(self, method: str, template: str) -> dict | None:
        return self._cached(("request", method, template), lambda: self.spec.request_schema(method, template))

    def response(self, method: str, template: str, status: int) -> dict | None:
        return self._cached(("response", method, template, status),
                            lambda: self.spec.response_schema(method, template, status))

    def component(self, name: str) -> dict:
        return self._cached(("component", name), lambda: self.spec.component(name))  # type: ignore[return-value]


# --- OTLP decoding --------------------------------------------------------------------------------
def _any_value(value: Any) -> Any:
    """An OTLP AnyValue as a plain Python value."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _any_value(item.value) for item in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, kind)


def _key_values(items: Iterable[Any]) -> dict[str, Any]:
    return {item.key: _any_value(item.value) for item in items}


def decode_otlp_spans(payload: bytes, content_type: str = "application/x-protobuf") -> list[ReceivedSpan]:
    """Every span of an ExportTraceServiceRequest (protobuf, or OTLP JSON), in order."""
    if trace_service_pb2 is None:  # pragma: no cover - the SDK brings opentelemetry-proto
        raise _HttpError(500, "opentelemetry-proto is not installed")
    request = trace_service_pb2.ExportTraceServiceRequest()
    try:
        if "json" in content_type:
            json_format.Parse(payload.decode("utf-8"), request)
        else:
            request.ParseFromString(payload)
    except Exception as error:  # noqa: BLE001 - any decode failure is the client's fault
        raise _bad_request(f"Failed to parse OTLP request: {error}") from error
    spans = []
    for resource_spans in request.resource_spans:
        resource = _key_values(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            scope_attributes = _key_values(scope.attributes)
            for span in scope_spans.spans:
                spans.append(ReceivedSpan(
                    trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex() or None, name=span.name,
                    start_time_ns=span.start_time_unix_nano, end_time_ns=span.end_time_unix_nano,
                    attributes=_key_values(span.attributes), resource_attributes=resource,
                    scope_name=scope.name, scope_attributes=scope_attributes, scope_version=scope.version,
                    status_code=span.status.code, status_message=span.status.message))
    return spans


# --- Langfuse's OTel ingestion, the parts SDK v5 spans use ----------------------------------------
class A:
    """Span attribute names the Langfuse SDK sets (langfuse/_client/attributes.py)."""

    TRACE_NAME = "langfuse.trace.name"
    TRACE_USER_ID = "user.id"
    TRACE_SESSION_ID = "session.id"
    TRACE_TAGS = "langfuse.trace.tags"
    TRACE_PUBLIC = "langfuse.trace.public"
    TRACE_METADATA = "langfuse.trace.metadata"
    TRACE_INPUT = "langfuse.trace.input"
    TRACE_OUTPUT = "langfuse.trace.output"
    OBSERVATION_TYPE = "langfuse.observation.type"
    OBSERVATION_METADATA = "langfuse.observation.metadata"
    OBSERVATION_LEVEL = "langfuse.observation.level"
    OBSERVATION_STATUS_MESSAGE = "langfuse.observation.status_message"
    OBSERVATION_INPUT = "langfuse.observation.input"
    OBSERVATION_OUTPUT = "langfuse.observation.output"
    OBSERVATION_COMPLETION_START_TIME = "langfuse.observation.completion_start_time"
    OBSERVATION_MODEL = "langfuse.observation.model.name"
    OBSERVATION_MODEL_PARAMETERS = "langfuse.observation.model.parameters"
    OBSERVATION_USAGE_DETAILS = "langfuse.observation.usage_details"
    OBSERVATION_COST_DETAILS = "langfuse.observation.cost_details"
    OBSERVATION_PROMPT_NAME = "langfuse.observation.prompt.name"
    OBSERVATION_PROMPT_VERSION = "langfuse.observation.prompt.version"
    ENVIRONMENT = "langfuse.environment"
    RELEASE = "langfuse.release"
    VERSION = "langfuse.version"
    AS_ROOT = "langfuse.internal.as_root"
    EXPERIMENT_PREFIX = "langfuse.experiment."


# langfuse.experiment.<suffix> → key in the observation's `experiment` dict (JSON-decoded where
# the SDK JSON-encodes the value).
_EXPERIMENT_KEYS = {
    "id": ("id", False), "name": ("name", False), "description": ("description", False),
    "metadata": ("metadata", True), "dataset.id": ("datasetId", False), "item.id": ("itemId", False),
    "item.version": ("itemVersion", False), "item.expected_output": ("itemExpectedOutput", True),
    "item.metadata": ("itemMetadata", True), "item.root_observation_id": ("itemRootObservationId", False),
}

_TRACE_UPDATE_KEYS = (A.TRACE_NAME, A.TRACE_INPUT, A.TRACE_OUTPUT, A.TRACE_METADATA, A.TRACE_USER_ID,
                      A.TRACE_SESSION_ID, A.TRACE_PUBLIC, A.TRACE_TAGS)


def _sdk_major_version(span: ReceivedSpan) -> int:
    match = re.match(r"(\d+)", span.scope_version or "")
    return int(match.group(1)) if match and span.scope_name.startswith("langfuse-sdk") else 0


def _extract_metadata(attributes: dict[str, Any], prefix: str, *, decode_values: bool) -> dict[str, Any]:
    """`<prefix>` (a JSON object) and `<prefix>.<key>` attributes as one dict.

    SDK v5 JSON-encodes every metadata value, strings included, and Langfuse decodes them for
    v5 spans, so "123" and 123 stay distinct. Older SDKs' values are kept as sent.
    """
    metadata: dict[str, Any] = {}
    top_level = attributes.get(prefix)
    if top_level is not None:
        decoded = _decode_json_string(top_level)
        if isinstance(decoded, dict):
            metadata.update(decoded)
        else:  # v5 sends non-dict metadata JSON-encoded under the bare prefix
            metadata["metadata"] = decoded
    for key, value in attributes.items():
        if key.startswith(prefix + "."):
            metadata[key[len(prefix) + 1:]] = _decode_json_string(value) if decode_values else value
    return metadata


def _extract_tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(tag) for tag in value]
    if isinstance(value, str):
        if value.strip().startswith("["):
            parsed = _decode_json_string(value)
            if isinstance(parsed, list):
                return [str(tag) for tag in parsed]
        if "," in value:
            return [tag.strip() for tag in value.split(",")]
        return [value]
    return []


def _extract_environment(attributes: dict[str, Any], resource: dict[str, Any]) -> str:
    for key in (A.ENVIRONMENT, "deployment.environment.name", "deployment.environment"):
        if attributes.get(key):
            return str(attributes[key])
        if resource.get(key):
            return str(resource[key])
    return "default"


def _with_total(details: Any) -> dict[str, Any]:
    """Usage or cost details; `total` is the sum of the other keys unless it was sent."""
    if not isinstance(details, dict):
        return {}
    details = {key: value for key, value in details.items() if isinstance(value, (int, float))}
    if details and "total" not in details:
        details["total"] = sum(details.values())
    return details


def _public(attributes: dict[str, Any]) -> bool | None:
    value = attributes.get(A.TRACE_PUBLIC)
    if value is None:
        return None
    return value is True or value == "true"


def observation_from_span(span: ReceivedSpan, project_id: str) -> tuple[dict, dict[str, str | None]]:
    """The Langfuse observation a span becomes, and its raw input/output strings."""
    attributes, resource = span.attributes, span.resource_attributes
    decode = _sdk_major_version(span) >= 5
    start_iso = _iso_from_ns(span.start_time_ns) if span.start_time_ns else None
    end_iso = _iso_from_ns(span.end_time_ns) if span.end_time_ns else None
    start_iso = start_iso or end_iso or _iso(_now())
    end_iso = end_iso or start_iso

    completion_start = attributes.get(A.OBSERVATION_COMPLETION_START_TIME)
    completion_start_time = None
    for candidate in (completion_start, _decode_json_string(completion_start)):
        moment = _parse_time(candidate)
        if moment is not None:
            completion_start_time = _iso(moment)
            break

    prompt_version = attributes.get(A.OBSERVATION_PROMPT_VERSION, attributes.get("langfuse.prompt.version"))
    if isinstance(prompt_version, str) and prompt_version.isdigit():
        prompt_version = int(prompt_version)

    usage_details = _with_total(_decode_json_string(attributes.get(A.OBSERVATION_USAGE_DETAILS)))
    cost_details = _with_total(_decode_json_string(attributes.get(A.OBSERVATION_COST_DETAILS)))
    model_parameters = _decode_json_string(attributes.get(A.OBSERVATION_MODEL_PARAMETERS))
    if isinstance(model_parameters, dict):  # Langfuse keeps numbers and strings, stringifies the rest
        model_parameters = {key: value if isinstance(value, (str, int, float)) and not isinstance(value, bool)
                            else json.dumps(value) for key, value in model_parameters.items()}
    elif model_parameters is None:
        model_parameters = {}

    level = attributes.get(A.OBSERVATION_LEVEL) or ("ERROR" if span.status_code == 2 else "DEFAULT")
    raw_input = attributes.get(A.OBSERVATION_INPUT)
    raw_output = attributes.get(A.OBSERVATION_OUTPUT)

    experiment: dict[str, Any] = {}
    for suffix, (key, encoded) in _EXPERIMENT_KEYS.items():
        value = attributes.get(A.EXPERIMENT_PREFIX + suffix)
        if value is not None:
            experiment[key] = _decode_json_string(value) if encoded else value

    latency = (span.end_time_ns - span.start_time_ns) / 1e9 if span.end_time_ns and span.start_time_ns else None
    time_to_first_token = None
    if completion_start_time is not None:
        time_to_first_token = (_parse_time(completion_start_time) - _parse_time(start_iso)).total_seconds()

    observation = {
        "id": span.span_id,
        "traceId": span.trace_id,
        "parentObservationId": span.parent_span_id,
        "type": str(attributes.get(A.OBSERVATION_TYPE) or "span").upper(),
        "name": span.name,
        "startTime": start_iso,
        "endTime": end_iso,
        "completionStartTime": completion_start_time,
        "model": attributes.get(A.OBSERVATION_MODEL),
        "modelParameters": model_parameters,
        "input": _decode_json_string(raw_input),
        "output": _decode_json_string(raw_output),
        "metadata": {
            **_extract_metadata(resource, A.TRACE_METADATA, decode_values=decode),
            **_extract_metadata(attributes, A.OBSERVATION_METADATA, decode_values=decode),
            "resourceAttributes": resource,
            "scope": {"name": span.scope_name, "version": span.scope_version, "attributes": span.scope_attributes},
        },
        "level": level,
        "statusMessage": attributes.get(A.OBSERVATION_STATUS_MESSAGE) or span.status_message or None,
        "version": attributes.get(A.VERSION) or resource.get("service.version"),
        "environment": _extract_environment(attributes, resource),
        "usage": {"input": int(usage_details.get("input", 0)), "output": int(usage_details.get("output", 0)),
                  "total": int(usage_details.get("total", 0)), "unit": "TOKENS" if usage_details else None},
        "usageDetails": usage_details,
        "costDetails": cost_details,
        "promptId": None,
        "promptName": attributes.get(A.OBSERVATION_PROMPT_NAME, attributes.get("langfuse.prompt.name")),
        "promptVersion": prompt_version,
        "modelId": None, "inputPrice": None, "outputPrice": None, "totalPrice": None,
        "calculatedInputCost": cost_details.get("input"), "calculatedOutputCost": cost_details.get("output"),
        "calculatedTotalCost": cost_details.get("total"),
        "latency": latency,
        "timeToFirstToken": time_to_first_token,
        "experiment": experiment,
        "projectId": project_id,
    }
    raw = {"input": raw_input if raw_input is None or isinstance(raw_input, str) else json.dumps(raw_input),
           "output": raw_output if raw_output is None or isinstance(raw_output, str) else json.dumps(raw_output)}
    return observation, raw


def trace_update_from_span(span: ReceivedSpan, observation: dict) -> dict[str, Any]:
    """The trace fields one span contributes, like Langfuse's OTel ingestion.

    A root span (no parent, or marked as root) sets the trace's name, input/output, metadata and
    the trace attributes; another span sets the trace attributes it carries (the SDK copies
    `propagate_attributes(...)` onto every span); any span makes the trace exist.
    """
    attributes, resource = span.attributes, span.resource_attributes
    decode = _sdk_major_version(span) >= 5
    is_root = span.parent_span_id is None or str(attributes.get(A.AS_ROOT)).lower() == "true"
    has_updates = (any(attributes.get(key) for key in _TRACE_UPDATE_KEYS)
                   or any(key.startswith(A.TRACE_METADATA) for key in attributes))
    update: dict[str, Any] = {"timestamp": observation["startTime"], "environment": observation["environment"]}
    if not (is_root or has_updates):
        return update
    scope = {"name": span.scope_name, "version": span.scope_version, "attributes": span.scope_attributes}
    metadata = {**_extract_metadata(resource, A.TRACE_METADATA, decode_values=decode),
                **_extract_metadata(attributes, A.TRACE_METADATA, decode_values=decode)}
    if is_root:
        metadata.update(_extract_metadata(attributes, A.OBSERVATION_METADATA, decode_values=decode))
    metadata.update(resourceAttributes=resource, scope=scope)
    update.update(
        name=attributes.get(A.TRACE_NAME) or (span.name if is_root else None),
        metadata=metadata,
        version=attributes.get(A.VERSION) or resource.get("service.version"),
        release=attributes.get(A.RELEASE) or resource.get(A.RELEASE),
        userId=attributes.get(A.TRACE_USER_ID), sessionId=attributes.get(A.TRACE_SESSION_ID),
        public=_public(attributes), tags=_extract_tags(attributes.get(A.TRACE_TAGS)),
    )
    if is_root:
        update["input"] = (_decode_json_string(attributes[A.TRACE_INPUT]) if attributes.get(A.TRACE_INPUT)
                           else observation["input"])
        update["output"] = (_decode_json_string(attributes[A.TRACE_OUTPUT]) if attributes.get(A.TRACE_OUTPUT)
                            else observation["output"])
    else:
        update["input"] = _decode_json_string(attributes.get(A.TRACE_INPUT))
        update["output"] = _decode_json_string(attributes.get(A.TRACE_OUTPUT))
    return update


# --- scores ---------------------------------------------------------------------------------------
_ENVIRONMENT_PATTERN = re.compile(r"^(?!langfuse)[a-z0-9_-]+$")
_SCORE_CONFIG_NAME = re.compile(r"^[A-Za-z0-9_ .()\-]+$")
_SCORE_TYPES = ("NUMERIC", "BOOLEAN", "CATEGORICAL", "TEXT", "CORRECTION")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _ScoreRejected(Exception):
    """One score the server refuses, with Langfuse's reason."""


class _ScoreDropped(_ScoreRejected):
    """A score the API accepts and the ingestion worker then drops without a word.

    Mirrors packages/shared/src/server/ingestion/validateAndInflateScore.ts (config lookup,
    data type, name, range and categories) and worker/src/services/IngestionService/index.ts,
    which catches its errors and "rejects silently": the HTTP answer was already 200/202.
    """


# Prompt labels: packages/shared/src/features/prompts/constants.ts (PROMPT_LABEL_REGEX, _MAX_LENGTH).
PROMPT_LABEL_PATTERN = re.compile(r"^[a-z0-9_\-.]+$")
PROMPT_LABEL_MAX_LENGTH = 36


def _check_prompt_labels(labels: Iterable[Any]) -> None:
    for label in labels:
        if not isinstance(label, str) or not PROMPT_LABEL_PATTERN.match(label) or len(label) > PROMPT_LABEL_MAX_LENGTH:
            raise _HttpError(400, "Invalid request data", [{"path": ["labels"], "message": (
                f"{label!r}: Label must be lowercase alphanumeric with optional underscores, hyphens, or periods, "
                f"at most {PROMPT_LABEL_MAX_LENGTH} characters")}])


# Dashboards and widgets: web/src/features/public-api/types/unstable-dashboards.ts and
# unstable-dashboard-widgets.ts (zod), with the enums of packages/shared (widgets/schema.ts, query types).
WIDGET_VIEWS = ("observations", "scores-numeric", "scores-boolean", "scores-categorical")
WIDGET_CHART_TYPES = ("LINE_TIME_SERIES", "AREA_TIME_SERIES", "BAR_TIME_SERIES", "HORIZONTAL_BAR", "VERTICAL_BAR",
                      "PIE", "NUMBER", "HISTOGRAM", "PIVOT_TABLE")
WIDGET_AGGREGATIONS = ("sum", "avg", "count", "min", "max", "p50", "p75", "p90", "p95", "p99", "histogram", "uniq")
PLACEMENT_DEFAULT_SIZE = (6, 6)  # width, height the UI gives a new tile
# The public API names a tile's size width/height (the spec's unstableWidgetPlacement); the
# stored definition calls them x_size/y_size (DashboardDefinitionWidgetWidgetSchema).


def _invalid(path: str, message: str) -> _HttpError:
    return _HttpError(400, "Invalid request data", [{"path": [path], "message": message}])


def _check_filters(filters: Any, path: str = "filters") -> None:
    """singleFilter: an object with column, operator and type (value and key depend on the type)."""
    if not isinstance(filters, list):
        raise _invalid(path, "Expected array")
    for index, item in enumerate(filters):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("column", "operator", "type")):
            raise _invalid(f"{path}.{index}", "A filter needs column, operator and type")


def _checked_widget(body: Any, *, partial: bool) -> dict:
    """A widget body as PostUnstableDashboardWidgetBody (or its .partial() for PATCH) parses it."""
    if not isinstance(body, dict) or (partial and not body):
        raise _invalid("", "At least one field is required" if partial else "Expected object")
    required = ("name", "view", "dimensions", "metrics", "filters", "chartType")
    for key in required:
        if key not in body and not partial:
            raise _invalid(key, "Required")
    if "name" in body and (not isinstance(body["name"], str) or not body["name"]):
        raise _invalid("name", "Widget name is required")
    if "description" in body and not isinstance(body["description"], str):
        raise _invalid("description", "Expected string")  # z.string(): null is refused
    if "view" in body and body["view"] not in WIDGET_VIEWS:
        raise _invalid("view", f"Invalid enum value {body['view']!r}")
    if "dimensions" in body:
        if not isinstance(body["dimensions"], list) or not all(
                isinstance(d, dict) and isinstance(d.get("field"), str) and d["field"] for d in body["dimensions"]):
            raise _invalid("dimensions", "Each dimension needs a field")
    if "metrics" in body:
        metrics = body["metrics"]
        if not isinstance(metrics, list) or not metrics:
            raise _invalid("metrics", "Array must contain at least 1 element(s)")
        for metric in metrics:
            if not isinstance(metric, dict) or not isinstance(metric.get("measure"), str) or not metric["measure"]:
                raise _invalid("metrics", "Each metric needs a measure")
            if metric.get("agg") not in WIDGET_AGGREGATIONS:
                raise _invalid("metrics", f"Invalid aggregation {metric.get('agg')!r}")
    if "filters" in body:
        _check_filters(body["filters"])
    if "chartType" in body and body["chartType"] not in WIDGET_CHART_TYPES:
        raise _invalid("chartType", f"Invalid enum value {body['chartType']!r}")
    config = body.get("chartConfig")
    if config is not None:
        if not isinstance(config, dict):
            raise _invalid("chartConfig", "Expected object")
        chart_type = body.get("chartType")
        if config.get("type") is not None and chart_type is not None and config["type"] != chart_type:
            raise _invalid("chartConfig.type", "chartConfig.type must match chartType")
    return body


# --- the server -----------------------------------------------------------------------------------
@dataclass
class _Route:
    method: str
    template: str  # the spec's path template, e.g. /api/public/v2/prompts/{promptName}
    handler: Callable[[_Request], _Reply]
    body: str | None = "schema"  # schema | scores | otlp | json (checked in code) | None: how the body is checked
    auth: bool = True
    deprecated: bool = False  # gone in Langfuse v4 events_only mode
    pattern: re.Pattern = field(init=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.template))
        self.pattern = re.compile(f"^{regex}/?$")


@dataclass
class _Request:
    method: str
    path: str
    params: dict[str, str]  # path parameters, URL-decoded
    query: dict[str, list[str]]
    body: Any
    raw: bytes
    content_type: str

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default

    def args(self, name: str) -> list[str]:
        """A repeated or comma-separated parameter as a list."""
        return [part for value in self.query.get(name, []) for part in value.split(",") if part]

    def int_arg(self, name: str, default: int, *, minimum: int = 1, maximum: int | None = None) -> int:
        value = self.arg(name)
        if value is None or value == "":
            return default
        try:
            number = int(value)
        except ValueError:
            raise _HttpError(400, "Invalid request data", [{"path": [name], "message": "Expected number"}]) from None
        if number < minimum or (maximum is not None and number > maximum):
            raise _HttpError(400, "Invalid request data",
                             [{"path": [name], "message": f"Number must be between {minimum} and {maximum}"}])
        return number

    def time_arg(self, name: str) -> datetime | None:
        value = self.arg(name)
        if value is None or value == "":
            return None
        moment = _parse_time(value)
        if moment is None:
            raise _HttpError(400, "Invalid request data", [{"path": [name], "message": "Invalid datetime"}])
        return moment


@dataclass
class _Reply:
    status: int
    body: Any = None  # JSON-serialisable, or bytes sent as they are
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def _page(items: list[dict], request: _Request, *, max_limit: int = 100) -> dict:
    """Page-based pagination as Langfuse's v1/v2 list endpoints answer it."""
    page = request.int_arg("page", 1)
    limit = request.int_arg("limit", 50, maximum=max_limit)
    total = len(items)
    return {"data": items[(page - 1) * limit: page * limit],
            "meta": {"page": page, "limit": limit, "totalItems": total, "totalPages": math.ceil(total / limit)}}


def _cursor_page(items: list[dict], request: _Request, *, max_limit: int) -> tuple[list[dict], dict]:
    """Cursor-based pagination (v3 scores, v2 observations): the cursor encodes an offset."""
    limit = request.int_arg("limit", 50, maximum=max_limit)
    cursor = request.arg("cursor")
    offset = 0
    if cursor:
        try:
            offset = int(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
        except (ValueError, UnicodeDecodeError):
            raise _bad_request("Invalid cursor") from None
    page = items[offset: offset + limit]
    meta: dict[str, Any] = {"limit": limit}
    if offset + limit < len(items):
        meta["cursor"] = base64.urlsafe_b64encode(str(offset + limit).encode()).decode().rstrip("=")
    return page, meta


def _newest_first(records: Iterable[dict], key: str = "createdAt") -> list[dict]:
    """Newest first; among equal times, the later inserted first (stable sort on the reversed list)."""
    return sorted(reversed(list(records)), key=lambda record: record.get(key) or "", reverse=True)


class LangfuseCompatServer:
    """A Langfuse stand-in on 127.0.0.1 for one test (or one module) at a time.

    Start it, point the SDK at `base_url` with `public_key`/`secret_key`, flush, then assert on
    what arrived. `faults` may be swapped at any time. `stop()` makes the port refuse
    connections (the "Langfuse is down" case); `start()` again brings it back on the same
    address with its state; a new server object gets a new port.

    `events_only=True` answers the endpoints Langfuse v4 removed (GET traces, GET v2 scores)
    with the 404 a v4 deployment in events_only mode gives, so a client's fallback to
    `GET /api/public/v2/observations` and `GET /api/public/v3/scores` can be tested.

    `version` is what the health endpoint reports; below 4.59 the scores endpoint behaves as
    that older server's did (one object per request, `timestamp` ignored). `dashboards=False`
    plays a server without the unstable dashboards API (its routes answer 404).

    Observations are kept as the server keeps them: append-only events, one row per span id
    *and start time* (`observation_events`); `observations` is the deduplicated view the UI
    shows, one per id, while the v2 observations API lists every row, duplicates included.
    """

    def __init__(self, *, public_key: str = "pk-lf-test", secret_key: str = "sk-lf-test",
                 project_id: str = "project-test", faults: FaultPlan | None = None,
                 openapi_spec: Path | None = DEFAULT_SPEC, events_only: bool = False,
                 check_responses: bool = True, version: str = SERVER_VERSION, dashboards: bool = True,
                 score_rejections: Callable[[dict], str | None] | None = None) -> None:
        self.public_key = public_key
        self.secret_key = secret_key
        self.project_id = project_id
        self.faults: FaultPlan = faults or no_faults
        self.events_only = events_only
        self.version = version
        self.dashboards_api = dashboards
        # A score in a batch for which this returns a reason is rejected with it (207), as Langfuse
        # rejects scores it cannot ingest; may be swapped at any time.
        self.score_rejections = score_rejections
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self._connections: set[Any] = set()  # open client sockets, closed by stop()

        self._spec: _SchemaCache | None = None
        if openapi_spec is not None and Path(openapi_spec).is_file() and jsonschema is not None:
            self._spec = _load_spec(Path(openapi_spec))
        self.validates_bodies = self._spec is not None
        self.check_responses = check_responses and self._spec is not None

        self._requests: list[RecordedRequest] = []
        self._attempts: Counter[tuple[str, str]] = Counter()
        self._spans: list[ReceivedSpan] = []
        self._observations: dict[str, dict] = {}  # the UI's view: one per span id
        # The events table (packages/shared/clickhouse/migrations/clustered/0039_create_events_full.up.sql):
        # a ReplacingMergeTree ordered by (project, minute of start_time, trace, span_id, start_time),
        # so only a row with the same span id AND start time replaces one; any other start time adds a row.
        self._observation_events: dict[tuple[str, int], dict] = {}
        self._dropped_scores: list[tuple[str, str]] = []  # (score id, reason): accepted, then dropped
        # The scores table (clickhouse migration 0003_scores): a ReplacingMergeTree ordered by
        # (project_id, toDate(timestamp), name, id): the same id on another day is another row.
        self._score_rows: dict[tuple[str, str, str], dict] = {}
        self._dashboards: dict[str, dict] = {}
        self._widgets: dict[str, dict] = {}
        self._raw_io: dict[str, dict[str, str | None]] = {}
        self._traces: dict[str, dict] = {}
        self._scores: dict[str, dict] = {}
        self._score_deliveries: Counter[str] = Counter()
        # Every ingestion request the server took, in order: ("spans", span ids) for an OTLP export,
        # ("scores", score ids accepted) for a score batch; a client's batches can be counted.
        self._batches: list[tuple[str, list[str]]] = []
        self._score_configs: dict[str, dict] = {}
        self._datasets: dict[str, dict] = {}
        self._dataset_items: dict[str, dict] = {}
        self._prompts: dict[str, list[dict]] = {}
        self._annotation_queues: dict[str, dict] = {}
        self._annotation_queue_items: dict[str, list[dict]] = {}
        self._schema_errors: list[str] = []
        self._response_schema_errors: list[str] = []
        self._routes = self._build_routes()

    # --- lifecycle --------------------------------------------------------------------------------
    def start(self) -> LangfuseCompatServer:
        """Serve on a free port; after `stop()`, serve again on the same port ("Langfuse is back"),
        with the same keys and everything received so far."""
        if self._server is not None:
            raise RuntimeError("the server is already running")
        self._stopping.clear()
        try:  # HTTPServer sets SO_REUSEADDR, so the old port is free again at once
            server = ThreadingHTTPServer(("127.0.0.1", self._port or 0), _handler_for(self))
        except OSError as error:
            raise RuntimeError(f"cannot serve again on port {self._port}: {error}") from error
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._port = server.server_address[1]
        # A short poll interval: stop() waits for the serve loop to notice the shutdown.
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"langfuse-compat-{self._port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; the port then refuses connections. Safe to call twice."""
        self._stopping.set()  # releases hanging requests at once
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:  # pooled keep-alive connections must not outlive the server
            connections, self._connections = list(self._connections), set()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LangfuseCompatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("start the server first")
        return f"http://127.0.0.1:{self._port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def sdk_kwargs(self) -> dict[str, str]:
        """Keyword arguments that point a `langfuse.Langfuse(...)` client at this server."""
        return {"public_key": self.public_key, "secret_key": self.secret_key, "base_url": self.base_url}

    def auth_header(self) -> dict[str, str]:
        """The Authorization header for raw HTTP calls (e.g. GET /api/public/traces)."""
        token = base64.b64encode(f"{self.public_key}:{self.secret_key}".encode()).decode("ascii")
        return {"Authorization": f"Basic {token}"}

    # --- what arrived (snapshots) -----------------------------------------------------------------
    def _snapshot(self, value: Any) -> Any:
        with self._lock:
            return copy.deepcopy(value)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    @property
    def observations(self) -> dict[str, dict]:
        """One observation per span id, as Langfuse's UI lists them (it deduplicates)."""
        return self._snapshot(self._observations)

    @property
    def observation_events(self) -> list[dict]:
        """Every stored observation row, as the events table holds it (a resent span with a new
        start time is a second row); each carries `id` and `startTime`."""
        return self._snapshot(list(self._observation_events.values()))

    @property
    def score_rows(self) -> list[dict]:
        """Every stored score row, as the scores table holds them (keyed by day, name and id)."""
        return self._snapshot(list(self._score_rows.values()))

    @property
    def dropped_scores(self) -> list[tuple[str, str]]:
        """Scores the API accepted and the ingestion worker dropped: (score id, reason)."""
        with self._lock:
            return list(self._dropped_scores)

    @property
    def dashboards(self) -> dict[str, dict]:
        return self._snapshot(self._dashboards)

    @property
    def dashboard_widgets(self) -> dict[str, dict]:
        return self._snapshot(self._widgets)

    @property
    def traces(self) -> dict[str, dict]:
        """Traces as `GET /api/public/traces` lists them (observation and score ids included)."""
        with self._lock:
            return {trace_id: self._trace_with_details(trace) for trace_id, trace in self._traces.items()}

    @property
    def scores(self) -> dict[str, dict]:
        return self._snapshot(self._scores)

    @property
    def score_deliveries(self) -> Counter[str]:
        with self._lock:
            return Counter(self._score_deliveries)

    @property
    def received_batches(self) -> list[tuple[str, list[str]]]:
        """Each ingestion request taken, in order: ("spans", span ids) or ("scores", accepted score ids)."""
        with self._lock:
            return [(kind, list(ids)) for kind, ids in self._batches]

    @property
    def score_configs(self) -> dict[str, dict]:
        return self._snapshot(self._score_configs)

    @property
    def datasets(self) -> dict[str, dict]:
        return self._snapshot(self._datasets)

    @property
    def dataset_items(self) -> dict[str, dict]:
        return self._snapshot(self._dataset_items)

    @property
    def prompts(self) -> dict[str, list[dict]]:
        return self._snapshot(self._prompts)

    @property
    def annotation_queues(self) -> dict[str, dict]:
        return self._snapshot(self._annotation_queues)

    @property
    def annotation_queue_items(self) -> dict[str, list[dict]]:
        return self._snapshot(self._annotation_queue_items)

    @property
    def schema_errors(self) -> list[str]:
        """Request bodies that do not fit Langfuse's OpenAPI spec ("METHOD path: reason")."""
        with self._lock:
            return list(self._schema_errors)

    @property
    def response_schema_errors(self) -> list[str]:
        """Answers of this server that do not fit the spec: a bug in the stand-in, not the client."""
        with self._lock:
            return list(self._response_schema_errors)

    def requests_to(self, path: str, method: str | None = None) -> list[RecordedRequest]:
        """Requests whose path is `path` (and method `method`, when given)."""
        return [r for r in self.requests if r.path.rstrip("/") == path.rstrip("/")
                and (method is None or r.method == method.upper())]

    # --- seeding for tests ------------------------------------------------------------------------
    def add_trace(self, *, id: str, name: str | None = None, input: Any = None, output: Any = None,  # noqa: A002
                  timestamp: datetime | None = None, session_id: str | None = None, user_id: str | None = None,
                  tags: Iterable[str] = (), metadata: dict | None = None, environment: str = "default",
                  version: str | None = None, release: str | None = None,
                  scores: Iterable[dict] = ()) -> dict:
        """A "production" trace, as if the app had sent it, with optional scores on it.

        Each score is a create-score body without `traceId` (e.g. {"name": "quality", "value": 0.8});
        it goes through the same checks as POSTed scores. Returns the trace as listed.
        """
        with self._lock:
            moment = _iso(timestamp if timestamp is not None else _now())
            self._merge_trace(id, {"timestamp": moment, "name": name, "input": input, "output": output,
                                   "sessionId": session_id, "userId": user_id, "tags": list(tags),
                                   "metadata": dict(metadata or {}), "environment": environment,
                                   "version": version, "release": release})
            for score in scores:
                body = {"timestamp": moment, **score, "traceId": id}
                self._store_score(self._checked_score(body), delivered=False)
            return self._trace_with_details(self._traces[id])

    def add_prompt(self, *, name: str, prompt: Any, config: dict | None = None, labels: Iterable[str] = (),
                   type: str = "text", tags: Iterable[str] | None = None,  # noqa: A002
                   commit_message: str | None = None) -> dict:
        """A new version of a prompt, as if created in the UI. Returns it as the API would."""
        with self._lock:
            return self._create_prompt_version({"name": name, "prompt": prompt, "config": config or {},
                                                "labels": list(labels), "type": type,
                                                "tags": list(tags) if tags is not None else None,
                                                "commitMessage": commit_message})

    def add_annotation_queue(self, name: str, score_config_ids: Iterable[str] = (),
                             description: str | None = None) -> str:
        """An annotation queue, as if created in the UI; returns its id."""
        with self._lock:
            queue = self._create_queue({"name": name, "scoreConfigIds": list(score_config_ids),
                                        "description": description}, check_configs=False)
            return queue["id"]

    def add_score_config(self, *, name: str, data_type: str, min_value: float | None = None,
                         max_value: float | None = None, categories: list[dict] | None = None,
                         description: str | None = None) -> dict:
        """A score config, as if created in the UI. Returns it as the API would."""
        with self._lock:
            return self._create_score_config({"name": name, "dataType": data_type, "minValue": min_value,
                                              "maxValue": max_value, "categories": categories,
                                              "description": description})

    # --- request handling (called by the handler thread) ------------------------------------------
    def _arrive(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, RecordedRequest]:
        flat_query = {key: values[0] if len(values) == 1 else list(values) for key, values in query.items()}
        with self._lock:
            self._attempts[(method, path)] += 1
            record = RecordedRequest(method, path, flat_query, copy.deepcopy(body), self._attempts[(method, path)])
            self._requests.append(record)
            return len(self._requests) - 1, record

    def _finish(self, index: int, status: int | None, fault: str, response: Any = None) -> None:
        with self._lock:
            self._requests[index] = replace(self._requests[index], status=status, fault=fault,
                                            response=copy.deepcopy(response))

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _route(self, method: str, path: str) -> tuple[_Route | None, dict[str, str], bool]:
        """The route for the request, its path parameters, and whether the path exists at all."""
        path_known = False
        for route in self._routes:
            match = route.pattern.match(path)
            if match:
                path_known = True
                if route.method == method:
                    return route, {key: unquote(value) for key, value in match.groupdict().items()}, True
        return None, {}, path_known

    def _authorized(self, header: str | None) -> None:
        if not header:
            raise _HttpError(401, "No authorization header")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "basic":
            raise _HttpError(401, "Invalid authorization header")
        try:
            public_key, _, secret_key = base64.b64decode(credentials).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            raise _HttpError(401, "Invalid authorization header. Confirm that you've configured the "
                                  "correct host.") from None
        if public_key != self.public_key or secret_key != self.secret_key:
            raise _HttpError(401, "Invalid credentials. Confirm that you've configured the correct host.")

    def _dispatch(self, method: str, path: str, query: dict[str, list[str]], headers: Any, raw: bytes,
                  body: Any, body_is_json: bool) -> _Reply:
        route, params, path_known = self._route(method, path)
        if route is None:
            if path_known:
                return _Reply(405, {"message": "Method not allowed", "error": "MethodNotAllowedError"})
            return _Reply(404, {"message": "Route not found", "error": "NotFoundError"})
        if route.auth:
            self._authorized(headers.get("Authorization"))
        if route.template.startswith("/api/public/unstable/dashboard") and not self.dashboards_api:
            return _Reply(404, {"message": "Route not found", "error": "NotFoundError"})
        if self.events_only and route.deprecated:
            return _Reply(404, {"message": "This endpoint is not available on deployments running in Langfuse v4 "
                                           "events_only mode. Use the v2 observations and v3 scores APIs."})
        if route.body in ("schema", "scores", "json") and method in ("POST", "PUT", "PATCH"):
            if not body_is_json:
                raise _HttpError(400, "Invalid request data", [{"path": [], "message": "Body must be JSON"}])
            if route.body == "schema":
                self._check_body(method, route.template, path, body)
        request = _Request(method, path, params, query, body, raw, headers.get("Content-Type") or "")
        with self._lock:
            reply = route.handler(request)
        if self.check_responses and isinstance(reply.body, (dict, list)):
            self._check_response(method, route.template, path, reply)
        return reply

    def _check_body(self, method: str, template: str, path: str, body: Any) -> None:
        if self._spec is None:
            return
        schema = self._spec.request(method, template)
        if schema is None:
            return
        reasons = self._spec.spec.errors(schema, body)
        if reasons:
            with self._lock:
                self._schema_errors.extend(f"{method} {path}: {reason}" for reason in reasons)
            raise _HttpError(400, "Invalid request data", [{"path": [], "message": reason} for reason in reasons])

    def _check_response(self, method: str, template: str, path: str, reply: _Reply) -> None:
        assert self._spec is not None
        schema = self._spec.response(method, template, reply.status)
        if not schema:
            return
        reasons = self._spec.spec.errors(schema, reply.body)
        if reasons:
            with self._lock:
                self._response_schema_errors.extend(f"{method} {path} -> {reply.status}: {r}" for r in reasons)

    def _build_routes(self) -> list[_Route]:
        p = "/api/public"
        return [
            _Route("GET", f"{p}/health", self._health, auth=False),
            _Route("GET", f"{p}/projects", self._projects),
            _Route("POST", f"{p}/otel/v1/traces", self._otel_traces, body="otlp"),
            _Route("POST", f"{p}/scores", self._post_scores, body="scores"),
            _Route("DELETE", f"{p}/scores/{{scoreId}}", self._delete_score),
            _Route("GET", f"{p}/v2/scores", self._list_scores_v2, deprecated=True),
            _Route("GET", f"{p}/v2/scores/{{scoreId}}", self._get_score_v2, deprecated=True),
            _Route("GET", f"{p}/v3/scores", self._list_scores_v3),
            _Route("GET", f"{p}/score-configs", self._list_score_configs),
            _Route("POST", f"{p}/score-configs", self._post_score_config),
            _Route("GET", f"{p}/score-configs/{{configId}}", self._get_score_config),
            _Route("PATCH", f"{p}/score-configs/{{configId}}", self._patch_score_config),
            _Route("GET", f"{p}/v2/datasets", self._list_datasets),
            _Route("POST", f"{p}/v2/datasets", self._post_dataset),
            _Route("GET", f"{p}/v2/datasets/{{datasetName}}", self._get_dataset),
            _Route("GET", f"{p}/dataset-items", self._list_dataset_items),
            _Route("POST", f"{p}/dataset-items", self._post_dataset_item),
            _Route("GET", f"{p}/dataset-items/{{id}}", self._get_dataset_item),
            _Route("GET", f"{p}/v2/prompts", self._list_prompts),
            _Route("POST", f"{p}/v2/prompts", self._post_prompt),
            _Route("GET", f"{p}/v2/prompts/{{promptName}}", self._get_prompt),
            _Route("DELETE", f"{p}/v2/prompts/{{promptName}}", self._delete_prompt),
            _Route("PATCH", f"{p}/v2/prompts/{{name}}/versions/{{version}}", self._patch_prompt_version),
            _Route("GET", f"{p}/traces", self._list_traces, deprecated=True),
            _Route("GET", f"{p}/traces/{{traceId}}", self._get_trace, deprecated=True),
            _Route("GET", f"{p}/v2/observations", self._list_observations_v2),
            _Route("GET", f"{p}/annotation-queues", self._list_queues),
            _Route("POST", f"{p}/annotation-queues", self._post_queue),
            _Route("GET", f"{p}/annotation-queues/{{queueId}}", self._get_queue),
            _Route("GET", f"{p}/annotation-queues/{{queueId}}/items", self._list_queue_items),
            _Route("POST", f"{p}/annotation-queues/{{queueId}}/items", self._post_queue_item),
            _Route("GET", f"{p}/annotation-queues/{{queueId}}/items/{{itemId}}", self._get_queue_item),
            _Route("PATCH", f"{p}/annotation-queues/{{queueId}}/items/{{itemId}}", self._patch_queue_item),
            _Route("DELETE", f"{p}/annotation-queues/{{queueId}}/items/{{itemId}}", self._delete_queue_item),
            # Not in the 4.16 spec: checked in code against the server's zod types (see _checked_widget).
            _Route("GET", f"{p}/unstable/dashboard-widgets", self._list_widgets, body=None),
            _Route("POST", f"{p}/unstable/dashboard-widgets", self._post_widget),
            _Route("GET", f"{p}/unstable/dashboard-widgets/{{widgetId}}", self._get_widget, body=None),
            _Route("PATCH", f"{p}/unstable/dashboard-widgets/{{widgetId}}", self._patch_widget),
            _Route("GET", f"{p}/unstable/dashboards", self._list_dashboards, body=None),
            _Route("POST", f"{p}/unstable/dashboards", self._post_dashboard),
            _Route("GET", f"{p}/unstable/dashboards/{{dashboardId}}", self._get_dashboard, body=None),
            _Route("PATCH", f"{p}/unstable/dashboards/{{dashboardId}}", self._patch_dashboard),
            _Route("POST", f"{p}/unstable/dashboards/{{dashboardId}}/placements", self._post_placement),
        ]

    # --- health, projects -------------------------------------------------------------------------
    def _health(self, request: _Request) -> _Reply:
        # web/src/pages/api/public/health.ts: {"status": "OK", "version": VERSION without the "v"}
        return _Reply(200, {"status": "OK", "version": self.version})

    def _projects(self, request: _Request) -> _Reply:
        return _Reply(200, {"data": [{"id": self.project_id, "name": "penpal-eval tests",
                                      "organization": {"id": "org-test", "name": "Test organization"},
                                      "metadata": {}}]})

    # --- OTLP ingestion ---------------------------------------------------------------------------
    def _otel_traces(self, request: _Request) -> _Reply:
        spans = decode_otlp_spans(request.raw, request.content_type)
        self._batches.append(("spans", [span.span_id for span in spans]))
        for span in spans:
            self._spans.append(span)
            observation, raw = observation_from_span(span, self.project_id)
            previous = self._observations.get(span.span_id)
            if previous is not None:  # upsert: later non-null values win, metadata merges
                merged = {**previous, **{key: value for key, value in observation.items() if value is not None}}
                merged["metadata"] = {**(previous.get("metadata") or {}), **(observation.get("metadata") or {})}
                merged["createdAt"] = previous["createdAt"]
                observation = merged
            else:
                observation["createdAt"] = _iso(_now())
            observation["updatedAt"] = _iso(_now())
            self._observations[span.span_id] = observation
            # IngestionService writeEventRecord: no lookup, one event row per span as it arrived.
            self._observation_events[(span.span_id, span.start_time_ns)] = copy.deepcopy(observation)
            self._raw_io[span.span_id] = raw
            self._merge_trace(span.trace_id, trace_update_from_span(span, observation))
        if "json" in request.content_type:
            return _Reply(200, {})
        return _Reply(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString(),
                      content_type="application/x-protobuf")

    def _merge_trace(self, trace_id: str, update: dict[str, Any]) -> None:
        """Upsert a trace: non-null values win, metadata merges, tags accumulate, the earliest
        timestamp stays."""
        now = _iso(_now())
        trace = self._traces.get(trace_id)
        if trace is None:
            trace = {"id": trace_id, "timestamp": update.get("timestamp") or now, "name": None, "input": None,
                     "output": None, "sessionId": None, "release": None, "version": None, "userId": None,
                     "metadata": {}, "tags": [], "public": False, "bookmarked": False,
                     "environment": "default", "projectId": self.project_id, "createdAt": now}
            self._traces[trace_id] = trace
        for key, value in update.items():
            if value is None:
                continue
            if key == "timestamp":
                if _parse_time(value) < _parse_time(trace["timestamp"]):
                    trace["timestamp"] = value
            elif key == "metadata":
                trace["metadata"] = {**(trace["metadata"] or {}), **value} if isinstance(value, dict) else value
            elif key == "tags":
                trace["tags"] = [*trace["tags"], *(tag for tag in value if tag not in trace["tags"])]
            else:
                trace[key] = value
        trace["updatedAt"] = now

    # --- traces -----------------------------------------------------------------------------------
    def _trace_observations(self, trace_id: str) -> list[dict]:
        return sorted((o for o in self._observations.values() if o["traceId"] == trace_id),
                      key=lambda o: o["startTime"])

    def _trace_scores(self, trace_id: str) -> list[dict]:
        return [s for s in self._scores.values() if s.get("traceId") == trace_id]

    def _trace_metrics(self, trace: dict, observations: list[dict]) -> tuple[float | None, float | None]:
        if not observations:
            return 0.0, 0.0
        start = min(_parse_time(o["startTime"]) for o in observations)
        end = max(_parse_time(o["endTime"] or o["startTime"]) for o in observations)
        cost = sum(float(o["costDetails"].get("total", 0)) for o in observations)
        return (end - start).total_seconds(), cost

    def _trace_with_details(self, trace: dict, fields: set[str] | None = None) -> dict:
        observations = self._trace_observations(trace["id"])
        latency, cost = self._trace_metrics(trace, observations)
        result = copy.deepcopy(trace)
        result.update(htmlPath=f"/project/{self.project_id}/traces/{trace['id']}", latency=latency, totalCost=cost,
                      observations=[o["id"] for o in observations],
                      scores=[s["id"] for s in self._trace_scores(trace["id"])])
        if fields is not None:  # the `fields` parameter: excluded groups come back empty
            if "io" not in fields:
                result.update(input=None, output=None, metadata=None)
            if "scores" not in fields:
                result["scores"] = []
            if "observations" not in fields:
                result["observations"] = []
            if "metrics" not in fields:
                result.update(latency=-1, totalCost=-1)
        return result

    def _list_traces(self, request: _Request) -> _Reply:
        traces = list(self._traces.values())
        start, end = request.time_arg("fromTimestamp"), request.time_arg("toTimestamp")
        tags, environments = request.args("tags"), request.args("environment")
        for key in ("name", "userId", "sessionId", "version", "release"):
            wanted = request.arg(key)
            if wanted is not None:
                traces = [t for t in traces if t.get(key) == wanted]
        if start is not None:
            traces = [t for t in traces if _parse_time(t["timestamp"]) >= start]
        if end is not None:
            traces = [t for t in traces if _parse_time(t["timestamp"]) < end]
        if tags:
            traces = [t for t in traces if all(tag in t["tags"] for tag in tags)]
        if environments:
            traces = [t for t in traces if t["environment"] in environments]
        order = request.arg("orderBy") or "timestamp.desc"
        column, _, direction = order.partition(".")
        if column not in {"id", "timestamp", "name", "userId", "release", "version", "public", "bookmarked",
                          "sessionId"} or direction not in ("asc", "desc"):
            raise _bad_request(f"Invalid orderBy: {order}")
        traces.sort(key=lambda t: (t.get(column) is None, str(t.get(column) or "")), reverse=direction == "desc")
        fields = set(request.args("fields")) | {"core"} if request.arg("fields") else None
        page = _page(traces, request)
        page["data"] = [self._trace_with_details(t, fields) for t in page["data"]]
        return _Reply(200, page)

    def _get_trace(self, request: _Request) -> _Reply:
        trace = self._traces.get(request.params["traceId"])
        if trace is None:
            raise _not_found("Trace")
        result = self._trace_with_details(trace)
        result["observations"] = copy.deepcopy(self._trace_observations(trace["id"]))
        result["scores"] = [self._score_v1(s) for s in self._trace_scores(trace["id"])]
        return _Reply(200, result)

    def _list_observations_v2(self, request: _Request) -> _Reply:
        if (request.arg("parseIoAsJson") or "").lower() == "true":
            raise _bad_request("parseIoAsJson is deprecated; input and output are always raw strings")
        observations = list(self._observation_events.values())  # every event row: duplicates count
        filters = {"traceId": "traceId", "name": "name", "level": "level", "version": "version",
                   "parentObservationId": "parentObservationId"}
        for parameter, key in filters.items():
            wanted = request.arg(parameter)
            if wanted is not None:
                observations = [o for o in observations if (o.get(key) or "") == wanted]
        if request.arg("type"):
            observations = [o for o in observations if o["type"] == request.arg("type").upper()]
        for parameter in ("userId", "sessionId"):
            wanted = request.arg(parameter)
            if wanted is not None:
                observations = [o for o in observations
                                if (self._traces.get(o["traceId"]) or {}).get(parameter) == wanted]
        environments = request.args("environment")
        if environments:
            observations = [o for o in observations if o["environment"] in environments]
        root = request.arg("isRootObservation")
        if root is not None:
            observations = [o for o in observations if (o["parentObservationId"] is None) == (root.lower() == "true")]
        start, end = request.time_arg("fromStartTime"), request.time_arg("toStartTime")
        if start is not None:
            observations = [o for o in observations if _parse_time(o["startTime"]) >= start]
        if end is not None:
            observations = [o for o in observations if _parse_time(o["startTime"]) < end]
        observations.sort(key=lambda o: o["startTime"], reverse=True)
        page, meta = _cursor_page(observations, request, max_limit=1000)
        groups = set(request.args("fields") or ["core", "basic"]) | {"core"}
        return _Reply(200, {"data": [self._observation_v2(o, groups) for o in page], "meta": meta})

    def _observation_v2(self, observation: dict, groups: set[str]) -> dict:
        trace = self._traces.get(observation["traceId"]) or {}
        raw = self._raw_io.get(observation["id"], {})
        o = observation
        group_fields = {
            "core": {"id": o["id"], "traceId": o["traceId"], "startTime": o["startTime"], "endTime": o["endTime"],
                     "projectId": self.project_id, "parentObservationId": o["parentObservationId"],
                     "type": o["type"], "modelId": None, "inputPrice": None, "outputPrice": None,
                     "totalPrice": None},
            "basic": {"name": o["name"], "level": o["level"], "statusMessage": o["statusMessage"],
                      "version": o["version"], "environment": o["environment"], "bookmarked": False,
                      "public": bool(trace.get("public")), "userId": trace.get("userId"),
                      "sessionId": trace.get("sessionId"), "isRootObservation": o["parentObservationId"] is None},
            "time": {"completionStartTime": o["completionStartTime"], "createdAt": o.get("createdAt"),
                     "updatedAt": o.get("updatedAt")},
            "io": {"input": raw.get("input"), "output": raw.get("output")},
            "metadata": {"metadata": o["metadata"]},
            "model": {"providedModelName": o["model"], "internalModelId": None,
                      "modelParameters": o["modelParameters"]},
            "usage": {"usageDetails": o["usageDetails"], "costDetails": o["costDetails"],
                      "totalCost": o["costDetails"].get("total"), "usagePricingTierName": None},
            "prompt": {"promptId": None, "promptName": o["promptName"], "promptVersion": o["promptVersion"]},
            "metrics": {"latency": o["latency"], "timeToFirstToken": o["timeToFirstToken"]},
            "trace_context": {"tags": trace.get("tags", []), "release": trace.get("release"),
                              "traceName": trace.get("name")},
        }
        result: dict[str, Any] = {}
        for group in groups:  # unknown groups are ignored, like the real server
            result.update(copy.deepcopy(group_fields.get(group, {})))
        return result

    # --- scores -----------------------------------------------------------------------------------
    def _checked_score(self, body: dict) -> dict:
        """The stored score for a create-score body, or _ScoreRejected with Langfuse's reason."""
        if not isinstance(body, dict):
            raise _ScoreRejected("A score must be a JSON object")
        name, value = body.get("name"), body.get("value")
        if not isinstance(name, str) or not name:
            raise _ScoreRejected("name: Required")
        if not (_is_number(value) or isinstance(value, str)):
            raise _ScoreRejected("value: Expected number or string")
        subjects = [key for key in ("traceId", "sessionId", "datasetRunId") if body.get(key)]
        if not subjects:
            raise _ScoreRejected("A score needs a traceId, sessionId or datasetRunId")
        if body.get("observationId") and not body.get("traceId"):
            raise _ScoreRejected("observationId requires traceId")
        data_type = body.get("dataType")
        if data_type is not None and data_type not in _SCORE_TYPES:
            raise _ScoreRejected(f"dataType: Invalid enum value {data_type!r}")
        source = body.get("source") or "API"
        if source not in ("API", "ANNOTATION"):
            raise _ScoreRejected(f"source: Invalid enum value {source!r}")

        # From here on the rules are the ingestion worker's (validateAndInflateScore.ts): the API
        # has answered already, so a score that breaks them is dropped, not refused.
        config_id = body.get("configId")
        config = None
        if config_id:
            config = self._score_configs.get(config_id)
            if config is None:
                raise _ScoreDropped(f"No score config with id {config_id} found")
            if config["isArchived"]:
                raise _ScoreDropped("Config is archived and cannot be used to create new scores. "
                                     "Please restore the config first.")
            if config["name"] != name:
                raise _ScoreDropped(f"Name mismatch based on config: expected {config['name']}, got {name}")
            if data_type is not None and data_type != config["dataType"]:
                raise _ScoreDropped(f"Data type mismatch based on config: expected {config['dataType']}, "
                                     f"got {data_type}")
            data_type = config["dataType"]
        elif source == "ANNOTATION" and data_type != "CORRECTION":
            raise _ScoreDropped("configId is required for ANNOTATION scores")
        if data_type is None:
            data_type = "NUMERIC" if _is_number(value) else "CATEGORICAL"

        number: float | None = None
        string_value: str | None = None
        if data_type == "NUMERIC":
            if not _is_number(value):
                raise _ScoreDropped("Value must be a number for numeric scores")
            number = float(value)
            if config is not None:
                low, high = config.get("minValue"), config.get("maxValue")
                if (low is not None and number < low) or (high is not None and number > high):
                    raise _ScoreDropped("Ingested score body not valid against provided config: "
                                         f"value {number} is outside the range [{low}, {high}]")
        elif data_type == "BOOLEAN":
            if not _is_number(value) or value not in (0, 1):
                raise _ScoreDropped("Value must be a number equal to either 0 or 1 for boolean scores")
            number, string_value = float(value), "True" if value == 1 else "False"
        elif data_type == "CATEGORICAL":
            if not isinstance(value, str):
                raise _ScoreDropped("Value must be a string for categorical scores")
            string_value, number = value, 0.0
            if config is not None:
                matches = [c for c in config.get("categories") or [] if c["label"] == value]
                if not matches:
                    labels = ", ".join(c["label"] for c in config.get("categories") or [])
                    raise _ScoreDropped("Ingested score body not valid against provided config: "
                                         f"value {value!r} must map to one of the categories: {labels}")
                number = float(matches[0]["value"])
        elif data_type == "TEXT":
            if not isinstance(value, str) or not 1 <= len(value) <= 500:
                raise _ScoreDropped("Text score values must be strings of 1 to 500 characters")
            string_value = value
        else:  # CORRECTION
            if not isinstance(value, str):
                raise _ScoreDropped("Value must be a string for correction scores")
            string_value, number = value, 0.0

        environment = body.get("environment") or "default"
        if not _ENVIRONMENT_PATTERN.match(environment) or len(environment) > 40:
            raise _ScoreRejected(f"environment: invalid value {environment!r}")
        if body.get("timestamp") is not None:
            moment = _parse_time(body["timestamp"], require_offset=True)
            if moment is None:
                raise _ScoreRejected("timestamp: Invalid datetime (an ISO 8601 time with a UTC offset is required)")
            timestamp = _iso(moment)
        else:
            timestamp = _iso(_now())
        score: dict[str, Any] = {
            "id": body.get("id") or _new_id(), "projectId": self.project_id,
            "traceId": body.get("traceId"), "sessionId": body.get("sessionId"),
            "observationId": body.get("observationId"), "datasetRunId": body.get("datasetRunId"),
            "name": name, "dataType": data_type, "source": source, "timestamp": timestamp,
            "authorUserId": None, "comment": body.get("comment"),
            "metadata": body.get("metadata") if body.get("metadata") is not None else {},
            "configId": config_id, "queueId": body.get("queueId"), "environment": environment,
        }
        if number is not None:
            score["value"] = number
        if string_value is not None:
            score["stringValue"] = string_value
        return score

    def _store_score(self, score: dict, *, delivered: bool = True) -> dict:
        """Upsert a checked score; `delivered` counts it in `score_deliveries` (a POST accepted it)."""
        now = _iso(_now())
        previous = self._scores.get(score["id"])
        score["createdAt"] = previous["createdAt"] if previous else now
        score["updatedAt"] = now
        self._scores[score["id"]] = score
        self._score_rows[(score["timestamp"][:10], score["name"], score["id"])] = score
        if delivered:
            self._score_deliveries[score["id"]] += 1
        return score

    def _drop(self, body: Any, reason: str) -> None:
        score_id = body.get("id") if isinstance(body, dict) else None
        self._dropped_scores.append((score_id or "", reason))

    def _post_scores(self, request: _Request) -> _Reply:
        body = request.body
        old_server = version_tuple(self.version) < ARRAY_SCORES_SINCE
        if isinstance(body, dict):  # the spec's single-object form
            self._check_body("POST", "/api/public/scores", request.path, body)
            if old_server:  # 4.16's scores/index.ts has no timestamp in its body: the receipt time wins
                body = {key: value for key, value in body.items() if key != "timestamp"}
            score_id = body.get("id") or _new_id()
            try:
                self._store_score(self._checked_score({**body, "id": score_id}))
            except _ScoreDropped as dropped:
                self._drop({"id": score_id}, str(dropped))
            except _ScoreRejected as rejection:
                raise _HttpError(400, str(rejection), "InvalidRequestError") from None
            return _Reply(200, {"id": score_id})
        if old_server:  # web/src/pages/api/public/scores/index.ts before 4.59: one object per request
            raise _HttpError(400, "Invalid request data", [{"path": [], "message": "Expected object, received array"}])
        if not isinstance(body, list):
            raise _HttpError(400, "Invalid request data",
                             [{"path": [], "message": "Expected a score object or an array of scores"}])
        # The SDK's batch form: each score is accepted or rejected on its own (202, or 207).
        errors: list[dict[str, str]] = []
        accepted = 0
        accepted_ids: list[str] = []
        schema = self._spec.component("CreateScoreRequest") if self._spec is not None else None
        for index, item in enumerate(body):
            label = f"scores[{index}]"
            if isinstance(item, dict) and item.get("id"):
                label += f" (id {item['id']})"
            if schema is not None:
                reasons = self._spec.spec.errors(schema, item)
                if reasons:
                    self._schema_errors.extend(f"POST {request.path} {label}: {reason}" for reason in reasons)
                    errors.append({"message": f"{label}: Invalid request data: {'; '.join(reasons)}"})
                    continue
            reason = self.score_rejections(item) if self.score_rejections and isinstance(item, dict) else None
            if reason:
                errors.append({"message": f"{label}: {reason}"})
                continue
            try:
                self._store_score(self._checked_score(item))
                accepted += 1
                accepted_ids.append(item.get("id"))
            except _ScoreDropped as dropped:  # accepted by the API, dropped by the worker
                self._drop(item, str(dropped))
                accepted += 1
            except _ScoreRejected as rejection:
                errors.append({"message": f"{label}: {rejection}"})
        self._batches.append(("scores", accepted_ids))
        if errors:
            return _Reply(207, {"accepted": accepted, "rejected": len(errors), "errors": errors})
        return _Reply(202, {"message": "Accepted"})

    def _delete_score(self, request: _Request) -> _Reply:
        if self._scores.pop(request.params["scoreId"], None) is None:
            raise _not_found("Score")
        self._score_rows = {key: row for key, row in self._score_rows.items() if key[2] != request.params["scoreId"]}
        return _Reply(204)

    def _score_v2(self, score: dict) -> dict:
        result = {key: value for key, value in score.items() if key != "projectId"}
        if score["dataType"] == "TEXT":
            result.pop("value", None)
        trace = self._traces.get(score.get("traceId") or "")
        if trace is not None:
            result["trace"] = {"userId": trace.get("userId"), "tags": trace.get("tags"),
                               "environment": trace.get("environment"), "sessionId": trace.get("sessionId")}
        return copy.deepcopy(result)

    def _score_v1(self, score: dict) -> dict:
        result = {key: value for key, value in score.items()
                  if key not in ("projectId", "sessionId", "datasetRunId")}
        return copy.deepcopy(result)

    def _score_v3(self, score: dict, groups: set[str]) -> dict:
        data_type = score["dataType"]
        if data_type == "NUMERIC":
            value: Any = score["value"]
        elif data_type == "BOOLEAN":
            value = score["value"] == 1
        else:
            value = score.get("stringValue", "")
        result: dict[str, Any] = {key: score[key] for key in ("id", "projectId", "name", "source", "timestamp",
                                                              "environment", "createdAt", "updatedAt")}
        result.update(dataType=data_type, value=value)
        if "details" in groups:
            result.update(comment=score["comment"], configId=score["configId"], metadata=score["metadata"])
        if "annotation" in groups:
            result.update(authorUserId=score["authorUserId"], queueId=score["queueId"])
        if "subject" in groups:
            if score.get("observationId"):
                subject = {"kind": "observation", "id": score["observationId"], "traceId": score["traceId"]}
            elif score.get("traceId"):
                subject = {"kind": "trace", "id": score["traceId"]}
            elif score.get("sessionId"):
                subject = {"kind": "session", "id": score["sessionId"]}
            else:
                subject = {"kind": "experiment", "id": score["datasetRunId"]}
            result["subject"] = subject
        return copy.deepcopy(result)

    def _filtered_scores(self, request: _Request, *, lists: bool) -> list[dict]:
        """Scores matching the query; `lists`: comma-separated values mean any of them (v3)."""
        scores = list(self._scores.values())

        def wanted(name: str) -> list[str] | None:
            if lists:
                values = request.args(name)
                return values or None
            value = request.arg(name)
            return [value] if value is not None else None

        for parameter in ("name", "configId", "queueId", "traceId", "sessionId", "datasetRunId"):
            values = wanted(parameter)
            if values is not None:
                scores = [s for s in scores if s.get(parameter) in values]
        for parameter in ("dataType", "source"):
            values = wanted(parameter)
            if values is not None:
                upper = [value.upper() for value in values]
                scores = [s for s in scores if s[parameter] in upper]
        observation_ids = request.args("observationId")
        if observation_ids:
            scores = [s for s in scores if s.get("observationId") in observation_ids]
        environments = request.args("environment")
        if environments:
            scores = [s for s in scores if s["environment"] in environments]
        start, end = request.time_arg("fromTimestamp"), request.time_arg("toTimestamp")
        if start is not None:
            scores = [s for s in scores if _parse_time(s["timestamp"]) >= start]
        if end is not None:
            scores = [s for s in scores if _parse_time(s["timestamp"]) < end]
        return sorted(reversed(scores), key=lambda s: s["timestamp"], reverse=True)

    def _list_scores_v2(self, request: _Request) -> _Reply:
        scores = self._filtered_scores(request, lists=False)
        ids = request.args("scoreIds")
        if ids:
            scores = [s for s in scores if s["id"] in ids]
        user_id = request.arg("userId")
        if user_id is not None:
            scores = [s for s in scores if (self._traces.get(s.get("traceId") or "") or {}).get("userId") == user_id]
        trace_tags = request.args("traceTags")
        if trace_tags:
            scores = [s for s in scores
                      if all(t in (self._traces.get(s.get("traceId") or "") or {}).get("tags", []) for t in trace_tags)]
        page = _page(scores, request)
        page["data"] = [self._score_v2(s) for s in page["data"]]
        return _Reply(200, page)

    def _get_score_v2(self, request: _Request) -> _Reply:
        score = self._scores.get(request.params["scoreId"])
        if score is None:
            raise _not_found("Score")
        result = self._score_v2(score)
        result.pop("trace", None)
        return _Reply(200, result)

    def _list_scores_v3(self, request: _Request) -> _Reply:
        groups = set(request.args("fields"))
        unknown = groups - {"details", "subject", "annotation"}
        if unknown:
            raise _bad_request(f"Unknown field groups: {', '.join(sorted(unknown))}")
        scores = self._filtered_scores(request, lists=True)
        ids = request.args("id")
        if ids:
            scores = [s for s in scores if s["id"] in ids]
        experiments = request.args("experimentId")
        if experiments:
            scores = [s for s in scores if s.get("datasetRunId") in experiments]
        low, high = request.arg("valueMin"), request.arg("valueMax")
        if low is not None or high is not None:
            if [t.upper() for t in request.args("dataType")] != ["NUMERIC"]:
                raise _bad_request("valueMin and valueMax need dataType=NUMERIC")
            try:
                bounds = (float(low) if low is not None else -math.inf, float(high) if high is not None else math.inf)
            except ValueError:
                raise _bad_request("valueMin and valueMax must be numbers") from None
            scores = [s for s in scores if bounds[0] <= s["value"] <= bounds[1]]
        page, meta = _cursor_page(scores, request, max_limit=100)
        return _Reply(200, {"data": [self._score_v3(s, groups) for s in page], "meta": meta})

    # --- score configs ----------------------------------------------------------------------------
    def _validated_config(self, config: dict) -> dict:
        name, data_type = config.get("name"), config.get("dataType")
        if not isinstance(name, str) or not name or len(name) > 35 or not _SCORE_CONFIG_NAME.match(name):
            raise _bad_request("Invalid score config name: at most 35 letters, numbers, underscores, spaces, "
                               "periods, parentheses and hyphens")
        if data_type not in ("NUMERIC", "BOOLEAN", "CATEGORICAL", "TEXT"):
            raise _bad_request(f"Invalid dataType: {data_type!r}")
        categories = config.get("categories")
        low, high = config.get("minValue"), config.get("maxValue")
        if data_type == "BOOLEAN":
            config["categories"] = [{"label": "True", "value": 1}, {"label": "False", "value": 0}]
        elif data_type == "CATEGORICAL":
            if not categories:
                raise _bad_request("Categorical score configs need at least one category")
            labels = [c["label"] for c in categories]
            values = [c["value"] for c in categories]
            if len(set(labels)) != len(labels) or len(set(values)) != len(values):
                raise _bad_request("Category labels and values must be unique")
        elif categories:
            raise _bad_request(f"Categories are only allowed for categorical configs, not {data_type}")
        if data_type != "NUMERIC" and (low is not None or high is not None):
            raise _bad_request("minValue and maxValue are only allowed for numeric configs")
        if low is not None and high is not None and low > high:
            raise _bad_request("maxValue must be greater than or equal to minValue")
        return config

    def _create_score_config(self, body: dict) -> dict:
        if body.get("dataType") == "BOOLEAN" and body.get("categories"):
            raise _bad_request("Categories are generated for boolean configs and cannot be passed")
        now = _iso(_now())
        config = self._validated_config({
            "id": _new_id(), "name": body.get("name"), "dataType": body.get("dataType"), "isArchived": False,
            "minValue": body.get("minValue"), "maxValue": body.get("maxValue"),
            "categories": body.get("categories"), "description": body.get("description"),
            "projectId": self.project_id, "createdAt": now, "updatedAt": now})
        self._score_configs[config["id"]] = config
        return copy.deepcopy(config)

    def _post_score_config(self, request: _Request) -> _Reply:
        # Langfuse allows two configs with one name: a client must look before it creates.
        # PostScoreConfigBody (web/src/features/public-api/types/score-configs.ts) is a union per
        # data type: BOOLEAN has `categories: z.undefined()`, so even `"categories": null` is a 400;
        # CATEGORICAL has `minValue`/`maxValue: z.undefined().nullish()`; NUMERIC `categories` likewise.
        body = request.body
        data_type = body.get("dataType")
        if data_type == "BOOLEAN" and "categories" in body:
            raise _invalid("categories", "Expected undefined, received "
                           + ("null" if body["categories"] is None else type(body["categories"]).__name__))
        if data_type == "CATEGORICAL" and any(body.get(key) is not None for key in ("minValue", "maxValue")):
            raise _invalid("minValue", "Expected undefined: categorical configs have no range")
        if data_type == "NUMERIC" and body.get("categories") is not None:
            raise _invalid("categories", "Expected undefined: numeric configs have no categories")
        return _Reply(200, self._create_score_config(body))

    def _list_score_configs(self, request: _Request) -> _Reply:
        return _Reply(200, copy.deepcopy(_page(_newest_first(self._score_configs.values()), request)))

    def _get_score_config(self, request: _Request) -> _Reply:
        config = self._score_configs.get(request.params["configId"])
        if config is None:
            raise _not_found("Score config")
        return _Reply(200, copy.deepcopy(config))

    def _patch_score_config(self, request: _Request) -> _Reply:
        config = self._score_configs.get(request.params["configId"])
        if config is None:
            raise _not_found("Score config")
        if config["dataType"] == "BOOLEAN" and request.body.get("categories"):
            raise _bad_request("Categories are generated for boolean configs and cannot be passed")
        updated = copy.deepcopy(config)
        for key in ("isArchived", "name", "categories", "minValue", "maxValue", "description"):
            if request.body.get(key) is not None:
                updated[key] = request.body[key]
        updated = self._validated_config(updated)
        updated["updatedAt"] = _iso(_now())
        self._score_configs[config["id"]] = updated
        return _Reply(200, copy.deepcopy(updated))

    # --- datasets ---------------------------------------------------------------------------------
    def _post_dataset(self, request: _Request) -> _Reply:
        # Langfuse upserts datasets on their name: a second create updates the given fields.
        body, now = request.body, _iso(_now())
        dataset = self._datasets.get(body["name"])
        if dataset is None:
            dataset = {"id": _new_id(), "name": body["name"], "description": None, "metadata": None,
                       "inputSchema": None, "expectedOutputSchema": None, "projectId": self.project_id,
                       "createdAt": now}
            self._datasets[body["name"]] = dataset
        for key in ("description", "metadata", "inputSchema", "expectedOutputSchema"):
            if body.get(key) is not None:
                dataset[key] = body[key]
        dataset["updatedAt"] = now
        return _Reply(200, copy.deepcopy(dataset))

    def _list_datasets(self, request: _Request) -> _Reply:
        return _Reply(200, copy.deepcopy(_page(_newest_first(self._datasets.values()), request)))

    def _get_dataset(self, request: _Request) -> _Reply:
        dataset = self._datasets.get(request.params["datasetName"])
        if dataset is None:
            raise _not_found("Dataset")
        return _Reply(200, copy.deepcopy(dataset))

    def _post_dataset_item(self, request: _Request) -> _Reply:
        body, now = request.body, _iso(_now())
        dataset = self._datasets.get(body["datasetName"])
        if dataset is None:
            raise _not_found("Dataset")
        item_id = body.get("id") or _new_id()
        item = self._dataset_items.get(item_id)
        if item is not None and item["datasetId"] != dataset["id"]:
            raise _bad_request(f"Dataset item {item_id} belongs to another dataset; item ids are unique per project")
        candidate = copy.deepcopy(item) if item is not None else {
            "id": item_id, "status": "ACTIVE", "input": None, "expectedOutput": None, "metadata": None,
            "sourceTraceId": None, "sourceObservationId": None, "datasetId": dataset["id"],
            "datasetName": dataset["name"], "createdAt": now, "mediaReferences": []}
        for key in ("input", "expectedOutput", "metadata", "sourceTraceId", "sourceObservationId", "status"):
            if body.get(key) is not None:
                candidate[key] = body[key]
        for key, schema_key in (("input", "inputSchema"), ("expectedOutput", "expectedOutputSchema")):
            schema = dataset.get(schema_key)
            if schema and jsonschema is not None:
                problems = [error.message for error in Draft202012Validator(schema).iter_errors(candidate[key])]
                if problems:
                    raise _bad_request(f"Dataset item {key} does not match the dataset's {schema_key}: {problems[0]}")
        candidate["updatedAt"] = now
        self._dataset_items[item_id] = candidate
        return _Reply(200, copy.deepcopy(candidate))

    def _list_dataset_items(self, request: _Request) -> _Reply:
        items = list(self._dataset_items.values())
        name = request.arg("datasetName")
        if name is not None:
            if name not in self._datasets:
                raise _not_found("Dataset")
            items = [i for i in items if i["datasetName"] == name]
        for key in ("sourceTraceId", "sourceObservationId"):
            if request.arg(key) is not None:
                items = [i for i in items if i[key] == request.arg(key)]
        return _Reply(200, copy.deepcopy(_page(_newest_first(items), request)))

    def _get_dataset_item(self, request: _Request) -> _Reply:
        item = self._dataset_items.get(request.params["id"])
        if item is None:
            raise _not_found("Dataset item")
        return _Reply(200, copy.deepcopy(item))

    # --- prompts ----------------------------------------------------------------------------------
    def _create_prompt_version(self, body: dict) -> dict:
        name = body["name"]
        prompt_type = body.get("type") or "text"
        versions = self._prompts.setdefault(name, [])
        if versions and versions[-1]["type"] != prompt_type:
            raise _bad_request(f"Previous versions of prompt {name!r} are {versions[-1]['type']} prompts, "
                               f"not {prompt_type}")
        if prompt_type == "text" and not isinstance(body["prompt"], str):
            raise _bad_request("A text prompt must be a string")
        if prompt_type == "chat" and not isinstance(body["prompt"], list):
            raise _bad_request("A chat prompt must be a list of messages")
        labels = [label for label in dict.fromkeys(body.get("labels") or []) if label != "latest"]
        tags = body.get("tags")
        if tags is None:
            tags = versions[-1]["tags"] if versions else []
        now = _iso(_now())
        for version in versions:  # labels are unique per prompt: they move to the new version
            version["labels"] = [label for label in version["labels"] if label not in labels and label != "latest"]
            version["tags"] = list(tags)  # tags are the same across the versions of a prompt
        record = {"name": name, "version": len(versions) + 1, "type": prompt_type, "prompt": body["prompt"],
                  "config": body.get("config") if body.get("config") is not None else {},
                  "labels": [*labels, "latest"], "tags": list(tags), "commitMessage": body.get("commitMessage"),
                  "resolutionGraph": None, "createdAt": now, "updatedAt": now}
        versions.append(record)
        return copy.deepcopy(record)

    def _post_prompt(self, request: _Request) -> _Reply:
        _check_prompt_labels(request.body.get("labels") or [])
        return _Reply(200, self._create_prompt_version(request.body))

    def _get_prompt(self, request: _Request) -> _Reply:
        name = request.params["promptName"]
        version, label = request.arg("version"), request.arg("label")
        if version is not None and label is not None:
            raise _bad_request("Cannot specify both version and label")
        versions = self._prompts.get(name, [])
        if version is not None:
            found = [v for v in versions if str(v["version"]) == version]
        else:
            wanted = label or "production"
            found = [v for v in versions if wanted in v["labels"]]
        if not found:
            raise _not_found("Prompt")
        return _Reply(200, copy.deepcopy(found[-1]))

    def _delete_prompt(self, request: _Request) -> _Reply:
        name = request.params["promptName"]
        version, label = request.arg("version"), request.arg("label")
        versions = self._prompts.get(name, [])
        doomed = [v for v in versions if (version is None or str(v["version"]) == version)
                  and (label is None or label in v["labels"])]
        if not doomed:
            raise _not_found("Prompt")
        remaining = [v for v in versions if v not in doomed]
        if remaining:
            self._prompts[name] = remaining
        else:
            del self._prompts[name]
        return _Reply(204)

    def _patch_prompt_version(self, request: _Request) -> _Reply:
        name, version = request.params["name"], request.params["version"]
        new_labels = list(dict.fromkeys(request.body.get("newLabels") or []))
        if "latest" in new_labels:
            raise _bad_request("The 'latest' label is reserved and managed by Langfuse")
        _check_prompt_labels(new_labels)
        versions = self._prompts.get(name, [])
        target = next((v for v in versions if str(v["version"]) == version), None)
        if target is None:
            raise _not_found("Prompt")
        for other in versions:
            if other is not target:
                other["labels"] = [label for label in other["labels"] if label not in new_labels]
        target["labels"] = [*target["labels"], *(label for label in new_labels if label not in target["labels"])]
        target["updatedAt"] = _iso(_now())
        return _Reply(200, copy.deepcopy(target))

    def _list_prompts(self, request: _Request) -> _Reply:
        metas = []
        name, label, tag = request.arg("name"), request.arg("label"), request.arg("tag")
        start, end = request.time_arg("fromUpdatedAt"), request.time_arg("toUpdatedAt")
        for prompt_name, versions in self._prompts.items():
            if name is not None and prompt_name != name:
                continue
            chosen = [v for v in versions if (label is None or label in v["labels"])
                      and (tag is None or tag in v["tags"])
                      and (start is None or _parse_time(v["updatedAt"]) >= start)
                      and (end is None or _parse_time(v["updatedAt"]) < end)]
            if not chosen:
                continue
            metas.append({"name": prompt_name, "type": chosen[-1]["type"],
                          "versions": [v["version"] for v in chosen],
                          "labels": list(dict.fromkeys(lbl for v in chosen for lbl in v["labels"])),
                          "tags": list(chosen[-1]["tags"]),
                          "lastUpdatedAt": max(v["updatedAt"] for v in chosen),
                          "lastConfig": copy.deepcopy(chosen[-1]["config"])})
        metas.sort(key=lambda meta: meta["lastUpdatedAt"], reverse=True)
        return _Reply(200, _page(metas, request))

    # --- dashboards and widgets (unstable API) -----------------------------------------------------
    def _widget_record(self, body: dict, existing: dict | None = None) -> dict:
        now = _iso(_now())
        record = copy.deepcopy(existing) if existing else {"id": _new_id(), "createdAt": now, "description": ""}
        for key in ("name", "description", "view", "dimensions", "metrics", "filters", "chartType"):
            if key in body:
                record[key] = copy.deepcopy(body[key])
        # ChartConfigSchema in the answer: `type` defaults to the widget's chartType.
        config = copy.deepcopy(body.get("chartConfig") if "chartConfig" in body else (existing or {}).get("chartConfig"))
        record["chartConfig"] = {**(config or {}), "type": record["chartType"]}
        record["updatedAt"] = now
        return record

    def _list_widgets(self, request: _Request) -> _Reply:
        return _Reply(200, copy.deepcopy(_page(_newest_first(self._widgets.values()), request)))

    def _post_widget(self, request: _Request) -> _Reply:
        record = self._widget_record(_checked_widget(request.body, partial=False))
        self._widgets[record["id"]] = record
        return _Reply(200, copy.deepcopy(record))

    def _widget(self, request: _Request) -> dict:
        widget = self._widgets.get(request.params["widgetId"])
        if widget is None:
            raise _not_found("Dashboard widget")
        return widget

    def _get_widget(self, request: _Request) -> _Reply:
        return _Reply(200, copy.deepcopy(self._widget(request)))

    def _patch_widget(self, request: _Request) -> _Reply:
        widget = self._widget(request)
        body = _checked_widget(request.body, partial=True)
        if "chartConfig" in body and body["chartConfig"] and body["chartConfig"].get("type") not in (
                None, body.get("chartType", widget["chartType"])):
            raise _invalid("chartConfig.type", "chartConfig.type must match chartType")
        record = self._widget_record(body, widget)
        self._widgets[record["id"]] = record
        return _Reply(200, copy.deepcopy(record))

    def _checked_definition(self, definition: Any) -> dict:
        """DashboardDefinitionSchema: {widgets: [{type: "widget", id, widgetId, x, y, width, height}]}."""
        if not isinstance(definition, dict) or not isinstance(definition.get("widgets"), list):
            raise _invalid("definition", "Expected {widgets: [...]}")
        for placement in definition["widgets"]:
            self._check_placement(placement, partial=False)
        return definition

    def _check_placement(self, placement: Any, *, partial: bool) -> None:
        if not isinstance(placement, dict) or placement.get("type") != "widget":
            raise _invalid("type", "Invalid discriminator value. Expected 'widget'")
        if not isinstance(placement.get("widgetId"), str):
            raise _invalid("widgetId", "Required")
        for key in ("id", "x", "y", "width", "height"):
            if key not in placement:
                if partial:
                    continue
                raise _invalid(key, "Required")
            value = placement[key]
            if key == "id":
                if not isinstance(value, str):
                    raise _invalid(key, "Expected string")
            elif value is None and partial:
                continue
            elif not isinstance(value, int) or isinstance(value, bool) or value < (1 if key in ("width", "height") else 0):
                raise _invalid(key, "Expected a non-negative integer (sizes positive)")

    def _dashboard_answer(self, dashboard: dict) -> dict:
        return copy.deepcopy(dashboard)

    def _list_dashboards(self, request: _Request) -> _Reply:
        return _Reply(200, copy.deepcopy(_page(_newest_first(self._dashboards.values()), request)))

    def _post_dashboard(self, request: _Request) -> _Reply:
        body = request.body
        if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not body["name"]:
            raise _invalid("name", "String must contain at least 1 character(s)")
        if "description" in body and not isinstance(body["description"], str):
            raise _invalid("description", "Expected string")
        definition = self._checked_definition(body["definition"]) if "definition" in body else {"widgets": []}
        if "filters" in body:
            _check_filters(body["filters"])
        now = _iso(_now())
        dashboard = {"id": _new_id(), "createdAt": now, "updatedAt": now, "name": body["name"],
                     "description": body.get("description", ""), "definition": copy.deepcopy(definition),
                     "filters": copy.deepcopy(body.get("filters") or [])}
        self._dashboards[dashboard["id"]] = dashboard
        return _Reply(200, self._dashboard_answer(dashboard))

    def _dashboard(self, request: _Request) -> dict:
        dashboard = self._dashboards.get(request.params["dashboardId"])
        if dashboard is None:
            raise _not_found("Dashboard")
        return dashboard

    def _get_dashboard(self, request: _Request) -> _Reply:
        return _Reply(200, self._dashboard_answer(self._dashboard(request)))

    def _patch_dashboard(self, request: _Request) -> _Reply:
        dashboard, body = self._dashboard(request), request.body
        if not isinstance(body, dict) or not body:
            raise _invalid("", "At least one field is required")
        if "name" in body and (not isinstance(body["name"], str) or not body["name"]):
            raise _invalid("name", "String must contain at least 1 character(s)")
        if "description" in body and not isinstance(body["description"], str):
            raise _invalid("description", "Expected string")
        if "definition" in body:
            self._checked_definition(body["definition"])
        if "filters" in body:
            _check_filters(body["filters"])
        for key in ("name", "description", "definition", "filters"):
            if key in body:
                dashboard[key] = copy.deepcopy(body[key])
        dashboard["updatedAt"] = _iso(_now())
        return _Reply(200, self._dashboard_answer(dashboard))

    def _post_placement(self, request: _Request) -> _Reply:
        # PostDashboardPlacementBody: id and grid position optional; the server generates an id and
        # appends the tile below the existing ones with the UI's default size.
        dashboard, body = self._dashboard(request), request.body
        self._check_placement(body, partial=True)
        if body["widgetId"] not in self._widgets:
            raise _not_found("Dashboard widget")
        widgets = dashboard["definition"]["widgets"]
        if body.get("id") and any(tile["id"] == body["id"] for tile in widgets):
            raise _HttpError(409, f"A placement with id {body['id']} already exists on this dashboard",
                             "ConflictError")
        bottom = max((tile["y"] + tile["height"] for tile in widgets), default=0)

        def given(key: str, default: int) -> int:
            return body[key] if body.get(key) is not None else default

        placement = {"type": "widget", "id": body.get("id") or _new_id(), "widgetId": body["widgetId"],
                     "x": given("x", 0), "y": given("y", bottom), "width": given("width", PLACEMENT_DEFAULT_SIZE[0]),
                     "height": given("height", PLACEMENT_DEFAULT_SIZE[1])}
        widgets.append(placement)
        dashboard["updatedAt"] = _iso(_now())
        return _Reply(200, copy.deepcopy(placement))

    # --- annotation queues ------------------------------------------------------------------------
    def _create_queue(self, body: dict, *, check_configs: bool) -> dict:
        if any(queue["name"] == body["name"] for queue in self._annotation_queues.values()):
            raise _HttpError(409, f"An annotation queue named {body['name']!r} already exists", "ConflictError")
        # CreateAnnotationQueueBody (web/src/features/public-api/types/annotation-queues.ts):
        # `scoreConfigIds: z.array(z.string()).min(1)`, and every id must be a config of the project.
        if check_configs and not body.get("scoreConfigIds"):
            raise _invalid("scoreConfigIds", "Array must contain at least 1 element(s)")
        missing = [i for i in body.get("scoreConfigIds") or [] if i not in self._score_configs]
        if check_configs and missing:
            raise _bad_request(f"Score configs not found: {', '.join(missing)}")
        now = _iso(_now())
        queue = {"id": _new_id(), "name": body["name"], "description": body.get("description"),
                 "scoreConfigIds": list(body.get("scoreConfigIds") or []), "createdAt": now, "updatedAt": now}
        self._annotation_queues[queue["id"]] = queue
        self._annotation_queue_items[queue["id"]] = []
        return copy.deepcopy(queue)

    def _queue(self, request: _Request) -> dict:
        queue = self._annotation_queues.get(request.params["queueId"])
        if queue is None:
            raise _not_found("Annotation queue")
        return queue

    def _list_queues(self, request: _Request) -> _Reply:
        return _Reply(200, copy.deepcopy(_page(_newest_first(self._annotation_queues.values()), request)))

    def _post_queue(self, request: _Request) -> _Reply:
        return _Reply(200, self._create_queue(request.body, check_configs=True))

    def _get_queue(self, request: _Request) -> _Reply:
        return _Reply(200, copy.deepcopy(self._queue(request)))

    def _list_queue_items(self, request: _Request) -> _Reply:
        items = self._annotation_queue_items[self._queue(request)["id"]]
        status = request.arg("status")
        if status is not None:
            items = [i for i in items if i["status"] == status]
        return _Reply(200, copy.deepcopy(_page(items, request)))

    def _post_queue_item(self, request: _Request) -> _Reply:
        # Like Langfuse, the same object may be queued twice: a client must look first.
        queue, body, now = self._queue(request), request.body, _iso(_now())
        status = body.get("status") or "PENDING"
        item = {"id": _new_id(), "queueId": queue["id"], "objectId": body["objectId"],
                "objectType": body["objectType"], "status": status,
                "completedAt": now if status == "COMPLETED" else None, "createdAt": now, "updatedAt": now}
        self._annotation_queue_items[queue["id"]].append(item)
        return _Reply(200, copy.deepcopy(item))

    def _queue_item(self, request: _Request) -> dict:
        items = self._annotation_queue_items[self._queue(request)["id"]]
        item = next((i for i in items if i["id"] == request.params["itemId"]), None)
        if item is None:
            raise _not_found("Annotation queue item")
        return item

    def _get_queue_item(self, request: _Request) -> _Reply:
        return _Reply(200, copy.deepcopy(self._queue_item(request)))

    def _patch_queue_item(self, request: _Request) -> _Reply:
        item, now = self._queue_item(request), _iso(_now())
        if request.body.get("status") is not None:
            item["status"] = request.body["status"]
            item["completedAt"] = now if item["status"] == "COMPLETED" else None
        item["updatedAt"] = now
        return _Reply(200, copy.deepcopy(item))

    def _delete_queue_item(self, request: _Request) -> _Reply:
        item = self._queue_item(request)
        self._annotation_queue_items[item["queueId"]].remove(item)
        return _Reply(200, {"success": True, "message": "Item removed from queue"})


# --- HTTP plumbing --------------------------------------------------------------------------------
def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _decompress(raw: bytes, encoding: str) -> bytes:
    encoding = encoding.lower().strip()
    if not raw or encoding in ("", "identity"):
        return raw
    try:
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "deflate":
            return zlib.decompress(raw)
    except (OSError, zlib.error) as error:
        raise _bad_request(f"Cannot decode a {encoding} body: {error}") from None
    raise _HttpError(415, f"Unsupported Content-Encoding: {encoding}")


def _handler_for(server: LangfuseCompatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like the real API

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
            return

        def setup(self) -> None:
            super().setup()
            with server._lock:
                server._connections.add(self.connection)

        def finish(self) -> None:
            with server._lock:
                server._connections.discard(self.connection)
            try:
                super().finish()
            except OSError:
                pass

        def _send(self, reply: _Reply) -> None:
            if isinstance(reply.body, bytes):
                payload = reply.body
            elif reply.body is None:
                payload = b""
            else:
                payload = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                if payload or reply.status != 204:
                    self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if payload:
                    self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to do

        def _handle(self) -> None:
            if server._stopping.is_set():  # stopped while this keep-alive connection was open
                self.close_connection = True
                return
            method = self.command
            url = urlsplit(self.path)
            path, query = url.path, parse_qs(url.query, keep_blank_values=True)
            raw = _read_body(self)
            body: Any = None
            body_is_json = False
            decode_error: _HttpError | None = None
            try:
                raw = _decompress(raw, self.headers.get("Content-Encoding") or "")
            except _HttpError as error:
                decode_error = error
            if decode_error is None and raw and "protobuf" not in (self.headers.get("Content-Type") or ""):
                try:
                    body, body_is_json = json.loads(raw), True
                except ValueError:
                    pass
            index, record = server._arrive(method, path, query, body)

            fault = server.faults(record)
            if fault.kind != "ok":  # visible at once, even while the request still hangs
                server._finish(index, None, fault.kind)
            if fault.kind == "delay":
                server._wait(fault.hang_s)
            elif fault.kind in ("hang", "drop"):
                if fault.kind == "hang":
                    server._wait(fault.hang_s)
                server._finish(index, None, fault.kind)
                self.close_connection = True  # hang up without an answer
                return
            elif fault.kind == "status":
                headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                reply = _Reply(fault.status, {"message": f"injected HTTP {fault.status}"}, headers=headers)
                server._finish(index, fault.status, fault.kind, reply.body)  # before the client can look
                self._send(reply)
                return

            try:
                if decode_error is not None:
                    raise decode_error
                reply = server._dispatch(method, path, query, self.headers, raw, body, body_is_json)
            except _HttpError as error:
                reply = _Reply(error.status, error.body)
            except Exception as error:  # noqa: BLE001 - a bug here must reach the test as a 500
                reply = _Reply(500, {"message": f"langfuse_compat internal error: {error!r}"})
            server._finish(index, reply.status, fault.kind,  # before the client can look
                           reply.body if isinstance(reply.body, (dict, list)) else None)
            self._send(reply)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815 - http.server naming

    return Handler
