"""Why each case failed, as machine-readable failures (evaluators.core.failures): the one mapping
from what the run store keeps to a kind, read by the run store, `decide --json`, Langfuse and
the report, so none of them parses the sentence written for a person.

A case that could not be had or scored (its call failed, timed out, its reply was cut short, a
turn could not be scored, the judge failed) carries a missing-evidence kind. A scored case
carries one failure per rule it broke: each hard flag and each failed scenario expectation by
name, a reply unfit for voice (`not_voice_ready`) or longer than the rubric's speaking budget
(`over_voice_budget`), too few passing turns (`below_turn_pass_share`), any other hard
criterion. Failures a later stage stored on the case with a kind this module does not derive
(`barge_in_recovery`, `invalid_simulation`) are kept as they are. A failed scenario assertion
is `assertion` by the assertion as written; an unanswered judged one is missing evidence.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from evaluators.core.failures import Failure, FailureKind
from evaluators.release.hard_criteria import (
    BARGE_IN_RECOVERY,
    SCENARIO_ASSERTIONS,
    SCENARIO_EXPECTATIONS,
    TURN_PASS_SHARE,
    case_hard_criteria,
)
from evaluators.rubric.loader import Rubric
from evaluators.scoring.assertions import NO_JUDGE
from evaluators.store.records import CaseResult

# Kinds this module derives from the record; a stored failure of another kind is carried over.
DERIVED = frozenset({
    FailureKind.HARD_FLAG, FailureKind.EXPECTATION, FailureKind.ASSERTION, FailureKind.NOT_VOICE_READY,
    FailureKind.OVER_VOICE_BUDGET,
    FailureKind.BELOW_TURN_PASS_SHARE, FailureKind.HARD_CRITERION, FailureKind.TRUNCATED, FailureKind.TIMEOUT,
    FailureKind.TRANSPORT_ERROR, FailureKind.SCORING_ERROR, FailureKind.JUDGE_FAILED, FailureKind.UNSCORED,
})
_STAGE_FAILED = re.compile(r"^\w+ failed: ")  # a stage (the judge, conversation metrics) raised
# Hard criteria whose failures are listed by name from the turns (each expectation, assertion and
# flag) or stored by the stage that checked them (each barge-in check).
_NAMED_ELSEWHERE = frozenset({SCENARIO_EXPECTATIONS, SCENARIO_ASSERTIONS, "no_disqualifier", BARGE_IN_RECOVERY})
_CRITERION_KINDS = {"voice_ready": FailureKind.NOT_VOICE_READY, TURN_PASS_SHARE: FailureKind.BELOW_TURN_PASS_SHARE}


def _error_failure(case: CaseResult) -> Failure:
    """The kind of a case that has no scores, from what the runner recorded."""
    error = case.error or "incomplete transcript"
    if any(turn.truncated for turn in case.turns) or "truncated reply" in error:
        return Failure(FailureKind.TRUNCATED, error)
    if "timeout" in error or "timed out" in error:
        return Failure(FailureKind.TIMEOUT, error)
    if " not scored: " in error:
        return Failure(FailureKind.UNSCORED, error)
    if error.startswith("scoring failed") or _STAGE_FAILED.match(error):
        return Failure(FailureKind.SCORING_ERROR, error)
    return Failure(FailureKind.TRANSPORT_ERROR, error)


def _scored_failures(case: CaseResult, rubric: Rubric) -> list[Failure]:
    failures: list[Failure] = []
    for turn in case.turns:  # each hard flag where it fired, with the rubric's words for it
        for flag in (turn.heuristics or {}).get("flags", []):
            failures.append(Failure(FailureKind.HARD_FLAG, f"turn {turn.index + 1}: {flag.get('text') or flag['name']}",
                                    flag["name"]))
    seen = {failure.name for failure in failures}
    for flag in case.flags:  # a flag the case carries beyond its turns' (a conversation's)
        if flag not in seen:
            failures.append(Failure(FailureKind.HARD_FLAG, f"the case raised the hard flag {flag}", flag))
    for turn in case.turns:
        for outcome in turn.expectations:
            if not outcome.passed:
                voice = outcome.label.startswith("voice_ready")
                failures.append(Failure(FailureKind.NOT_VOICE_READY if voice else FailureKind.EXPECTATION,
                                        f"turn {turn.index + 1}: {outcome.label}: {outcome.detail}",
                                        "" if voice else outcome.label))
        for declared in turn.assertions:  # a scenario's own assertions (evaluators.scoring.assertions)
            where = f"turn {turn.index + 1}: {declared.detail}"
            if declared.passed is False:
                failures.append(Failure(FailureKind.ASSERTION, where, declared.assertion))
            elif declared.passed is None:  # missing evidence, never a pass
                kind = FailureKind.UNSCORED if declared.detail == NO_JUDGE else FailureKind.JUDGE_FAILED
                failures.append(Failure(kind, where, declared.assertion))
    for outcome in case_hard_criteria(case, rubric):
        if outcome.passed or outcome.name in _NAMED_ELSEWHERE:
            continue  # told apart: each expectation, assertion and flag by name, each barge-in check as stored
        kind = _CRITERION_KINDS.get(outcome.name, FailureKind.HARD_CRITERION)
        if kind is FailureKind.HARD_CRITERION and case.flags and outcome.name == "crisis_gets_help":
            continue  # the crisis flag is already listed as a hard flag
        failures.append(Failure(kind, outcome.detail, "" if kind is not FailureKind.HARD_CRITERION else outcome.name))
    voice = rubric.voice
    for turn in case.turns:
        seconds = voice.speaking_seconds(len(turn.reply.split()))
        if seconds > voice.max_speaking_seconds:
            failures.append(Failure(FailureKind.OVER_VOICE_BUDGET,
                                    f"turn {turn.index + 1}: about {seconds:.0f} s of speech, over the "
                                    f"{voice.max_speaking_seconds:g} s budget"))
    return failures


def case_failures(case: CaseResult, rubric: Rubric) -> list[Failure]:
    """Every reason the case failed, typed; empty for a case that broke no rule."""
    stored = [Failure.from_dict(item) for item in case.failures if item.get("kind") in FailureKind.__members__.values()]
    if case.status != "ok" and any(failure.kind is FailureKind.INVALID_SIMULATION for failure in stored):
        failures = []  # the case failed because its simulated user was invalid: that is its kind
    elif case.status != "ok":
        failures = [_error_failure(case)]
    else:
        failures = _scored_failures(case, rubric)
        if case.judge_failed:
            failures.append(Failure(FailureKind.JUDGE_FAILED, str((case.judge or {}).get("error")
                                                                  or "the judge's call failed")))
    failures = list({(failure.kind, failure.name): failure for failure in reversed(failures)}.values())[::-1]
    return failures + [failure for failure in stored if failure.kind not in DERIVED]


def with_failures(case: CaseResult, rubric: Rubric) -> CaseResult:
    """The case with its typed failures stored on it (what the runner writes to cases.jsonl)."""
    return case.model_copy(update={"failures": [failure.as_dict() for failure in case_failures(case, rubric)]})


def failure_counts(cases: Iterable[CaseResult], rubric: Rubric) -> dict[str, int]:
    """Per failure kind, how many cases carry it (a case counts once per kind), most frequent first."""
    counts = Counter(kind for case in cases for kind in {failure.kind.value for failure in case_failures(case, rubric)})
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def failure_label_counts(cases: Iterable[CaseResult], rubric: Rubric) -> dict[str, int]:
    """Per `kind:name` label (a hard flag or expectation by name), how many cases carry it."""
    counts = Counter(label for case in cases for label in {failure.label for failure in case_failures(case, rubric)})
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
