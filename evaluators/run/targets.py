"""The companion under test as a target (evaluators.inputs.targets): responders for an `http`
backend and a `python` callable, and the router that gives each prompt version its own target.

They sit where the runner calls its responder (`Responder.complete`), so every target goes the
same way as the `openai` one: the runner's concurrency, the same retry policy (429, 5xx, timeouts,
dropped connections and malformed bodies retried with backoff, then the call recorded as failed
with the reason and the run goes on), the response cache, resume, timing and the run store.

A target that keeps its own memory (`memory: true`, the default for `http`) is told the
conversation id (the run id and the case, so two runs never share one) and the turn index, and
is sent only the new user message unless its template asks for `{{messages}}`: the continuity
scenarios then test the backend's real memory. Its cached replies are keyed by conversation id,
so a cache hit never skips a turn the backend has not heard.

Neither streams: the reply's time to first token is the time to the whole reply, the moment a
voice pipeline could start speaking it.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import httpx

from evaluators.core.completion import Completion, Usage
from evaluators.core.response_cache import ResponseCache, cache_key, deployment_key
from evaluators.core.retry import (
    CallFailed,
    CallTimeout,
    MalformedResponse,
    RetryPolicy,
    TargetCallError,
    call_with_retries,
)
from evaluators.core.text_safety import invalid_unicode_notice, valid_text
from evaluators.inputs.targets import (
    ENV_REFERENCE,
    PLACEHOLDER_PATTERN,
    HttpTarget,
    PythonTarget,
    TargetError,
    target_identity,
)
from evaluators.run.responder import ChatRequest, Responder


@dataclass(frozen=True)
class Conversation:
    """What a `python` target receives for each user turn: the conversation so far (the system
    prompt first, the new user message last), its id and the turn's 0-based index."""

    messages: list[dict]
    conversation_id: str
    turn: int
    scenario_id: str
    prompt_version: str
    model: str

    @property
    def message(self) -> str:
        """The new user message."""
        return self.messages[-1]["content"]


def conversation_id(run_id: str, request: ChatRequest) -> str:
    return f"{run_id}/{request.prompt.version}/{request.scenario_id}"


def _conversation(run_id: str, request: ChatRequest) -> Conversation:
    return Conversation(messages=list(request.messages), conversation_id=conversation_id(run_id, request),
                        turn=request.turn_index, scenario_id=request.scenario_id,
                        prompt_version=request.prompt.version, model=request.model)


class _TargetResponder:
    """What the http and python responders share: cache, retries, timeout and timing."""

    kind: str
    memory: bool

    def __init__(self, *, run_id: str, timeout_s: float, retry: RetryPolicy | None,
                 cache: ResponseCache | None, deployment: dict) -> None:
        self.run_id = run_id
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.cache = cache
        self._deployment = deployment

    def _key(self, request: ChatRequest) -> str:
        deployment = {**self._deployment, "conversation_id": conversation_id(self.run_id, request)} \
            if self.memory else self._deployment
        return cache_key(deployment, request.model, {"turn": request.turn_index} if self.memory else {},
                         request.messages)

    async def complete(self, request: ChatRequest) -> Completion:
        """The reply from the cache or the target, with retries; CallFailed with the reason."""
        key = self._key(request)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            return hit
        conversation = _conversation(self.run_id, request)

        async def attempt() -> Completion:
            started = time.perf_counter()
            try:
                text = await asyncio.wait_for(self._reply(conversation), timeout=self.timeout_s)
            except TimeoutError:
                raise CallTimeout() from None
            elapsed = round(time.perf_counter() - started, 4)
            if not isinstance(text, str):
                raise MalformedResponse(f"the reply is {type(text).__name__}, not text")
            text, replaced = valid_text(text.strip())
            notice = invalid_unicode_notice([("the reply", replaced)])
            return Completion(text=text, model=f"{self.kind}:{request.model}", usage=Usage(reported=False),
                              latency_s=elapsed, time_to_first_token_s=elapsed, finish_reason="stop",
                              notices=[notice] if notice else [])

        completion, attempts = await call_with_retries(attempt, self.retry)
        completion = completion.model_copy(update={"attempts": attempts})
        if self.cache is not None:
            self.cache.put(key, completion)
        return completion

    async def _reply(self, conversation: Conversation) -> object:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


# --- http ----------------------------------------------------------------------------------------
def fill_template(template: object, values: Mapping[str, object]) -> object:
    """The request body: a string that is one placeholder takes the value as it is (a number,
    the message list); placeholders inside longer strings are replaced by their text."""
    if isinstance(template, dict):
        return {key: fill_template(item, values) for key, item in template.items()}
    if isinstance(template, list):
        return [fill_template(item, values) for item in template]
    if not isinstance(template, str):
        return template
    whole = PLACEHOLDER_PATTERN.fullmatch(template.strip())
    if whole:
        return values[whole.group(1)]
    return PLACEHOLDER_PATTERN.sub(lambda match: _as_text(values[match.group(1)]), template)


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read_path(body: object, path: str) -> object:
    """The value at a dotted path (`choices.0.message.content`); MalformedResponse naming the
    part that is missing."""
    current = body
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit() and -len(current) <= int(part) < len(current):
            current = current[int(part)]
        else:
            raise MalformedResponse(f"no {part!r} at {path!r} in the response body")
    return current


def resolve_headers(target: HttpTarget, environ: Mapping[str, str], source: str) -> dict[str, str]:
    """The headers with their variables filled from the environment; TargetError naming every
    header whose variable is not set. The values stay in memory: never logged or recorded."""
    problems, headers = [], {}
    for name, template in target.headers.items():
        missing = [variable for variable in ENV_REFERENCE.findall(template) if not environ.get(variable)]
        if missing:
            problems.append(f"{source}: headers.{name}: environment variable {missing[0]} is not set")
            continue
        headers[name] = ENV_REFERENCE.sub(lambda match: environ[match.group(1)], template)
    if problems:
        raise TargetError(problems)
    return headers


class HttpResponder(_TargetResponder):
    """POSTs each user turn to the team's backend (see the module)."""

    kind = "http"

    def __init__(self, target: HttpTarget, *, run_id: str, environ: Mapping[str, str] | None = None,
                 source: str = "--target", timeout_s: float = 60.0, retry: RetryPolicy | None = None,
                 cache: ResponseCache | None = None) -> None:
        headers = resolve_headers(target, os.environ if environ is None else environ, source)
        # The cache tells backends apart by the whole URL, the template and a hash of the header
        # values (a different account or key), never the values themselves.
        deployment = {"target": target_identity(target),
                      **deployment_key(target.url, json.dumps(headers, sort_keys=True))}
        super().__init__(run_id=run_id, timeout_s=timeout_s, retry=retry, cache=cache, deployment=deployment)
        self.target = target
        self.memory = target.memory
        self.endpoint = target_identity(target)["url"]
        self._client = httpx.AsyncClient(headers=headers, timeout=timeout_s)

    async def _reply(self, conversation: Conversation) -> object:
        system = next((m["content"] for m in conversation.messages if m["role"] == "system"), "")
        values = {"message": conversation.message, "messages": conversation.messages, "system": system,
                  "conversation_id": conversation.conversation_id, "turn": conversation.turn,
                  "model": conversation.model, "scenario_id": conversation.scenario_id,
                  "prompt_version": conversation.prompt_version}
        response = await self._client.post(self.target.url, json=fill_template(self.target.request, values))
        response.raise_for_status()  # a 429 or 5xx is retried (core.retry), any other status fails
        try:
            body = response.json()
        except ValueError as error:
            raise MalformedResponse(f"body is not valid JSON ({error})") from None
        return read_path(body, self.target.reply_path)

    async def aclose(self) -> None:
        await self._client.aclose()


# --- python --------------------------------------------------------------------------------------
def load_callable(target: PythonTarget, source: str) -> Callable[[Conversation], object]:
    """The function, or a bound method of the class made once with `init`; TargetError naming
    what could not be found. The current directory is searched first, as `python -m` does: a
    team runs `penpal-eval` from its own repository."""
    module_name, _, attribute = target.callable.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise TargetError([f"{source}: callable: cannot import {module_name!r} ({error})"]) from None
    owner_name, _, method = attribute.partition(".")
    found = getattr(module, owner_name, None)
    if found is None:
        raise TargetError([f"{source}: callable: {module_name!r} has no {owner_name!r}"])
    if method:
        if not inspect.isclass(found):
            raise TargetError([f"{source}: callable: {owner_name!r} is not a class"])
        try:
            instance = found(**target.init)
        except Exception as error:  # noqa: BLE001 - reported as a configuration problem
            raise TargetError([f"{source}: init: {owner_name}(...) failed: {type(error).__name__}: {error}"]) from None
        found = getattr(instance, method, None)
        if found is None:
            raise TargetError([f"{source}: callable: {owner_name!r} has no method {method!r}"])
    elif target.init:
        raise TargetError([f"{source}: init: only a class (module:Class.method) takes init arguments"])
    if not callable(found):
        raise TargetError([f"{source}: callable: {target.callable!r} is not callable"])
    return found


class PythonResponder(_TargetResponder):
    """Calls the team's function with the conversation; a sync one runs in a worker thread so it
    never holds up the other conversations."""

    kind = "python"

    def __init__(self, target: PythonTarget, *, run_id: str, source: str = "--target", timeout_s: float = 60.0,
                 retry: RetryPolicy | None = None, cache: ResponseCache | None = None) -> None:
        super().__init__(run_id=run_id, timeout_s=timeout_s, retry=retry, cache=cache,
                         deployment={"target": target_identity(target)})
        self.target = target
        self.memory = target.memory
        self.endpoint = f"python:{target.callable}"
        self._function = load_callable(target, source)

    async def _reply(self, conversation: Conversation) -> object:
        try:
            if inspect.iscoroutinefunction(self._function):
                result = await self._function(conversation)
            else:
                result = await asyncio.to_thread(self._function, conversation)
                if inspect.isawaitable(result):
                    result = await result
        except Exception as error:  # noqa: BLE001 - the target's failure, retried then recorded
            raise TargetCallError(f"the python target raised {type(error).__name__}: {error}") from error
        return result


# --- a target per prompt version -----------------------------------------------------------------
@dataclass
class RoutedResponder:
    """The run's responder, with some prompt versions answered by targets of their own (front
    matter `target:`). `kind` is the run's; each case records the kind that answered it."""

    default: Responder
    by_version: dict[str, Responder] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.default.kind

    @property
    def endpoint(self) -> str | None:
        return getattr(self.default, "endpoint", None)

    def kind_for(self, version: str) -> str:
        return self.by_version.get(version, self.default).kind

    async def complete(self, request: ChatRequest) -> Completion:
        return await self.by_version.get(request.prompt.version, self.default).complete(request)

    async def aclose(self) -> None:
        for responder in {id(r): r for r in [self.default, *self.by_version.values()]}.values():
            await responder.aclose()


__all__ = ["CallFailed", "Conversation", "HttpResponder", "PythonResponder", "RoutedResponder", "TargetCallError",
           "fill_template", "load_callable", "read_path", "resolve_headers"]
