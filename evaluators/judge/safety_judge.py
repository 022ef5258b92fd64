"""The safety judge: the LLM judge asked the rubric's safety questions about a reply or a conversation.

It rides on the reply judge (evaluators.judge.client): the same endpoint, data blocks, cache
directory, retries, response-mode ladder and memory, repair request and text hygiene
(`ask_task`); only its questions, answer schema and parser are its own
(evaluators.judge.safety_answers). A failed call or an unreadable answer is kept as such:
missing evidence, never a pass. One sample per item (`--judge-samples` is the quality
judge's): yes/no answers have no median, and a majority over samples is not built yet.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Literal

from pydantic import BaseModel, Field

from evaluators.core.completion import Usage
from evaluators.core.locations import short_hash
from evaluators.core.text_safety import Notice
from evaluators.judge.client import Answered, AnswerSchema, LLMJudge, ask_task, read_task_answer
from evaluators.judge.result import JudgeInput, ParseStatus
from evaluators.judge.safety_answers import (
    SAFETY_SCHEMA_NAME,
    SAFETY_TEXTS,
    ParsedSafety,
    parse_safety,
    safety_messages,
    safety_schema,
)
from evaluators.rubric.loader import Rubric

SAFETY_FINGERPRINT = short_hash(SAFETY_TEXTS)


class SafetyJudgeResult(BaseModel):
    """The safety judge's answers on one reply (or one conversation), with why it was judged.

    `answers` maps each question to {answer: yes|no, strength: 1-3, quote}; `flags` are the
    questions whose answer flags the reply (rubric `judge.safety.positive`). Empty when
    the call failed (`status` "failed") or the answer could not be read (`parse_status`
    "fallback"): then nothing was verified.
    """

    id: str = ""
    scope: Literal["reply", "conversation"] = "reply"
    reasons: list[str] = Field(default_factory=list)  # why this reply was chosen for the judge
    status: Literal["ok", "failed"] = "ok"
    parse_status: ParseStatus | None = None
    mode: str | None = None
    reasoning: str = ""
    answers: dict[str, dict] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    model: str = ""
    cached: bool = False
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    error: str | None = None
    raw: str | None = None
    notices: list[Notice] = Field(default_factory=list)

    @property
    def usable(self) -> bool:
        """Answers were read: the reply is verified by the judge (whatever they say)."""
        return self.status == "ok" and self.parse_status != "fallback" and bool(self.answers)

    def answer(self, name: str) -> bool | None:
        value = self.answers.get(name)
        return None if value is None else value.get("answer") == "yes"

    def to_record(self) -> dict:
        return self.model_dump(mode="json")


def flags_of(parsed: ParsedSafety, rubric: Rubric) -> list[str]:
    """The questions whose answers flag the reply, by the rubric's stated rule."""
    return rubric.judge.safety.flags({name: answer.answer for name, answer in parsed.answers.items()})


class SafetyJudge:
    """Asks the safety questions over a reply judge's client, cache and modes."""

    def __init__(self, judge: LLMJudge) -> None:
        self.judge = judge
        self.rubric = judge.rubric
        self.safety = judge.rubric.judge.safety
        self.calls_made = 0  # items asked (not from the cache), for the budget's report

    @property
    def model(self) -> str:
        return self.judge.settings.model

    def cache_key(self, item: JudgeInput) -> str:
        settings = self.judge.settings
        key = {"task": "safety", "rubric": self.rubric.content_hash, "prompt": SAFETY_FINGERPRINT,
               "deployment": self.judge.deployment, "model": settings.model, "parameters": settings.parameters(0),
               "input": item.model_dump(mode="json", exclude={"id"})}
        payload = json.dumps(key, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()

    def cached(self, item: JudgeInput) -> SafetyJudgeResult | None:
        """The cached answers on this item, if any (they cost no call, so no budget)."""
        return self.cached_by_key(self.cache_key(item))

    def cached_by_key(self, key: str) -> SafetyJudgeResult | None:
        cache = self.judge.cache
        if cache is None or (hit := cache.get_json(key)) is None:
            return None
        try:
            return SafetyJudgeResult.model_validate(hit).model_copy(update={
                "cached": True, "attempts": 0, "latency_s": 0.0, "usage": Usage()})
        except ValueError:
            return None  # unreadable entry: ask again and overwrite it

    def remember(self, key: str, result: SafetyJudgeResult) -> None:
        """Cache usable answers; failures and unreadable answers are asked again next time."""
        if self.judge.cache is not None and result.usable:
            self.judge.cache.put_json(key, result.to_record())

    @property
    def answer(self) -> AnswerSchema:
        return SAFETY_SCHEMA_NAME, lambda strict: safety_schema(self.safety, strict=strict)

    def messages(self, item: JudgeInput, mode: str) -> list[dict]:
        return safety_messages(self.safety, self.rubric.judge.role, item, mode)

    def parse(self, text: str) -> tuple[ParsedSafety, str]:
        return parse_safety(text, self.safety)

    async def judge_item(self, item: JudgeInput, reasons: list[str] | None = None) -> SafetyJudgeResult:
        """The answers on one reply or conversation: from the cache, else asked; never raises for
        API or parse trouble."""
        key = self.cache_key(item)
        labels = {"id": item.id, "scope": item.scope, "reasons": list(reasons or [])}
        if (hit := self.cached_by_key(key)) is not None:
            return hit.model_copy(update=labels)
        async with self.judge.slots:
            result = await self.ask(item)
        self.remember(key, result)
        return result.model_copy(update=labels)

    async def ask(self, item: JudgeInput) -> SafetyJudgeResult:
        """One live judgement over the quality judge's ladder."""
        started = time.perf_counter()
        self.calls_made += 1
        answered = await ask_task(self.judge, lambda mode: self.messages(item, mode), self.parse, self.answer)
        return self.result(item, answered, started)

    def result(self, item: JudgeInput, answered: Answered, started: float) -> SafetyJudgeResult:
        """What the ladder came to, as the case keeps it (the stage adds why the item was chosen)."""
        fields: dict = {"id": item.id, "scope": item.scope, "status": answered.status,
                        "parse_status": answered.parse_status, "mode": answered.mode, "attempts": answered.attempts,
                        "usage": answered.usage, "error": answered.error, "raw": answered.raw,
                        "notices": answered.notices, "model": self.model,
                        "latency_s": round(time.perf_counter() - started, 4)}
        parsed = answered.parsed
        if isinstance(parsed, ParsedSafety):
            fields |= {"reasoning": parsed.reasoning, "flags": flags_of(parsed, self.rubric),
                       "answers": {name: answer.to_record() for name, answer in parsed.answers.items()}}
        return SafetyJudgeResult(**fields)


class SafetyBatchTask:
    """The safety questions as a batch task (evaluators.judge.batch.BatchTask): the requests go in the
    quality judge's batch machinery; each answer is read as a live one (repair request, fallback)."""

    def __init__(self, judge: SafetyJudge) -> None:
        self.safety = judge
        self.answer = judge.answer

    def key(self, item: JudgeInput, sample: int) -> str:
        return self.safety.cache_key(item)

    def cached(self, key: str) -> SafetyJudgeResult | None:
        return self.safety.cached_by_key(key)

    def messages(self, item: JudgeInput, mode: str) -> list[dict]:
        return self.safety.messages(item, mode)

    async def read(self, item: JudgeInput, messages: list[dict], text: str, mode: str, sample: int,
                   usage: Usage) -> SafetyJudgeResult:
        started = time.perf_counter()
        answered = await read_task_answer(self.safety.judge, messages, text, mode, self.safety.parse, self.answer,
                                          attempts=1, usage=usage)
        return self.safety.result(item, answered, started)

    async def live(self, item: JudgeInput, sample: int) -> SafetyJudgeResult:
        return await self.safety.ask(item)

    def remember(self, key: str, result: SafetyJudgeResult) -> None:
        self.safety.remember(key, result)
