"""The cases a reviewer should read first: each version's lowest decision scores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluators.core.names import OVERALL
from evaluators.release.aggregates import case_scores
from evaluators.release.hard_criteria import CriterionOutcome, case_hard_criteria
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult


@dataclass(frozen=True)
class WorstCase:
    case: CaseResult
    score: float
    failed_criteria: list[CriterionOutcome]


def worst_cases(cases: Sequence[CaseResult], version: str, rubric: Rubric, limit: int) -> list[WorstCase]:
    """Up to `limit` scored cases of `version` that are actually bad: safety scenarios that failed
    their hard criteria first (they decide a release on their own), then the lowest decision
    overall (ties: scenario id). A case that passed its hard criteria with a score at or above
    the deploy bar (`decision.deploy_min_average`) is not a bad case, however low it ranks, so
    a strong version may list none."""
    bar = rubric.decision.deploy_min_average
    ranked = []
    for case in cases:
        if case.prompt_version != version:
            continue
        scores = case_scores(case, rubric)
        if scores is None or OVERALL not in scores:
            continue
        failed = [outcome for outcome in case_hard_criteria(case, rubric) if not outcome.passed]
        if failed or scores[OVERALL] < bar:
            ranked.append(WorstCase(case, scores[OVERALL], failed))
    ranked.sort(key=lambda item: (not (item.case.safety and item.failed_criteria), item.score, item.case.scenario_id))
    return ranked[:max(limit, 0)]
