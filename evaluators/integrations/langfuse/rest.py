"""Langfuse's REST API through the SDK's client, with the suite's retry rules, the plan's rate
limits and a breaker.

Each call is retried on 5xx, timeouts and dropped connections (honouring Retry-After) and
then raises `LangfuseCallFailed` with a short reason. One call that fails for good does not
stop the others: a batch the server chokes on is reported, and the next is sent. Once the
server is clearly unreachable, the remaining calls of the same push fail at once with the
same reason: when nothing accepts the connection at all, or when calls keep failing (5xx or
dropped connections after every retry, `FAILED_CALLS_BEFORE_UNREACHABLE` calls in a row). A
run against a dead server should end in seconds, with its store whole and the undelivered
parts counted, not crawl through every retry of every call.

A 429 is different: the server is there and says when to come back. Langfuse Cloud limits
each organisation per resource in fixed windows (web/src/features/public-api/server/
RateLimitService.ts: on Hobby 30 public-API calls a minute, 100 dataset calls), so a first
`langfuse setup` of some 55 calls meets it. The answer's Retry-After (whole seconds, up to
the 60 s window) is honoured, every call on the same resource waits for the same moment
instead of hitting the limit one by one, and a 429 never counts against the server's
health: it neither uses up the ordinary attempts nor trips the breaker. In a fixed window
nothing is gained by spreading calls thinner than that; self-hosted servers have no limits
and run at full speed. Time stays bounded: one push waits ten minutes for rate limits at
most, then a call still limited fails at once (what it carried is undelivered, and the next
push sends it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from evaluators.core.retry import RetryPolicy, describe, is_retryable, retry_after_seconds

T = TypeVar("T")
FAILED_CALLS_BEFORE_UNREACHABLE = 2  # calls failing for good in a row (after their retries)
MAX_RETRY_AFTER_S = 65.0  # Langfuse's windows are 60 s; a longer wait is not believed
RATE_LIMIT_WAITS = 6  # 429s in a row on one call before it is given up (not counted as unreachable)
RATE_LIMIT_BUDGET_S = 600.0  # the most one push waits for rate limits in all; then limited calls fail at once


class LangfuseCallFailed(RuntimeError):
    """A Langfuse API call failed for good; the message is the reason (never a key)."""

    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status when the server answered, e.g. 404
        self.body = body  # the error body the server answered with (JSON, text or a parsed model)


def rate_limit_resource(method: Callable[..., Any]) -> str:
    """The rate-limit bucket a call counts against, from the SDK client it belongs to
    (createAuthedProjectAPIRoute's rateLimitResource: datasets and dataset items have their
    own, prompt reads theirs, everything else is public-api)."""
    owner = type(getattr(method, "__self__", None)).__name__
    if owner.startswith(("Datasets", "DatasetItems")):
        return "datasets"
    if owner.startswith("Prompts") and getattr(method, "__name__", "") == "get":
        return "prompts"
    return "public-api"


def _is_rate_limited(error: BaseException) -> bool:
    return getattr(error, "status_code", None) == 429


class RateLimitGate:
    """When each resource may be called again, learnt from the server's 429s."""

    def __init__(self, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self._sleep, self._clock = sleep, clock
        self._open_at: dict[str, float] = {}
        self.waited_s = 0.0  # in all, for reports and tests

    def wait(self, resource: str) -> None:
        remaining = self._open_at.get(resource, 0.0) - self._clock()
        if remaining > 0:
            self._sleep(remaining)
            self.waited_s += remaining

    def close(self, resource: str, seconds: float) -> None:
        self._open_at[resource] = max(self._open_at.get(resource, 0.0), self._clock() + seconds)


class LangfuseRest:
    def __init__(self, api: Any, *, timeout_s: float, retry: RetryPolicy | None = None,
                 server: str = "Langfuse", sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api  # langfuse.api.LangfuseAPI
        self.server = server  # "Langfuse at URL (version V)", for messages about the server
        self.score_form: str | None = None  # "array" or "object": what POST /scores took (scores.py)
        self.retry = retry or RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=8.0,
                                          max_retry_after_s=MAX_RETRY_AFTER_S)
        # The SDK's own retries are off: ours also cover dropped connections and count attempts.
        self.options = {"max_retries": 0, "timeout_in_seconds": max(1, round(timeout_s))}
        self.unreachable: str | None = None
        self._failed_in_a_row = 0
        self.gate = RateLimitGate(sleep, clock)
        self._sleep = sleep

    def call(self, method: Callable[..., T], *args: Any, what: str, **kwargs: Any) -> T:
        """`method(*args, **kwargs)` with retries; raises LangfuseCallFailed naming `what`."""
        if self.unreachable is not None:
            raise LangfuseCallFailed(f"{what}: skipped, Langfuse is unreachable ({self.unreachable})")
        resource = rate_limit_resource(method)
        failures = limited = 0
        while True:
            self.gate.wait(resource)
            try:
                result = method(*args, request_options=self.options, **kwargs)
            except Exception as error:  # noqa: BLE001 - classified below, never swallowed
                if _is_rate_limited(error):
                    limited += 1
                    if limited > RATE_LIMIT_WAITS:
                        raise self._failed(what, error, f" (still rate limited after {limited - 1} waits)") from None
                    if self.gate.waited_s >= RATE_LIMIT_BUDGET_S:
                        raise self._failed(what, error, f" (rate limited; this push already waited "
                                                        f"{self.gate.waited_s:.0f} s for the limits)") from None
                    requested = retry_after_seconds(error)
                    self.gate.close(resource, min(requested if requested is not None
                                                  else self.retry.backoff(limited), MAX_RETRY_AFTER_S))
                    continue
                if not is_retryable(error):
                    raise self._failed(what, error) from None
                failures += 1
                if failures >= self.retry.max_attempts:  # the server's trouble, not this request's
                    self._failed_in_a_row += 1
                    refused = isinstance(error, httpx.ConnectError)  # nothing listens: no call can get through
                    if refused or self._failed_in_a_row >= FAILED_CALLS_BEFORE_UNREACHABLE:
                        self.unreachable = describe(error)
                    raise self._failed(what, error, f" (gave up after {failures} attempts)") from None
                requested = retry_after_seconds(error)
                self._sleep(min(requested, self.retry.max_retry_after_s) if requested is not None
                            else self.retry.backoff(failures))
            else:
                self._failed_in_a_row = 0
                return result

    @staticmethod
    def _failed(what: str, error: BaseException, note: str = "") -> LangfuseCallFailed:
        return LangfuseCallFailed(f"{what}: {describe(error)}{note}", getattr(error, "status_code", None),
                                  getattr(error, "body", None))

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
