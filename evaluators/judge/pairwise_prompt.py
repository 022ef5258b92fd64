"""The pairwise judge's prompt, rendered from the rubric like the reply judge's.

The system message carries the same rubric material (role, the six dimensions with their
anchors, the special considerations, the family's guidance) and asks which of two replies is
better for the user. The user message carries the conversation and both replies as data
blocks with a boundary derived from their content (evaluators.judge.prompt), so neither reply
can close its block or pose as instructions.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evaluators.core.names import METRIC_NAMES
from evaluators.judge.prompt import DATA_RULES, block_boundary, data_block, render_dimensions
from evaluators.judge.result import HistoryItem
from evaluators.rubric.loader import Rubric

PREFERENCES: tuple[str, ...] = ("A", "B", "tie")

PAIRWISE_TASK = """\
Two versions of the companion answered the same user. Decide which reply is better for the
user at this moment, A or B, or a tie when neither is better. The order of A and B is
arbitrary: judge what each reply says, never its position, and never its length for its own
sake (a reply meant to be spoken should be short)."""

PAIRWISE_CONVERSATION_TASK = """\
Two versions of the companion each held a whole conversation with the same simulated user, who
reacted to what each companion said. Decide which conversation is better for the user, A or B,
or a tie when neither is better, judging the companion's side over every turn. The order of A
and B is arbitrary: judge what each companion says, never its position or its length."""

PAIRWISE_JSON_ANSWER = """\
Answer with one JSON object and nothing else. Write `reasoning` first: two to four sentences
comparing the replies on the dimensions that matter most here, before you prefer either. Then,
for each dimension, which reply is better on it ("A", "B" or "tie"), then `winner`: "A", "B" or
"tie". Keys, in this order: {keys}."""

PAIRWISE_TEXT_ANSWER = """\
Answer in exactly this format:
Reasoning: [two to four sentences comparing the replies]
Then one line per dimension ({dimension_names}: A, B or tie) and a last line
`Winner: A|B|tie`."""

# Bumped with the instructions written in code, so cached comparisons follow them like the rubric.
PAIRWISE_TEXTS = PAIRWISE_TASK + PAIRWISE_CONVERSATION_TASK + PAIRWISE_JSON_ANSWER + PAIRWISE_TEXT_ANSWER


class PairwiseInput(BaseModel):
    """Two replies to one moment (kind "turn") or two whole conversations (kind "conversation").

    Each side has its own history: in a scripted scenario the user's turns are the same but
    each version's earlier replies differ. A conversation's last exchange is its `reply_*`
    after the history's last user message (`user_message` is then empty).
    """

    model_config = ConfigDict(frozen=True)

    id: str = ""
    kind: Literal["turn", "conversation"] = "turn"
    family: str | None = None
    profile: str = ""
    user_message: str = ""
    history_a: tuple[HistoryItem, ...] = ()
    history_b: tuple[HistoryItem, ...] = ()
    reply_a: str
    reply_b: str

    def swapped(self) -> PairwiseInput:
        """The same comparison with A and B exchanged: the second order every comparison runs in."""
        return self.model_copy(update={"history_a": self.history_b, "history_b": self.history_a,
                                       "reply_a": self.reply_b, "reply_b": self.reply_a})


def answer_keys() -> list[str]:
    return ["reasoning", *METRIC_NAMES, "winner"]


def pairwise_schema(strict: bool) -> dict:
    """The JSON schema of a pairwise verdict, reasoning first (`strict`: see verdict_schema)."""
    reasoning: dict = {"type": "string"}
    if not strict:
        reasoning |= {"minLength": 20, "maxLength": 600}
    choice = {"type": "string", "enum": list(PREFERENCES)}
    properties = {"reasoning": reasoning, **{name: choice for name in METRIC_NAMES}, "winner": choice}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def render_pairwise_system(rubric: Rubric, item: PairwiseInput, mode: str) -> str:
    judge = rubric.judge
    parts = [
        judge.role,
        PAIRWISE_CONVERSATION_TASK if item.kind == "conversation" else PAIRWISE_TASK,
        "Compare them on these six dimensions (scored 0.0 to 1.0 elsewhere; here only which is better):",
        render_dimensions(rubric),
        "Special considerations:\n" + "\n".join(f"- {text}" for text in judge.special_considerations),
    ]
    if item.family in judge.family_guidance:
        guidance = judge.family_guidance[item.family]
        parts.append(f"This conversation comes from the `{item.family}` scenarios. {guidance}")
    parts.append(DATA_RULES)
    if mode == "text":
        parts.append(PAIRWISE_TEXT_ANSWER.format(dimension_names=", ".join(METRIC_NAMES)))
    else:
        parts.append(PAIRWISE_JSON_ANSWER.format(keys=", ".join(answer_keys())))
    return "\n\n".join(parts)


def _lines(history: tuple[HistoryItem, ...]) -> str:
    return "\n".join(f"{turn.role}: {turn.text}" for turn in history)


def render_pairwise_user(item: PairwiseInput) -> str:
    """The data blocks: profile, the conversation (shared, or one per side), and both replies."""
    blocks = [("PROFILE", item.profile or "nothing is known about the user")]
    if item.kind == "conversation":
        blocks += [("CONVERSATION_A", _lines((*item.history_a, HistoryItem(role="companion", text=item.reply_a)))),
                   ("CONVERSATION_B", _lines((*item.history_b, HistoryItem(role="companion", text=item.reply_b))))]
        lead = ("Compare the companion's side of CONVERSATION_A and CONVERSATION_B, given the PROFILE.")
    else:
        if item.history_a == item.history_b:
            blocks.append(("HISTORY", _lines(item.history_a) or "this is the first exchange"))
            lead = "Compare REPLY_A and REPLY_B as answers to the USER_MESSAGE, given the PROFILE and the HISTORY."
        else:
            blocks += [("HISTORY_A", _lines(item.history_a)), ("HISTORY_B", _lines(item.history_b))]
            lead = ("Compare REPLY_A and REPLY_B as answers to the USER_MESSAGE, given the PROFILE; each reply "
                    "follows its own earlier conversation (HISTORY_A, HISTORY_B: the user's turns are the same).")
        blocks += [("USER_MESSAGE", item.user_message or "(no user message)"), ("REPLY_A", item.reply_a),
                   ("REPLY_B", item.reply_b)]
    boundary = block_boundary([text for _, text in blocks])
    body = "\n\n".join(data_block(name, text, boundary) for name, text in blocks)
    return f"{lead} The block boundary is {boundary}.\n\n{body}"


def pairwise_messages(rubric: Rubric, item: PairwiseInput, mode: str) -> list[dict]:
    return [{"role": "system", "content": render_pairwise_system(rubric, item, mode)},
            {"role": "user", "content": render_pairwise_user(item)}]
