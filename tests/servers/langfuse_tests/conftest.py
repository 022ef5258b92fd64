"""Fixtures for the stand-in's own tests: a real SDK client on its own tracer provider, and
raw HTTP helpers for what the SDK would never send."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
from langfuse import Langfuse
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tests.servers.langfuse import LangfuseCompatServer

SCORES = "/api/public/scores"
OTLP = "/api/public/otel/v1/traces"


class Capture(SpanExporter):
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


def get(server: LangfuseCompatServer, path: str, **params) -> httpx.Response:
    return httpx.get(server.base_url + path, params=params, headers=server.auth_header(), timeout=5)


def post(server: LangfuseCompatServer, path: str, body: object) -> httpx.Response:
    return httpx.post(server.base_url + path, json=body, headers=server.auth_header(), timeout=5)


def patch(server: LangfuseCompatServer, path: str, body: object) -> httpx.Response:
    return httpx.patch(server.base_url + path, json=body, headers=server.auth_header(), timeout=5)
