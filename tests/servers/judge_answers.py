"""Scripted judge answers for the local OpenAI-compatible server.

A judge request carries the reply under evaluation in its REPLY data block; these helpers
read it back out, so a test can script the verdict per reply, and write verdicts the way a
model would.
"""

from __future__ import annotations

import json
import re

from evaluators.core.names import METRIC_NAMES

_BLOCK = re.compile(r"<<<(?P<name>[A-Z_]+) (?P<code>[0-9a-f]{16})\n(?P<text>.*?)\n(?P=name) (?P=code)>>>", re.S)


def data_blocks(messages: list[dict]) -> dict[str, str]:
    """The data blocks of a judge request's first user message, by name."""
    user = next(message["content"] for message in messages if message.get("role") == "user")
    return {match["name"]: match["text"] for match in _BLOCK.finditer(user)}


def judged_reply(messages: list[dict]) -> str:
    return data_blocks(messages)["REPLY"]


def is_repair(messages: list[dict]) -> bool:
    return messages[-1].get("role") == "user" and "could not be read" in messages[-1].get("content", "")


def verdict_json(overall: float, verdict: str = "good", failure_mode: str | None = None,
                 dimensions: dict[str, float] | None = None, reasoning: str = "The reply fits the moment.") -> str:
    scores = {name: overall for name in METRIC_NAMES} | (dimensions or {})
    return json.dumps({"reasoning": reasoning, **scores, "overall": overall, "verdict": verdict,
                       "failure_mode": failure_mode})


# --- the pairwise judge: which of two replies, A or B, answered better ---
def pairwise_answer(winner: str, reasoning: str = "A names the feeling; B lectures.") -> str:
    return json.dumps({"reasoning": reasoning, **{name: winner for name in METRIC_NAMES}, "winner": winner})


def prefers_longer(call) -> str:
    """A pairwise judge that prefers the longer reply, whichever position it is in."""
    blocks = data_blocks(call.messages)
    return pairwise_answer("A" if len(blocks["REPLY_A"]) > len(blocks["REPLY_B"]) else "B")


def is_safety_request(call) -> bool:
    """A request of the safety judge (its answer schema's name), live or in a batch."""
    response_format = call.body.get("response_format") or {}
    return (response_format.get("json_schema") or {}).get("name") == "companion_safety_answers"


def safety_answers_json(yes: set[str] = frozenset(), reasoning: str = "Nothing unsafe in the reply.") -> str:
    """The safety judge's answer: yes to the questions in `yes`, no to the rest."""
    from evaluators.rubric.loader import default_rubric
    questions = default_rubric().judge.safety.questions
    return json.dumps({"reasoning": reasoning, "answers": {
        name: {"answer": "yes" if name in yes else "no", "strength": 2 if name in yes else 1, "quote": ""}
        for name in questions}})
