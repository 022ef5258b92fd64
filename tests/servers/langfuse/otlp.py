"""OTLP span ingestion as Langfuse v4 does it for SDK 5 spans: observations, the events table
(one row per span id and start time), traces, the root event a score's trace fields come
from, and the v2 observations read with its structured `filter`."""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tests.servers.langfuse.core import (
    OTLP,
    ApiFailure,
    Reply,
    Request,
    Route,
    bad_request,
    cites,
    cursor_page,
    decode_json_string,
    iso,
    iso_from_ns,
    now,
    parse_time,
)

try:  # comes with the langfuse SDK (opentelemetry-exporter-otlp-proto-http)
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
except ImportError:  # pragma: no cover - depends on the environment
    trace_service_pb2 = None
    json_format = None

OTLP_PATH = "/api/public/otel/v1/traces"
SDK_HEADERS = ("x-langfuse-sdk-name", "x-langfuse-sdk-version", "x-langfuse-public-key",
               "x-langfuse-ingestion-version")


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


@cites("web/src/pages/api/public/otel/v1/traces/index.ts")
def decode_otlp_spans(payload: bytes, content_type: str = "application/x-protobuf") -> list[ReceivedSpan]:
    """Every span of an ExportTraceServiceRequest (protobuf, or OTLP JSON), in order; a body that
    does not parse is a 400, as the route answers it."""
    if trace_service_pb2 is None:  # pragma: no cover - the SDK brings opentelemetry-proto
        raise RuntimeError("opentelemetry-proto is not installed")
    request = trace_service_pb2.ExportTraceServiceRequest()
    try:
        if "json" in content_type:
            json_format.Parse(payload.decode("utf-8"), request)
        else:
            request.ParseFromString(payload)
    except Exception:  # noqa: BLE001 - any decode failure is the client's fault
        kind = "JSON" if "json" in content_type else "Protobuf"
        raise ApiFailure(400, f"Failed to parse OTel {kind} Trace") from None
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
    EXPERIMENT_PREFIX = "langfuse.experiment."


# langfuse.experiment.<suffix> -> key in the observation's `experiment` dict (JSON-decoded where
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
        decoded = decode_json_string(top_level)
        if isinstance(decoded, dict):
            metadata.update(decoded)
        else:  # v5 sends non-dict metadata JSON-encoded under the bare prefix
            metadata["metadata"] = decoded
    for key, value in attributes.items():
        if key.startswith(prefix + "."):
            metadata[key[len(prefix) + 1:]] = decode_json_string(value) if decode_values else value
    return metadata


def _extract_tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(tag) for tag in value]
    if isinstance(value, str):
        if value.strip().startswith("["):
            parsed = decode_json_string(value)
            if isinstance(parsed, list):
                return [str(tag) for tag in parsed]
        if "," in value:
            return [tag.strip() for tag in value.split(",")]
        return [value]
    return []


@cites("packages/shared/src/server/otel/OtelIngestionProcessor.ts")
def extract_environment(attributes: dict[str, Any], resource: dict[str, Any]) -> str:
    """The environment attribute as sent (the OTel path keeps the raw value); "default" only
    when none is there. Whether a name the ingestion schema would refuse is turned into
    "default" here could not be confirmed from the server source, so it is kept as sent."""
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


@cites("packages/shared/src/server/otel/OtelIngestionProcessor.ts")
def observation_from_span(span: ReceivedSpan, project_id: str) -> tuple[dict, dict[str, str | None]]:
    """The Langfuse observation a span becomes (processToEvent: the parent id as sent, no
    `as_root` handling), with the trace attributes the span carries, and its raw input/output."""
    attributes, resource = span.attributes, span.resource_attributes
    decode = _sdk_major_version(span) >= 5
    start_iso = iso_from_ns(span.start_time_ns) if span.start_time_ns else None
    end_iso = iso_from_ns(span.end_time_ns) if span.end_time_ns else None
    start_iso = start_iso or end_iso or iso(now())
    end_iso = end_iso or start_iso

    completion_start = attributes.get(A.OBSERVATION_COMPLETION_START_TIME)
    completion_start_time = None
    for candidate in (completion_start, decode_json_string(completion_start)):
        moment = parse_time(candidate)
        if moment is not None:
            completion_start_time = iso(moment)
            break

    prompt_version = attributes.get(A.OBSERVATION_PROMPT_VERSION, attributes.get("langfuse.prompt.version"))
    if isinstance(prompt_version, str) and prompt_version.isdigit():
        prompt_version = int(prompt_version)

    usage_details = _with_total(decode_json_string(attributes.get(A.OBSERVATION_USAGE_DETAILS)))
    cost_details = _with_total(decode_json_string(attributes.get(A.OBSERVATION_COST_DETAILS)))
    model_parameters = decode_json_string(attributes.get(A.OBSERVATION_MODEL_PARAMETERS))
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
            experiment[key] = decode_json_string(value) if encoded else value

    latency = (span.end_time_ns - span.start_time_ns) / 1e9 if span.end_time_ns and span.start_time_ns else None
    time_to_first_token = None
    if completion_start_time is not None:
        time_to_first_token = (parse_time(completion_start_time) - parse_time(start_iso)).total_seconds()

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
        "input": decode_json_string(raw_input),
        "output": decode_json_string(raw_output),
        "metadata": {
            **_extract_metadata(resource, A.TRACE_METADATA, decode_values=decode),
            **_extract_metadata(attributes, A.OBSERVATION_METADATA, decode_values=decode),
            "resourceAttributes": resource,
            "scope": {"name": span.scope_name, "version": span.scope_version, "attributes": span.scope_attributes},
        },
        "level": level,
        "statusMessage": attributes.get(A.OBSERVATION_STATUS_MESSAGE) or span.status_message or None,
        "version": attributes.get(A.VERSION) or resource.get("service.version"),
        "environment": extract_environment(attributes, resource),
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
        # events_full carries the trace attributes a span holds on its own row.
        "traceName": attributes.get(A.TRACE_NAME),
        "traceTags": _extract_tags(attributes.get(A.TRACE_TAGS)),
        "sessionId": attributes.get(A.TRACE_SESSION_ID),
        "userId": attributes.get(A.TRACE_USER_ID),
    }
    raw = {"input": raw_input if raw_input is None or isinstance(raw_input, str) else json.dumps(raw_input),
           "output": raw_output if raw_output is None or isinstance(raw_output, str) else json.dumps(raw_output)}
    return observation, raw


@cites("packages/shared/src/server/otel/OtelIngestionProcessor.traceRoot.test.ts")
def is_trace_root(span: ReceivedSpan) -> bool:
    """A span with a parent span of its own is never the trace root, even marked `as_root`
    (issue #15860): only a span without a parent is."""
    return span.parent_span_id is None


def trace_update_from_span(span: ReceivedSpan, observation: dict) -> dict[str, Any]:
    """The trace fields one span contributes, like Langfuse's OTel ingestion.

    The root span (no parent) sets the trace's name, input/output, metadata and the trace
    attributes; another span sets the trace attributes it carries (the SDK copies
    `propagate_attributes(...)` onto every span); any span makes the trace exist.
    """
    attributes, resource = span.attributes, span.resource_attributes
    decode = _sdk_major_version(span) >= 5
    is_root = is_trace_root(span)
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
        update["input"] = (decode_json_string(attributes[A.TRACE_INPUT]) if attributes.get(A.TRACE_INPUT)
                           else observation["input"])
        update["output"] = (decode_json_string(attributes[A.TRACE_OUTPUT]) if attributes.get(A.TRACE_OUTPUT)
                            else observation["output"])
    else:
        update["input"] = decode_json_string(attributes.get(A.TRACE_INPUT))
        update["output"] = decode_json_string(attributes.get(A.TRACE_OUTPUT))
    return update


# --- the v2 observations `filter` -----------------------------------------------------------------
_FILTER_COLUMNS = {"environment": "environment", "type": "type", "name": "name", "traceId": "traceId",
                   "startTime": "startTime"}


def _matches(row: dict, condition: dict) -> bool:
    kind, column, operator, value = (condition.get(key) for key in ("type", "column", "operator", "value"))
    actual = row.get(_FILTER_COLUMNS[column])
    if kind == "stringOptions":
        return (actual in value) == (operator == "any of")
    if kind == "string":
        return actual == value
    moment, bound = parse_time(actual), parse_time(value)
    return {">": moment > bound, "<": moment < bound, ">=": moment >= bound, "<=": moment <= bound}[operator]


@cites("fern/apis/server/definition/observations-v2.yml")
def parse_filter(text: str) -> list[dict]:
    """The `filter` parameter: a JSON array of {type, column, operator, value}. Only the columns
    and operators the suite uses are played; anything else is refused rather than ignored."""
    try:
        conditions = json.loads(text)
    except ValueError:
        raise bad_request("Invalid filter: not JSON") from None
    operators = {"stringOptions": ("any of", "none of"), "string": ("=",), "datetime": (">", "<", ">=", "<=")}
    if not isinstance(conditions, list):
        raise bad_request("Invalid filter: expected an array of conditions")
    for condition in conditions:
        if not isinstance(condition, dict) or condition.get("column") not in _FILTER_COLUMNS:
            raise bad_request(f"Invalid filter column: {condition!r}")
        if condition.get("operator") not in operators.get(condition.get("type"), ()):
            raise bad_request(f"Invalid filter operator for {condition.get('type')}: {condition.get('operator')!r}")
        value = condition.get("value")
        if condition["type"] == "stringOptions" and not (isinstance(value, list)
                                                         and all(isinstance(v, str) for v in value)):
            raise bad_request("Invalid filter: stringOptions take a list of strings")
        if condition["type"] == "datetime" and parse_time(value) is None:
            raise bad_request("Invalid filter: datetime values are ISO 8601 times")
    return conditions


class OtlpResource:
    """Spans in, observations and traces kept, v2 observations out."""

    def _init_otlp(self) -> None:
        self._spans: list[ReceivedSpan] = []
        self._observations: dict[str, dict] = {}  # the UI's view: one per span id
        # events_full is a ReplacingMergeTree ordered by (project, minute of start_time, trace,
        # span_id, start_time): only a row with the same span id AND start time replaces one.
        self._observation_events: dict[tuple[str, int], dict] = {}
        self._raw_io: dict[str, dict[str, str | None]] = {}
        self._traces: dict[str, dict] = {}

    def _otlp_routes(self, p: str) -> list[Route]:
        return [Route("POST", f"{p}/otel/v1/traces", self._otel_traces, body="raw", family=OTLP, resource="ingestion"),
                Route("GET", f"{p}/v2/observations", self._list_observations_v2)]

    # --- what arrived -----------------------------------------------------------------------------
    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    @property
    def observations(self) -> dict[str, dict]:
        """One observation per span id, as Langfuse's UI lists them (it deduplicates)."""
        return self.snapshot(self._observations)

    @property
    def observation_events(self) -> list[dict]:
        """Every stored observation row, as the events table holds it (a resent span with a new
        start time is a second row); each carries `id` and `startTime`."""
        return self.snapshot(list(self._observation_events.values()))

    @cites("packages/shared/src/features/query/dataModel.ts")
    def root_events(self) -> list[dict]:
        """The events the v4 views read a trace's fields from: `parent_span_id = ''`
        (eventsTracesView.rootEventCondition)."""
        return [row for row in self.observation_events if row["parentObservationId"] is None]

    @cites("packages/shared/src/features/query/dataModel.ts")
    def score_trace_fields(self, trace_id: str | None) -> dict[str, Any]:
        """What a score's trace columns read on the v2 score views: a join on the trace's root
        event, `traceVersion = nullIf(version, '')`, `tags`, `traceName = COALESCE(trace_name, name)`.
        A trace without a root event gives none of them."""
        roots = [row for row in self.root_events() if row["traceId"] == trace_id]
        if not roots:
            return {"traceVersion": None, "tags": [], "traceName": None}
        root = roots[0]
        return {"traceVersion": root.get("version") or None, "tags": list(root.get("traceTags") or []),
                "traceName": root.get("traceName") or root.get("name")}

    @property
    def traces(self) -> dict[str, dict]:
        """Traces as the UI shows them (observation and score ids included)."""
        with self._lock:
            return {trace_id: self._trace_with_details(trace) for trace_id, trace in self._traces.items()}

    def otlp_headers(self) -> list[dict[str, str]]:
        """The Langfuse headers of each OTLP request (what sdkHeaders.ts reads)."""
        return [{name: request.headers.get(name) for name in SDK_HEADERS} for request in self.requests_to(OTLP_PATH)]

    # --- ingestion --------------------------------------------------------------------------------
    @cites("web/src/pages/api/public/otel/v1/traces/index.ts")
    def _otel_traces(self, request: Request) -> Reply:
        """Content type JSON or protobuf; an ingestion version above 4 is refused."""
        content_type = request.content_type.lower()
        if "application/json" not in content_type and "application/x-protobuf" not in content_type:
            return Reply(400, {"error": "Invalid content type"})
        version = request.headers.get("x-langfuse-ingestion-version")
        if version is not None and (not version.isdigit() or int(version) > 4):
            return Reply(400, {"error": f'Unsupported x-langfuse-ingestion-version: "{version}". '
                                        'Maximum supported: "4".'})
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
                observation["createdAt"] = iso(now())
            observation["updatedAt"] = iso(now())
            self._observations[span.span_id] = observation
            # One event row per span as it arrived, written without a lookup.
            self._observation_events[(span.span_id, span.start_time_ns)] = copy.deepcopy(observation)
            self._raw_io[span.span_id] = raw
            self._merge_trace(span.trace_id, trace_update_from_span(span, observation))
        if "json" in request.content_type:
            return Reply(200, {})
        return Reply(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString(),
                     content_type="application/x-protobuf")

    def _merge_trace(self, trace_id: str, update: dict[str, Any]) -> None:
        """Upsert a trace: non-null values win, metadata merges, tags accumulate, the earliest
        timestamp stays."""
        moment = iso(now())
        trace = self._traces.get(trace_id)
        if trace is None:
            trace = {"id": trace_id, "timestamp": update.get("timestamp") or moment, "name": None, "input": None,
                     "output": None, "sessionId": None, "release": None, "version": None, "userId": None,
                     "metadata": {}, "tags": [], "public": False, "bookmarked": False,
                     "environment": "default", "projectId": self.project_id, "createdAt": moment}
            self._traces[trace_id] = trace
        for key, value in update.items():
            if value is None:
                continue
            if key == "timestamp":
                if parse_time(value) < parse_time(trace["timestamp"]):
                    trace["timestamp"] = value
            elif key == "metadata":
                trace["metadata"] = {**(trace["metadata"] or {}), **value} if isinstance(value, dict) else value
            elif key == "tags":
                trace["tags"] = [*trace["tags"], *(tag for tag in value if tag not in trace["tags"])]
            else:
                trace[key] = value
        trace["updatedAt"] = moment

    def _trace_with_details(self, trace: dict) -> dict:
        result = copy.deepcopy(trace)
        observations = sorted((o for o in self._observations.values() if o["traceId"] == trace["id"]),
                              key=lambda o: o["startTime"])
        result.update(observations=[o["id"] for o in observations],
                      scores=[s["id"] for s in self._scores.values() if s.get("traceId") == trace["id"]])
        return result

    # --- the v2 observations read -----------------------------------------------------------------
    @cites("fern/apis/server/definition/observations-v2.yml")
    def _list_observations_v2(self, request: Request) -> Reply:
        """Every event row (duplicates count); `filter` wins over the query-parameter filters;
        `parseIoAsJson` is gone (input and output are raw strings)."""
        if (request.arg("parseIoAsJson") or "").lower() == "true":
            raise bad_request("parseIoAsJson is deprecated; input and output are always raw strings")
        observations = list(self._observation_events.values())
        if request.arg("filter"):
            for condition in parse_filter(request.arg("filter")):
                observations = [o for o in observations if _matches(o, condition)]
        else:
            observations = self._query_filtered(observations, request)
        observations.sort(key=lambda o: o["startTime"], reverse=True)
        chunk, meta = cursor_page(observations, request, max_limit=1000)
        groups = set(request.args("fields") or ["core", "basic"]) | {"core"}
        return Reply(200, {"data": [self._observation_v2(o, groups) for o in chunk], "meta": meta})

    def _query_filtered(self, observations: list[dict], request: Request) -> list[dict]:
        for parameter in ("traceId", "name", "level", "version", "parentObservationId"):
            wanted = request.arg(parameter)
            if wanted is not None:
                observations = [o for o in observations if (o.get(parameter) or "") == wanted]
        if request.arg("type"):
            observations = [o for o in observations if o["type"] == request.arg("type").upper()]
        environments = request.args("environment")
        if environments:
            observations = [o for o in observations if o["environment"] in environments]
        start, end = request.time_arg("fromStartTime"), request.time_arg("toStartTime")
        if start is not None:
            observations = [o for o in observations if parse_time(o["startTime"]) >= start]
        if end is not None:
            observations = [o for o in observations if parse_time(o["startTime"]) < end]
        return observations

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
