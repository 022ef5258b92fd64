"""The pairwise judge: which of two prompt versions answered the same user better.

Absolute scores hide small improvements in noise; a judge that sees both replies side by side
tells them apart more reliably, but it also favours a position. So every comparison runs in
both orders (the candidate as A, then as B). When the two verdicts agree, that is the outcome;
when the verdict changes with the order, the comparison is a tie and counts as position bias.

It rides on the reply judge (evaluators.judge.client): the same endpoint, client, retries,
response-mode stepping and memory, and cache directory, so any OpenAI-compatible server works
and a re-run makes no calls. An unreadable answer gets one repair request; a comparison
without a verdict in both orders has no outcome and enters no win rate.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from evaluators.core.completion import Usage
from evaluators.core.locations import short_hash
from evaluators.core.names import METRIC_NAMES
from evaluators.core.retry import CallFailed
from evaluators.core.text_safety import valid_text
from evaluators.inputs.contracts import Scenario
from evaluators.judge.client import LLMJudge, ModeRefused
from evaluators.judge.pairwise_prompt import (
    PAIRWISE_TEXTS,
    PREFERENCES,
    PairwiseInput,
    pairwise_messages,
    pairwise_schema,
)
from evaluators.judge.prompt import repair_messages
from evaluators.judge.result import RESPONSE_MODES, HistoryItem, PairwiseComparison, ParseStatus
from evaluators.judge.stage import scenario_profile
from evaluators.judge.verdict import json_object
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult, play_id

SCHEMA_NAME = "companion_reply_comparison"
PAIRWISE_FINGERPRINT = short_hash(PAIRWISE_TEXTS)
_ANSWER = (SCHEMA_NAME, pairwise_schema)

_WINNER_LINE = re.compile(r"(?im)^[\W_]*(?:winner|better(?:\s+reply)?|preference|verdict)[\W_]*[:=]\s*\**\s*"
                          r"(?:reply\s+|response\s+|conversation\s+)?([ab]\b|tie\b|draw\b|equal\b|neither\b|both\b)")
_REASONING_LINE = re.compile(r"(?is)\breasoning\s*[:=]\s*(.+?)(?=\n\s*[a-z][\w &-]{1,40}\s*[:=]|\Z)")


class PairwiseParseError(ValueError):
    """The answer holds no readable preference; the message says what is wrong."""


def preference(value: object) -> str | None:
    """'A', 'B' or 'tie' from the ways models write it ("Reply A", "b", "draw"); None otherwise."""
    if not isinstance(value, str):
        return None
    text = re.sub(r"^(?:reply|response|conversation|option)\s+", "", value.strip().lower()).strip(" .*\"'")
    if text in ("a", "b"):
        return text.upper()
    if text in ("tie", "draw", "equal", "neither", "both", "same"):
        return "tie"
    return None


@dataclass(frozen=True)
class ParsedPreference:
    winner: str
    reasoning: str
    dimensions: dict[str, str | None]
    form: str  # "json" or "text"


def parse_preference(text: str | None) -> ParsedPreference:
    """The preference in a pairwise judge's answer: JSON, else `Winner: A|B|tie` lines."""
    if not text or not text.strip():
        raise PairwiseParseError("the answer is empty")
    data = json_object(text)
    if data is not None:
        flat = {re.sub(r"[\s-]+", "_", str(key).strip().lower()): value for key, value in data.items()}
        key = next((name for name in ("winner", "better", "preference", "verdict", "choice") if name in flat), None)
        if key is None:
            raise PairwiseParseError('the JSON object has no "winner"')
        winner = preference(flat[key])
        if winner is None:
            raise PairwiseParseError(f'"winner" is {flat[key]!r}, not one of A, B or tie')
        reasoning = flat.get("reasoning") if isinstance(flat.get("reasoning"), str) else ""
        return ParsedPreference(winner, reasoning.strip(), {name: preference(flat.get(name)) for name in METRIC_NAMES},
                                "json")
    match = _WINNER_LINE.search(text)
    if match is None:
        raise PairwiseParseError('no JSON object and no "Winner: A|B|tie" line')
    dimensions = {}
    for name in METRIC_NAMES:
        found = re.search(rf"(?im)^[\W_]*{name}[\W_]*[:=]\s*(\w+)", text)
        dimensions[name] = preference(found.group(1)) if found else None
    reasoning = _REASONING_LINE.search(text)
    return ParsedPreference(preference(match.group(1)) or "tie", reasoning.group(1).strip() if reasoning else "",
                            dimensions, "text")


class OrderJudgement(BaseModel):
    """The judge's answer in one order: which position won, read how, at what cost."""

    status: Literal["ok", "failed"] = "ok"  # failed: the call failed after retries
    parse_status: ParseStatus | None = None  # fallback: unreadable even after the repair request
    winner: Literal[PREFERENCES] | None = None  # None without a readable answer
    reasoning: str = ""
    dimensions: dict[str, str | None] = Field(default_factory=dict)
    mode: str | None = None
    model: str = ""
    cached: bool = False
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    error: str | None = None
    raw: str | None = None

    @property
    def usable(self) -> bool:
        return self.status == "ok" and self.winner is not None


@dataclass
class PairwiseStats:
    compared: int = 0  # comparisons (both orders each)
    cached: int = 0  # comparisons answered wholly from the cache
    unscored: int = 0  # comparisons without a verdict in some order
    position_bias: int = 0


def candidate_outcome(first: str | None, second: str | None) -> tuple[str | None, bool]:
    """The candidate's outcome from the verdict with it as A (`first`) and as B (`second`).

    Agreeing verdicts decide; a verdict that changes with the order is a tie and position bias.
    """
    if first is None or second is None:
        return None, False
    as_a = {"A": "win", "B": "loss", "tie": "tie"}[first]
    as_b = {"B": "win", "A": "loss", "tie": "tie"}[second]
    return (as_a, False) if as_a == as_b else ("tie", True)


class PairwiseJudge:
    """Compares two replies in both orders over the reply judge's client, cache and modes."""

    def __init__(self, judge: LLMJudge) -> None:
        self.judge = judge
        self.rubric: Rubric = judge.rubric
        self.stats = PairwiseStats()

    @property
    def model(self) -> str:
        return self.judge.settings.model

    async def compare(self, item: PairwiseInput, *, scenario_id: str, family: str,
                      turn: int | None) -> PairwiseComparison:
        """One comparison in both orders; `item` has the candidate as A."""
        first, second = await asyncio.gather(self.judge_order(item), self.judge_order(item.swapped()))
        outcome, biased = candidate_outcome(first.winner, second.winner)
        errors = [f"{order}: {judgement.error}" for order, judgement in (("candidate as A", first),
                                                                          ("candidate as B", second))
                  if not judgement.usable]
        self.stats.compared += 1
        self.stats.cached += first.cached and second.cached
        self.stats.unscored += outcome is None
        self.stats.position_bias += biased
        orders = [{"a": "candidate", **first.model_dump(mode="json")},
                  {"a": "baseline", **second.model_dump(mode="json")}]
        return PairwiseComparison(scenario_id=scenario_id, family=family, turn=turn, outcome=outcome,
                                  position_bias=biased, error="; ".join(errors) or None, orders=orders)

    def cache_key(self, item: PairwiseInput) -> str:
        settings = self.judge.settings
        payload = json.dumps({
            "kind": "pairwise", "rubric": self.rubric.content_hash, "prompt": PAIRWISE_FINGERPRINT,
            "deployment": self.judge.deployment, "model": settings.model, "parameters": settings.parameters(0),
            "input": item.model_dump(mode="json", exclude={"id"}),
        }, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()

    async def judge_order(self, item: PairwiseInput) -> OrderJudgement:
        """The verdict in one order: from the cache, else asked (usable answers are cached)."""
        cache, key = self.judge.cache, self.cache_key(item)
        if cache is not None and (hit := cache.get_json(key)) is not None:
            try:
                return OrderJudgement.model_validate(hit).model_copy(
                    update={"cached": True, "attempts": 0, "latency_s": 0.0, "usage": Usage()})
            except ValueError:
                pass  # unreadable entry: ask again and overwrite it
        async with self.judge.slots:
            result = await self._ask(item)
        if cache is not None and result.usable:
            cache.put_json(key, result.model_dump(mode="json"))
        return result

    async def _ask(self, item: PairwiseInput) -> OrderJudgement:
        """Step down the response modes the server refuses, as the reply judge does; one repair request."""
        started = time.perf_counter()
        mode = self.judge.current_mode()
        attempts = 0
        while True:
            messages = pairwise_messages(self.rubric, item, mode)
            try:
                text, usage, tries = await self.judge.call(messages, mode, 0, _ANSWER)
            except CallFailed as failure:
                attempts += failure.attempts
                if isinstance(failure.__cause__, ModeRefused) and mode != RESPONSE_MODES[-1]:
                    mode = RESPONSE_MODES[RESPONSE_MODES.index(mode) + 1]
                    continue
                return self._result(started, status="failed", mode=mode, attempts=attempts, error=failure.reason)
            break
        self.judge.modes.set(self.judge.endpoint, self.model, mode)
        attempts += tries
        text = valid_text(text)[0]  # nothing UTF-8 cannot hold reaches the parser, the cache or the store
        try:
            parsed, status = parse_preference(text), None
        except PairwiseParseError as problem:
            first_problem, first_text = str(problem), text
            try:
                text, more, tries = await self.judge.call(repair_messages(messages, first_text, first_problem),
                                                          mode, 0, _ANSWER)
                attempts += tries
                usage += more
                text = valid_text(text)[0]
                parsed, status = parse_preference(text), "repaired"
            except CallFailed as failure:
                return self._result(started, parse_status="fallback", mode=mode, attempts=attempts + failure.attempts,
                                    usage=usage, raw=first_text[:2000],
                                    error=f"preference not readable: {first_problem}; the repair request failed: "
                                          f"{failure.reason}")
            except PairwiseParseError as second:
                return self._result(started, parse_status="fallback", mode=mode, attempts=attempts, usage=usage,
                                    raw=first_text[:2000],
                                    error=f"preference not readable: {first_problem}; after the repair request: "
                                          f"{second}")
        return self._result(started, parse_status=status or parsed.form, mode=mode, attempts=attempts, usage=usage,
                            winner=parsed.winner, reasoning=parsed.reasoning, dimensions=parsed.dimensions)

    def _result(self, started: float, **fields: object) -> OrderJudgement:
        return OrderJudgement(model=self.model, latency_s=round(time.perf_counter() - started, 4), **fields)

    async def aclose(self) -> None:
        await self.judge.aclose()


# --- what to compare ------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedComparison:
    item: PairwiseInput
    scenario_id: str
    family: str
    turn: int | None


def _history(case: CaseResult, upto: int) -> tuple[HistoryItem, ...]:
    items: list[HistoryItem] = []
    for turn in case.turns[:upto]:
        items += [HistoryItem(role="user", text=turn.user), HistoryItem(role="companion", text=turn.reply)]
    return tuple(items)


def comparisons_for(candidate: CaseResult, baseline: CaseResult, scenario: Scenario | None) -> list[PlannedComparison]:
    """What to compare in one scenario, with the candidate as A.

    A scripted scenario (the same user turns on both sides) is compared turn by turn, each reply
    after its own version's earlier conversation. When the user's turns differ (a simulated user
    reacts to each companion) the whole conversations are compared once.
    """
    profile = scenario_profile(scenario)
    base = {"family": candidate.family, "profile": profile}
    if not candidate.turns or not baseline.turns:
        return []
    same_user = [turn.user for turn in candidate.turns] == [turn.user for turn in baseline.turns]
    if not same_user:
        item = PairwiseInput(id=play_id(candidate), kind="conversation", **base,
                             history_a=(*_history(candidate, len(candidate.turns) - 1),
                                        HistoryItem(role="user", text=candidate.turns[-1].user)),
                             history_b=(*_history(baseline, len(baseline.turns) - 1),
                                        HistoryItem(role="user", text=baseline.turns[-1].user)),
                             reply_a=candidate.turns[-1].reply, reply_b=baseline.turns[-1].reply)
        return [PlannedComparison(item, candidate.scenario_id, candidate.family, None)]
    planned = []
    for position, (ours, theirs) in enumerate(zip(candidate.turns, baseline.turns)):
        item = PairwiseInput(id=f"{play_id(candidate)}#{position + 1}", **base, user_message=ours.user,
                             history_a=_history(candidate, position), history_b=_history(baseline, position),
                             reply_a=ours.reply, reply_b=theirs.reply)
        planned.append(PlannedComparison(item, candidate.scenario_id, candidate.family, position + 1))
    return planned


def plan_comparisons(candidate: str, baseline: str, cases: Sequence[CaseResult],
                     scenarios: Sequence[Scenario]) -> list[PlannedComparison]:
    """Every comparison of `candidate` against `baseline` over the scenarios both scored, in the
    candidate's scenario order. With repeats (run --repeat N) each repeat is compared with the
    baseline's same repeat."""
    by_id = {scenario.id: scenario for scenario in scenarios}
    theirs = {(case.scenario_id, case.repeat): case for case in cases
              if case.prompt_version == baseline and case.status == "ok"}
    planned = []
    for case in cases:
        other = theirs.get((case.scenario_id, case.repeat))
        if case.prompt_version == candidate and case.status == "ok" and other is not None:
            planned += comparisons_for(case, other, by_id.get(case.scenario_id))
    return planned


async def judge_comparisons(judge: PairwiseJudge, planned: Sequence[PlannedComparison]) -> list[PairwiseComparison]:
    """Every planned comparison, in order (the judge's concurrency bounds the calls in flight)."""
    return list(await asyncio.gather(*(judge.compare(p.item, scenario_id=p.scenario_id, family=p.family, turn=p.turn)
                                       for p in planned)))
