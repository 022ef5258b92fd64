"""The counts every output shows about one prompt version's cases, computed once and named for
what they count.

Two different figures were once printed under one legend, "safety scenarios passed": the run's
table counted safety scenarios whose *scenario expectations* were met, the decision table those
that passed their *hard criteria* (which include the expectations, and also no hard flag, a
reply fit for voice and crisis handling). Each figure now has one name, one definition here and
one legend (`COUNT_LEGENDS`), and the terminal tables, `--json`, summary.json, the HTML report
and Langfuse all read it from `version_counts`, so two outputs cannot disagree about it.

A count's denominator is what was scored: a failed case (its call failed) neither passes nor
fails a check, and the coverage line says how many are missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from evaluators.release.hard_criteria import case_passes_hard_criteria
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult

# The short column keys the terminal tables use, and what each counts, in one place.
COUNT_KEYS: dict[str, str] = {
    "expectations_met": "expect",
    "hard_criteria_passed": "hard",
    "safety_hard_criteria_passed": "safety",
    "safety_expectations_met": "s.exp",
}
COUNT_LEGENDS: dict[str, str] = {
    "expectations_met": "scored cases meeting all their scenario expectations",
    "hard_criteria_passed": "scored cases passing every hard criterion on every turn",
    "safety_hard_criteria_passed": "scored safety scenarios passing every hard criterion (expectations included)",
    "safety_expectations_met": "scored safety scenarios meeting all their scenario expectations",
}


class VersionCounts(BaseModel):
    """How many of a version's cases were scored and passed each check."""

    cases: int  # in the run store for this version
    scored: int
    failed: int  # the call failed: not scored, in no count below
    expectations_met: int  # of the scored cases
    hard_criteria_passed: int  # of the scored cases
    safety_scenarios: int  # safety cases in the run store
    safety_scored: int
    safety_expectations_met: int  # of the scored safety cases
    safety_hard_criteria_passed: int  # of the scored safety cases

    @property
    def safety_hard_criteria_failed(self) -> int:
        return self.safety_scored - self.safety_hard_criteria_passed

    def fraction(self, name: str) -> str:
        """`3/23`: the named count over its denominator (scored cases, or scored safety cases); — when none."""
        passed = getattr(self, name)
        of = self.safety_scored if name.startswith("safety_") else self.scored
        return f"{passed}/{of}" if of else "—"

    def share(self, name: str) -> str:
        """`16%`: the named count as a share of its denominator; — when none (a narrower column)."""
        passed = getattr(self, name)
        of = self.safety_scored if name.startswith("safety_") else self.scored
        return f"{passed / of:.0%}" if of else "—"

    def sentence(self, name: str) -> str:
        """`3 of 23 scored safety scenarios passing every hard criterion (…)`, for a page or a comment."""
        of = self.safety_scored if name.startswith("safety_") else self.scored
        legend = COUNT_LEGENDS[name].removeprefix("scored ")
        return f"{getattr(self, name)} of {of} scored {legend}"


def version_counts(cases: Iterable[CaseResult], rubric: Rubric) -> VersionCounts:
    """The counts over one version's cases (pass only that version's)."""
    mine: Sequence[CaseResult] = list(cases)
    scored = [case for case in mine if case.status == "ok"]
    safety = [case for case in scored if case.safety]
    hard = {case.case_id: bool(case_passes_hard_criteria(case, rubric)) for case in scored}
    return VersionCounts(
        cases=len(mine), scored=len(scored), failed=len(mine) - len(scored),
        expectations_met=sum(bool(case.expectations_passed) for case in scored),
        hard_criteria_passed=sum(hard.values()),
        safety_scenarios=sum(case.safety for case in mine),
        safety_scored=len(safety),
        safety_expectations_met=sum(bool(case.expectations_passed) for case in safety),
        safety_hard_criteria_passed=sum(hard[case.case_id] for case in safety),
    )


def legend(names: Iterable[str], shares: Iterable[str] = ()) -> str:
    """`hard = share of scored cases passing …; safety = …` for the count columns a table shows
    (`shares` are shown as a share of their denominator, the others as a fraction)."""
    shares = set(shares)
    return "; ".join(f"{COUNT_KEYS[name]} = {'share of ' if name in shares else ''}{COUNT_LEGENDS[name]}"
                     for name in names)
