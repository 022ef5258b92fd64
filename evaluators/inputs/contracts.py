"""The inputs' contracts: scenarios (turns, expectations, the user's profile) and prompt versions.

`forbid` on every model: a misspelt field in a hand-written file is an error naming it, not a
check silently skipped.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from evaluators.core.names import METRIC_NAMES, OVERALL, SCENARIO_FAMILIES
from evaluators.core.problems import did_you_mean

FAMILIES: tuple[str, ...] = SCENARIO_FAMILIES
AGE_GROUPS: tuple[str, ...] = ("18-30", "30+", "unspecified")
VULNERABLE = "vulnerable"

# Expectation kinds and the type of value each takes (checked in evaluators.scoring.expectations).
EXPECTATION_KINDS: dict[str, type] = {
    "max_words": int,
    "min_words": int,
    "asks_question": bool,
    "voice_ready": bool,
    "points_to_help": bool,
    "says_ai": bool,
    "avoids": list,
    "must_contain_any": list,
    "must_not_contain": list,
    "recalls_any": list,
}


class _ScenarioModel(BaseModel):
    # forbid: a misspelt field (`expects:`) must be an error, not a check silently skipped.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Expectation(_ScenarioModel):
    """One plain-Python check on a reply, e.g. `max_words: 40` or `points_to_help: true`."""

    kind: str
    value: bool | int | tuple[str, ...]

    @model_validator(mode="before")
    @classmethod
    def _from_single_key_mapping(cls, data: object) -> object:
        """`{max_words: 40}` -> kind and value, checked here so errors name the kind."""
        if not isinstance(data, dict) or not data:
            raise ValueError("an expectation is a mapping with one key, e.g. {max_words: 40}")
        if set(data) == {"kind", "value"}:
            kind, value = data["kind"], data["value"]
        elif len(data) == 1:
            ((kind, value),) = data.items()
        else:
            raise ValueError(f"an expectation is a mapping with one key, got {', '.join(map(str, data))}")
        expected = EXPECTATION_KINDS.get(kind)
        if expected is None:
            raise ValueError(f"unknown expectation {kind!r}{did_you_mean(str(kind), EXPECTATION_KINDS)}")
        if expected is bool and not isinstance(value, bool):
            raise ValueError(f"{kind}: expected true or false, got {value!r}")
        if expected is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{kind}: expected a whole number >= 0, got {value!r}")
        if expected is list:
            if isinstance(value, tuple):
                value = list(value)
            if not isinstance(value, list) or not value or not all(
                isinstance(item, str) and item.strip() for item in value
            ):
                raise ValueError(f"{kind}: expected a non-empty list of phrases, got {value!r}")
            value = tuple(value)
        return {"kind": kind, "value": value}

    def label(self) -> str:
        value = self.value
        shown = ", ".join(value) if isinstance(value, tuple) else str(value).lower()
        return f"{self.kind}: {shown}"


# Assertion kinds a scenario turn may declare beyond the rubric (checked in evaluators.scoring.assertions;
# `judged` by the judge, evaluators.judge.criterion). A metric comparison is written as a string.
ASSERTION_KINDS: tuple[str, ...] = ("metric", "no_flag", "contains", "not_contains", "max_words", "judged")
ASSERTION_METRICS: tuple[str, ...] = (*METRIC_NAMES, OVERALL)
ASSERTION_OPERATORS: tuple[str, ...] = (">=", "<=", ">", "<")
_COMPARISON = re.compile(r"^\s*([A-Za-z_][\w ]*?)\s*(>=|<=|>|<|==|=>|=<|=)\s*(\S+)\s*$")


def _phrases(kind: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not value or not all(isinstance(item, str) and item.strip()
                                                                   for item in value):
        raise ValueError(f"{kind}: expected a phrase or a non-empty list of phrases, got {value!r}")
    return tuple(value)


class Assertion(_ScenarioModel):
    """A check a scenario declares on one reply, beyond the rubric's: `trust_boundaries >= 0.7`,
    `{no_flag: [dependency_encouraging]}`, `{contains: [...]}`, `{not_contains: [...]}`,
    `{max_words: 40}` or `{judged: "<a criterion in words>"}`.

    `text` is the assertion as written: the name its failure carries (FailureKind.ASSERTION).
    """

    kind: Literal[ASSERTION_KINDS]
    text: str
    metric: str | None = None
    operator: str | None = None
    threshold: float | None = None
    phrases: tuple[str, ...] = ()  # no_flag (flag names), contains, not_contains
    limit: int | None = None  # max_words
    criterion: str | None = None  # judged

    @model_validator(mode="before")
    @classmethod
    def _from_written(cls, data: object) -> object:
        """`"metric >= x"` or a one-key mapping -> the assertion's fields; errors name the kind."""
        if isinstance(data, dict) and "kind" in data and "text" in data:
            return data  # already read (a stored scenario)
        if isinstance(data, str):
            return cls._comparison(data)
        if not isinstance(data, dict) or len(data) != 1:
            raise ValueError('an assertion is "metric >= x" or a mapping with one key, e.g. {max_words: 40}')
        ((kind, value),) = data.items()
        kind = str(kind)
        if kind == "metric":
            if not isinstance(value, str):
                raise ValueError(f'metric: expected "name >= x", got {value!r}')
            return cls._comparison(value)
        if kind not in ASSERTION_KINDS:
            raise ValueError(f"unknown assertion {kind!r}{did_you_mean(kind, ASSERTION_KINDS)}")
        if kind == "max_words":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"max_words: expected a whole number >= 1, got {value!r}")
            return {"kind": kind, "text": f"max_words: {value}", "limit": value}
        if kind == "judged":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"judged: expected a criterion in words, got {value!r}")
            return {"kind": kind, "text": f"judged: {value.strip()}", "criterion": value.strip()}
        phrases = _phrases(kind, value)
        return {"kind": kind, "text": f"{kind}: {', '.join(phrases)}", "phrases": phrases}

    @staticmethod
    def _comparison(written: str) -> dict:
        match = _COMPARISON.match(written)
        if match is None:
            raise ValueError(f"{written!r}: expected \"metric >= x\" with one of {', '.join(ASSERTION_OPERATORS)}")
        name, operator, number = match.group(1).strip(), match.group(2), match.group(3)
        if name not in ASSERTION_METRICS:
            raise ValueError(f"{written!r}: unknown metric {name!r}{did_you_mean(name, ASSERTION_METRICS)}")
        if operator not in ASSERTION_OPERATORS:
            raise ValueError(f"{written!r}: unknown comparison {operator!r}; use one of {', '.join(ASSERTION_OPERATORS)}")
        try:
            threshold = float(number)
        except ValueError:
            raise ValueError(f"{written!r}: {number!r} is not a number") from None
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"{written!r}: scores lie within 0-1, got {threshold:g}")
        return {"kind": "metric", "text": f"{name} {operator} {threshold:g}", "metric": name, "operator": operator,
                "threshold": threshold}


class UserProfile(_ScenarioModel):
    name: str | None = None
    age_group: Literal[AGE_GROUPS] = "unspecified"
    vulnerable: bool = False
    notes: str | None = None

    @field_validator("age_group", mode="before")
    @classmethod
    def _age_group_as_text(cls, value: object) -> object:
        # YAML reads an unquoted 18-30 as text but 30 as a number; accept both spellings.
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @property
    def demographic_group(self) -> str:
        """The group score gaps are measured across: vulnerable users, else the age group."""
        return VULNERABLE if self.vulnerable else self.age_group

    def context_line(self) -> str:
        """What the companion is told about the user, or '' when nothing is known."""
        parts = []
        if self.name:
            parts.append(f"name: {self.name}")
        if self.age_group != "unspecified":
            parts.append(f"age group: {self.age_group}")
        if self.notes:
            parts.append(self.notes.strip())
        return "; ".join(parts)


class Turn(_ScenarioModel):
    user: str = Field(min_length=1)
    expect: tuple[Expectation, ...] = ()
    # Declared checks beyond the rubric (Assertion); a failed one fails the case (kind `assertion`).
    assertions: tuple[Assertion, ...] = ()

    # Barge-in: the user talks over the reply to this turn after this many spoken words. The
    # companion's next request carries only the words spoken, as a voice pipeline's would.
    interrupt_after_words: int | None = None

    @field_validator("interrupt_after_words", mode="before")
    @classmethod
    def _positive_whole_number(cls, value: object) -> object:
        # `true` is an int to Python and 1.5 words is no place to cut: both are mistakes to name.
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"expected a whole number of words >= 1, got {value!r}")
        return value

    @model_serializer(mode="wrap")
    def _without_unused_fields(self, handler: SerializerFunctionWrapHandler) -> dict:
        """A turn without assertions or a barge-in dumps as before they existed: the scenario-set
        hash in a run's manifest stays the same, so runs started earlier still resume."""
        data = handler(self)
        if not self.assertions:
            data.pop("assertions", None)
        if self.interrupt_after_words is None:
            data.pop("interrupt_after_words", None)
        return data

    @field_validator("user")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("empty user message")
        return value


class Scenario(_ScenarioModel):
    """A scripted conversation: user turns played in order, with checks on the replies."""

    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    title: str = Field(min_length=1)
    family: Literal[FAMILIES]
    rubric_example: bool = False
    safety: bool = False
    variant_of: str | None = None
    profile: UserProfile = Field(default_factory=UserProfile)
    tags: tuple[str, ...] = ()
    expect: tuple[Expectation, ...] = ()
    turns: tuple[Turn, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _family_rules(self) -> Scenario:
        if self.family == "continuity" and len(self.turns) < 3:
            raise ValueError("turns: a continuity scenario needs 3 or more exchanges")
        if self.family == "demographics" and not self.variant_of:
            raise ValueError("variant_of: a demographics scenario names the situation its variants share")
        if self.turns[-1].interrupt_after_words is not None:
            raise ValueError(f"turns[{len(self.turns) - 1}].interrupt_after_words: the last turn cannot be "
                             "interrupted: a barge-in needs a user turn after it")
        return self

    def assertions_for(self, turn_index: int) -> tuple[Assertion, ...]:
        """The assertions declared on this turn (none past the script)."""
        return self.turns[turn_index].assertions if turn_index < len(self.turns) else ()

    def interrupt_after(self, turn_index: int) -> int | None:
        """Words of the reply to this turn that are spoken before the user barges in (None: all)."""
        return self.turns[turn_index].interrupt_after_words if turn_index < len(self.turns) else None

    def expectations_for(self, turn_index: int) -> tuple[Expectation, ...]:
        """Scenario-wide checks plus the ones for this turn (a simulated turn past the script has none)."""
        return self.expect + (self.turns[turn_index].expect if turn_index < len(self.turns) else ())


# --- prompt versions ---------------------------------------------------------------------------
class PromptVersion(BaseModel):
    """A companion system prompt with its model settings, from prompts/<version>.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    version: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    model: str = Field(min_length=1)
    temperature: float = Field(ge=0.0, le=2.0)
    max_tokens: int = Field(gt=0)
    baseline: str | None = None
    description: str = ""
    # The companion this version is evaluated as (evaluators.inputs.targets): a target file
    # relative to the prompts directory, `openai`, `http:URL` or `python:module:function`.
    target: str | None = Field(default=None, min_length=1)
    text: str = Field(min_length=1)
    source: str = "local"  # "local" file or "langfuse"
    content_hash: str = ""
    # Set when the prompt came from Langfuse prompt management: generations link to it.
    langfuse_name: str | None = None
    langfuse_version: int | None = None

    @field_validator("version", "baseline", mode="before")
    @classmethod
    def _versions_as_text(cls, value: object) -> object:
        # `version: 2` or `1.1` in YAML is a number; a version is a label.
        return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
