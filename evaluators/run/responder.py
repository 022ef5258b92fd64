"""Responders produce the companion's replies: a live OpenAI-compatible API, or a replay.

Both take the conversation so far and return a `Completion`. The live responder owns the
network concerns (timeout, retries, cache); the replay responder serves the hand-written
sample replies in prompts/recorded/ so the suite runs offline with no key.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx
import openai
import yaml

from evaluators.core.completion import Completion, Usage
from evaluators.core.endpoints import safe_endpoint
from evaluators.core.locations import PROJECT_ROOT, display_path, read_data_file
from evaluators.core.response_cache import ResponseCache, cache_key
from evaluators.core.retry import CallFailed, CallTimeout, MalformedResponse, RetryPolicy, call_with_retries
from evaluators.core.yaml_io import describe_yaml_error, parse_yaml
from evaluators.inputs.contracts import PromptVersion, Scenario

DEFAULT_RECORDED_DIR = PROJECT_ROOT / "prompts" / "recorded"


@dataclass(frozen=True)
class ChatRequest:
    """One companion call: the prompt version, the messages so far, and where in which scenario."""

    prompt: PromptVersion
    messages: list[dict]
    scenario_id: str
    turn_index: int
    model: str  # the prompt's model or the run's override


class Responder(Protocol):
    kind: str  # "openai" or "replay": recorded in the manifest and on every case

    async def complete(self, request: ChatRequest) -> Completion:
        """The reply, or raises CallFailed with the reason."""
        ...

    async def aclose(self) -> None: ...


def build_messages(prompt: PromptVersion, scenario: Scenario) -> list[dict]:
    """The opening messages: the system prompt, plus what the companion knows about the user."""
    system = prompt.text
    context = scenario.profile.context_line()
    if context:
        system += f"\n\nWhat you know about the user: {context}."
    return [{"role": "system", "content": system}]


# --- live API ------------------------------------------------------------------------------------
class OpenAIResponder:
    """Chat completions through the `openai` SDK, against OpenAI or any compatible server.

    The SDK's own retries are off: ours honour Retry-After, add jitter, count attempts and
    also retry malformed bodies, which the SDK would hand back as if they were fine.
    """

    kind = "openai"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.base_url = base_url
        self.endpoint = safe_endpoint(base_url)
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.cache = cache
        # Asked for so streamed calls still report usage; dropped for a server that refuses it.
        self.stream_options: dict | None = {"include_usage": True}
        # Local OpenAI-compatible servers accept any key; the SDK insists on one being set.
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s, max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(event_hooks={"request": [_mark_request_sent]}),
        )
        # The SDK imports its chat resource on first use, ~0.1 s that would land in the first
        # turn's time to first token; import it now, before anything is timed.
        _ = self._client.chat.completions

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **options) -> OpenAIResponder:
        environ = os.environ if environ is None else environ
        return cls(api_key=environ.get("OPENAI_API_KEY") or None,
                   base_url=environ.get("OPENAI_BASE_URL") or None, **options)

    def _parameters(self, request: ChatRequest) -> dict:
        return {"temperature": request.prompt.temperature, "max_tokens": request.prompt.max_tokens}

    async def complete(self, request: ChatRequest) -> Completion:
        return await self.chat(request.model, request.messages, self._parameters(request))

    async def chat(self, model: str, messages: list[dict], parameters: dict,
                   check: Callable[[Completion], object] | None = None) -> Completion:
        """One chat completion, from the cache or the API with retries.

        `check` vets a fresh reply before it is cached (the simulator's parse of a simulated
        user's message); raising MalformedResponse in it retries the call like a broken body.
        """
        key = cache_key(self.endpoint, model, parameters, messages)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit

        async def attempt() -> Completion:
            # The timeout covers the whole stream: a server that sends its headers and then
            # stalls mid-answer is as stuck as one that never answers.
            try:
                completion = await asyncio.wait_for(self._streamed(model, messages, parameters),
                                                    timeout=self.timeout_s)
            except TimeoutError:
                raise CallTimeout() from None
            except json.JSONDecodeError as error:  # the SDK passes a broken event or body through as-is
                raise MalformedResponse(f"body is not valid JSON ({error.msg})") from None
            if check is not None:
                check(completion)
            return completion

        completion, attempts = await call_with_retries(attempt, self.retry)
        completion = completion.model_copy(update={"attempts": attempts})
        if self.cache is not None:
            self.cache.put(key, completion)
        return completion

    async def _streamed(self, model: str, messages: list[dict], parameters: dict) -> Completion:
        """One streamed call, timed: a voice companion starts speaking at the first token, so the
        time to it matters as much as the whole answer. A stream that breaks off raises, and the
        retry makes the whole call again."""
        sent: list[float] = []
        marker = _REQUEST_SENT.set(sent)
        called = time.perf_counter()
        try:
            try:
                stream = await self._create(model, messages, parameters)
            except openai.BadRequestError as error:
                if self.stream_options is None or "stream_options" not in str(error):
                    raise
                # A server that refuses the field (an older API version, a strict proxy): stream
                # without it, for this call and every later one; usage is then not counted.
                self.stream_options = None
                stream = await self._create(model, messages, parameters)
        finally:
            _REQUEST_SENT.reset(marker)
        started = sent[-1] if sent else called  # when the (last) request left the SDK
        received = StreamedReply()
        async with stream:
            async for chunk in stream:
                received.add(chunk, time.perf_counter() - started)
        return received.completion(model, time.perf_counter() - started)

    async def _create(self, model: str, messages: list[dict], parameters: dict):  # -> openai.AsyncStream
        options = {"stream_options": self.stream_options} if self.stream_options is not None else {}
        return await self._client.chat.completions.create(
            model=model, messages=messages, stream=True, **options, **parameters,
        )

    async def aclose(self) -> None:
        await self._client.close()


# Set around one call: the HTTP client's request hook appends the moment the request goes to
# the transport. Timing from there leaves out the SDK's own preparation of the request (a
# one-off import or platform probe on a process's first call), which no user waits for.
_REQUEST_SENT: ContextVar[list[float] | None] = ContextVar("penpal_request_sent", default=None)


async def _mark_request_sent(_request: httpx.Request) -> None:
    sent = _REQUEST_SENT.get()
    if sent is not None:
        sent.append(time.perf_counter())


@dataclass
class StreamedReply:
    """What a chat-completion stream delivered so far, and when its first words came."""

    parts: list[str] = field(default_factory=list)
    first_token_s: float | None = None
    model: str | None = None
    usage: object | None = None  # the usage chunk, when the server sends one
    finish_reason: str | None = None
    choices_seen: bool = False

    def add(self, chunk: object, elapsed_s: float) -> None:
        model = getattr(chunk, "model", None)
        if isinstance(model, str) and model and self.model is None:
            self.model = model
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        choices = getattr(chunk, "choices", None)
        self.choices_seen = self.choices_seen or isinstance(choices, list)
        for choice in choices or []:
            if getattr(choice, "index", 0) != 0:
                continue
            text = getattr(getattr(choice, "delta", None), "content", None)
            if isinstance(text, str) and text:
                if self.first_token_s is None:
                    self.first_token_s = elapsed_s
                self.parts.append(text)
            self.finish_reason = getattr(choice, "finish_reason", None) or self.finish_reason

    def completion(self, requested_model: str, total_s: float) -> Completion:
        """The reply with its timings.

        A stream with no choices, or one that ended without text and without a finish reason, is
        broken in transport: MalformedResponse (retried, then the case fails). A choice that
        finished with no text is the model's answer: silence, kept as an empty reply and scored
        as one (the rubric's `silent_reply`).
        """
        text = "".join(self.parts).strip()
        if not self.choices_seen:
            raise MalformedResponse("no choices in the streamed response")
        if not text and self.finish_reason is None:
            raise MalformedResponse("the first choice has no text content and no finish reason")
        prompt_tokens = getattr(self.usage, "prompt_tokens", 0)
        completion_tokens = getattr(self.usage, "completion_tokens", 0)
        reported = isinstance(prompt_tokens, int) and isinstance(completion_tokens, int) and self.usage is not None
        usage = Usage(prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else 0,
                      completion_tokens=completion_tokens if isinstance(completion_tokens, int) else 0,
                      reported=reported)
        return Completion(
            text=text,
            model=self.model or requested_model,
            usage=usage,
            latency_s=round(total_s, 4),
            time_to_first_token_s=round(self.first_token_s, 4) if self.first_token_s is not None else None,
            tokens_per_s=tokens_per_second(usage.completion_tokens or len(self.parts), self.first_token_s, total_s),
            finish_reason=self.finish_reason,
        )


def tokens_per_second(tokens: int, first_token_s: float | None, total_s: float) -> float | None:
    """The pace after the first token: (tokens - 1) over the time from it to the end.

    The first token's wait is the time to first token, measured apart; counting it here would
    blur the two. Without a usage chunk, each content delta counts as one token (servers
    stream one token per delta). None when there is no second token to time.
    """
    if first_token_s is None or tokens < 2 or total_s <= first_token_s:
        return None
    return round((tokens - 1) / (total_s - first_token_s), 2)


# --- replay --------------------------------------------------------------------------------------
class RecordingError(ValueError):
    """A recorded-replies file is malformed; the message names the file and the key."""


@dataclass
class ReplayResponder:
    """Serves the hand-written sample replies in prompts/recorded/ (no network, no cost)."""

    replies: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    kind: str = "replay"

    @classmethod
    def from_directory(cls, directory: Path | None = None) -> ReplayResponder:
        return cls(load_recordings(directory))

    def versions(self) -> set[str]:
        return {version for version, _ in self.replies}

    async def complete(self, request: ChatRequest) -> Completion:
        recorded = self.replies.get((request.prompt.version, request.scenario_id))
        if recorded is None:
            if request.prompt.version not in self.versions():
                reason = f"no recorded replies for prompt version {request.prompt.version!r}"
            else:
                reason = f"no recorded reply for scenario {request.scenario_id!r}"
            raise CallFailed(f"replay: {reason}; use --responder openai to generate replies", 1)
        if request.turn_index >= len(recorded):
            raise CallFailed(f"replay: scenario {request.scenario_id!r} has {len(recorded)} recorded "
                             f"replies, turn {request.turn_index + 1} has none", 1)
        return Completion(text=recorded[request.turn_index], model=f"replay:{request.prompt.version}")

    async def aclose(self) -> None:
        return None


def load_recordings(directory: Path | None = None) -> dict[tuple[str, str], list[str]]:
    """(prompt version, scenario id) -> replies per turn, from every recorded-replies file."""
    directory = Path(directory) if directory is not None else DEFAULT_RECORDED_DIR
    replies: dict[tuple[str, str], list[str]] = {}
    for path in sorted(directory.glob("*.yaml")):
        source = display_path(path)
        try:
            data = parse_yaml(read_data_file(path))
        except yaml.YAMLError as error:
            raise RecordingError(f"{source}: {describe_yaml_error(error)}") from None
        if not isinstance(data, dict) or not isinstance(data.get("replies"), dict):
            raise RecordingError(f"{source}: replies: expected a mapping of scenario id to versions")
        for scenario_id, by_version in data["replies"].items():
            if not isinstance(by_version, dict):
                raise RecordingError(f"{source}: replies.{scenario_id}: expected a mapping of prompt version to replies")
            for version, texts in by_version.items():
                if not isinstance(texts, list) or not all(isinstance(t, str) and t.strip() for t in texts):
                    raise RecordingError(f"{source}: replies.{scenario_id}.{version}: expected a list of non-empty replies")
                key = (str(version), str(scenario_id))
                if key in replies:
                    raise RecordingError(f"{source}: replies.{scenario_id}.{version}: recorded twice")
                replies[key] = [text.strip() for text in texts]
    return replies
