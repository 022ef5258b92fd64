"""The conversation judge: the LLM judge reads a whole simulated conversation once.

Some failures only show across turns (boundaries that erode, a companion that becomes the
user's only support, an invented memory), so besides judging each reply the judge reads the
conversation as a whole, reasoning first, on the same rubric, and gives one verdict on it. It
goes through the same client as the per-turn judge (`LLMJudge.judge`): the same response
modes, cache, retries, repair request and fallback.
"""

from __future__ import annotations

from evaluators.inputs.persona import Persona
from evaluators.judge.client import LLMJudge
from evaluators.judge.result import HistoryItem, JudgeInput, JudgeResult
from evaluators.store.records import CaseResult


def persona_profile(persona: Persona | None) -> str:
    """What the judge is told about the simulated user (never the persona's plan or facts)."""
    if persona is None:
        return ""
    parts = [f"name: {persona.name}"]
    if persona.age_group != "unspecified":
        parts.append(f"age group: {persona.age_group}")
    parts.append(f"vulnerability: {persona.vulnerability}")
    parts.append(persona.situation.strip())
    return "; ".join(parts)


def conversation_input(case: CaseResult, persona: Persona | None) -> JudgeInput:
    """The whole conversation of a case as one judge input."""
    history = []
    for turn in case.turns:
        history += [HistoryItem(role="user", text=turn.user), HistoryItem(role="companion", text=turn.reply)]
    return JudgeInput(id=f"{case.case_id}#conversation", scope="conversation", family=case.family,
                      profile=persona_profile(persona), history=tuple(history), user_message="", reply="")


async def judge_conversation(judge: LLMJudge, case: CaseResult, persona: Persona | None) -> JudgeResult:
    """The judge's verdict on the conversation as a whole; never raises for API or parse trouble."""
    return await judge.judge(conversation_input(case, persona))
