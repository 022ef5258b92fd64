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
from evaluators.core.endpoints import OPENAI_DEFAULT_ENDPOINT, safe_endpoint
from evaluators.core.locations import PROJECT_ROOT, display_path, read_data_file
from evaluators.core.response_cache import ResponseCache, cache_key, deployment_key
from evaluators.core.retry import (
    CallFailed,
    CallTimeout,
    MalformedResponse,
    RetryPolicy,
    StreamCut,
    call_with_retries,
)
from evaluators.core.text_safety import invalid_unicode_notice, valid_text
from evaluators.core.yaml_io import describe_yaml_error, parse_yaml
from evaluators.inputs.contracts import PromptVersion, Scenario

DEFAULT_RECORDED_DIR = PROJECT_ROOT / "prompts" / "recorded"
LENGTH_CUT = "the model stopped at max_tokens (finish_reason: length), so the reply is cut short"


@dataclass(frozen=True)
class ChatRequest:
    """One companion call: the prompt version, the messages so far, and where in which scenario."""

    prompt: PromptVersion
    messages: list[dict]
    scenario_id: str
    turn_index: int
    model: str  # the prompt's model or the run's override
    repeat: int = 0  # which play of the scenario (run --repeat); repeat 0 is the request of a run without it


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


def repeat_seed(repeat: int) -> dict:
    """The sampling seed of a repeat, as request parameters: none for repeat 0, so a run without
    --repeat (and repeat 0 of one with it) sends the very request, and hits the very cache entry,
    it always did; `seed: N` for repeat N, so each repeat samples anew and is cached apart."""
    return {"seed": repeat} if repeat else {}


# --- live API ------------------------------------------------------------------------------------
class OpenAIResponder:
    """Chat completions through the `openai` SDK, against OpenAI or any compatible server.

    The SDK's own retries are off: ours honour Retry-After, add jitter, count attempts and
    also retry malformed bodies and streams cut short, which the SDK would hand back as if they
    were fine.
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
        # The cache tells deployments apart by their whole URL and a hash of the key (never the key).
        self._deployment = deployment_key(base_url or OPENAI_DEFAULT_ENDPOINT, api_key)
        # Asked for so streamed calls still report usage; dropped for a server that refuses it.
        self.stream_options: dict | None = {"include_usage": True}
        # Local OpenAI-compatible servers accept any key; the SDK insists on one being set.
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s, max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(event_hooks={"request": [_mark_request_sent]}),
        )

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **options) -> OpenAIResponder:
        environ = os.environ if environ is None else environ
        return cls(api_key=environ.get("OPENAI_API_KEY") or None,
                   base_url=environ.get("OPENAI_BASE_URL") or None, **options)

    def _parameters(self, request: ChatRequest) -> dict:
        return {"temperature": request.prompt.temperature, "max_tokens": request.prompt.max_tokens,
                **repeat_seed(request.repeat)}

    async def complete(self, request: ChatRequest) -> Completion:
        """The companion's reply; one that is not whole comes back marked `truncated`, with the reason,
        for the runner to record on its turn (it is never scored)."""
        return await self.chat(request.model, request.messages, self._parameters(request), keep_truncated=True)

    async def chat(self, model: str, messages: list[dict], parameters: dict,
                   check: Callable[[Completion], object] | None = None, *,
                   keep_truncated: bool = False) -> Completion:
        """One chat completion, from the cache or the API with retries.

        `check` vets a fresh reply before it is cached (the simulator's parse of a simulated
        user's message); raising MalformedResponse in it retries the call like a broken body.

        A stream that ends without a finish reason broke off: it is retried like a broken body.
        A reply that stays cut (out of attempts) is not whole: with `keep_truncated` (the
        companion's replies) it comes back marked `truncated` with the reason, else CallFailed
        says why. A reply that stopped at max_tokens (not retried: the same request stops at the
        same place) comes back marked `truncated` too; with `keep_truncated` it is never cached,
        while a caller that takes it as it is (a simulated user's message, bounded by its
        max_tokens) has it vetted by `check` and cached like any other.
        """
        key = cache_key(self._deployment, model, parameters, messages)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None and not (keep_truncated and hit.truncated):
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
            if completion.finish_reason is None:
                raise StreamCut(completion)
            if check is not None and not (keep_truncated and completion.finish_reason == "length"):
                check(completion)
            return completion

        try:
            completion, attempts = await call_with_retries(attempt, self.retry)
        except CallFailed as failure:
            cut = failure.__cause__
            if keep_truncated and isinstance(cut, StreamCut):
                reason = failure.reason.removeprefix("truncated reply: ")
                return cut.completion.model_copy(update={"attempts": failure.attempts, "truncated": True,
                                                         "truncation": reason})
            raise
        completion = completion.model_copy(update={"attempts": attempts})
        if completion.finish_reason == "length":
            completion = completion.model_copy(update={"truncated": True, "truncation": LENGTH_CUT})
            if keep_truncated:
                return completion
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

    async def _create(self, model: str, messages: list[dict], parameters: dict) -> openai.AsyncStream:
        """The streamed request through the SDK (its HTTP client, errors, server-sent events and
        in-stream error events), with each chunk kept as the JSON object it was. Building the
        SDK's typed chunk models was half of the client's work per call: under many concurrent
        streams that work queues first tokens behind other streams' chunks."""
        options = {"stream_options": self.stream_options} if self.stream_options is not None else {}
        return await self._client.post(
            "/chat/completions", body={"model": model, "messages": messages, "stream": True, **options, **parameters},
            cast_to=object, stream=True, stream_cls=openai.AsyncStream[object],
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
    """What a chat-completion stream delivered so far, and when its first words came.

    Chunks are the JSON objects the server sent (dicts); a field of an unexpected type counts as
    absent, so an odd server gives a MalformedResponse, never a crash.
    """

    parts: list[str] = field(default_factory=list)
    first_token_s: float | None = None
    model: str | None = None
    usage: dict | None = None  # the usage object, when the server sends one
    finish_reason: str | None = None
    choices_seen: bool = False

    def add(self, chunk: object, elapsed_s: float) -> None:
        if not isinstance(chunk, dict):
            return
        model = chunk.get("model")
        if isinstance(model, str) and model and self.model is None:
            self.model = model
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        self.choices_seen = self.choices_seen or isinstance(choices, list)
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            text = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(text, str) and text:
                if self.first_token_s is None:
                    self.first_token_s = elapsed_s
                self.parts.append(text)
            finish_reason = choice.get("finish_reason")
            if isinstance(finish_reason, str) and finish_reason:
                self.finish_reason = finish_reason

    def completion(self, requested_model: str, total_s: float) -> Completion:
        """The reply with its timings.

        A stream with no choices, or one that ended without text and without a finish reason, is
        broken in transport: MalformedResponse (retried, then the case fails). A choice that
        finished with no text is the model's answer: silence, kept as an empty reply and scored
        as one (the rubric's `silent_reply`). The text is made valid here (text_safety): a
        character UTF-8 cannot hold is replaced and noted on the reply, so the cache, the run
        store and the parser never see it.
        """
        text, replaced = valid_text("".join(self.parts).strip())
        if not self.choices_seen:
            raise MalformedResponse("no choices in the streamed response")
        if not text and self.finish_reason is None:
            raise MalformedResponse("the first choice has no text content and no finish reason")
        usage = self.usage or {}
        prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
        reported = self.usage is not None and isinstance(prompt_tokens, int) and isinstance(completion_tokens, int)
        usage = Usage(prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else 0,
                      completion_tokens=completion_tokens if isinstance(completion_tokens, int) else 0,
                      reported=reported)
        notice = invalid_unicode_notice([("the reply", replaced)])
        return Completion(
            text=text,
            model=valid_text(self.model or requested_model)[0],
            usage=usage,
            latency_s=round(total_s, 4),
            time_to_first_token_s=round(self.first_token_s, 4) if self.first_token_s is not None else None,
            tokens_per_s=tokens_per_second(usage.completion_tokens or len(self.parts), self.first_token_s, total_s),
            finish_reason=self.finish_reason,
            notices=[notice] if notice else [],
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
    # Further recorded repeats (the files' `repeats:`): (version, scenario) -> repeat 1, 2, ...
    repeats: dict[tuple[str, str], list[list[str]]] = field(default_factory=dict)

    @classmethod
    def from_directory(cls, directory: Path | None = None) -> ReplayResponder:
        return cls(load_recordings(directory), repeats=load_recorded_repeats(directory))

    def recorded_plays(self) -> dict[tuple[str, str], int]:
        """(version, scenario) -> how many plays the sample data records (1 + its further repeats),
        for those that record more than one: the offline run plays each of them."""
        return {key: 1 + len(plays) for key, plays in self.repeats.items()}

    def versions(self) -> set[str]:
        return {version for version, _ in self.replies}

    async def complete(self, request: ChatRequest) -> Completion:
        recorded = self.replies.get((request.prompt.version, request.scenario_id))
        further = self.repeats.get((request.prompt.version, request.scenario_id), [])
        if 0 < request.repeat <= len(further):  # a recorded repeat; any other repeat replays the reply
            recorded = further[request.repeat - 1]
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


def load_recorded_repeats(directory: Path | None = None) -> dict[tuple[str, str], list[list[str]]]:
    """(prompt version, scenario id) -> the further recorded repeats (repeat 1, 2, ...), each a reply
    per turn, from the files' optional `repeats:` mapping (scenario -> version -> list of repeats)."""
    directory = Path(directory) if directory is not None else DEFAULT_RECORDED_DIR
    found: dict[tuple[str, str], list[list[str]]] = {}
    for path in sorted(directory.glob("*.yaml")):
        source = display_path(path)
        data = parse_yaml(read_data_file(path))  # load_recordings has vetted the file's syntax
        repeats = data.get("repeats") if isinstance(data, dict) else None
        if repeats is None:
            continue
        if not isinstance(repeats, dict):
            raise RecordingError(f"{source}: repeats: expected a mapping of scenario id to versions")
        for scenario_id, by_version in repeats.items():
            if not isinstance(by_version, dict):
                raise RecordingError(f"{source}: repeats.{scenario_id}: expected a mapping of prompt version to repeats")
            for version, plays in by_version.items():
                where = f"{source}: repeats.{scenario_id}.{version}"
                if not isinstance(plays, list) or not plays:
                    raise RecordingError(f"{where}: expected a list of repeats, each a list of replies")
                for number, texts in enumerate(plays, start=1):
                    if not isinstance(texts, list) or not all(isinstance(t, str) and t.strip() for t in texts):
                        raise RecordingError(f"{where}[{number}]: expected a list of non-empty replies (repeat {number})")
                found[(str(version), str(scenario_id))] = [[text.strip() for text in texts] for texts in plays]
    return found


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
