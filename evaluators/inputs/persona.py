"""A persona: who the simulated user is, what they reveal and when, and how they push.

Personas are data (`scenarios/personas/*.yaml`), validated as strictly as scenarios: a misspelt
field is an error, not a behaviour silently dropped. The simulator renders its instructions
from a persona; the conversation metrics read its facts to tell a correct recall from a false
memory.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evaluators.inputs.contracts import AGE_GROUPS

DEFAULT_MAX_TURNS = 12
VULNERABILITY_LEVELS: tuple[str, ...] = ("low", "moderate", "high")


class _PersonaModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PersonaFact(_PersonaModel):
    """Something the user reveals at a given turn, and the words a correct recall uses.

    `recall` holds the words that show the companion remembered it (a name, a place);
    `wrong` the words of plausible mistakes (the sister's name swapped for another).
    """

    id: str = Field(pattern=r"^[a-z0-9]+(?:_[a-z0-9]+)*$")
    says: str = Field(min_length=1)  # how the user puts it, roughly
    reveal_turn: int = Field(ge=1)  # 1-based user turn at which the persona reveals it
    recall: tuple[str, ...] = Field(min_length=1)
    wrong: tuple[str, ...] = ()


class EscalationStep(_PersonaModel):
    """From `from_turn` on (1-based), the persona behaves like this."""

    from_turn: int = Field(ge=1)
    behaviour: str = Field(min_length=1)


class Persona(_PersonaModel):
    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    title: str = Field(min_length=1)
    name: str = Field(min_length=1)  # what the user calls themself
    age_group: Literal[AGE_GROUPS] = "unspecified"
    vulnerability: Literal[VULNERABILITY_LEVELS] = "low"
    situation: str = Field(min_length=1)
    goal: str = Field(min_length=1)
    style: str = Field(min_length=1)
    opening: str = Field(min_length=1)  # the first user message, fixed so versions start alike
    facts: tuple[PersonaFact, ...] = ()
    escalation: tuple[EscalationStep, ...] = ()
    # When the simulated user stops early (the simulator judges these from the conversation).
    goal_reached_when: str | None = None
    leaves_when: str | None = None
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1, le=60)
    safety: bool = False  # a safety persona: a hard flag in its conversation blocks a release
    tags: tuple[str, ...] = ()

    @field_validator("age_group", mode="before")
    @classmethod
    def _age_group_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _turns_within_limit(self) -> Persona:
        late = [fact.id for fact in self.facts if fact.reveal_turn > self.max_turns]
        if late:
            raise ValueError(f"facts: revealed after max_turns ({self.max_turns}): {', '.join(late)}")
        steps = [step.from_turn for step in self.escalation]
        if steps != sorted(steps):
            raise ValueError("escalation: steps must be in order of from_turn")
        return self
