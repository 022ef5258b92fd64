"""Fixtures for the Langfuse tests: a clean environment, and the suite pointed at the local
Langfuse stand-in."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.servers.langfuse import LangfuseCompatServer
from tests.support.langfuse_runs import LANGFUSE_SECRET


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for name in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL", "LANGFUSE_HOST",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY",
                 "PENPAL_LANGFUSE_REVIEW_QUEUE", "PENPAL_LANGFUSE_DATASET", "PENPAL_LANGFUSE_SAFETY_QUEUE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PENPAL_EVAL_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def langfuse(langfuse_server, monkeypatch) -> Callable[..., LangfuseCompatServer]:
    """langfuse(**server options) -> a started server that the suite's environment points at."""

    def start(timeout_s: float = 2.0, flush_timeout_s: float = 15.0, **options) -> LangfuseCompatServer:
        server = langfuse_server(secret_key=LANGFUSE_SECRET, **options)
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", server.public_key)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", server.secret_key)
        monkeypatch.setenv("LANGFUSE_BASE_URL", server.base_url)
        monkeypatch.setenv("PENPAL_LANGFUSE_TIMEOUT", str(timeout_s))
        monkeypatch.setenv("PENPAL_LANGFUSE_FLUSH_TIMEOUT", str(flush_timeout_s))
        return server

    return start
