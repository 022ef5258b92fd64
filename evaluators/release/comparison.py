"""A prompt version against its baseline, scenario by scenario.

Versions are paired by scenario id: both answered the same scripted conversation, so the
difference of their scores on it measures the prompt, not the scenario's difficulty. A
scenario whose case failed on either side is dropped from the pairing (and counted), as is
one that only one side has. The differences go through the paired bootstrap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluators.core.names import SCORE_COLUMNS
from evaluators.release.aggregates import case_scores, exact_mean
from evaluators.release.bootstrap import paired_bootstrap
from evaluators.release.contracts import Comparison, MetricDelta
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult


@dataclass(frozen=True)
class PairedScores:
    """Decision scores of two versions on the scenarios both scored, in the same order."""

    scenario_ids: list[str]
    candidate: list[dict[str, float]]
    baseline: list[dict[str, float]]
    dropped: int
    unpaired: int


def pair_by_scenario(candidate: Sequence[CaseResult], baseline: Sequence[CaseResult], rubric: Rubric) -> PairedScores:
    """Pair two versions' cases by scenario id, in the candidate's scenario order."""
    theirs = {case.scenario_id: case for case in baseline}
    ours = {case.scenario_id: case for case in candidate}
    unpaired = len(set(ours) ^ set(theirs))
    ids, mine, base = [], [], []
    dropped = 0
    for scenario_id, case in ours.items():
        other = theirs.get(scenario_id)
        if other is None:
            continue
        ours_scores, theirs_scores = case_scores(case, rubric), case_scores(other, rubric)
        if ours_scores is None or theirs_scores is None:
            dropped += 1
            continue
        ids.append(scenario_id)
        mine.append(ours_scores)
        base.append(theirs_scores)
    return PairedScores(ids, mine, base, dropped, unpaired)


def compare_versions(candidate_version: str, baseline_version: str, cases: Sequence[CaseResult],
                     rubric: Rubric, baseline_cases: Sequence[CaseResult] | None = None) -> Comparison:
    """The candidate against the baseline on every metric and overall, with bootstrap intervals.

    `baseline_cases` defaults to `cases` (both versions in one run); `compare` passes another
    run's cases.
    """
    settings = rubric.decision.bootstrap
    pool = cases if baseline_cases is None else baseline_cases
    paired = pair_by_scenario([case for case in cases if case.prompt_version == candidate_version],
                              [case for case in pool if case.prompt_version == baseline_version], rubric)
    comparison = Comparison(
        candidate=candidate_version, baseline=baseline_version, pairs=len(paired.scenario_ids),
        dropped=paired.dropped, unpaired=paired.unpaired, enough_pairs=len(paired.scenario_ids) >= settings.min_pairs,
        confidence=settings.confidence, resamples=settings.resamples, seed=settings.seed,
    )
    metrics = [name for name in SCORE_COLUMNS
               if paired.scenario_ids and all(name in item for item in paired.candidate + paired.baseline)]
    if not metrics:
        return comparison
    differences = {name: [ours[name] - theirs[name] for ours, theirs in zip(paired.candidate, paired.baseline)]
                   for name in metrics}
    intervals = paired_bootstrap(differences, resamples=settings.resamples, confidence=settings.confidence,
                                 seed=settings.seed)
    deltas = []
    for name in metrics:
        interval = intervals[name]
        deltas.append(MetricDelta(
            metric=name,
            candidate_mean=exact_mean(item[name] for item in paired.candidate),
            baseline_mean=exact_mean(item[name] for item in paired.baseline),
            delta=interval.mean, low=interval.low, high=interval.high,
            change=interval.change if comparison.enough_pairs else "no_difference",
        ))
    return comparison.model_copy(update={"deltas": deltas})
