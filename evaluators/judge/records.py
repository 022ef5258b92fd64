"""JSON-lines records for `penpal-eval judge` and `penpal-eval calibrate`.

The same shape as `penpal-eval score` takes ({id, history, user_message, response}), plus
what only the judge or calibration uses: the scenario family, a profile line, the prompt
version and user feedback (for the sampling policy), and human labels.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evaluators.inputs.contracts import FAMILIES
from evaluators.judge.result import HistoryItem, JudgeInput
from evaluators.scoring.contracts import ReplyCase, history_list, text_or_empty, validate_json_record


def history_items(value: object) -> object:
    """A record's earlier turns as strings (speaker unknown) or {role, text} mappings, oldest
    first; a bare string is a turn by an unknown speaker. Shared by every record the judge reads."""
    value = history_list(value)
    if isinstance(value, list):
        return [{"role": "earlier turn", "text": item} if isinstance(item, str) else item for item in value]
    return value


class JudgeRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = ""
    history: list[HistoryItem] = Field(default_factory=list)
    user_message: str = ""
    response: str = Field(min_length=1)
    family: Literal[FAMILIES] | None = None
    profile: str = ""
    prompt_version: str = "unversioned"
    feedback: str | None = None
    human_score: float | None = Field(default=None, ge=0.0, le=1.0)
    human_verdict: Literal["good", "acceptable", "poor"] | None = None

    _id_as_text = field_validator("id", mode="before")(text_or_empty)

    _history_items = field_validator("history", mode="before")(history_items)

    @field_validator("response")
    @classmethod
    def _reply_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("empty reply")
        return value

    def judge_input(self) -> JudgeInput:
        return JudgeInput(id=self.id, family=self.family, profile=self.profile, history=tuple(self.history),
                          user_message=self.user_message, reply=self.response)

    def reply_case(self) -> ReplyCase:
        """The record as the heuristics see it: the user's side of the history only."""
        history = [item.text for item in self.history if item.role != "companion"]
        return ReplyCase(id=self.id, history=history, user_message=self.user_message, response=self.response)


def parse_record(data: object, fallback_id: str) -> JudgeRecord:
    """A record, or ValueError naming the field that is wrong."""
    record = validate_json_record(JudgeRecord, data)
    return record if record.id else record.model_copy(update={"id": fallback_id})
