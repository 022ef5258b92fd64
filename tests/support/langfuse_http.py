"""Raw HTTP to the Langfuse stand-in, for what the SDK would never send, and a span exporter
that keeps spans so a test can send the very same spans again."""

from __future__ import annotations

import httpx
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

SCORES = "/api/public/scores"
OTLP = "/api/public/otel/v1/traces"


class Capture(SpanExporter):
    """Keeps the finished spans."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def get(server, path: str, **params) -> httpx.Response:
    return httpx.get(server.base_url + path, params=params, headers=server.auth_header(), timeout=5)


def post(server, path: str, body: object) -> httpx.Response:
    return httpx.post(server.base_url + path, json=body, headers=server.auth_header(), timeout=5)


def patch(server, path: str, body: object) -> httpx.Response:
    return httpx.patch(server.base_url + path, json=body, headers=server.auth_header(), timeout=5)
