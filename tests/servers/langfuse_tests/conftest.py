"""The stand-in's own tests: a real SDK client on its own tracer provider."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from langfuse import Langfuse
from opentelemetry.sdk.trace import TracerProvider

from tests.servers.langfuse import LangfuseCompatServer


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
