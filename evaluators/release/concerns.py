"""Safety or format: what each failed hard criterion is about.

A version whose replies are written in markdown fails `voice_ready` on every safety scenario,
and "27 of 27 safety scenarios failed their hard criteria" then reads as 27 unsafe replies. The
rubric's `decision.failure_concerns` says which failure labels are about safety and which about
the form of a reply; everything else is `other`. A failed scenario counts as failed on safety
when any of its failures is about safety, on format only when every one is about format, and
as other failing criteria otherwise. The split changes no outcome (every failed safety scenario
still means revise); it tells a reader which fix the version needs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from evaluators.core.failures import Failure
from evaluators.release.contracts import SafetyFailureSplit
from evaluators.release.failures import case_failures
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult

SAFETY = "safety"
FORMAT = "format"
OTHER = "other"
CONCERNS: tuple[str, ...] = (SAFETY, FORMAT, OTHER)


def concern_key(failure: Failure) -> str:
    """`kind:name` with an expectation's value left off (`expectation:max_words`), or `kind`."""
    name = failure.name.split(":", 1)[0].strip()
    return f"{failure.kind}:{name}" if name else str(failure.kind)


def shown_name(failure: Failure) -> str:
    """The name a reader knows the failure by: the flag, the expectation's kind, else the kind."""
    return failure.name.split(":", 1)[0].strip() or str(failure.kind)


def failure_concern(failure: Failure, rubric: Rubric) -> str:
    """safety, format or other, by the rubric's lists (an exact `kind:name`, else the kind)."""
    concerns = rubric.decision.failure_concerns
    key = concern_key(failure)
    for concern, listed in ((SAFETY, concerns.safety), (FORMAT, concerns.format)):
        if key in listed or str(failure.kind) in listed:
            return concern
    return OTHER


def case_concerns(case: CaseResult, rubric: Rubric) -> dict[str, list[str]]:
    """Per concern, the names of the failures that fail the case (missing evidence and advisory
    kinds left out: they say nothing about the reply). Empty for a case that broke no rule."""
    found: dict[str, list[str]] = {}
    for failure in case_failures(case, rubric):
        if failure.kind.is_missing_evidence or failure.kind.is_advisory:
            continue
        names = found.setdefault(failure_concern(failure, rubric), [])
        if shown_name(failure) not in names:
            names.append(shown_name(failure))
    return {concern: found[concern] for concern in CONCERNS if concern in found}


def merged_concerns(cases: Iterable[CaseResult], rubric: Rubric) -> dict[str, list[str]]:
    """The concerns of several cases (a scenario's failing repeats), each name once."""
    merged: dict[str, list[str]] = {}
    for case in cases:
        for concern, names in case_concerns(case, rubric).items():
            kept = merged.setdefault(concern, [])
            kept += [name for name in names if name not in kept]
    return {concern: merged[concern] for concern in CONCERNS if concern in merged}


def scenario_concern(concerns: Mapping[str, list[str]]) -> str:
    """safety when any failure is about safety; format when every one is about format; else other."""
    if concerns.get(SAFETY):
        return SAFETY
    if concerns.get(FORMAT) and not concerns.get(OTHER):
        return FORMAT
    return OTHER


def safety_split(failed: Mapping[str, Mapping[str, list[str]]]) -> SafetyFailureSplit:
    """The failed safety scenarios (scenario id -> concerns) split by what they failed on, with
    per concern how many scenarios failed each criterion."""
    groups: dict[str, list[str]] = {concern: [] for concern in CONCERNS}
    criteria: dict[str, Counter[str]] = {concern: Counter() for concern in CONCERNS}
    for scenario, concerns in failed.items():
        group = scenario_concern(concerns)
        groups[group].append(scenario)
        for name in concerns.get(group, []):  # an `other` scenario may fail on format too: not counted here
            criteria[group][name] += 1
    return SafetyFailureSplit(
        on_safety=groups[SAFETY], format_only=groups[FORMAT], other=groups[OTHER],
        safety_criteria=dict(criteria[SAFETY].most_common()), format_criteria=dict(criteria[FORMAT].most_common()),
        other_criteria=dict(criteria[OTHER].most_common()))


def case_failure_concern(case: CaseResult, rubric: Rubric) -> str | None:
    """`safety`, `format_only` or `other` for a case that failed its hard criteria; None otherwise."""
    concerns = case_concerns(case, rubric)
    if not concerns:
        return None
    concern = scenario_concern(concerns)
    return "format_only" if concern == FORMAT else concern
