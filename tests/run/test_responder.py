"""The live responder over real HTTP (openai SDK -> local server), and the replay responder."""

from __future__ import annotations

import asyncio

import pytest

from evaluators.core.endpoints import safe_endpoint
from evaluators.core.response_cache import ResponseCache
from evaluators.core.retry import CallFailed, RetryPolicy
from evaluators.inputs.contracts import PromptVersion, Scenario
from evaluators.run.responder import ChatRequest, OpenAIResponder, ReplayResponder, build_messages
from tests.servers.openai_compat import (
    BROKEN_STREAM,
    MALFORMED_JSON,
    MALFORMED_SHAPE,
    OK,
    hang,
    rate_limited,
    scripted_reply,
    server_error,
)

PROMPT = PromptVersion(name="t", version="v1", model="test-model", temperature=0.2, max_tokens=50,
                       text="You are a test companion.")
FAST_RETRY = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05)


def request(user: str, prompt: PromptVersion = PROMPT) -> ChatRequest:
    return ChatRequest(prompt=prompt, messages=[{"role": "system", "content": prompt.text},
                                                {"role": "user", "content": user}],
                       scenario_id="s", turn_index=0, model=prompt.model)


def by_user_message(table: dict[str, list]):
    """A fault plan: faults for successive attempts, chosen by the last user message."""
    def plan(call):
        faults = table.get(call.messages[-1]["content"], [OK])
        return faults[min(call.attempt, len(faults)) - 1]
    return plan


def complete(responder: OpenAIResponder, *requests: ChatRequest) -> list:
    async def main():
        try:
            results = []
            for item in requests:
                try:
                    results.append(await responder.complete(item))
                except CallFailed as error:
                    results.append(error)
            return results
        finally:
            await responder.aclose()
    return asyncio.run(main())


def test_a_reply_with_usage_and_the_request_as_sent(openai_server):
    server = openai_server()
    (completion,) = complete(OpenAIResponder(base_url=server.base_url, retry=FAST_RETRY), request("Hello there"))
    assert completion.text == scripted_reply([{"role": "user", "content": "Hello there"}])
    assert completion.model == "test-model"
    assert completion.usage.completion_tokens == len(completion.text.split())
    assert completion.attempts == 1 and not completion.cached
    (call,) = server.calls
    assert call.body["temperature"] == 0.2 and call.body["max_tokens"] == 50
    assert call.body["stream"] is True and call.body["stream_options"] == {"include_usage": True}
    assert call.messages == request("Hello there").messages


def test_a_streamed_reply_is_timed_from_the_request_to_its_first_word_and_its_end(openai_server):
    # Headers and an empty role chunk come at once; the first word 0.3 s later, then one word
    # every 0.02 s. Timing the headers instead of the first word would read about 0.
    server = openai_server(first_token_s=0.3, token_interval_s=0.02)
    (completion,) = complete(OpenAIResponder(base_url=server.base_url, retry=FAST_RETRY), request("Hello there"))
    words = len(completion.text.split())
    assert completion.time_to_first_token_s >= 0.3
    assert completion.latency_s >= completion.time_to_first_token_s + (words - 1) * 0.02
    # (words - 1) tokens after the first, each at least 0.02 s apart: at most 50 per second.
    assert 0 < completion.tokens_per_s <= 50


def test_a_server_that_refuses_stream_options_is_streamed_without_them(openai_server):
    server = openai_server(refused_fields=frozenset({"stream_options"}))
    responder = OpenAIResponder(base_url=server.base_url, retry=FAST_RETRY)
    first, second = complete(responder, request("Hello"), request("Again"))
    assert first.text.startswith("Reply 1") and second.text.startswith("Reply 1")
    assert first.attempts == second.attempts == 1  # the refusal is not a failed attempt
    assert ["stream_options" in call.body for call in server.calls] == [True, False, False]
    assert first.time_to_first_token_s is not None


def test_a_server_that_sends_no_usage_chunk_still_gives_the_reply_and_its_pace(openai_server):
    server = openai_server(stream_usage=False, token_interval_s=0.01)
    (completion,) = complete(OpenAIResponder(base_url=server.base_url, retry=FAST_RETRY), request("Hello there"))
    assert completion.text.startswith("Reply 1")
    assert completion.usage.total_tokens == 0  # unknown, not guessed into the cost
    assert 0 < completion.tokens_per_s <= 100  # paced by the content deltas, one token each


@pytest.mark.parametrize("faults", [
    [rate_limited("0"), OK],
    [server_error(500), server_error(503), OK],
    [MALFORMED_JSON, OK],
    [MALFORMED_SHAPE, MALFORMED_JSON, OK],
    [hang(1.5), OK],
    [BROKEN_STREAM, OK],  # cut off after the first word: the whole call is made again
])
def test_transient_failures_are_retried_until_a_reply(openai_server, faults):
    server = openai_server(by_user_message({"hi": faults}))
    responder = OpenAIResponder(base_url=server.base_url, timeout_s=0.5, retry=FAST_RETRY)
    (completion,) = complete(responder, request("hi"))
    assert completion.text.startswith("Reply 1")
    assert completion.attempts == len(faults) == len(server.calls)


def test_retry_after_is_waited_for_before_the_next_attempt(openai_server):
    server = openai_server(by_user_message({"hi": [rate_limited("1"), OK]}))
    (completion,) = complete(OpenAIResponder(base_url=server.base_url, retry=FAST_RETRY), request("hi"))
    first, second = server.calls
    assert completion.attempts == 2
    # The backoff alone would wait ~0.01 s; the server asked for 1 s.
    assert second.started - first.started >= 1.0


@pytest.mark.parametrize(("faults", "reason"), [
    ([server_error(400)], "HTTP 400"),
    ([server_error(500)] * 4, "HTTP 500"),
    ([MALFORMED_SHAPE] * 4, "malformed response: no choices"),
    ([hang(1.5)] * 4, "timeout"),
])
def test_permanent_failures_raise_with_the_reason(openai_server, faults, reason):
    server = openai_server(by_user_message({"hi": faults}))
    responder = OpenAIResponder(base_url=server.base_url, timeout_s=0.3, retry=FAST_RETRY)
    (error,) = complete(responder, request("hi"))
    assert isinstance(error, CallFailed)
    assert reason in error.reason
    assert error.attempts == len(faults) == len(server.calls)


def test_the_cache_serves_identical_calls_without_the_api(openai_server, tmp_path):
    server = openai_server()
    cache = ResponseCache(tmp_path / "cache")
    first = complete(OpenAIResponder(base_url=server.base_url, cache=cache), request("Hello"))[0]
    again, other = complete(OpenAIResponder(base_url=server.base_url, cache=cache), request("Hello"),
                            request("Hello", PROMPT.model_copy(update={"temperature": 0.9})))
    assert len(server.calls) == 2  # the repeat was free; a different temperature is a different call
    assert again.cached and again.text == first.text and again.attempts == 0
    # A cached reply keeps the timings of the call that produced it.
    assert first.time_to_first_token_s is not None
    assert (again.time_to_first_token_s, again.latency_s) == (first.time_to_first_token_s, first.latency_s)
    assert not other.cached


def test_endpoint_is_recorded_without_credentials():
    assert safe_endpoint("https://user:sk-secret@llm.example.com:8443/v1/?key=sk-secret") == \
        "https://llm.example.com:8443/v1"
    assert safe_endpoint(None) == "https://api.openai.com/v1"


def test_replay_serves_recorded_replies_and_says_what_is_missing():
    replay = ReplayResponder({("v1", "s"): ["First.", "Second."]})
    scenario_request = request("hi")

    async def main():
        first = await replay.complete(scenario_request)
        second = await replay.complete(ChatRequest(PROMPT, [], "s", 1, "m"))
        errors = []
        for item in (ChatRequest(PROMPT, [], "s", 2, "m"), ChatRequest(PROMPT, [], "other", 0, "m"),
                     ChatRequest(PROMPT.model_copy(update={"version": "v9"}), [], "s", 0, "m")):
            try:
                await replay.complete(item)
            except CallFailed as error:
                errors.append(error.reason)
        return first, second, errors

    first, second, errors = asyncio.run(main())
    assert (first.text, second.text) == ("First.", "Second.")
    # Nothing was timed: no latency, rather than a latency of zero.
    assert (first.latency_s, first.time_to_first_token_s, first.tokens_per_s) == (None, None, None)
    assert "turn 3 has none" in errors[0]
    assert "no recorded reply for scenario 'other'" in errors[1]
    assert "no recorded replies for prompt version 'v9'" in errors[2]


def test_the_companion_is_told_what_it_knows_about_the_user():
    scenario = Scenario.model_validate({"id": "x", "title": "x", "family": "basic", "turns": [{"user": "hi"}],
                                        "profile": {"name": "Ana", "age_group": "30+", "notes": "Has a dog"}})
    (system,) = build_messages(PROMPT, scenario)
    assert system["content"].startswith(PROMPT.text)
    assert "name: Ana; age group: 30+; Has a dog" in system["content"]
