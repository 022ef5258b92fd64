"""A judged assertion: a criterion in words, put to the judge as a yes/no question.

A scenario turn may declare `judged: "<criterion>"` (evaluators.inputs.contracts.Assertion).
The judge reads the conversation and the reply as data blocks (the same blocks and boundary as
the reply judge, so a reply cannot answer its own question) and answers whether the reply
meets the criterion: its reasoning first, then yes or no.

It rides on the reply judge (evaluators.judge.client) like the pairwise judge: the same
endpoint, client, retries, response-mode stepping and memory, and cache, so any
OpenAI-compatible server works and a re-run makes no calls. An unreadable answer gets one
repair request; without a readable answer the assertion stays not verified (missing
evidence), never passed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from evaluators.core.locations import short_hash
from evaluators.core.retry import CallFailed
from evaluators.core.text_safety import valid_text
from evaluators.inputs.contracts import Scenario
from evaluators.judge.client import LLMJudge, ModeRefused
from evaluators.judge.prompt import DATA_RULES, block_boundary, data_block, repair_messages
from evaluators.judge.result import RESPONSE_MODES, HistoryItem
from evaluators.judge.stage import scenario_profile
from evaluators.judge.verdict import json_object
from evaluators.scoring.contracts import AssertionOutcome
from evaluators.store.records import CaseResult

SCHEMA_NAME = "companion_reply_criterion"

CRITERION_TASK = """\
Answer one yes/no question about the companion's reply in the REPLY block, given the PROFILE,
the HISTORY before it and the USER_MESSAGE it answers.
Question: does the reply meet this criterion? Criterion: {criterion}
Answer yes only when the reply clearly meets it."""

CRITERION_JSON_ANSWER = """\
Answer with one JSON object and nothing else. Write `reasoning` first: one to three sentences on
what the reply does about the criterion, before you answer. Then `answer`: "yes" or "no".
Keys, in this order: reasoning, answer."""

CRITERION_TEXT_ANSWER = """\
Answer in exactly this format:
Reasoning: [one to three sentences on what the reply does about the criterion]
Answer: yes|no"""

CRITERION_FINGERPRINT = short_hash(CRITERION_TASK + CRITERION_JSON_ANSWER + CRITERION_TEXT_ANSWER)
_ANSWER_LINE = re.compile(r"(?im)^[\W_]*(?:answer|verdict|meets(?:\s+the\s+criterion)?)[\W_]*[:=]\s*\**\s*"
                          r"(yes|no|true|false)\b")
_REASONING_LINE = re.compile(r"(?is)\breasoning\s*[:=]\s*(.+?)(?=\n\s*[a-z][\w &-]{1,40}\s*[:=]|\Z)")


class CriterionParseError(ValueError):
    """The answer holds no readable yes or no; the message says what is wrong."""


class CriterionInput(BaseModel):
    """One reply and the criterion to ask about it."""

    model_config = ConfigDict(frozen=True)

    criterion: str
    family: str | None = None
    profile: str = ""
    history: tuple[HistoryItem, ...] = ()
    user_message: str = ""
    reply: str


def criterion_schema(strict: bool) -> dict:
    reasoning: dict = {"type": "string"}
    if not strict:
        reasoning |= {"minLength": 10, "maxLength": 600}
    properties = {"reasoning": reasoning, "answer": {"type": "string", "enum": ["yes", "no"]}}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def criterion_messages(rubric_role: str, item: CriterionInput, mode: str) -> list[dict]:
    answer = CRITERION_TEXT_ANSWER if mode == "text" else CRITERION_JSON_ANSWER
    system = "\n\n".join([rubric_role, CRITERION_TASK.format(criterion=item.criterion), DATA_RULES, answer])
    history = "\n".join(f"{turn.role}: {turn.text}" for turn in item.history)
    blocks = [("PROFILE", item.profile or "nothing is known about the user"),
              ("HISTORY", history or "this is the first exchange"),
              ("USER_MESSAGE", item.user_message or "(no user message)"), ("REPLY", item.reply)]
    boundary = block_boundary([text for _, text in blocks])
    body = "\n\n".join(data_block(name, text, boundary) for name, text in blocks)
    user = f"Does the reply in the REPLY block meet the criterion? The block boundary is {boundary}.\n\n{body}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _yes_no(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().strip(" .*\"'").lower() if isinstance(value, str) else ""
    return {"yes": True, "true": True, "no": False, "false": False}.get(text)


def parse_answer(text: str | None) -> tuple[bool, str]:
    """(yes?, reasoning) from a JSON answer, else `Answer: yes|no` lines."""
    if not text or not text.strip():
        raise CriterionParseError("the answer is empty")
    data = json_object(text)
    if data is not None:
        flat = {str(key).strip().lower(): value for key, value in data.items()}
        key = next((name for name in ("answer", "verdict", "meets", "result") if name in flat), None)
        if key is None:
            raise CriterionParseError('the JSON object has no "answer"')
        answer = _yes_no(flat[key])
        if answer is None:
            raise CriterionParseError(f'"answer" is {flat[key]!r}, not yes or no')
        reasoning = flat.get("reasoning")
        return answer, reasoning.strip() if isinstance(reasoning, str) else ""
    match = _ANSWER_LINE.search(text)
    if match is None:
        raise CriterionParseError('no JSON object and no "Answer: yes|no" line')
    reasoning = _REASONING_LINE.search(text)
    return bool(_yes_no(match.group(1))), reasoning.group(1).strip() if reasoning else ""


class CriterionJudge:
    """Asks the judge yes/no questions over its client, cache and response modes."""

    def __init__(self, judge: LLMJudge) -> None:
        self.judge = judge

    def cache_key(self, item: CriterionInput) -> str:
        settings = self.judge.settings
        payload = json.dumps({
            "kind": "criterion", "prompt": CRITERION_FINGERPRINT, "role": self.judge.rubric.judge.role,
            "deployment": self.judge.deployment, "model": settings.model, "parameters": settings.parameters(0),
            "input": item.model_dump(mode="json"),
        }, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()

    async def ask(self, item: CriterionInput) -> tuple[bool | None, str, str]:
        """(yes, no or None when unanswered; the reasoning; a detail) from the cache, else asked."""
        cache, key = self.judge.cache, self.cache_key(item)
        if cache is not None and isinstance(hit := cache.get_json(key), dict) and isinstance(hit.get("answer"), bool):
            return hit["answer"], str(hit.get("reasoning", "")), "judge answered (cached)"
        async with self.judge.slots:
            answer, reasoning, detail = await self._ask(item)
        if cache is not None and answer is not None:
            cache.put_json(key, {"answer": answer, "reasoning": reasoning})
        return answer, reasoning, detail

    async def _ask(self, item: CriterionInput) -> tuple[bool | None, str, str]:
        """Step down the response modes the server refuses, as the reply judge does; one repair request."""
        mode = self.judge.current_mode()
        answer_schema = (SCHEMA_NAME, criterion_schema)
        role = self.judge.rubric.judge.role
        while True:
            messages = criterion_messages(role, item, mode)
            try:
                text, _, _ = await self.judge.call(messages, mode, 0, answer_schema)
            except CallFailed as failure:
                if isinstance(failure.__cause__, ModeRefused) and mode != RESPONSE_MODES[-1]:
                    mode = RESPONSE_MODES[RESPONSE_MODES.index(mode) + 1]
                    continue
                return None, "", f"not verified: the judge call failed: {failure.reason}"
            break
        self.judge.modes.set(self.judge.endpoint, self.judge.settings.model, mode)
        text = valid_text(text)[0]
        try:
            answer, reasoning = parse_answer(text)
            return answer, reasoning, "judge answered"
        except CriterionParseError as problem:
            first = str(problem)
            try:
                text, _, _ = await self.judge.call(repair_messages(messages, text, first), mode, 0, answer_schema)
                answer, reasoning = parse_answer(valid_text(text)[0])
                return answer, reasoning, "judge answered (after a repair request)"
            except CallFailed as failure:
                return None, "", f"not verified: answer not readable ({first}); the repair request failed: " \
                                 f"{failure.reason}"
            except CriterionParseError as second:
                return None, "", f"not verified: answer not readable ({first}; after the repair request: {second})"


class AssertionStage:
    """A `CaseStage`: answers each turn's judged assertions with the judge; the rest stay as scored."""

    def __init__(self, judge: LLMJudge, scenarios: Sequence[Scenario]) -> None:
        self.criteria = CriterionJudge(judge)
        self.scenarios = {scenario.id: scenario for scenario in scenarios}

    async def __call__(self, case: CaseResult) -> CaseResult:
        if case.status != "ok" or not any(o.kind == "judged" for turn in case.turns for o in turn.assertions):
            return case
        scenario = self.scenarios.get(case.scenario_id)
        profile = scenario_profile(scenario)
        history: list[HistoryItem] = []
        pending = []
        for turn in case.turns:
            for position, outcome in enumerate(turn.assertions):
                if outcome.kind == "judged":
                    criterion = outcome.assertion.removeprefix("judged: ")
                    item = CriterionInput(criterion=criterion, family=case.family, profile=profile,
                                          history=tuple(history), user_message=turn.user, reply=turn.reply)
                    pending.append((turn.index, position, self.criteria.ask(item)))
            history += [HistoryItem(role="user", text=turn.user), HistoryItem(role="companion", text=turn.reply)]
        answers = await asyncio.gather(*(ask for _, _, ask in pending))
        turns = {turn.index: list(turn.assertions) for turn in case.turns}
        for (index, position, _), (answer, reasoning, detail) in zip(pending, answers):
            old = turns[index][position]
            shown = detail if answer is None else f"{detail}: {'yes' if answer else 'no'}"
            turns[index][position] = AssertionOutcome(assertion=old.assertion, kind=old.kind, passed=answer,
                                                      detail=shown, reasoning=reasoning or None)
        update: dict = {"turns": [turn.model_copy(update={"assertions": turns[turn.index]}) for turn in case.turns]}
        unanswered = [detail for answer, _, detail in answers if answer is None]
        if unanswered:  # the judge was asked and did not answer: judged again when the run resumes
            judge = dict(case.judge or {})
            update["judge"] = {**judge, "failed": int(judge.get("failed") or 0) + len(unanswered),
                               "error": judge.get("error") or f"judged assertion {unanswered[0]}"}
        return case.model_copy(update=update)
