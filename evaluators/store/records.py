"""The run store's records: one case (a scenario played against a prompt version) and its turns.

What the runner writes, the judge and the conversation metrics fill in, and the release
stage, the reports and Langfuse read back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from evaluators.core.completion import Usage
from evaluators.core.text_safety import Notice
from evaluators.scoring.contracts import AssertionOutcome, ExpectationOutcome


class TurnResult(BaseModel):
    """One exchange of a scenario: the scripted user turn, the reply and how it scored."""

    index: int
    user: str
    reply: str
    model: str
    usage: Usage = Field(default_factory=Usage)
    latency_s: float | None = None  # None: not measured (replayed reply); see Completion
    time_to_first_token_s: float | None = None
    tokens_per_s: float | None = None
    cached: bool = False
    attempts: int = 1
    # A reply that is not whole (see Completion.truncated): kept on record with the reason, never
    # scored; its case fails, so the release decision counts it as missing evidence.
    truncated: bool = False
    truncation: str | None = None
    notices: list[Notice] = Field(default_factory=list)  # e.g. invalid characters replaced in the reply
    heuristics: dict | None = None  # HeuristicResult.to_record()
    expectations: list[ExpectationOutcome] = Field(default_factory=list)
    # The scenario turn's declared assertions (evaluators.scoring.assertions); a judged one is
    # answered by the judge stage when the run has a judge, else left not verified.
    assertions: list[AssertionOutcome] = Field(default_factory=list)
    judge: dict | None = None  # filled by the LLM judge when a run asks for it
    # Barge-in (a scripted turn's interrupt_after_words): the user talked over this reply after
    # that many words; `spoken` is what they heard, and what the next request's history holds
    # (`reply` stays whole). None when no cut happened (the reply was shorter).
    interrupted_after_words: int | None = None
    spoken: str | None = None
    # On the turn after a cut reply: the recovery checks (evaluators.scoring.barge_in), each
    # {name, passed, reason}.
    barge_in_recovery: list[dict] = Field(default_factory=list)

    @property
    def heard(self) -> str:
        """The reply as the conversation went on from it: cut where the user barged in, and marked
        so, for whoever reads the history (the judge)."""
        return self.reply if self.spoken is None else f"{self.spoken} [cut off: the user talked over the reply]"


class CaseResult(BaseModel):
    """One scenario played against one prompt version: the unit the run store keeps.

    `status` is "ok" when every turn was answered and scored, else "failed" with the reason;
    failed cases keep the turns that were answered, and are played again when the run resumes
    (a case that is "ok" but whose judge failed is judged again from its stored turns).
    """

    case_id: str
    prompt_name: str
    prompt_version: str
    prompt_source: str = "local"
    scenario_id: str
    family: str
    age_group: str
    demographic_group: str
    safety: bool = False
    tags: list[str] = Field(default_factory=list)
    responder: str
    status: Literal["ok", "failed"]
    error: str | None = None
    turns: list[TurnResult] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)  # mean over turns, per metric
    flags: list[str] = Field(default_factory=list)
    expectations_passed: bool | None = None
    judge: dict | None = None  # the judge's case summary (evaluators.judge.stage.case_summary)
    # The safety judge's answers on the case's chosen replies and conversation, with why each was
    # chosen and what a --judge-budget left out (evaluators.judge.safety_stage.case_record).
    safety_judge: dict | None = None
    # Conversation-level metrics of a simulated conversation (evaluators.run.simulation), else None.
    conversation: dict | None = None
    # How a simulated conversation was played (evaluators.run.simulation.play.SimulatedTurns.record):
    # persona, simulator kind and model, stop_reason (goal_reached | persona_left |
    # companion_ended | turn_limit), max_turns, and the simulator's own calls and tokens, counted
    # apart from the companion's. None for a scripted scenario.
    simulation: dict | None = None
    # Which play of the scenario this is (`run --repeat N`: 0 to N-1). Repeat 0 is the case a run
    # without --repeat makes, with the same id, requests and cache keys.
    repeat: int = 0
    # Why the case failed, machine-readable (evaluators.core.failures.Failure.as_dict): empty for
    # a case that passed, or for a run made before failures were typed. Failures found while
    # playing (a barge-in recovery check, an invalid simulated user) are stored here first.
    failures: list[dict] = Field(default_factory=list)
    finished_at: str = ""

    @property
    def judge_failed(self) -> bool:
        """The judge (quality or safety) was asked for but a call failed for good: missing evidence,
        never a pass; the case is judged again on resume, from its stored replies (`rejudge`)."""
        return bool(self.judge and self.judge.get("failed")) or bool(
            self.safety_judge and self.safety_judge.get("failed"))

    @property
    def invalid_simulation(self) -> bool:
        """The simulated user left its role or persona (evaluators.run.simulation.validity): the
        conversation measures the simulator, so it is left out of the decisions."""
        return bool(self.simulation and (self.simulation.get("validity") or {}).get("valid") is False)

    @property
    def finished(self) -> bool:
        return self.status == "ok" and not self.judge_failed

    @property
    def rejudge(self) -> bool:
        """Every reply came back and was scored, and only the judge failed: a resumed run judges the
        stored replies again (evaluators.run.runner) rather than calling the companion for new ones."""
        return self.status == "ok" and self.judge_failed

    @property
    def usage(self) -> Usage:
        return sum((turn.usage for turn in self.turns if not turn.cached), Usage())


REPEAT_MARK = "#r"


def case_id(prompt_version: str, scenario_id: str, repeat: int = 0) -> str:
    """`version/scenario`, and `version/scenario#rN` for repeat N > 0: repeat 0 keeps the id a run
    without --repeat gives, so its store, Langfuse traces and resumes read as before."""
    return f"{prompt_version}/{scenario_id}" + (f"{REPEAT_MARK}{repeat}" if repeat else "")


def play_id(case: CaseResult) -> str:
    """The scenario id, and `scenario#rN` for repeat N > 0: what tells one play of a scenario from
    another where an id is made of the version and the scenario (Langfuse traces and sessions)."""
    return case.scenario_id + (f"{REPEAT_MARK}{case.repeat}" if case.repeat else "")


def api_turns(case: CaseResult) -> list[TurnResult]:
    """The turns that cost a live API call: not replayed, not served from the cache."""
    return [] if case.responder == "replay" else [turn for turn in case.turns if not turn.cached]


def version_order(version: str) -> tuple:
    """Sort key for prompt versions: by name, numbers by value (v2 before v10)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", version) if part)


def versions_of(cases: Iterable[CaseResult]) -> list[str]:
    """The prompt versions the cases hold, sorted (`version_order`): the same order whichever case
    finished first, so two runs of the same versions list them alike."""
    return sorted({case.prompt_version for case in cases}, key=version_order)
