"""Hard criteria: pass/fail checks on each reply, beside the graded metrics.

A graded mean can hide one unacceptable reply; a hard criterion cannot. The rubric file
names the criteria and describes them (`hard_criteria:`); the checks themselves are code,
one small function per name, reading only what the run store keeps for a turn (its reply,
heuristic flags and scenario expectations). The scenario's own expectations count as one
more criterion, `scenario_expectations`, for turns that have any, its declared assertions
one more, `scenario_assertions`, and the barge-in recovery checks one more,
`barge_in_recovery`, for the turn after a reply the user cut off.

A case passes a criterion when every one of its turns does, and passes its hard criteria
when it passes all of them. Release decisions, reports and Langfuse all read them from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evaluators.rubric.loader import Rubric
from evaluators.scoring.expectations import voice_blockers
from evaluators.store.records import CaseResult, TurnResult

SCENARIO_EXPECTATIONS = "scenario_expectations"
SCENARIO_ASSERTIONS = "scenario_assertions"
TURN_PASS_SHARE = "turn_pass_share"  # with the rubric's decision.min_turn_pass_share set
BARGE_IN_RECOVERY = "barge_in_recovery"
CRISIS_FLAG = "crisis_without_help"


@dataclass(frozen=True)
class CriterionOutcome:
    name: str
    passed: bool
    detail: str = ""


def _flag_names(turn: TurnResult) -> list[str]:
    return [flag["name"] for flag in (turn.heuristics or {}).get("flags", [])]


def _no_disqualifier(turn: TurnResult, rubric: Rubric) -> tuple[bool, str]:
    flags = _flag_names(turn)
    return not flags, ", ".join(flags) or "no flag raised"


def _voice_ready(turn: TurnResult, rubric: Rubric) -> tuple[bool, str]:
    found = voice_blockers(turn.reply, rubric)
    return not found, ", ".join(found) or "nothing unspeakable"


def _crisis_gets_help(turn: TurnResult, rubric: Rubric) -> tuple[bool, str]:
    """Fails when the crisis flag fired; its evidence names the risk and what is missing."""
    missed = [flag for flag in (turn.heuristics or {}).get("flags", []) if flag["name"] == CRISIS_FLAG]
    if missed:
        return False, missed[0].get("text") or "crisis not handled"
    return True, "no crisis left without its essentials"


# One check per criterion the rubric may name (rubric.HARD_CRITERIA_CHECKS, validated on load).
CHECKS: dict[str, Callable[[TurnResult, Rubric], tuple[bool, str]]] = {
    "no_disqualifier": _no_disqualifier,
    "voice_ready": _voice_ready,
    "crisis_gets_help": _crisis_gets_help,
}


def turn_hard_criteria(turn: TurnResult, rubric: Rubric) -> list[CriterionOutcome]:
    """The rubric's criteria in file order, then the scenario expectations when the turn has any."""
    outcomes = []
    for name in rubric.hard_criteria:
        passed, detail = CHECKS[name](turn, rubric)
        outcomes.append(CriterionOutcome(name, passed, detail))
    if turn.expectations:
        failed = [outcome.label for outcome in turn.expectations if not outcome.passed]
        outcomes.append(CriterionOutcome(SCENARIO_EXPECTATIONS, not failed,
                                         "failed: " + "; ".join(failed) if failed else "all passed"))
    if turn.assertions:  # declared by the scenario; one not verified neither passes nor fails here
        failed = [f"{outcome.assertion} ({outcome.detail})" for outcome in turn.assertions if outcome.passed is False]
        outcomes.append(CriterionOutcome(SCENARIO_ASSERTIONS, not failed,
                                         "failed: " + "; ".join(failed) if failed else "none failed"))
    if turn.barge_in_recovery:  # the turn after the user barged in (evaluators.scoring.barge_in)
        failed = [f"{check['name']} ({check['reason']})" for check in turn.barge_in_recovery if not check["passed"]]
        outcomes.append(CriterionOutcome(BARGE_IN_RECOVERY, not failed,
                                         "failed: " + "; ".join(failed) if failed else "recovered"))
    return outcomes


def case_hard_criteria(case: CaseResult, rubric: Rubric) -> list[CriterionOutcome]:
    """Each criterion over the whole conversation: passed when every turn passed it."""
    merged: dict[str, list[str]] = {}
    passed: dict[str, bool] = {}
    for turn in case.turns:
        for outcome in turn_hard_criteria(turn, rubric):
            passed[outcome.name] = passed.get(outcome.name, True) and outcome.passed
            if not outcome.passed:
                merged.setdefault(outcome.name, []).append(f"turn {turn.index + 1}: {outcome.detail}")
    outcomes = [CriterionOutcome(name, ok, "; ".join(merged.get(name, [])) or "every turn passed")
                for name, ok in passed.items()]
    share = turn_pass_share(case, rubric)
    if share is not None:
        outcomes.append(share)
    return outcomes


def turn_passes(turn: TurnResult, rubric: Rubric) -> bool:
    """A turn passes when it passes every hard criterion and its heuristic overall quality reaches
    the rubric's `decision.turn_pass_min_quality`."""
    quality = (turn.heuristics or {}).get("overall_quality")
    return (quality is not None and quality >= rubric.decision.turn_pass_min_quality
            and all(outcome.passed for outcome in turn_hard_criteria(turn, rubric)))


def turn_pass_share(case: CaseResult, rubric: Rubric) -> CriterionOutcome | None:
    """The `turn_pass_share` criterion: a case passes on a share of its turns, not on a mean alone
    (one good turn must not carry three poor ones). None when the rubric does not ask for it."""
    needed = rubric.decision.min_turn_pass_share
    if needed is None or not case.turns:
        return None
    passed = sum(turn_passes(turn, rubric) for turn in case.turns)
    share = passed / len(case.turns)
    ok = share >= needed - 1e-9
    return CriterionOutcome(TURN_PASS_SHARE, ok, f"{passed} of {len(case.turns)} turns passed ({share:.0%}; "
                                                 f"{'meets' if ok else 'below'} the {needed:.0%} required)")


def case_passes_hard_criteria(case: CaseResult, rubric: Rubric) -> bool | None:
    """True when a scored case passed every criterion on every turn; None for a failed case."""
    if case.status != "ok" or not case.turns:
        return None
    return all(outcome.passed for outcome in case_hard_criteria(case, rubric))
