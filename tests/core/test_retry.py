"""Retry policy: what is retried, how long it waits, and when it gives up."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import openai
import pytest

from evaluators.core.retry import CallFailed, MalformedResponse, RetryPolicy, call_with_retries, retry_after_seconds


def status_error(status: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, headers=headers or {}, request=request, json={"error": {"message": "x"}})
    cls = {429: openai.RateLimitError, 500: openai.InternalServerError, 400: openai.BadRequestError}.get(
        status, openai.APIStatusError)
    return cls("injected", response=response, body=None)


def test_retry_after_in_seconds_milliseconds_and_http_date():
    assert retry_after_seconds(status_error(429, {"Retry-After": "3"})) == 3.0
    assert retry_after_seconds(status_error(429, {"retry-after-ms": "250"})) == 0.25
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    later = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_after_seconds(status_error(429, {"Retry-After": later}), now=now) == 7.0
    assert retry_after_seconds(status_error(429, {"Retry-After": "soon"})) is None
    assert retry_after_seconds(status_error(500)) is None


def test_backoff_grows_exponentially_with_bounded_jitter():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0)
    rng = random.Random(7)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 8.0)]:
        delays = [policy.backoff(attempt, rng) for _ in range(200)]
        assert min(delays) >= ceiling / 2 and max(delays) <= ceiling
        assert max(delays) - min(delays) > ceiling / 4  # jittered, not constant


def run_calls(errors: list[Exception | None], policy: RetryPolicy) -> tuple[object, list[float]]:
    waits: list[float] = []
    queue = list(errors)

    async def call():
        error = queue.pop(0)
        if error is not None:
            raise error
        return "done"

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def main():
        return await call_with_retries(call, policy, sleep=sleep, rng=random.Random(1))

    return asyncio.run(main()), waits


def test_retry_after_is_honoured_over_backoff():
    result, waits = run_calls([status_error(429, {"Retry-After": "5"}), None], RetryPolicy(base_delay_s=0.1))
    assert result == ("done", 2)
    assert 5.0 <= waits[0] <= 5.5


def test_server_errors_timeouts_and_malformed_bodies_are_retried():
    request = httpx.Request("POST", "http://127.0.0.1/")
    errors = [status_error(500), openai.APITimeoutError(request), MalformedResponse("no choices"), None]
    result, waits = run_calls(errors, RetryPolicy(base_delay_s=0.1, max_attempts=4))
    assert result == ("done", 4)
    assert len(waits) == 3


def test_client_errors_are_not_retried():
    with pytest.raises(CallFailed) as caught:
        run_calls([status_error(400), None], RetryPolicy())
    assert caught.value.attempts == 1
    assert caught.value.reason.startswith("HTTP 400")


def test_gives_up_after_max_attempts_with_the_last_reason():
    with pytest.raises(CallFailed) as caught:
        run_calls([status_error(500)] * 3, RetryPolicy(max_attempts=3, base_delay_s=0.01))
    assert caught.value.attempts == 3
    assert "HTTP 500" in caught.value.reason and "gave up after 3 attempts" in caught.value.reason


def test_retry_after_is_capped():
    _, waits = run_calls([status_error(429, {"Retry-After": "99999"}), None], RetryPolicy(max_retry_after_s=2))
    assert waits[0] <= 2.2


def test_langfuse_errors_are_described_by_the_servers_message_in_both_shapes():
    """Stable routes answer {message, error}; the unstable dashboards API a PublicApiError
    (message, code, details.field), which the SDK parses into a model."""
    from langfuse.api.core.api_error import ApiError
    from langfuse.api.unstable.errors.types.public_api_error import PublicApiError

    from evaluators.core.retry import describe

    stable = ApiError(status_code=404, body={"message": "Dataset not found", "error": "LangfuseNotFoundError"})
    assert describe(stable) == "HTTP 404: Dataset not found"
    structured = ApiError(status_code=400, body=PublicApiError(
        message="Only pivot table widgets can have multiple dimensions", code="invalid_request",
        details={"field": "dimensions"}))
    assert describe(structured) == "HTTP 400: Only pivot table widgets can have multiple dimensions (field dimensions)"
    assert describe(ApiError(status_code=429, body="429 - rate limit exceeded")) == "HTTP 429: 429 - rate limit exceeded"
