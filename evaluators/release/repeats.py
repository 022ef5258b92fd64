"""Pass rates over repeats: one scenario played N times (`run --repeat N`) is N samples of a
model's randomness, so a scenario is judged by how often it passed, not by one draw.

A repeat passes when its case passes every hard criterion (evaluators.release.hard_criteria);
a failed case (its call failed, its reply was cut) is not scored and counts in no rate. The
interval is Wilson's score interval, which stays inside 0..1 and says something even at 0 of 4
or 4 of 4, where the normal approximation collapses to a point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist, fmean, stdev

from evaluators.release.contracts import ScenarioRepeats
from evaluators.release.hard_criteria import case_hard_criteria
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult

_DECIMALS = 9


def wilson_interval(passed: int, trials: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson's score interval for `passed` of `trials`; None with no trial."""
    if trials <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    rate = passed / trials
    denominator = 1.0 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1.0 - rate) / trials + z * z / (4 * trials * trials)) / denominator
    return round(max(0.0, centre - half), _DECIMALS), round(min(1.0, centre + half), _DECIMALS)


def scenario_repeats(cases: Sequence[CaseResult], rubric: Rubric,
                     score: Callable[[CaseResult], float | None]) -> list[ScenarioRepeats]:
    """Per scenario of one version's cases (pass only that version's): its repeats' pass rate,
    interval and score spread. `score` gives a scored case's overall decision score."""
    by_scenario: dict[str, list[CaseResult]] = {}
    for case in cases:
        by_scenario.setdefault(case.scenario_id, []).append(case)
    confidence = rubric.decision.pass_rate_confidence
    result = []
    for scenario_id, repeats in by_scenario.items():
        scored = [case for case in repeats if case.status == "ok" and case.turns]
        failed_criteria: list[str] = []
        passed = 0
        for case in scored:
            failing = [outcome.name for outcome in case_hard_criteria(case, rubric) if not outcome.passed]
            passed += not failing
            failed_criteria += [name for name in failing if name not in failed_criteria]
        scores = [value for case in scored if (value := score(case)) is not None]
        interval = wilson_interval(passed, len(scored), confidence)
        result.append(ScenarioRepeats(
            scenario_id=scenario_id, safety=any(case.safety for case in repeats), repeats=len(repeats),
            scored=len(scored), passed=passed,
            pass_rate=round(passed / len(scored), _DECIMALS) if scored else None,
            low=interval[0] if interval else None, high=interval[1] if interval else None, confidence=confidence,
            score_mean=round(fmean(scores), _DECIMALS) if scores else None,
            score_min=min(scores) if scores else None, score_max=max(scores) if scores else None,
            score_sd=round(stdev(scores), _DECIMALS) if len(scores) > 1 else None,
            failed_criteria=failed_criteria,
        ))
    return result


def safety_below_rate(rows: Sequence[ScenarioRepeats], rubric: Rubric) -> list[ScenarioRepeats]:
    """The safety scenarios whose pass rate over their scored repeats is below the rubric's
    `decision.safety_min_pass_rate` (1.0: one failing repeat is enough)."""
    needed = rubric.decision.safety_min_pass_rate
    return [row for row in rows if row.safety and row.scored and row.pass_rate is not None
            and round(row.pass_rate, _DECIMALS) < round(needed, _DECIMALS)]


def repeats_record(rows: Sequence[ScenarioRepeats]) -> list[dict]:
    """Per scenario, as summary.json and `--json` keep it."""
    return [{**row.model_dump(), "flaky": row.flaky} for row in rows]
