"""The stand-in's plumbing: HTTP, routes, auth, faults, recorded requests, the server's two
error shapes, rate limits, request bodies checked against Langfuse's OpenAPI spec, and the
citations that tie each rule to the server file it mirrors.

Every rule of the stand-in is a function marked `@cites("<path in langfuse/langfuse>")`;
`server_paths.txt` (beside this file) lists the paths the research read, and
tests/servers/langfuse_tests/test_citations.py checks that every citation is one of them and that
every function that refuses a request carries one. A rule without a source is a guess, and
a guess is what let the suite's dashboards pass here and fail on every real server.
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
import time
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

PROJECT_ROOT = Path(__file__).resolve().parents[3]
SPEC_ENV_VAR = "PENPAL_LANGFUSE_OPENAPI"
SERVER_PATHS = Path(__file__).with_name("server_paths.txt")
SERVER_VERSION = "4.16.0"  # what /api/public/health reports; the stand-in follows the v4 source read for issue 30


# --- citations ------------------------------------------------------------------------------------
CITATIONS: dict[str, tuple[str, ...]] = {}  # "module.function" -> the server paths it mirrors


def cites(*paths: str) -> Callable:
    """Mark a function as mirroring these files of langfuse/langfuse (or of the SDK)."""
    if not paths:
        raise ValueError("cite at least one server path")

    def mark(function: Callable) -> Callable:
        function.__cites__ = paths
        CITATIONS[f"{function.__module__}.{function.__qualname__}"] = paths
        return function

    return mark


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
    never changes server state, like a request that never reached Langfuse's database. A status
    fault answers in the route's own error shape (a 429 as the rate limiter answers it).
    """

    kind: str = "ok"  # ok | status | hang | drop | delay
    status: int = 200
    retry_after: str | None = None  # Retry-After header value, with a status fault
    hang_s: float = 0.0  # hang: seconds before the connection is closed unanswered; delay: pause
    message: str | None = None  # a status fault's error message (default "injected HTTP <status>")


OK = Fault()
DROP = Fault("drop")  # close the connection without an answer, as a crashing proxy or server would


def server_error(status: int = 500) -> Fault:
    return Fault("status", status)


def refusal(message: str, status: int = 400) -> Fault:
    """The server refusing this one request with `message` (in the route's error shape)."""
    return Fault("status", status, message=message)


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
    response: Any = None  # the JSON the server answered (None for protobuf, text, empty or no answer)
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names; no Authorization

    @property
    def json(self) -> Any:
        return self.body


FaultPlan = Callable[[RecordedRequest], Fault]


def no_faults(request: RecordedRequest) -> Fault:
    return OK


# --- small helpers --------------------------------------------------------------------------------
def now() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    """UTC with milliseconds and a Z, as Langfuse (JavaScript's toISOString) writes times."""
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def iso_from_ns(nanoseconds: int) -> str:
    return iso(datetime.fromtimestamp(nanoseconds / 1e9, tz=timezone.utc))


def parse_time(value: Any, *, require_offset: bool = False) -> datetime | None:
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


def decode_json_string(value: Any) -> Any:
    """A JSON-encoded string as its value; anything else (and plain text) unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def new_id() -> str:
    return str(uuid.uuid4())


def newest_first(records: Iterable[dict], key: str = "createdAt") -> list[dict]:
    """Newest first; among equal times, the later inserted first (stable sort on the reversed list)."""
    return sorted(reversed(list(records)), key=lambda record: record.get(key) or "", reverse=True)


# --- errors: the server's two shapes --------------------------------------------------------------
STABLE, STRUCTURED, OTLP = "stable", "structured", "otlp"  # route families, by their error contract
# web/src/features/public-api/server/structured-public-api-error-contract.ts: status -> code
_STRUCTURED_CODES = {400: "invalid_request", 401: "authentication_failed", 403: "access_denied",
                     404: "resource_not_found", 405: "method_not_allowed", 409: "conflict", 429: "rate_limited"}


class ApiFailure(Exception):
    """A refusal, rendered in the shape of the route's family.

    Stable routes (withMiddlewares.ts): `{"message", "error": <error class name or zod issues>}`.
    Unstable routes (the structured contract): `{"message", "code", "details"?}`; a request
    body that fails its zod schema is `invalid_body` with `details.issues`.
    """

    def __init__(self, status: int, message: str, *, error: str | None = None, code: str | None = None,
                 details: dict | None = None, issues: list[dict] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.error, self.code = status, message, error, code
        self.details, self.issues = details, issues

    def body(self, family: str) -> dict:
        if family == STRUCTURED:
            if self.issues is not None:
                return {"message": "Invalid request body", "code": "invalid_body", "details": {"issues": self.issues}}
            body = {"message": self.message, "code": self.code or _STRUCTURED_CODES.get(self.status, "internal_error")}
            if self.details:
                body["details"] = self.details
            return body
        body: dict[str, Any] = {"message": self.message}
        if self.issues is not None:
            body["error"] = self.issues
        elif self.error is not None:
            body["error"] = self.error
        return body


def issue(path: str | list, message: str, **fields: Any) -> dict:
    """One zod issue as the server reports it."""
    where = path if isinstance(path, list) else [part for part in str(path).split(".") if part]
    return {"code": fields.pop("code", "custom"), "path": where, "message": message, **fields}


def invalid(path: str | list, message: str, **fields: Any) -> ApiFailure:
    """A request that fails its zod schema: 400 "Invalid request data" (stable) or invalid_body."""
    return ApiFailure(400, "Invalid request data", issues=[issue(path, message, **fields)])


def bad_request(message: str, **details: Any) -> ApiFailure:
    return ApiFailure(400, message, error="InvalidRequestError", code="invalid_request", details=details or None)


def not_found(message: str) -> ApiFailure:
    return ApiFailure(404, message, error="LangfuseNotFoundError", code="resource_not_found")


def conflict(message: str) -> ApiFailure:
    return ApiFailure(409, message, error="ConflictError", code="conflict")


# --- rate limits ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RateLimit:
    """A plan's limit on one resource: `points` requests per fixed window of `window_s` seconds
    (Cloud Hobby: public-api 30 per 60 s). Tests shorten the window so they take seconds."""

    points: int
    window_s: float = 60.0
    resource: str = "public-api"


@dataclass
class _Window:
    started: float
    consumed: int = 0


class RateLimiter:
    """Fixed windows per resource, as rate-limiter-flexible keeps them for an organisation."""

    def __init__(self, limits: Iterable[RateLimit]) -> None:
        self.limits = {limit.resource: limit for limit in limits}
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()

    @cites("web/src/features/public-api/server/RateLimitService.ts")
    def consume(self, resource: str | None) -> dict[str, Any] | None:
        """None when the request may go on, else what the 429 reports.

        RateLimitService.checkRateLimit consumes a point, then refuses when fewer than one is
        left (`remainingPoints < 1`): a limit of 30 lets 29 requests through per window.
        """
        limit = self.limits.get(resource or "")
        if limit is None:
            return None
        with self._lock:
            clock = time.monotonic()
            window = self._windows.get(limit.resource)
            if window is None or clock - window.started >= limit.window_s:
                window = self._windows[limit.resource] = _Window(clock)
            window.consumed += 1
            remaining = max(limit.points - window.consumed, 0)
            if remaining >= 1:
                return None
            before_next_ms = max((window.started + limit.window_s - clock) * 1000, 1)
        return {"limit": limit.points, "remaining": remaining, "before_next_ms": before_next_ms}


@cites("web/src/features/public-api/server/RateLimitService.ts",
       "web/src/features/public-api/server/structured-public-api-error-contract.ts")
def rate_limit_reply(family: str, state: dict[str, Any]) -> Reply:
    """The 429: Retry-After (whole seconds), X-RateLimit-*; the text `429 - rate limit exceeded`
    on stable routes (sendRateLimitResponse), the structured `rate_limited` body on unstable ones."""
    seconds = math.ceil(state["before_next_ms"] / 1000)
    reset = datetime.fromtimestamp(time.time() + state["before_next_ms"] / 1000, tz=timezone.utc)
    headers = {"Retry-After": str(seconds), "X-RateLimit-Limit": str(state["limit"]),
               "X-RateLimit-Remaining": str(state["remaining"]),
               # JavaScript's Date.toString()
               "X-RateLimit-Reset": reset.strftime("%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)")}
    if family == STRUCTURED:
        return Reply(429, {"message": "Rate limit exceeded", "code": "rate_limited",
                           "details": {"retryAfterSeconds": seconds, "limit": state["limit"],
                                       "remaining": state["remaining"], "resetAt": iso(reset)}}, headers=headers)
    return Reply(429, b"429 - rate limit exceeded", content_type="text/plain", headers=headers)


# --- the OpenAPI spec: request (and response) validation ------------------------------------------
_OPENAPI_ONLY_KEYS = frozenset({"discriminator", "example", "examples", "xml", "externalDocs"})

# Where the spec and the real server disagree, the server wins (the SDK is written against it):
# score metadata may be any JSON value ("Unlike the generated request model, the API accepts any
# JSON value as score metadata", langfuse/_task_manager/score_consumer.py).
_SPEC_OVERRIDES: dict[tuple[str, ...], Any] = {
    ("CreateScoreRequest", "properties", "metadata"): {"description": "any JSON value"},
}


def _to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema -> JSON Schema 2020-12: `nullable` becomes a null alternative, component
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


class SchemaCache:
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


_SPECS: dict[tuple[str, float], SchemaCache] = {}
_SPECS_LOCK = threading.Lock()


def load_spec(path: Path) -> SchemaCache:
    """The spec at `path`, parsed once per process (and again only when the file changes)."""
    key = (str(path.resolve()), path.stat().st_mtime)
    with _SPECS_LOCK:
        if key not in _SPECS:
            _SPECS[key] = SchemaCache(OpenAPISpec(path))
        return _SPECS[key]


# --- requests, replies, routes --------------------------------------------------------------------
@dataclass
class Route:
    method: str
    template: str  # the spec's path template, e.g. /api/public/v2/prompts/{promptName}
    handler: Callable[[Request], Reply]
    body: str | None = "schema"  # schema | json (checked in code) | raw (OTLP, scores) | None
    family: str = STABLE  # which error contract the route answers with
    resource: str | None = "public-api"  # the rate-limit bucket (createAuthedProjectAPIRoute's default)
    auth: bool = True
    pattern: Any = field(init=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.template))
        self.pattern = re.compile(f"^{regex}/?$")


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, str]  # path parameters, URL-decoded
    query: dict[str, list[str]]
    body: Any
    raw: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default

    def args(self, name: str) -> list[str]:
        """A repeated or comma-separated parameter as a list."""
        return [part for value in self.query.get(name, []) for part in value.split(",") if part]

    @cites("web/src/features/public-api/server/withMiddlewares.ts")
    def int_arg(self, name: str, default: int, *, minimum: int = 1, maximum: int | None = None) -> int:
        value = self.arg(name)
        if value is None or value == "":
            return default
        try:
            number = int(value)
        except ValueError:
            raise invalid(name, "Expected number") from None
        if number < minimum or (maximum is not None and number > maximum):
            raise invalid(name, f"Number must be between {minimum} and {maximum}")
        return number

    @cites("web/src/features/public-api/server/withMiddlewares.ts")
    def time_arg(self, name: str) -> datetime | None:
        value = self.arg(name)
        if value is None or value == "":
            return None
        moment = parse_time(value)
        if moment is None:
            raise invalid(name, "Invalid datetime")
        return moment


@dataclass
class Reply:
    status: int
    body: Any = None  # JSON-serialisable, or bytes sent as they are
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def page(items: list[dict], request: Request, *, max_limit: int = 100) -> dict:
    """Page-based pagination as Langfuse's v1/v2 list endpoints answer it."""
    number = request.int_arg("page", 1)
    limit = request.int_arg("limit", 50, maximum=max_limit)
    total = len(items)
    return {"data": items[(number - 1) * limit: number * limit],
            "meta": {"page": number, "limit": limit, "totalItems": total, "totalPages": math.ceil(total / limit)}}


@cites("web/src/features/public-api/server/withMiddlewares.ts")
def cursor_page(items: list[dict], request: Request, *, max_limit: int) -> tuple[list[dict], dict]:
    """Cursor-based pagination (v3 scores, v2 observations): the cursor encodes an offset."""
    limit = request.int_arg("limit", 50, maximum=max_limit)
    cursor = request.arg("cursor")
    offset = 0
    if cursor:
        try:
            offset = int(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
        except (ValueError, UnicodeDecodeError):
            raise invalid("cursor", "Invalid cursor") from None
    chunk = items[offset: offset + limit]
    meta: dict[str, Any] = {"limit": limit}
    if offset + limit < len(items):
        meta["cursor"] = base64.urlsafe_b64encode(str(offset + limit).encode()).decode().rstrip("=")
    return chunk, meta


# --- the server core ------------------------------------------------------------------------------
class ServerCore:
    """Lifecycle, HTTP, routing, auth, rate limits, faults and recorded requests.

    The resources (tests/servers/langfuse/*.py) add routes and state; `LangfuseCompatServer`
    puts them together.
    """

    def __init__(self, *, public_key: str, secret_key: str, project_id: str, faults: FaultPlan | None,
                 openapi_spec: Path | None, check_responses: bool,
                 rate_limit: RateLimit | Iterable[RateLimit] | None, version: str) -> None:
        self.public_key = public_key
        self.secret_key = secret_key
        self.project_id = project_id
        self.faults: FaultPlan = faults or no_faults
        self.version = version
        limits = [rate_limit] if isinstance(rate_limit, RateLimit) else list(rate_limit or [])
        self.rate_limiter = RateLimiter(limits)
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self._connections: set[Any] = set()  # open client sockets, closed by stop()

        self._spec: SchemaCache | None = None
        if openapi_spec is not None and Path(openapi_spec).is_file() and jsonschema is not None:
            self._spec = load_spec(Path(openapi_spec))
        self.validates_bodies = self._spec is not None
        self.check_responses = check_responses and self._spec is not None
        self._requests: list[RecordedRequest] = []
        self._attempts: Counter[tuple[str, str]] = Counter()
        self._schema_errors: list[str] = []
        self._response_schema_errors: list[str] = []
        self._routes: list[Route] = []

    # --- lifecycle --------------------------------------------------------------------------------
    def start(self) -> ServerCore:
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

    def __enter__(self):
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
        """The Authorization header for raw HTTP calls."""
        token = base64.b64encode(f"{self.public_key}:{self.secret_key}".encode()).decode("ascii")
        return {"Authorization": f"Basic {token}"}

    # --- what arrived -----------------------------------------------------------------------------
    def snapshot(self, value: Any) -> Any:
        with self._lock:
            return copy.deepcopy(value)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str, method: str | None = None) -> list[RecordedRequest]:
        """Requests whose path is `path` (and method `method`, when given)."""
        return [r for r in self.requests if r.path.rstrip("/") == path.rstrip("/")
                and (method is None or r.method == method.upper())]

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

    # --- request handling (called by the handler thread) ------------------------------------------
    def _arrive(self, method: str, path: str, query: dict[str, list[str]], body: Any,
                headers: dict[str, str]) -> tuple[int, RecordedRequest]:
        flat_query = {key: values[0] if len(values) == 1 else list(values) for key, values in query.items()}
        with self._lock:
            self._attempts[(method, path)] += 1
            record = RecordedRequest(method, path, flat_query, copy.deepcopy(body), self._attempts[(method, path)],
                                     headers=headers)
            self._requests.append(record)
            return len(self._requests) - 1, record

    def _finish(self, index: int, status: int | None, fault: str, response: Any = None) -> None:
        with self._lock:
            self._requests[index] = replace(self._requests[index], status=status, fault=fault,
                                            response=copy.deepcopy(response))

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def route(self, method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
        """The route for the request, its path parameters, and whether the path exists at all."""
        path_known = False
        for route in self._routes:
            match = route.pattern.match(path)
            if match:
                path_known = True
                if route.method == method:
                    return route, {key: unquote(value) for key, value in match.groupdict().items()}, True
        return None, {}, path_known

    @cites("web/src/features/public-api/server/createAuthedProjectAPIRoute.ts")
    def _authorized(self, header: str | None) -> None:
        """Basic auth with the project's keys; 401 with the server's wording otherwise."""
        if not header:
            raise ApiFailure(401, "No authorization header")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "basic":
            raise ApiFailure(401, "Invalid authorization header")
        try:
            public_key, _, secret_key = base64.b64decode(credentials).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            raise ApiFailure(401, "Invalid authorization header. Confirm that you've configured the "
                                  "correct host.") from None
        if public_key != self.public_key or secret_key != self.secret_key:
            raise ApiFailure(401, "Invalid credentials. Confirm that you've configured the correct host.")

    @cites("web/src/features/public-api/server/withMiddlewares.ts")
    def _unrouted(self, path_known: bool) -> ApiFailure:
        """405 for a known path with another method, 404 for an unknown path."""
        if path_known:
            return ApiFailure(405, "Method not allowed", error="MethodNotAllowedError")
        return ApiFailure(404, "Route not found", error="NotFoundError")

    def family_of(self, path: str, method: str) -> str:
        route, _, _ = self.route(method, path)
        return route.family if route is not None else STABLE

    def route_available(self, route: Route) -> bool:
        """False for a route this server plays as absent (e.g. no dashboards API)."""
        return True

    @cites("web/src/features/public-api/server/createAuthedProjectAPIRoute.ts",
           "web/src/features/public-api/server/withMiddlewares.ts")
    def _dispatch(self, method: str, path: str, query: dict[str, list[str]], headers: Any, raw: bytes,
                  body: Any, body_is_json: bool) -> Reply:
        """Route, authenticate, rate-limit (after auth, before the body is read), check the body
        against its schema, then handle; a body that is not JSON is a zod error."""
        route, params, path_known = self.route(method, path)
        if route is None:
            raise self._unrouted(path_known)
        if not self.route_available(route):
            raise self._unrouted(False)
        if route.auth:
            self._authorized(headers.get("Authorization"))
        limited = self.rate_limiter.consume(route.resource) if route.auth else None
        if limited is not None:
            return rate_limit_reply(route.family, limited)
        if route.body in ("schema", "json") and method in ("POST", "PUT", "PATCH"):
            if not body_is_json:
                raise invalid([], "Body must be JSON")
            if route.body == "schema":
                self.check_body(method, route.template, path, body)
        request = Request(method, path, params, query, body, raw, headers.get("Content-Type") or "",
                          {key.lower(): value for key, value in headers.items()})
        with self._lock:
            reply = route.handler(request)
        if self.check_responses and isinstance(reply.body, (dict, list)):
            self._check_response(method, route.template, path, reply)
        return reply

    @cites("web/src/features/public-api/server/createAuthedProjectAPIRoute.ts",
           "web/src/features/public-api/server/withMiddlewares.ts")
    def check_body(self, method: str, template: str, path: str, body: Any) -> None:
        """Refuse a body Langfuse's OpenAPI spec refuses (the spec's schema stands in for zod's)."""
        if self._spec is None:
            return
        schema = self._spec.request(method, template)
        if schema is None:
            return
        reasons = self._spec.spec.errors(schema, body)
        if reasons:
            with self._lock:
                self._schema_errors.extend(f"{method} {path}: {reason}" for reason in reasons)
            raise ApiFailure(400, "Invalid request data", issues=[issue([], reason) for reason in reasons])

    def _check_response(self, method: str, template: str, path: str, reply: Reply) -> None:
        assert self._spec is not None
        schema = self._spec.response(method, template, reply.status)
        if not schema:
            return
        reasons = self._spec.spec.errors(schema, reply.body)
        if reasons:
            with self._lock:
                self._response_schema_errors.extend(f"{method} {path} -> {reply.status}: {r}" for r in reasons)

    def injected(self, fault: Fault, family: str) -> Reply:
        """A status fault in the route's error shape; a 429 as the rate limiter answers it."""
        if fault.status == 429:
            seconds = float(fault.retry_after) if fault.retry_after else 1.0
            reply = rate_limit_reply(family, {"limit": 1, "remaining": 0, "before_next_ms": max(seconds, 0) * 1000})
            if fault.retry_after is not None:
                reply.headers["Retry-After"] = fault.retry_after
            else:
                reply.headers.pop("Retry-After", None)
            return reply
        failure = ApiFailure(fault.status, fault.message or f"injected HTTP {fault.status}", error="InjectedError",
                             code=_STRUCTURED_CODES.get(fault.status, "internal_error"))
        headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
        return Reply(fault.status, failure.body(family), headers=headers)


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


@cites("web/src/pages/api/public/otel/v1/traces/index.ts")
def _decompress(raw: bytes, encoding: str) -> bytes:
    """gzip (the OTLP route gunzips) or deflate; a body that does not decode is a 400."""
    encoding = encoding.lower().strip()
    if not raw or encoding in ("", "identity"):
        return raw
    try:
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "deflate":
            return zlib.decompress(raw)
    except (OSError, zlib.error):
        raise ApiFailure(400, "Failed to decompress request body") from None
    raise ApiFailure(415, f"Unsupported Content-Encoding: {encoding}")


def _handler_for(server: ServerCore) -> type[BaseHTTPRequestHandler]:
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

        def _send(self, reply: Reply) -> None:
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
            decode_error: ApiFailure | None = None
            try:
                raw = _decompress(raw, self.headers.get("Content-Encoding") or "")
            except ApiFailure as error:
                decode_error = error
            if decode_error is None and raw and "protobuf" not in (self.headers.get("Content-Type") or ""):
                try:
                    body, body_is_json = json.loads(raw), True
                except ValueError:
                    pass
            headers = {key.lower(): value for key, value in self.headers.items() if key.lower() != "authorization"}
            index, record = server._arrive(method, path, query, body, headers)
            family = server.family_of(path, method)

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
                reply = server.injected(fault, family)
                server._finish(index, fault.status, fault.kind,  # before the client can look
                               reply.body if isinstance(reply.body, (dict, list)) else None)
                self._send(reply)
                return

            try:
                if decode_error is not None:
                    raise decode_error
                reply = server._dispatch(method, path, query, self.headers, raw, body, body_is_json)
            except ApiFailure as failure:
                reply = Reply(failure.status, failure.body(family))
            except Exception as error:  # noqa: BLE001 - a bug here must reach the test as a 500
                reply = Reply(500, {"message": f"langfuse stand-in internal error: {error!r}"})
            server._finish(index, reply.status, fault.kind,  # before the client can look
                           reply.body if isinstance(reply.body, (dict, list)) else None)
            self._send(reply)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815 - http.server naming

    return Handler
