"""What one model call returned and what it cost: the companion's replies and the judge's
answers are both counted in these, and the on-disk cache keeps them.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from evaluators.core.text_safety import Notice


class Usage(BaseModel):
    """Tokens a call used. `reported` is False when the server sent no usage: the counts are then
    unknown (not zero), and so is the call's cost."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reported: bool = True

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens,
                     reported=self.reported and other.reported)


class Completion(BaseModel):
    """One companion reply as the responder produced it, with what it cost."""

    text: str
    model: str
    usage: Usage = Field(default_factory=Usage)
    # Measured on the streamed call that produced the reply (its last attempt; a cached reply
    # keeps the figures of the call that made it). None: not measured, as for replayed replies.
    latency_s: float | None = None  # request sent -> stream finished
    time_to_first_token_s: float | None = None  # request sent -> first content delta
    tokens_per_s: float | None = None  # tokens after the first over the time after the first
    cached: bool = False  # served from the on-disk response cache: no API call, no cost
    attempts: int = 1
    finish_reason: str | None = None
    # The reply is not whole: the stream ended without a finish reason (after every retry) or the
    # model stopped at max_tokens ("length"). `truncation` says which; such a reply is never scored.
    truncated: bool = False
    truncation: str | None = None
    notices: list[Notice] = Field(default_factory=list)  # e.g. invalid characters replaced in the reply
