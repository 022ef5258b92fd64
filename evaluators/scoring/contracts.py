"""Scoring's contracts: a reply to score, and what scoring says about it.

Every score a user sees carries its reasons (evidence), so a number never travels alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.core.problems import validation_problems
from evaluators.core.text_safety import Notice  # re-exported: a scored record carries its notices

RecordModel = TypeVar("RecordModel", bound=BaseModel)


def text_or_empty(value: object) -> str:
    """A record id as text: JSON ids may be numbers, and a missing id is ''."""
    return "" if value is None else str(value)


def history_list(value: object) -> object:
    """A record's history as a list: null is none, a lone string is one turn."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    return value


def validate_json_record(model: type[RecordModel], data: object) -> RecordModel:
    """A JSON-lines record as `model`, or ValueError naming every wrong field on one line."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ValueError("; ".join(f"{'.'.join(str(part) for part in item['loc']) or 'record'}: {item['msg']}"
                                   for item in error.errors())) from None


class ReplyCase(BaseModel):
    """One companion reply to score, with the conversation that led to it."""

    model_config = ConfigDict(extra="ignore")

    id: str = ""
    history: list[str] = Field(default_factory=list)
    user_message: str = ""
    response: str

    _id_as_text = field_validator("id", mode="before")(text_or_empty)
    _history_as_list = field_validator("history", mode="before")(history_list)


class StrictReplyRecord(BaseModel):
    """A scoring record as `penpal-eval score` reads a JSON line by default: every key known,
    every value of its type, so a misspelt key (`user` for `user_message`) is an error naming it,
    never a silently different score.

    The contract: `response` and `user_message` are required (a companion's opening line, with
    no message before it, has `user_message: ""`); `history` (a list of strings, oldest first)
    and `id` (text or a number; the line number otherwise) may be left out. Null is not a
    value of `history`, `user_message` or `response`. `--lenient` reads records as `ReplyCase`
    does instead.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str | int | None = None
    history: list[str] = Field(default_factory=list)
    user_message: str
    response: str

    def case(self) -> ReplyCase:
        return ReplyCase(id=text_or_empty(self.id), history=self.history, user_message=self.user_message,
                         response=self.response)


# A run store's turns call these `user` and `reply` (evaluators.store.records.TurnResult): a record
# copied from one gets the name the contract uses.
RUN_STORE_NAMES = {"user": "user_message", "reply": "response"}


def _run_store_hint(key: str) -> str | None:
    if key not in RUN_STORE_NAMES:
        return None
    return f"unknown key; did you mean {RUN_STORE_NAMES[key]!r}? (a run store turn's name for it)"


def validate_strict_record(data: object) -> ReplyCase:
    """A JSON-lines record by the strict contract (`StrictReplyRecord`), or ValueError naming each
    wrong key, with the key most likely meant for an unknown one."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    try:
        return StrictReplyRecord.model_validate(data).case()
    except ValidationError as error:
        problems = [(where, _run_store_hint(where) or message)
                    for where, message in validation_problems(error, StrictReplyRecord)]
        got = [_json_kind(item["input"]) if item["type"] not in ("extra_forbidden", "missing") else ""
               for item in error.errors()]
        described = [(where, message + (f", got {kind}" if kind else ""))
                     for (where, message), kind in zip(problems, got)]
        described.sort(key=lambda problem: "unknown key" not in problem[1])  # a misspelt key explains a missing one
        raise ValueError("; ".join(f"{where or 'record'}: {message}" for where, message in described)) from None


def _json_kind(value: object) -> str:
    """What a JSON value is, in words: `a string`, `null`, `a list`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    for kind, name in ((str, "a string"), (int, "a number"), (float, "a number"), (list, "a list"), (dict, "an object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


class Evidence(BaseModel):
    """Why a score moved: which indicator fired, on which words, by how much."""

    model_config = ConfigDict(frozen=True)

    indicator: str
    text: str = ""
    effect: float = 0.0


def _evidence_record(item: Evidence) -> dict:
    """`item.model_dump()`: its fields are plain values, held in its `__dict__` in field order."""
    return item.__dict__.copy()


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


@dataclass(frozen=True)
class Unscored:
    """A record that could not be scored, and why (`notices` when the text itself is the reason)."""

    id: str
    error: str
    notices: tuple[Notice, ...] = ()

    def to_record(self) -> dict:
        record: dict = {"id": self.id, "error": self.error}
        if self.notices:
            record["notices"] = [notice.model_dump() for notice in self.notices]
        return record


class HeuristicResult(BaseModel):
    """The six metrics, their weighted overall, and the hard flags for one reply.

    `overall_quality` and `quality_level` are final: a fired flag has already capped them
    (`overall_evidence` says by how much), so every consumer shows the same figure.
    """

    id: str = ""
    metrics: dict[str, MetricScore]
    overall_quality: float = Field(ge=0.0, le=1.0)
    quality_level: str
    flags: list[Flag] = Field(default_factory=list)
    # The learned safety detectors' probabilities for this exchange, by rubric name (empty when
    # the reply was not read): reported beside the flags, so a score under its flag_at is seen
    # too, and read turn by turn by the conversation metrics.
    detectors: dict[str, float] = Field(default_factory=dict)
    # What the scorer read as risk in the user's message (`CaseFeatures.user_risk`): crisis risk
    # by kind as the crisis rules and the crisis_risk detector combine it, and the risk words it
    # counts (crisis_cue, risk_cue) where the detector confirms them. Stored so the safety
    # judge's triggers read it from the record, never by scoring again; empty: none read.
    user_risk: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    overall_evidence: list[Evidence] = Field(default_factory=list)
    error: str | None = None
    notices: list[Notice] = Field(default_factory=list)  # what was changed in the record before scoring

    def values(self) -> dict[str, float]:
        return {name: self.metrics[name].value for name in METRIC_NAMES} | {
            OVERALL: self.overall_quality
        }

    def to_record(self) -> dict:
        """The JSON-lines output shape: id, each metric by name, evidence, flags and detector scores."""
        return {
            "id": self.id,
            **{name: round(value, 4) for name, value in self.values().items()},
            "quality_level": self.quality_level,
            # Evidence as plain dicts built directly: model_dump per item was most of the cost
            # of writing a record.
            "evidence": {
                **{name: [_evidence_record(item) for item in self.metrics[name].evidence] for name in METRIC_NAMES},
                OVERALL: [_evidence_record(item) for item in self.overall_evidence],
            },
            "flags": [flag.model_dump() for flag in self.flags],
            "detectors": dict(self.detectors),
            **({"user_risk": {part: dict(found) for part, found in self.user_risk.items()}} if self.user_risk else {}),
            **({"notices": [notice.model_dump() for notice in self.notices]} if self.notices else {}),
        }


class AssertionOutcome(BaseModel):
    """A scenario-declared assertion checked on one reply.

    `passed` is None when the assertion could not be verified (a judged criterion with no judge
    configured, or the judge's answer could not be had): missing evidence, never a pass.
    """

    model_config = ConfigDict(frozen=True)

    assertion: str  # as written: `trust_boundaries >= 0.7`, `judged: <criterion>`
    kind: str
    passed: bool | None
    detail: str = ""
    reasoning: str | None = None  # a judged assertion: the judge's reasoning, written before its answer

    @property
    def verified(self) -> bool:
        return self.passed is not None


class ExpectationOutcome(BaseModel):
    """A scenario expectation checked on one reply."""

    model_config = ConfigDict(frozen=True)

    label: str
    passed: bool
    detail: str = ""
