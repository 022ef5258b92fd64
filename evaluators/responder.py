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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import openai
import yaml

from evaluators.locations import PROJECT_ROOT, display_path, read_data_file, url_without_credentials
from evaluators.models import Completion, PromptVersion, Scenario, Usage
from evaluators.response_cache import ResponseCache, cache_key
from evaluators.retry import CallFailed, CallTimeout, MalformedResponse, RetryPolicy, call_with_retries
from evaluators.yaml_io import describe_yaml_error, parse_yaml

DEFAULT_RECORDED_DIR = PROJECT_ROOT / "prompts" / "recorded"
OPENAI_DEFAULT_ENDPOINT = "https://api.openai.com/v1"


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


def safe_endpoint(base_url: str | None) -> str:
    """The endpoint without credentials or query string, fit for manifests and logs."""
    return url_without_credentials(base_url) if base_url else OPENAI_DEFAULT_ENDPOINT


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
        # Local OpenAI-compatible servers accept any key; the SDK insists on one being set.
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s, max_retries=0
        )

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
            started = time.perf_counter()
            try:
                response = await asyncio.wait_for(
                    self._client.chat.completions.create(model=model, messages=messages, **parameters),
                    timeout=self.timeout_s,
                )
            except TimeoutError:
                raise CallTimeout() from None
            except json.JSONDecodeError as error:  # the SDK passes a broken 200 body through as-is
                raise MalformedResponse(f"body is not valid JSON ({error.msg})") from None
            completion = _completion_from(response, model, time.perf_counter() - started)
            if check is not None:
                check(completion)
            return completion

        completion, attempts = await call_with_retries(attempt, self.retry)
        completion = completion.model_copy(update={"attempts": attempts})
        if self.cache is not None:
            self.cache.put(key, completion)
        return completion

    async def aclose(self) -> None:
        await self._client.close()


def _completion_from(response: object, requested_model: str, latency_s: float) -> Completion:
    """Validate what the SDK returned; an unusable body raises MalformedResponse (retried)."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse("no choices in the response body")
    message = getattr(choices[0], "message", None)
    text = getattr(message, "content", None)
    if not isinstance(text, str) or not text.strip():
        raise MalformedResponse("the first choice has no text content")
    usage = getattr(response, "usage", None)
    prompt_tokens = getattr(usage, "prompt_tokens", 0)
    completion_tokens = getattr(usage, "completion_tokens", 0)
    model = getattr(response, "model", None)
    return Completion(
        text=text.strip(),
        model=model if isinstance(model, str) and model else requested_model,
        usage=Usage(prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else 0,
                    completion_tokens=completion_tokens if isinstance(completion_tokens, int) else 0),
        latency_s=round(latency_s, 4),
        finish_reason=getattr(choices[0], "finish_reason", None),
    )


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
