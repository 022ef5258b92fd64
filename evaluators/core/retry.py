"""Retries for API calls: which failures are worth another try, and how long to wait.

Rate limits, server errors (also those a stream reports after its headers), timeouts, dropped
connections, malformed bodies and streams cut short are usually transient; bad requests and
authentication errors are not, and retrying them only burns time. A server's `Retry-After`
is honoured over our own backoff.

The same rules serve the `openai` SDK (companion and judge calls, async) and the Langfuse
SDK's REST client (scores, configs, datasets, prompts; sync), whose errors carry the status
and headers in their own shapes.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TypeVar

import httpx
import openai
from langfuse.api.core import ApiError as LangfuseApiError

from evaluators.core.text_safety import printable, valid_text

T = TypeVar("T")
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class MalformedResponse(Exception):
    """The server answered 2xx with a body that is not a usable chat completion."""


class CallTimeout(Exception):
    """The call took longer than the per-call timeout."""


class StreamCut(Exception):
    """A streamed answer ended without a finish reason (no finish chunk, no `[DONE]`): the server
    or a proxy gave up mid-answer and closed the body cleanly. What arrived is kept in `completion`
    (the reply so far), so a reply that stays cut can be recorded as truncated."""

    def __init__(self, completion: object) -> None:
        words = len(str(getattr(completion, "text", "")).split())
        super().__init__(f"the stream ended without a finish reason after {words} word{'s' * (words != 1)}")
        self.completion = completion


class TargetCallError(Exception):
    """A `python` target (evaluators.run.targets) raised: retried like a transport error, since
    the callable is the companion's way in and its backend client raises whatever it raises."""


class CallFailed(Exception):
    """A call failed for good: not retryable, or out of attempts. The message is the reason."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0  # never sleep longer than this on a server's word

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry delays must not be negative")

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Exponential backoff with jitter for the wait after failed attempt `attempt` (1-based)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        # "Equal jitter": at least half the ceiling, so waits still grow, spread to avoid bursts.
        return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def retry_after_seconds(error: BaseException, now: datetime | None = None) -> float | None:
    """The server's requested wait, from `retry-after-ms` or `Retry-After` (seconds or HTTP date)."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None and isinstance(error, LangfuseApiError):
        headers = httpx.Headers(error.headers or {})
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


# The transport errors of a server that went away mid-request (httpx's names; the openai SDK
# may bring its own copy of httpx, so they are matched by name).
_CRASH_ERRORS = frozenset({"RemoteProtocolError", "ReadError", "WriteError"})


def _crash(error: BaseException) -> BaseException | None:
    """The transport error in `error`'s chain that says the server closed the connection
    mid-request (crashed, restarted, or a proxy cut it), or None."""
    seen = 0
    while error is not None and seen < 6:
        if type(error).__name__ in _CRASH_ERRORS or isinstance(error, ConnectionResetError | BrokenPipeError):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def describe(error: BaseException) -> str:
    """A short reason for the run store and the terminal: status and message, never headers or
    keys, never a control character (a server's text could rewrite a terminal or CI log), and
    never a character the store cannot encode (text_safety)."""
    return valid_text(printable(_describe(error)))[0][:500]


def _describe(error: BaseException) -> str:
    if isinstance(error, openai.APIStatusError):
        message = getattr(error, "message", "") or str(error)
        return f"HTTP {error.status_code}: {message}"
    if isinstance(error, httpx.HTTPStatusError):  # an http target's backend (evaluators.run.targets)
        return f"HTTP {error.response.status_code}: {error.response.text[:200] or error.response.reason_phrase}"
    if isinstance(error, openai.APITimeoutError | CallTimeout):
        return "timeout: no answer within the per-call timeout"
    if isinstance(error, StreamCut):
        return f"truncated reply: {error}"
    if isinstance(error, openai.APIConnectionError | httpx.TransportError):
        if (crash := _crash(error)) is not None:
            return (f"the server crashed or closed the connection mid-request ({type(crash).__name__}: "
                    f"{crash or 'no detail'})")
        if isinstance(error, httpx.TimeoutException):
            return "timeout: no answer within the per-call timeout"
        return f"connection error: {error.__cause__ or error}"
    if isinstance(error, MalformedResponse):
        return f"malformed response: {error}"
    if isinstance(error, openai.APIError):  # an error event inside a 200 stream
        return f"server error in the stream: {getattr(error, 'message', '') or error}"
    if isinstance(error, TargetCallError):
        return str(error)
    if isinstance(error, LangfuseApiError):
        return f"HTTP {error.status_code}: {_langfuse_message(error.body)}"
    return f"{type(error).__name__}: {error}"


def _langfuse_message(body: object) -> object:
    """The server's message: from a stable route's `{message, error}`, or from the unstable
    API's PublicApiError (a parsed model: message, code, details.field), with the field."""
    if isinstance(body, dict):
        return body.get("message", body)
    message = getattr(body, "message", None)
    if isinstance(message, str) and hasattr(body, "code"):
        field = getattr(getattr(body, "details", None), "field", None)
        return f"{message} (field {field})" if field else message
    return body


def is_retryable(error: BaseException) -> bool:
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRYABLE_STATUS or error.status_code >= 500
    if isinstance(error, LangfuseApiError):
        return error.status_code is None or error.status_code in RETRYABLE_STATUS or error.status_code >= 500
    if isinstance(error, httpx.HTTPStatusError):
        return error.response.status_code in RETRYABLE_STATUS or error.response.status_code >= 500
    if isinstance(error, httpx.TransportError | TargetCallError):
        return True
    if type(error) is openai.APIError:  # `data: {"error": ...}` inside a stream: a server error like a 5xx
        return True
    return isinstance(
        error,
        openai.APITimeoutError | openai.APIConnectionError | CallTimeout | MalformedResponse | StreamCut
        | openai.APIResponseValidationError,
    )


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """Run `call` until it succeeds; returns (result, attempts) or raises CallFailed."""
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return await call(), attempt
        except Exception as error:  # noqa: BLE001 - classified below, never swallowed
            await sleep(_delay_or_fail(error, attempt, policy, rng))
    raise AssertionError("unreachable")  # pragma: no cover


def call_with_retries_sync(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """`call_with_retries` for blocking calls (the Langfuse SDK's REST client)."""
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return call(), attempt
        except Exception as error:  # noqa: BLE001 - classified below, never swallowed
            sleep(_delay_or_fail(error, attempt, policy, rng))
    raise AssertionError("unreachable")  # pragma: no cover


def _delay_or_fail(error: Exception, attempt: int, policy: RetryPolicy, rng: random.Random | None) -> float:
    """How long to wait before the next attempt; raises CallFailed when there is none."""
    if not is_retryable(error):
        raise CallFailed(describe(error), attempt) from error
    if attempt == policy.max_attempts:
        raise CallFailed(f"{describe(error)} (gave up after {attempt} attempts)", attempt) from error
    requested = retry_after_seconds(error)
    if requested is not None:
        return min(requested, policy.max_retry_after_s) * (rng or random).uniform(1.0, 1.1)
    return policy.backoff(attempt, rng)
