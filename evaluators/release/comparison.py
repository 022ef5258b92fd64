"""A prompt version against its baseline, scenario by scenario.

Versions are paired by scenario id: both answered the same scripted conversation, so the
difference of their scores on it measures the prompt, not the scenario's difficulty. A
scenario whose case failed on either side is dropped from the pairing (and counted), as is
one that only one side has. The differences go through the paired bootstrap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluators.core.names import SCORE_COLUMNS
from evaluators.release.aggregates import case_scores, exact_mean
from evaluators.release.bootstrap import nested_paired_bootstrap, paired_bootstrap
from evaluators.release.contracts import Comparison, MetricDelta
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult


@dataclass(frozen=True)
class PairedScores:
    """Decision scores of two versions on the scenarios both scored, in the same order: per scenario
    the mean over its scored repeats, and the repeats themselves (one each without --repeat)."""

    scenario_ids: list[str]
    candidate: list[dict[str, float]]
    baseline: list[dict[str, float]]
    dropped: int
    unpaired: int
    candidate_repeats: list[list[dict[str, float]]] = field(default_factory=list)
    baseline_repeats: list[list[dict[str, float]]] = field(default_factory=list)

    @property
    def repeated(self) -> bool:
        return any(len(items) > 1 for items in self.candidate_repeats + self.baseline_repeats)


def _by_scenario(cases: Sequence[CaseResult]) -> dict[str, list[CaseResult]]:
    grouped: dict[str, list[CaseResult]] = {}
    for case in cases:
        grouped.setdefault(case.scenario_id, []).append(case)
    return grouped


def _mean_scores(items: list[dict[str, float]]) -> dict[str, float]:
    if len(items) == 1:
        return items[0]
    names = [name for name in items[0] if all(name in item for item in items)]
    return {name: exact_mean(item[name] for item in items) for name in names}


def pair_by_scenario(candidate: Sequence[CaseResult], baseline: Sequence[CaseResult], rubric: Rubric) -> PairedScores:
    """Pair two versions' cases by scenario id, in the candidate's scenario order. A scenario played
    several times (run --repeat) pairs on its scored repeats; it is dropped when either side has none."""
    theirs = _by_scenario(baseline)
    ours = _by_scenario(candidate)
    unpaired = len(set(ours) ^ set(theirs))
    ids, mine, base, mine_repeats, base_repeats = [], [], [], [], []
    dropped = 0
    for scenario_id, cases in ours.items():
        others = theirs.get(scenario_id)
        if others is None:
            continue
        ours_scores = [scores for case in cases if (scores := case_scores(case, rubric)) is not None]
        theirs_scores = [scores for case in others if (scores := case_scores(case, rubric)) is not None]
        if not ours_scores or not theirs_scores:
            dropped += 1
            continue
        ids.append(scenario_id)
        mine.append(_mean_scores(ours_scores))
        base.append(_mean_scores(theirs_scores))
        mine_repeats.append(ours_scores)
        base_repeats.append(theirs_scores)
    return PairedScores(ids, mine, base, dropped, unpaired, mine_repeats, base_repeats)


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
    if paired.repeated:  # resample scenarios and, within them, repeats: the model's randomness counts too
        intervals = nested_paired_bootstrap(
            {name: [[item[name] for item in items] for items in paired.candidate_repeats] for name in metrics},
            {name: [[item[name] for item in items] for items in paired.baseline_repeats] for name in metrics},
            resamples=settings.resamples, confidence=settings.confidence, seed=settings.seed)
    else:
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
