"""What goes into a judgement and what comes out of it.

A `JudgeResult` keeps the judge's reasoning beside its scores, and says how the verdict was
read (`parse_status`), so a fallback score can always be told apart from a real one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evaluators.core.completion import Usage

ParseStatus = Literal["json", "text", "repaired", "fallback"]
RESPONSE_MODES: tuple[str, ...] = ("json_schema", "json_object_schema", "json_object", "text")


def is_usable(status: str | None, parse_status: str | None, overall: float | None) -> bool:
    """A real score: the call worked and the verdict was read (not the fallback).

    One rule for results and for the stored records that summaries read.
    """
    return status == "ok" and parse_status != "fallback" and overall is not None


class HistoryItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: str  # "user", "companion", or "earlier turn" when the speaker is not known
    text: str


class JudgeInput(BaseModel):
    """One reply to judge, with the conversation that led to it and who the user is.

    With `scope="conversation"` the judge reads the whole conversation (`history`) once and
    judges the companion's side of it as a whole; `user_message` and `reply` are then empty.
    """

    model_config = ConfigDict(frozen=True)

    scope: Literal["reply", "conversation"] = "reply"

    id: str = ""
    family: str | None = None  # scenario family: selects the judge's guidance
    profile: str = ""  # what is known about the user (age group, notes)
    history: tuple[HistoryItem, ...] = ()
    user_message: str = ""
    reply: str


class JudgeResult(BaseModel):
    """The judge's verdict on one reply (the median over samples when k > 1).

    `status` is "failed" when the call itself failed (after retries); `parse_status` is
    "fallback" when the judge answered but no verdict could be read even after a repair
    request: `overall` then holds the rubric's fallback score, which no mean may include.
    """

    status: Literal["ok", "failed"] = "ok"
    parse_status: ParseStatus | None = None
    mode: str | None = None
    reasoning: str = ""
    dimensions: dict[str, float | None] = Field(default_factory=dict)
    overall: float | None = None
    verdict: Literal["good", "acceptable", "poor"] | None = None
    failure_mode: str | None = None
    samples: list[float | None] = Field(default_factory=list)  # overall per sample (None: fell back)
    spread: float | None = None
    unstable: bool = False
    fallback_samples: int = 0
    model: str = ""
    cached: bool = False
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    error: str | None = None
    raw: str | None = None  # the unreadable answer, kept when the verdict fell back
    review: list[str] = Field(default_factory=list)  # reasons a human should look at this reply

    @property
    def usable(self) -> bool:
        return is_usable(self.status, self.parse_status, self.overall)

    def to_record(self) -> dict:
        return self.model_dump(mode="json", exclude_none=False)


# --- the pairwise judge ------------------------------------------------------------------------
PAIRWISE_OUTCOMES: tuple[str, ...] = ("win", "tie", "loss")  # the candidate's, against its baseline


class PairwiseComparison(BaseModel):
    """One head-to-head comparison (a scenario turn, or a whole simulated conversation), judged in
    both orders. `outcome` is the candidate's; None when either order had no readable verdict,
    which no win rate counts. A verdict that changed with the order is a tie and `position_bias`."""

    scenario_id: str
    family: str
    turn: int | None = None  # 1-based turn; None: the whole conversation
    outcome: Literal[PAIRWISE_OUTCOMES] | None = None
    position_bias: bool = False
    error: str | None = None
    orders: list[dict] = Field(default_factory=list)  # per order: who was A, the judge's answer
