"""The LLM judge over any OpenAI-compatible endpoint.

It asks for the verdict in the strongest structured form the server accepts, and steps down
when the server refuses one: `json_schema` (OpenAI structured outputs), then `json_object`
with a schema (llama.cpp), then plain `json_object`, then the rubric's text format. The mode
that worked is remembered per endpoint and model, across runs. An unreadable answer gets one
repair request; after that the rubric's fallback score stands in, marked as such.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import openai

from evaluators.core.completion import Usage
from evaluators.core.endpoints import OPENAI_DEFAULT_ENDPOINT, safe_endpoint
from evaluators.core.locations import cache_dir, short_hash, write_text_atomic
from evaluators.core.names import METRIC_NAMES
from evaluators.core.response_cache import JsonFileCache, deployment_key
from evaluators.core.retry import CallFailed, CallTimeout, MalformedResponse, RetryPolicy, call_with_retries
from evaluators.core.text_safety import Notice, invalid_unicode_notice, valid_text
from evaluators.judge.prompt import (
    CONVERSATION_TASK,
    DATA_RULES,
    JSON_ANSWER,
    REPAIR_REQUEST,
    TEXT_ANSWER,
    judge_messages,
    repair_messages,
)
from evaluators.judge.result import RESPONSE_MODES, JudgeInput, JudgeResult
from evaluators.judge.verdict import SCHEMA_NAME, ParsedVerdict, VerdictParseError, parse_verdict, verdict_schema
from evaluators.rubric.loader import Rubric

DEFAULT_JUDGE_MODEL = "gpt-4.1"
# Bumped with the instructions written in code, so cached judgements follow them like the rubric.
PROMPT_FINGERPRINT = short_hash(DATA_RULES + JSON_ANSWER + TEXT_ANSWER + REPAIR_REQUEST)
CONVERSATION_FINGERPRINT = short_hash(CONVERSATION_TASK)  # only in a conversation judgement's key
# Statuses with which servers refuse a response_format they do not support. llama.cpp's
# Python server answers 500 (its request validation error), so 500 counts only when the
# message names the response format; a plain 500 is an outage and is retried.
_REFUSAL_STATUS = frozenset({400, 404, 415, 422, 501})
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema")


# The answer's schema by name: (schema name, a function of `strict` giving the JSON schema).
AnswerSchema = tuple[str, Callable[[bool], dict]]


class ModeRefused(Exception):
    """The server does not support the requested response format."""


@dataclass(frozen=True)
class JudgeSettings:
    model: str = DEFAULT_JUDGE_MODEL
    samples: int = 1  # k judgements per reply; median and spread when above 1
    temperature: float = 0.0
    max_tokens: int = 700
    timeout_s: float = 120.0
    concurrency: int = 4

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError("judge samples must be at least 1")
        if self.concurrency < 1:
            raise ValueError("judge concurrency must be at least 1")
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError("judge temperature must be within 0-2")

    def parameters(self, sample: int) -> dict:
        parameters: dict = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.samples > 1:
            parameters["seed"] = sample  # distinct samples where the server honours seeds
        return parameters


def judge_cache_dir() -> Path:
    return cache_dir() / "judgements"


class ModeMemory:
    """Which response mode worked for each endpoint and model, kept in a small JSON file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._modes: dict[str, str] = {}
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self._modes = {key: value for key, value in data.items() if value in RESPONSE_MODES}
            except (OSError, ValueError, AttributeError):
                self._modes = {}  # absent or unreadable: probing again costs one refused call

    @staticmethod
    def _key(endpoint: str, model: str) -> str:
        return f"{endpoint} {model}"

    def get(self, endpoint: str, model: str) -> str | None:
        return self._modes.get(self._key(endpoint, model))

    def set(self, endpoint: str, model: str, mode: str) -> None:
        key = self._key(endpoint, model)
        if self._modes.get(key) == mode:
            return
        self._modes[key] = mode
        if self.path is not None:
            write_text_atomic(self.path, json.dumps(self._modes, indent=1, sort_keys=True))


@dataclass
class JudgeStats:
    """What this judge did in a run, for the report."""

    judged: int = 0  # replies judged (cache hits included)
    cached: int = 0  # replies whose every sample came from the cache
    fallback: int = 0
    failed: int = 0
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    # The models the responses named (their `model` field): a router or alias may answer with
    # another model than the one asked for, and the family warning must see the one that answered.
    answered_by: set[str] = field(default_factory=set)


def model_text(response: object) -> tuple[str, Usage]:
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse("no choices in the response body")
    text = getattr(getattr(choices[0], "message", None), "content", None)
    usage = getattr(response, "usage", None)
    prompt_tokens = getattr(usage, "prompt_tokens", 0)
    completion_tokens = getattr(usage, "completion_tokens", 0)
    return (text if isinstance(text, str) else ""), Usage(
        prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else 0,
        completion_tokens=completion_tokens if isinstance(completion_tokens, int) else 0)


def _is_refusal(error: openai.APIStatusError) -> bool:
    message = (getattr(error, "message", "") or str(error)).lower()
    names_format = any(word in message for word in _FORMAT_WORDS)
    return (error.status_code in _REFUSAL_STATUS and (names_format or error.status_code in (400, 422))) or (
        error.status_code == 500 and names_format)


class LLMJudge:
    """Judges replies on the rubric; one instance serves a whole run (it holds no per-case state)."""

    def __init__(
        self,
        rubric: Rubric,
        settings: JudgeSettings | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        cache: JsonFileCache | None = None,
        modes: ModeMemory | None = None,
    ) -> None:
        self.rubric = rubric
        self.settings = settings or JudgeSettings()
        self.endpoint = safe_endpoint(base_url)
        # Judgements are cached per deployment: the whole base URL and a hash of the key (response_cache).
        self.deployment = deployment_key(base_url or OPENAI_DEFAULT_ENDPOINT, api_key)
        self.retry = retry or RetryPolicy()
        self.cache = cache
        self.modes = modes or ModeMemory(None)
        self.stats = JudgeStats()
        self.client = openai.AsyncOpenAI(api_key=api_key or "not-needed", base_url=base_url,
                                         timeout=self.settings.timeout_s, max_retries=0)
        self.slots = asyncio.Semaphore(self.settings.concurrency)

    @classmethod
    def from_environment(cls, rubric: Rubric, settings: JudgeSettings, environ: Mapping[str, str] | None = None,
                         **options) -> LLMJudge:
        """PENPAL_JUDGE_BASE_URL / PENPAL_JUDGE_API_KEY, else the companion's OPENAI_* variables."""
        environ = os.environ if environ is None else environ
        base_url = environ.get("PENPAL_JUDGE_BASE_URL") or environ.get("OPENAI_BASE_URL") or None
        api_key = environ.get("PENPAL_JUDGE_API_KEY") or environ.get("OPENAI_API_KEY") or None
        return cls(rubric, settings, api_key=api_key, base_url=base_url, **options)

    async def aclose(self) -> None:
        await self.client.close()

    # --- one reply -------------------------------------------------------------------------------
    async def judge(self, item: JudgeInput) -> JudgeResult:
        """The verdict on one reply: k samples, combined; never raises for API or parse trouble."""
        samples = await asyncio.gather(*(self._sample(item, index) for index in range(self.settings.samples)))
        return self.combined(list(samples))

    def combined(self, samples: list[JudgeResult]) -> JudgeResult:
        """One reply's samples as its result, counted in the stats (live and batch judging alike)."""
        result = combine_samples(samples, self.rubric)
        self.stats.judged += 1
        self.stats.cached += result.cached
        self.stats.fallback += result.parse_status == "fallback"
        self.stats.failed += result.status == "failed"
        return result

    def cache_key(self, item: JudgeInput, sample: int) -> str:
        key = {
            "rubric": self.rubric.content_hash, "prompt": PROMPT_FINGERPRINT, "deployment": self.deployment,
            "model": self.settings.model, "parameters": self.settings.parameters(sample), "sample": sample,
            # A reply's key leaves out its (default) scope: reply keys are made as before scopes existed.
            "input": item.model_dump(mode="json", exclude={"id"} | ({"scope"} if item.scope == "reply" else set())),
        }
        if item.scope == "conversation":
            key["conversation_prompt"] = CONVERSATION_FINGERPRINT
        payload = json.dumps(key, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()

    def cached_sample(self, key: str) -> JudgeResult | None:
        if self.cache is None or (hit := self.cache.get_json(key)) is None:
            return None
        try:
            return JudgeResult.model_validate(hit).model_copy(update={"cached": True, "attempts": 0,
                                                                      "latency_s": 0.0, "usage": Usage()})
        except ValueError:
            return None  # unreadable entry: judge again and overwrite it

    def remember(self, key: str, result: JudgeResult) -> None:
        """Cache a usable sample; fallbacks and failures are asked again next time."""
        if self.cache is not None and result.usable:
            self.cache.put_json(key, result.to_record())

    async def _sample(self, item: JudgeInput, sample: int) -> JudgeResult:
        key = self.cache_key(item, sample)
        if (hit := self.cached_sample(key)) is not None:
            return hit
        async with self.slots:
            result = await self.judge_once(item, sample)
        self.remember(key, result)
        return result

    def current_mode(self) -> str:
        """The response mode to ask for first: the one that worked here before, else the strongest."""
        return self.modes.get(self.endpoint, self.settings.model) or RESPONSE_MODES[0]

    async def judge_once(self, item: JudgeInput, sample: int) -> JudgeResult:
        started = time.perf_counter()
        mode = self.current_mode()
        attempts = 0
        while True:
            messages = judge_messages(self.rubric, item, mode)
            try:
                text, usage, tries = await self.call(messages, mode, sample)
            except CallFailed as failure:
                attempts += failure.attempts
                if isinstance(failure.__cause__, ModeRefused) and mode != RESPONSE_MODES[-1]:
                    mode = RESPONSE_MODES[RESPONSE_MODES.index(mode) + 1]
                    continue
                return self._result(status="failed", error=failure.reason, mode=mode, attempts=attempts,
                                    usage=Usage(), started=started)
            self.modes.set(self.endpoint, self.settings.model, mode)
            return await self.read_answer(messages, text, mode, sample, attempts=attempts + tries, usage=usage,
                                          started=started)

    async def read_answer(self, messages: list[dict], text: str, mode: str, sample: int, *, attempts: int,
                          usage: Usage, started: float) -> JudgeResult:
        """The verdict in a first answer, live or from a batch: read, else one repair request, else the fallback.

        The answer's text is made valid first (text_safety): a parser, the cache and the run
        store never see a character UTF-8 cannot hold, and the judgement notes the change.
        """
        text, replaced = valid_text(text)
        notice = invalid_unicode_notice([("the judge's answer", replaced)])
        try:
            return self._parsed(parse_verdict(text, self.rubric), None, mode, attempts, usage, started, notice)
        except VerdictParseError as problem:
            first_problem, first_text = str(problem), text
        try:
            text, call_usage, tries = await self.call(repair_messages(messages, first_text, first_problem),
                                                      mode, sample)
            attempts += tries
            usage += call_usage
            text, replaced = valid_text(text)
            notice = notice or invalid_unicode_notice([("the judge's answer", replaced)])
            return self._parsed(parse_verdict(text, self.rubric), "repaired", mode, attempts, usage, started, notice)
        except CallFailed as failure:
            attempts += failure.attempts
            problem = f"{first_problem}; the repair request failed: {failure.reason}"
        except VerdictParseError as second:
            problem = f"{first_problem}; after the repair request: {second}"
        return self._result(status="ok", parse_status="fallback", mode=mode, attempts=attempts, usage=usage,
                            started=started, overall=self.rubric.judge.fallback_score,
                            error=f"verdict not readable: {problem}", raw=first_text[:2000],
                            review=["judge verdict not readable (fallback score)"],
                            notices=[notice] if notice else [])

    def request_body(self, messages: list[dict], mode: str, sample: int, answer: AnswerSchema | None = None) -> dict:
        """The chat request for one judgement: sent live, or written as a line of a batch file.

        `answer` is the schema of the answer asked for: the reply verdict unless given (the
        pairwise judge asks for its own, over the same client and response modes).
        """
        name, schema = answer or (SCHEMA_NAME, lambda strict: verdict_schema(self.rubric, strict=strict))
        request = {"model": self.settings.model, "messages": messages, **self.settings.parameters(sample)}
        if mode == "json_schema":
            request["response_format"] = {"type": "json_schema", "json_schema": {
                "name": name, "strict": True, "schema": schema(True)}}
        elif mode == "json_object_schema":
            request["response_format"] = {"type": "json_object", "schema": schema(False)}
        elif mode == "json_object":
            request["response_format"] = {"type": "json_object"}
        return request

    async def call(self, messages: list[dict], mode: str, sample: int,
                   answer: AnswerSchema | None = None) -> tuple[str, Usage, int]:
        """One request with retries: the answer's text, its usage and the attempts it took.

        ModeRefused (as the CallFailed's cause) when the server refuses the response format.
        """
        request = self.request_body(messages, mode, sample, answer)

        async def attempt() -> tuple[str, Usage]:
            self.stats.calls += 1
            try:
                response = await asyncio.wait_for(self.client.chat.completions.create(**request),
                                                  timeout=self.settings.timeout_s)
            except TimeoutError:
                raise CallTimeout() from None
            except json.JSONDecodeError as error:
                raise MalformedResponse(f"body is not valid JSON ({error.msg})") from None
            except openai.APIStatusError as error:
                if mode != "text" and _is_refusal(error):
                    raise ModeRefused(f"HTTP {error.status_code}: {error.message}") from error
                raise
            answered = getattr(response, "model", None)
            if isinstance(answered, str) and answered:
                self.stats.answered_by.add(answered)
            return model_text(response)

        (text, usage), attempts = await call_with_retries(attempt, self.retry)
        self.stats.usage += usage
        return text, usage, attempts

    def _parsed(self, parsed: ParsedVerdict, status: str | None, mode: str, attempts: int, usage: Usage,
                started: float, notice: Notice | None = None) -> JudgeResult:
        """A read verdict; `status` "repaired" overrides how it was written (json or text)."""
        parse_status = status or parsed.form
        return self._result(status="ok", parse_status=parse_status, mode=mode, attempts=attempts, usage=usage,
                            started=started, overall=parsed.overall, reasoning=parsed.reasoning,
                            dimensions=parsed.dimensions, verdict=parsed.verdict, failure_mode=parsed.failure_mode,
                            notices=[notice] if notice else [])

    def _result(self, *, started: float, **fields: object) -> JudgeResult:
        return JudgeResult(model=self.settings.model, latency_s=round(time.perf_counter() - started, 4), **fields)


@dataclass
class Answered:
    """What one task's question came to over the ladder: read (`parsed`), unreadable after a
    repair request (`parse_status` "fallback", with `raw`), or failed (`status` "failed")."""

    status: str
    mode: str
    attempts: int
    usage: Usage
    parsed: object | None = None
    parse_status: str | None = None
    error: str | None = None
    raw: str | None = None
    notices: list[Notice] = field(default_factory=list)


async def ask_task(judge: LLMJudge, messages_for: Callable[[str], list[dict]], parse: Callable[[str], tuple[object, str]],
                   answer: AnswerSchema, sample: int = 0) -> Answered:
    """One judgement of another task (the safety questions) over the reply judge's ladder.

    The same response modes stepped down on refusal and remembered, the same retries, one
    repair request for an unreadable answer, the same text hygiene: only the messages, the
    answer's schema and its parser are the task's. `parse` returns (the reading, "json" or
    "text") or raises ValueError with the problem, which goes back as the repair request.
    """
    mode, attempts, usage = judge.current_mode(), 0, Usage()
    while True:
        messages = messages_for(mode)
        try:
            text, usage, tries = await judge.call(messages, mode, sample, answer)
            attempts += tries
            break
        except CallFailed as failure:
            attempts += failure.attempts
            if isinstance(failure.__cause__, ModeRefused) and mode != RESPONSE_MODES[-1]:
                mode = RESPONSE_MODES[RESPONSE_MODES.index(mode) + 1]
                continue
            return Answered(status="failed", mode=mode, attempts=attempts, usage=usage, error=failure.reason)
    judge.modes.set(judge.endpoint, judge.settings.model, mode)
    return await read_task_answer(judge, messages, text, mode, parse, answer, attempts=attempts, usage=usage,
                                  sample=sample)


async def read_task_answer(judge: LLMJudge, messages: list[dict], text: str, mode: str,
                           parse: Callable[[str], tuple[object, str]], answer: AnswerSchema, *, attempts: int,
                           usage: Usage, sample: int = 0) -> Answered:
    """A task's first answer (live, or from a batch) read: parsed, else one live repair request,
    else the fallback with the unreadable answer kept."""
    text, replaced = valid_text(text)
    notices = [notice] if (notice := invalid_unicode_notice([("the judge's answer", replaced)])) else []
    try:
        parsed, form = parse(text)
        return Answered(status="ok", mode=mode, attempts=attempts, usage=usage, parsed=parsed, parse_status=form,
                        notices=notices)
    except ValueError as problem:
        first_problem, first_text = str(problem), text
    try:
        text, more, tries = await judge.call(repair_messages(messages, first_text, first_problem), mode, sample, answer)
        attempts, usage = attempts + tries, usage + more
        parsed, _ = parse(valid_text(text)[0])
        return Answered(status="ok", mode=mode, attempts=attempts, usage=usage, parsed=parsed,
                        parse_status="repaired", notices=notices)
    except CallFailed as failure:
        attempts += failure.attempts
        problem_text = f"{first_problem}; the repair request failed: {failure.reason}"
    except ValueError as second:
        problem_text = f"{first_problem}; after the repair request: {second}"
    return Answered(status="ok", mode=mode, attempts=attempts, usage=usage, parse_status="fallback",
                    error=f"answer not readable: {problem_text}", raw=first_text[:2000], notices=notices)


def combine_samples(samples: list[JudgeResult], rubric: Rubric) -> JudgeResult:
    """k samples as one result: median overall and dimensions, spread, the median sample's reasoning.

    Fallback samples are counted but never enter the median; when every sample fell back the
    result is the fallback, and when every call failed it is a failure.
    """
    common = {"usage": sum((sample.usage for sample in samples), Usage()), "attempts": sum(s.attempts for s in samples),
              "latency_s": round(max(s.latency_s for s in samples), 4), "cached": all(s.cached for s in samples),
              "fallback_samples": sum(s.parse_status == "fallback" for s in samples),
              "samples": [s.overall if s.usable else None for s in samples] if len(samples) > 1 else []}
    usable = [sample for sample in samples if sample.usable]
    if not usable:
        answered = [sample for sample in samples if sample.status == "ok"]
        chosen = answered[0] if answered else samples[0]
        return chosen.model_copy(update=common)
    overalls = [sample.overall for sample in usable]
    median = statistics.median(overalls)
    representative = min(usable, key=lambda sample: abs(sample.overall - median))
    dimensions = {}
    for name in METRIC_NAMES:
        values = [s.dimensions.get(name) for s in usable if s.dimensions.get(name) is not None]
        dimensions[name] = round(statistics.median(values), 4) if values else None
    spread = round(max(overalls) - min(overalls), 4) if len(samples) > 1 else None
    unstable = spread is not None and spread > rubric.judge.unstable_spread
    review = list(representative.review)
    if unstable:
        review.append(f"judge unstable: {len(samples)} samples spread {spread:.2f} > {rubric.judge.unstable_spread:g}")
    return representative.model_copy(update={**common, "overall": round(median, 4), "dimensions": dimensions,
                                             "spread": spread, "unstable": unstable, "review": review})
