"""Langfuse's REST API through the SDK's client, with the suite's retry rules and a breaker.

Each call is retried on 429, 5xx, timeouts and dropped connections (honouring Retry-After)
and then raises `LangfuseCallFailed` with a short reason. Once the server proved
unreachable (the connection failed for good), the remaining calls of the same push fail at
once with the same reason. The same goes for a server that keeps failing (5xx or 429 after
every retry). A run against a dead server should end in seconds, with its store whole and
the undelivered parts counted, not crawl through every retry of every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from evaluators.retry import CallFailed, RetryPolicy, call_with_retries_sync, is_retryable

T = TypeVar("T")


class LangfuseCallFailed(RuntimeError):
    """A Langfuse API call failed for good; the message is the reason (never a key)."""

    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status when the server answered, e.g. 404
        self.body = body  # the error body the server answered with (JSON, text or a parsed model)


class LangfuseRest:
    def __init__(self, api: Any, *, timeout_s: float, retry: RetryPolicy | None = None,
                 server: str = "Langfuse") -> None:
        self.api = api  # langfuse.api.LangfuseAPI
        self.server = server  # "Langfuse at URL (version V)", for messages about the server
        self.score_form: str | None = None  # "array" or "object": what POST /scores took (scores.py)
        self.retry = retry or RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=8.0, max_retry_after_s=30.0)
        # The SDK's own retries are off: ours also cover dropped connections and count attempts.
        self.options = {"max_retries": 0, "timeout_in_seconds": max(1, round(timeout_s))}
        self.unreachable: str | None = None

    def call(self, method: Callable[..., T], *args: Any, what: str, **kwargs: Any) -> T:
        """`method(*args, **kwargs)` with retries; raises LangfuseCallFailed naming `what`."""
        if self.unreachable is not None:
            raise LangfuseCallFailed(f"{what}: skipped, Langfuse is unreachable ({self.unreachable})")
        try:
            result, _ = call_with_retries_sync(lambda: method(*args, request_options=self.options, **kwargs), self.retry)
        except CallFailed as error:
            if error.__cause__ is not None and is_retryable(error.__cause__):
                self.unreachable = error.reason
            cause = error.__cause__
            raise LangfuseCallFailed(f"{what}: {error.reason}", getattr(cause, "status_code", None),
                                     getattr(cause, "body", None)) from None
        return result

    def pages(self, method: Callable[..., Any], *, what: str, page_size: int = 100, **arguments: Any) -> list:
        """Every item of a page-numbered list endpoint (`meta.total_pages`)."""
        items, page = [], 1
        while True:
            response = self.call(method, page=page, limit=page_size, what=what, **arguments)
            items += list(response.data)
            if page >= (response.meta.total_pages or 1) or not response.data:
                return items
            page += 1

    def cursor_pages(self, method: Callable[..., Any], *, what: str, page_size: int = 100, **arguments: Any) -> list:
        """Every item of a cursor-paginated list endpoint (`meta.cursor`, absent on the last page)."""
        items, cursor = [], None
        while True:
            response = self.call(method, limit=page_size, cursor=cursor, what=what, **arguments)
            items += list(response.data)
            cursor = response.meta.cursor
            if not cursor or not response.data:
                return items
