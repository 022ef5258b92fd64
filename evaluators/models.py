"""Data contracts shared by every stage: what goes into scoring and what comes out.

Every score a user sees carries its reasons (evidence), so a number never travels alone.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evaluators.rubric import METRIC_NAMES, OVERALL


class ReplyCase(BaseModel):
    """One companion reply to score, with the conversation that led to it."""

    model_config = ConfigDict(extra="ignore")

    id: str = ""
    history: list[str] = Field(default_factory=list)
    user_message: str = ""
    response: str

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: object) -> str:
        return "" if value is None else str(value)

    @field_validator("history", mode="before")
    @classmethod
    def _history_as_list(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, str):
            return [value] if value.strip() else []
        return value


class Evidence(BaseModel):
    """Why a score moved: which indicator fired, on which words, by how much."""

    model_config = ConfigDict(frozen=True)

    indicator: str
    text: str = ""
    effect: float = 0.0


class MetricScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    value: float = Field(ge=0.0, le=1.0)
    evidence: list[Evidence] = Field(default_factory=list)


class Flag(BaseModel):
    """A hard flag (one of the rubric's disqualifiers) raised on a reply."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    text: str = ""


class HeuristicResult(BaseModel):
    """The six metrics, their weighted overall, and the hard flags for one reply."""

    id: str = ""
    metrics: dict[str, MetricScore]
    overall_quality: float = Field(ge=0.0, le=1.0)
    quality_level: str
    flags: list[Flag] = Field(default_factory=list)
    error: str | None = None

    def values(self) -> dict[str, float]:
        return {name: self.metrics[name].value for name in METRIC_NAMES} | {
            OVERALL: self.overall_quality
        }

    def to_record(self) -> dict:
        """The JSON-lines output shape: id, each metric by name, evidence and flags."""
        return {
            "id": self.id,
            **{name: round(value, 4) for name, value in self.values().items()},
            "quality_level": self.quality_level,
            "evidence": {
                name: [item.model_dump() for item in self.metrics[name].evidence]
                for name in METRIC_NAMES
            },
            "flags": [flag.model_dump() for flag in self.flags],
        }
