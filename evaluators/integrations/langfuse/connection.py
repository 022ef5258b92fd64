"""One Langfuse client per process and key, wired so that nothing it drops goes unnoticed.

The Langfuse SDK sends spans through OpenTelemetry's batch processor and, when the server
fails, gives up after a few retries with only a log line. Five things are added here:

- the server's version is read from its health endpoint once, for the reports: what the
  server takes is found by trying it (score batches, see scores.py), not by a version number;
- span ids and start times come from a plan set just before each span starts
  (`seeded_span`), so the same case always produces the same observation ids *and* start
  times. Langfuse keeps observations as append-only events, one row per span id and start
  time, so anything else would add a row per push;
- a trace's root span takes the trace id from the same plan (`seeded_trace`) and has no
  parent. The SDK's own way to choose a trace id (`trace_context`) gives the root a random
  parent id, and Langfuse v4 reads a score's trace version, tags and name from the trace's
  event *without* a parent (packages/shared/src/features/query/dataModel.ts): such a trace
  has none, and per-version score charts would show no version;
- the OTLP exporter is wrapped so each span's outcome (delivered, or failed) is recorded,
  a span Langfuse already has is never exported again, and the SDK's warnings are
  captured, so a run can say how many spans did not arrive and why;
- flushing and shutting down happen in a worker thread that is waited for a bounded time,
  because the SDK's own flush blocks for as long as a hanging server keeps it.

The SDK keeps one client per public key for the whole process and ignores a second
client's tracer provider; `connect` mirrors that with its own registry, so a second push in
the same process reuses the same recording exporter instead of silently bypassing it.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import importlib.metadata
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import requests
from langfuse import Langfuse
from opentelemetry import context as otel_context
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, Tracer, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator

from evaluators.integrations.langfuse.rest import MAX_RETRY_AFTER_S, LangfuseRest
from evaluators.integrations.langfuse.settings import LangfuseConfigError, LangfuseSettings

OTLP_PATH = "/api/public/otel/v1/traces"
HEALTH_PATH = "/api/public/health"
SDK_LOGGERS = ("langfuse", "opentelemetry")
RATE_LIMITED_EXPORTS = 3  # exports tried again after a 429's wait, before the spans count as undelivered


def server_version(settings: LangfuseSettings) -> str | None:
    """The version the health endpoint reports (web/src/pages/api/public/health.ts), for the
    reports; None when it cannot be read (the calls that follow report an unreachable server
    themselves)."""
    try:
        answer = httpx.get(f"{settings.base_url}{HEALTH_PATH}", timeout=settings.timeout_s)
        version = answer.json().get("version")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return str(version) if version else None


# --- deterministic trace ids, span ids and start times ---------------------------------------------
# Each holds a one-element list: the next span started in this context takes (and consumes) it.
_span_seed: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("penpal_span_seed", default=None)
_span_start: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("penpal_span_start", default=None)
_trace_seed: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("penpal_trace_seed", default=None)


def span_id_for(seed: str) -> str:
    """The 16-hex-digit span id a seed produces (never zero, which OpenTelemetry reserves)."""
    value = int(hashlib.sha256(f"penpal-eval/span/{seed}".encode()).hexdigest()[:16], 16)
    return format(value or 1, "016x")


class SeededIdGenerator(IdGenerator):
    """Span and trace ids from the seeds in context, random ones otherwise (spans we did not create).

    OpenTelemetry asks for a trace id only for a span without a valid parent, so a seeded
    trace id always belongs to a root span.
    """

    def generate_span_id(self) -> int:
        pending = _span_seed.get()
        if pending:
            return int(span_id_for(pending.pop()), 16)
        return random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        pending = _trace_seed.get()
        if pending:
            return int(pending.pop(), 16)
        return random.getrandbits(128) or 1


@contextmanager
def seeded_trace(trace_id: str) -> Iterator[None]:
    """The next span started inside is the root of trace `trace_id` (32 hex digits): no span
    around it becomes its parent, and it takes this trace id. Start the span inside the `with`
    (the SDK creates it on entering its own context manager)."""
    token = _trace_seed.set([trace_id])
    detached = otel_context.attach(otel_context.Context())  # no current span: the next one is a root
    try:
        yield
    finally:
        otel_context.detach(detached)
        _trace_seed.reset(token)


@contextmanager
def seeded_span(seed: str, start_ns: int | None = None) -> Iterator[None]:
    """The first span started inside takes its id from `seed` (and starts at `start_ns` when
    given); later ones are not affected."""
    token = _span_seed.set([seed])
    start_token = _span_start.set([start_ns] if start_ns is not None else None)
    try:
        yield
    finally:
        _span_start.reset(start_token)
        _span_seed.reset(token)


class PlannedStartTracerProvider(TracerProvider):
    """A tracer provider whose tracers start a span at the planned time when one is set.

    The Langfuse SDK starts spans without a start time (so "now"); the record knows when the
    call happened, and only a fixed start time keeps a resent span from becoming a second row.
    """

    def get_tracer(self, *args, **kwargs):  # noqa: ANN002, ANN003 - TracerProvider's signature
        tracer = super().get_tracer(*args, **kwargs)
        if isinstance(tracer, Tracer) and not getattr(tracer, "_penpal_planned_start", False):
            start_span = tracer.start_span

            def planned_start_span(*span_args, **span_kwargs):  # noqa: ANN002, ANN003
                planned = _span_start.get()
                if planned and span_kwargs.get("start_time") is None:
                    span_kwargs["start_time"] = planned.pop()
                return start_span(*span_args, **span_kwargs)

            tracer.start_span = planned_start_span  # this provider's tracers only
            tracer._penpal_planned_start = True
        return tracer


# --- delivery accounting --------------------------------------------------------------------------
class LastAnswer:
    """The status and Retry-After of the OTLP exporter's last HTTP answer in this thread (a
    `requests` response hook): the exporter reports only success or failure."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self, response, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003 - requests' hook signature
        self._local.answer = (response.status_code, response.headers.get("Retry-After"))
        return response

    def rate_limit_wait(self) -> float | None:
        """Seconds the server asked for, when the last answer was a 429 (once per answer)."""
        status, retry_after = getattr(self._local, "answer", (None, None))
        self._local.answer = (None, None)
        if status != 429:
            return None
        try:
            return max(float(retry_after), 0.0) if retry_after else 1.0
        except ValueError:
            return 1.0


class RecordingSpanExporter(SpanExporter):
    """Passes spans to the real exporter, remembers which arrived, and never exports a span id
    Langfuse already has (from this process or, via `know`, from the run's ledger).

    OpenTelemetry's exporter honours Retry-After only within its own timeout; a rate-limited
    export (Langfuse Cloud counts ingestion per minute) is tried again after the wait the
    server asked for, up to a minute, a few times, before it counts as undelivered.
    """

    def __init__(self, inner: SpanExporter, last_answer: LastAnswer | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.inner = inner
        self.last_answer = last_answer
        self._sleep = sleep
        self._lock = threading.Lock()
        self._delivered: set[int] = set()  # span ids Langfuse has
        self._resend: set[int] = set()  # span ids to send once more although delivered (asked for)
        # Told of each batch Langfuse took, as (span id, start time in ns) pairs, from the export
        # thread: the publisher records them in the run's ledger at once, so a process killed
        # mid-push has its delivered spans on record and sends again at most the batch in flight.
        self.on_delivered: Callable[[list[tuple[int, int]]], None] | None = None

    def know(self, span_ids: Iterable[int]) -> None:
        """These spans are in Langfuse already (the ledger says so): they are not exported again."""
        with self._lock:
            self._delivered |= set(span_ids)

    def resend(self, span_ids: Iterable[int]) -> None:
        """Export these once more although Langfuse has them (a republish the user asked for)."""
        with self._lock:
            self._resend |= set(span_ids)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            fresh = [span for span in spans
                     if span.context.span_id not in self._delivered or span.context.span_id in self._resend]
        if not fresh:
            return SpanExportResult.SUCCESS
        result = self._export(fresh)
        for _ in range(RATE_LIMITED_EXPORTS):
            wait = self.last_answer.rate_limit_wait() if self.last_answer is not None else None
            if result is SpanExportResult.SUCCESS or wait is None or wait > MAX_RETRY_AFTER_S:
                break
            self._sleep(wait)
            result = self._export(fresh)
        if result is SpanExportResult.SUCCESS:
            ids = {span.context.span_id for span in fresh}
            with self._lock:
                self._delivered |= ids
                self._resend -= ids
            if (listener := self.on_delivered) is not None:
                try:
                    listener([(span.context.span_id, span.start_time) for span in fresh])
                except Exception:  # noqa: BLE001 - a ledger that cannot be written is reported at the end
                    logging.getLogger(__name__).exception("recording delivered spans failed")
        return result

    def _export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            return self.inner.export(spans)
        except Exception:  # noqa: BLE001 - an exporter bug is a failed delivery, not a crash
            logging.getLogger(__name__).exception("span export raised")
            return SpanExportResult.FAILURE

    def delivered(self, span_ids: Iterable[int]) -> set[int]:
        with self._lock:
            return {span_id for span_id in span_ids if span_id in self._delivered}

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _first_words(message: str, limit: int) -> str:
    """The message's first line, kept to `limit` characters at a word boundary, saying so when it is cut.

    A cut mid-word ("while exporting spans b") reads like a different message.
    """
    lines = message.strip().splitlines() or [""]
    first = lines[0].strip()
    rest = len(message.strip()) - len(first)
    if len(first) > limit:
        kept = first[:limit].rsplit(" ", 1)[0] if " " in first[:limit] else first[:limit]
        rest += len(first) - len(kept)
        first = kept
    return first + (f" [{rest} more characters not shown]" if rest > 0 else "")


class CapturedLogs(logging.Handler):
    """The SDK's warnings and errors, kept (with secrets masked) so a report can show them."""

    def __init__(self, secrets: Sequence[str]) -> None:
        super().__init__(level=logging.WARNING)
        self._secrets = [secret for secret in secrets if secret]
        self._lock_messages = threading.Lock()
        self.messages: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed log record must not break the run
            message = str(record.msg)
        for secret in self._secrets:
            message = message.replace(secret, "***")
        with self._lock_messages:
            self.messages[f"{record.name}: {_first_words(message, 300)}"] += 1

    def since(self, mark: Counter[str]) -> list[str]:
        """Messages logged after `mark` (a copy of `messages`), with their counts."""
        with self._lock_messages:
            newer = self.messages - mark
        return [f"{text} (x{count})" if count > 1 else text for text, count in newer.most_common()]

    def mark(self) -> Counter[str]:
        with self._lock_messages:
            return Counter(self.messages)


# --- the connection -------------------------------------------------------------------------------
def exporter_headers(settings: LangfuseSettings) -> dict[str, str]:
    """The headers SDK 5's own exporter sends (langfuse/_client/span_processor.py): Basic auth,
    the SDK's name and version, the public key and ingestion version 4."""
    token = base64.b64encode(f"{settings.public_key}:{settings.secret_key}".encode()).decode("ascii")
    return {"Authorization": f"Basic {token}", "x-langfuse-sdk-name": "python",
            "x-langfuse-sdk-version": importlib.metadata.version("langfuse"),
            "x-langfuse-public-key": settings.public_key, "x-langfuse-ingestion-version": "4"}


def _exporter(settings: LangfuseSettings, last_answer: LastAnswer) -> OTLPSpanExporter:
    """The OTLP exporter the SDK would build: gzip protobuf with its headers to Langfuse's endpoint."""
    session = requests.Session()
    session.hooks["response"].append(last_answer)
    return OTLPSpanExporter(endpoint=f"{settings.base_url}{OTLP_PATH}", headers=exporter_headers(settings),
                            timeout=settings.timeout_s, compression=Compression.Gzip, session=session)


def run_bounded(action, timeout_s: float, name: str) -> bool:
    """Run `action` in a daemon thread; True when it finished within `timeout_s`.

    A hanging server can hold the SDK's flush for minutes; the caller reports what was not
    confirmed instead of waiting, and a daemon thread never keeps the process alive.
    """
    done = threading.Event()

    def target() -> None:
        try:
            action()
        finally:
            done.set()

    threading.Thread(target=target, name=f"penpal-langfuse-{name}", daemon=True).start()
    return done.wait(timeout_s)


@dataclass
class LangfuseConnection:
    settings: LangfuseSettings
    client: Langfuse
    provider: TracerProvider
    exporter: RecordingSpanExporter
    logs: CapturedLogs
    environment: str
    server_version: str | None = None  # as the health endpoint reported it
    _shut_down: bool = field(default=False, repr=False)

    @property
    def api(self):
        """The SDK's synchronous REST client (scores, configs, datasets, prompts, traces)."""
        return self.client.api

    def describe(self) -> str:
        """"Langfuse at URL (version V)", for messages about what this server takes."""
        version = f" (version {self.server_version})" if self.server_version else ""
        return f"Langfuse at {self.settings.endpoint}{version}"

    def rest(self) -> LangfuseRest:
        """The REST client with the suite's retry rules, for one push or command."""
        return LangfuseRest(self.api, timeout_s=self.settings.timeout_s, server=self.describe())

    def flush(self, timeout_s: float | None = None) -> bool:
        """Export every finished span; False when the server did not take them in time."""
        return run_bounded(self.provider.force_flush, timeout_s or self.settings.flush_timeout_s, "flush")

    def shutdown(self, timeout_s: float | None = None) -> bool:
        """Flush and stop the SDK's background work, bounded; the process may then exit at once.

        The connection stays usable for later pushes in the same process: the SDK keeps its
        span pipeline, only its own (unused) score and media threads stop.
        """
        self._shut_down = True
        return run_bounded(self.client.shutdown, timeout_s or self.settings.flush_timeout_s, "shutdown")


_connections: dict[str, LangfuseConnection] = {}
_connections_lock = threading.Lock()


def connect(settings: LangfuseSettings, environment: str = "penpal-eval") -> LangfuseConnection:
    """The process's connection for these keys, created on first use."""
    with _connections_lock:
        existing = _connections.get(settings.public_key)
        if existing is not None:
            if existing.settings.base_url != settings.base_url or existing.settings.secret_key != settings.secret_key:
                raise LangfuseConfigError(
                    f"this process already talks to Langfuse at {existing.settings.endpoint} with public key "
                    f"{settings.public_key}; the SDK allows one server per key and process")
            return existing
        logs = CapturedLogs([settings.secret_key])
        for name in SDK_LOGGERS:
            logging.getLogger(name).addHandler(logs)
        last_answer = LastAnswer()
        exporter = RecordingSpanExporter(_exporter(settings, last_answer), last_answer)
        provider = PlannedStartTracerProvider(id_generator=SeededIdGenerator(), shutdown_on_exit=False)
        client = Langfuse(public_key=settings.public_key, secret_key=settings.secret_key, base_url=settings.base_url,
                          timeout=max(1, round(settings.timeout_s)), environment=environment,
                          tracer_provider=provider, span_exporter=exporter)
        connection = LangfuseConnection(settings, client, provider, exporter, logs, environment,
                                        server_version(settings))
        _connections[settings.public_key] = connection
        return connection
