"""Why a case failed, as typed failures (evaluators.core.failures): what JUnit, the viewer and
the decisions' reasons group by, read from what the run store keeps for the case.

A case fails when its reply could not be had or scored (missing evidence: the call failed, a
reply was cut short, the judge failed, a judged assertion was not verified), or when a scored
reply broke a rule: a hard flag, a scenario expectation, a declared assertion, another hard
criterion. A case with no failure passed.
"""

from __future__ import annotations

from evaluators.core.failures import Failure, FailureKind
from evaluators.release.hard_criteria import SCENARIO_ASSERTIONS, SCENARIO_EXPECTATIONS, turn_hard_criteria
from evaluators.rubric.loader import Rubric
from evaluators.scoring.assertions import NO_JUDGE
from evaluators.store.records import CaseResult

# Hard criteria whose failures are named more precisely by another kind (the flag, the
# expectation, the assertion), so they are not listed twice.
_COVERED = frozenset({"no_disqualifier", "crisis_gets_help", SCENARIO_EXPECTATIONS, SCENARIO_ASSERTIONS})


def _call_failure(case: CaseResult) -> Failure:
    error = case.error or "the case failed"
    lowered = error.lower()
    if any(turn.truncated for turn in case.turns) or "truncated" in lowered:
        kind = FailureKind.TRUNCATED
    elif "timed out" in lowered or "timeout" in lowered:
        kind = FailureKind.TIMEOUT
    elif "scoring failed" in lowered:
        kind = FailureKind.SCORING_ERROR
    elif "not scored" in lowered:
        kind = FailureKind.UNSCORED
    else:
        kind = FailureKind.TRANSPORT_ERROR
    return Failure(kind, error)


def case_failures(case: CaseResult, rubric: Rubric) -> list[Failure]:
    """Every reason the case failed, in turn order; [] when it passed."""
    failures = [Failure.from_dict(item) for item in getattr(case, "failures", None) or []]
    if case.status != "ok":
        return [_call_failure(case), *failures]
    if case.judge_failed:
        failures.append(Failure(FailureKind.JUDGE_FAILED, (case.judge or {}).get("error") or "the judge failed"))
    for turn in case.turns:
        where = f"turn {turn.index + 1}"
        for flag in (turn.heuristics or {}).get("flags", []):
            failures.append(Failure(FailureKind.HARD_FLAG, f"{where}: {flag.get('text') or flag['name']}",
                                    flag["name"]))
        for outcome in turn.expectations:
            if not outcome.passed:
                failures.append(Failure(FailureKind.EXPECTATION, f"{where}: {outcome.detail}", outcome.label))
        for outcome in turn.assertions:
            if outcome.passed is False:
                failures.append(Failure(FailureKind.ASSERTION, f"{where}: {outcome.detail}", outcome.assertion))
            elif outcome.passed is None:  # missing evidence, never a pass
                kind = FailureKind.UNSCORED if outcome.detail == NO_JUDGE else FailureKind.JUDGE_FAILED
                failures.append(Failure(kind, f"{where}: {outcome.detail}", outcome.assertion))
        for criterion in turn_hard_criteria(turn, rubric):
            if not criterion.passed and criterion.name not in _COVERED:
                kind = FailureKind.NOT_VOICE_READY if criterion.name == "voice_ready" else FailureKind.HARD_CRITERION
                failures.append(Failure(kind, f"{where}: {criterion.detail}",
                                        "" if kind == FailureKind.NOT_VOICE_READY else criterion.name))
    return failures
