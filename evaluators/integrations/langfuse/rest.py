"""Langfuse's REST API through the SDK's client, with the suite's retry rules and a breaker.

Each call is retried on 429, 5xx, timeouts and dropped connections (honouring Retry-After)
and then raises `LangfuseCallFailed` with a short reason. One call that fails for good does
not stop the others: a batch the server chokes on is reported, and the next is sent. Once
the server is clearly unreachable, the remaining calls of the same push fail at once with the
same reason: when nothing accepts the connection at all, or when calls keep failing (5xx, 429
or dropped connections after every retry, `FAILED_CALLS_BEFORE_UNREACHABLE` calls in a row).
A run against a dead server should end in seconds, with its store whole and the undelivered
parts counted, not crawl through every retry of every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from evaluators.core.retry import CallFailed, RetryPolicy, call_with_retries_sync, is_retryable

T = TypeVar("T")
FAILED_CALLS_BEFORE_UNREACHABLE = 2  # calls failing for good in a row (after their retries)


class LangfuseCallFailed(RuntimeError):
    """A Langfuse API call failed for good; the message is the reason (never a key)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status when the server answered, e.g. 404


class LangfuseRest:
    def __init__(self, api: Any, *, timeout_s: float, retry: RetryPolicy | None = None) -> None:
        self.api = api  # langfuse.api.LangfuseAPI
        self.retry = retry or RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=8.0, max_retry_after_s=30.0)
        # The SDK's own retries are off: ours also cover dropped connections and count attempts.
        self.options = {"max_retries": 0, "timeout_in_seconds": max(1, round(timeout_s))}
        self.unreachable: str | None = None
        self._failed_in_a_row = 0

    def call(self, method: Callable[..., T], *args: Any, what: str, **kwargs: Any) -> T:
        """`method(*args, **kwargs)` with retries; raises LangfuseCallFailed naming `what`."""
        if self.unreachable is not None:
            raise LangfuseCallFailed(f"{what}: skipped, Langfuse is unreachable ({self.unreachable})")
        try:
            result, _ = call_with_retries_sync(lambda: method(*args, request_options=self.options, **kwargs), self.retry)
        except CallFailed as error:
            cause = error.__cause__
            if cause is not None and is_retryable(cause):  # the server's trouble, not this request's
                self._failed_in_a_row += 1
                refused = isinstance(cause, httpx.ConnectError)  # nothing listens: no call can get through
                if refused or self._failed_in_a_row >= FAILED_CALLS_BEFORE_UNREACHABLE:
                    self.unreachable = error.reason
            raise LangfuseCallFailed(f"{what}: {error.reason}", getattr(cause, "status_code", None)) from None
        self._failed_in_a_row = 0
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
