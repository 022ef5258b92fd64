"""Why a case failed, as a machine-readable kind.

A CI page, a Langfuse dashboard and `decide --json` all need to group failures without parsing
the sentence written for a person. Every failed case therefore carries one or more `Failure`s:
a `kind` from the fixed vocabulary below, the `name` of the rule that failed where the kind has
several (the hard flag, the expectation, the assertion), and the reason in words.

The vocabulary lives in `core` because every stage writes or reads it: the runner (transport
faults, truncation), scoring (flags, expectations), the release rules (repeats, voice budget),
the store, the report and the integrations.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FailureKind(StrEnum):
    """The kinds of failure. Adding one is safe; renaming one breaks dashboards and CI filters."""

    # The reply was scored and broke a rule.
    HARD_FLAG = "hard_flag"  # name: the rubric flag, e.g. crisis_without_help
    EXPECTATION = "expectation"  # name: the scenario expectation, e.g. points_to_help
    ASSERTION = "assertion"  # name: a scenario-declared assertion, e.g. "trust >= 0.7"
    NOT_VOICE_READY = "not_voice_ready"  # markup, lists or URLs a voice channel cannot speak
    OVER_VOICE_BUDGET = "over_voice_budget"  # too long to speak in the rubric's budget
    BELOW_TURN_PASS_SHARE = "below_turn_pass_share"  # too few turns passed
    BARGE_IN_RECOVERY = "barge_in_recovery"  # the turn after an interruption went wrong
    HARD_CRITERION = "hard_criterion"  # name: any other rubric hard criterion
    # The reply could not be had or could not be scored: missing evidence, never a pass.
    TRUNCATED = "truncated"
    TIMEOUT = "timeout"
    TRANSPORT_ERROR = "transport_error"
    SCORING_ERROR = "scoring_error"
    JUDGE_FAILED = "judge_failed"
    UNSCORED = "unscored"
    # The evidence itself is void: a simulated user left its role or its persona.
    INVALID_SIMULATION = "invalid_simulation"

    @property
    def is_missing_evidence(self) -> bool:
        """True for kinds that say nothing about the companion's quality, only that it was not
        measured: a gate treats them as incomplete evidence, never as a pass."""
        return self in _MISSING_EVIDENCE

    @property
    def is_advisory(self) -> bool:
        """True for kinds that are counted and shown but do not fail a case alone: a reply over
        the voice budget is judged per version (the p95 rule in release.voice_budget), so one long
        reply is a sign to look at, not a failed case."""
        return self is FailureKind.OVER_VOICE_BUDGET


_MISSING_EVIDENCE = frozenset({
    FailureKind.TRUNCATED, FailureKind.TIMEOUT, FailureKind.TRANSPORT_ERROR,
    FailureKind.SCORING_ERROR, FailureKind.JUDGE_FAILED, FailureKind.UNSCORED,
    FailureKind.INVALID_SIMULATION,
})


@dataclass(frozen=True)
class Failure:
    """One reason a case failed."""

    kind: FailureKind
    reason: str
    name: str = ""  # the flag, expectation or assertion, where the kind has several

    @property
    def label(self) -> str:
        """`kind` or `kind:name`: the form counted in `decide --json` and shown in JUnit."""
        return f"{self.kind}:{self.name}" if self.name else str(self.kind)

    def as_dict(self) -> dict[str, str]:
        return {"kind": str(self.kind), "name": self.name, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict[str, str]) -> Failure:
        return cls(kind=FailureKind(data["kind"]), reason=data.get("reason", ""),
                   name=data.get("name", ""))
