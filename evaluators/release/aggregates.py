"""Per-version aggregates for release decisions: the numbers the rules and reports read.

A case's *decision scores* are its six metrics and overall quality as the rubric's
`decision.average_of` says: the heuristics, the LLM judge, or a blend of both. A case the
judge did not score (no `--judge`, sampled out, fallback) keeps its heuristic scores, and the
aggregate says how many cases that was. Every grouping (scenario family, age group,
demographic group) goes through one function, so per-group means are computed one way.

Means here are not rounded: a mean of 0.69996 must not pass a 0.7 threshold because a
display rounded it. Only float noise is removed (9 decimals).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from evaluators.core.names import OVERALL, SCORE_COLUMNS
from evaluators.judge.result import is_usable
from evaluators.release.contracts import BehaviourRow, ConversationRow, FairnessGap, GroupMeans, VersionAggregate
from evaluators.release.counts import version_counts
from evaluators.release.failures import failure_counts
from evaluators.release.hard_criteria import case_hard_criteria, case_passes_hard_criteria
from evaluators.release.latency import version_latency
from evaluators.release.repeats import safety_below_rate, scenario_repeats
from evaluators.release.summaries import judge_aggregates
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult, versions_of

UNSPECIFIED_GROUP = "unspecified"  # "no age group given" is not a group of people to compare
_DECIMALS = 9


def exact_mean(values: Iterable[float | None]) -> float | None:
    """Mean of the present values, free of float noise but not display-rounded; None if none."""
    present = [value for value in values if value is not None and not math.isnan(value)]
    return round(math.fsum(present) / len(present), _DECIMALS) if present else None


def _judge_value(case: CaseResult, name: str) -> float | None:
    judge = case.judge or {}
    if judge.get("skipped") or judge.get("failed"):
        return None
    value = judge.get("overall") if name == OVERALL else (judge.get("dimensions") or {}).get(name)
    return float(value) if value is not None else None


def case_is_judged(case: CaseResult) -> bool:
    """The judge produced a usable overall score for this case."""
    return case.status == "ok" and _judge_value(case, OVERALL) is not None


def case_scores(case: CaseResult, rubric: Rubric) -> dict[str, float] | None:
    """The case's decision scores by name (six metrics and overall); None for a failed case.

    A case with a fired hard flag keeps the flag's caps whatever `average_of` says, so a
    judge score cannot lift a disqualified reply back over the cap in the blend.
    """
    if case.status != "ok":
        return None
    settings = rubric.decision
    scores: dict[str, float] = {}
    for name in SCORE_COLUMNS:
        heuristic = case.scores.get(name)
        judged = _judge_value(case, name) if settings.average_of != "heuristic" else None
        if judged is None:
            value = heuristic
        elif settings.average_of == "judge" or heuristic is None:
            value = judged
        else:
            value = settings.judge_weight * judged + (1.0 - settings.judge_weight) * heuristic
        if value is not None:
            scores[name] = round(value, _DECIMALS)
    return rubric.cap_scores(scores, case.flags)


def average_of_label(rubric: Rubric, judged: int, scored: int) -> str:
    """Which score "average" is, in words, for `judged` of `scored` cases carrying a judge score."""
    settings = rubric.decision
    if settings.average_of == "heuristic":
        return "heuristic overall quality"
    if judged == 0:
        return "heuristic overall quality (the judge did not run)"
    source = ("judge overall" if settings.average_of == "judge" else
              f"blend of {settings.judge_weight:g} × judge overall + {1 - settings.judge_weight:g} × heuristic overall")
    if judged < scored:
        source += f" (heuristic alone for the {scored - judged} of {scored} cases the judge did not score)"
    return source


def hard_criteria_pass_rate(cases: Sequence[CaseResult], rubric: Rubric) -> float | None:
    """Share of scored cases that passed every hard criterion on every turn."""
    return exact_mean(float(passed) for passed in (case_passes_hard_criteria(case, rubric) for case in cases)
                      if passed is not None)


def group_means(cases: Sequence[CaseResult], key: Callable[[CaseResult], str], rubric: Rubric) -> list[GroupMeans]:
    """Means of the decision scores per group of scored cases, groups in first-seen order."""
    groups: dict[str, list[CaseResult]] = {}
    for case in cases:
        if case.status == "ok":
            groups.setdefault(key(case), []).append(case)
    result = []
    for group, members in groups.items():
        scores = [case_scores(case, rubric) or {} for case in members]
        result.append(GroupMeans(
            group=group, cases=len(members),
            means={name: exact_mean(item.get(name) for item in scores) for name in SCORE_COLUMNS},
            hard_criteria_pass_rate=hard_criteria_pass_rate(members, rubric),
        ))
    return result


def fairness_gaps(groups: Sequence[GroupMeans], rubric: Rubric) -> list[FairnessGap]:
    """Per metric, the highest minus the lowest group mean, over groups large enough to compare."""
    settings = rubric.decision.fairness
    eligible = [group for group in groups if group.group != UNSPECIFIED_GROUP and group.cases >= settings.min_cases]
    gaps = []
    for name in SCORE_COLUMNS:
        present = [(group.means[name], group.group) for group in eligible if group.means.get(name) is not None]
        if len(present) < 2:
            continue
        (low_mean, low_group), (high_mean, high_group) = min(present), max(present)
        gap = round(high_mean - low_mean, _DECIMALS)
        gaps.append(FairnessGap(metric=name, gap=gap, highest_group=high_group, highest_mean=high_mean,
                                lowest_group=low_group, lowest_mean=low_mean, flagged=gap > settings.max_gap))
    return gaps


def version_aggregate(version: str, cases: Sequence[CaseResult], rubric: Rubric) -> VersionAggregate:
    """The aggregate of one version's cases (cases of other versions are ignored)."""
    mine = [case for case in cases if case.prompt_version == version]
    scored = [case for case in mine if case.status == "ok"]
    scores = [case_scores(case, rubric) or {} for case in scored]
    means = {name: exact_mean(item.get(name) for item in scores) for name in SCORE_COLUMNS}
    judged = sum(case_is_judged(case) for case in scored) if rubric.decision.average_of != "heuristic" else 0
    pass_rate = hard_criteria_pass_rate(scored, rubric)
    outcomes = {case.case_id: case_hard_criteria(case, rubric) for case in scored}  # evaluated once per case
    criteria: dict[str, list[float]] = {}
    for case_outcomes in outcomes.values():
        for outcome in case_outcomes:
            criteria.setdefault(outcome.name, []).append(float(outcome.passed))
    # Per scenario over its repeats (one repeat: the case itself); a safety scenario fails when it
    # passes fewer of its scored repeats than the rubric's safety_min_pass_rate.
    repeats = scenario_repeats(mine, rubric, lambda case: (case_scores(case, rubric) or {}).get(OVERALL))
    safety_failed = {row.scenario_id: row.failed_criteria for row in safety_below_rate(repeats, rubric)}
    average = means[OVERALL]
    composite = None
    if average is not None and pass_rate is not None:
        weights = rubric.decision.composite
        composite = round(weights.quality_weight * average + weights.hard_criteria_weight * pass_rate, _DECIMALS)
    fairness_key = rubric.decision.fairness.group_by
    by_fairness_group = group_means(mine, lambda case: getattr(case, fairness_key), rubric)
    first = mine[0] if mine else None
    return VersionAggregate(
        prompt_version=version,
        prompt_name=first.prompt_name if first else "",
        prompt_source=first.prompt_source if first else "local",
        cases=len(mine), scored=len(scored), failed=len(mine) - len(scored),
        average_of=average_of_label(rubric, judged, len(scored)),
        judged_cases=judged,
        means=means,
        heuristic_means={name: exact_mean(case.scores.get(name) for case in scored) for name in SCORE_COLUMNS},
        judge=judge_aggregates(mine),
        hard_criteria_pass_rate=pass_rate,
        hard_criteria={name: exact_mean(values) for name, values in criteria.items()},
        counts=version_counts(mine, rubric),
        safety_failed=safety_failed,
        composite=composite,
        quality_level=rubric.quality_level(average) if average is not None else None,
        by_family=group_means(mine, lambda case: case.family, rubric),
        by_fairness_group=by_fairness_group,
        by_demographic_group=group_means(mine, lambda case: case.demographic_group, rubric),
        fairness_group_by=fairness_key,
        fairness=fairness_gaps(by_fairness_group, rubric),
        conversations=[row for case in scored if (row := conversation_row(case)) is not None],
        latency=version_latency(mine, rubric.voice),
        assertions_checked=sum(outcome.verified for case in scored for turn in case.turns
                               for outcome in turn.assertions),
        assertions_failed=[f"{case.scenario_id} turn {turn.index + 1}: {outcome.assertion} ({outcome.detail})"
                           for case in scored for turn in case.turns for outcome in turn.assertions
                           if outcome.passed is False],
        scenario_repeats=repeats,
        failure_kinds=failure_counts(mine, rubric),
    )


def conversation_row(case: CaseResult) -> ConversationRow | None:
    """A simulated conversation's metrics record (evaluators.run.simulation) as a row; None for any other case."""
    record = case.conversation
    if not record or "trajectory" not in record:
        return None
    trajectory, dependency, memory = record["trajectory"], record["dependency"], record["memory"]
    judge = record.get("judge") or {}
    usable = is_usable(judge.get("status"), judge.get("parse_status"), judge.get("overall"))
    return ConversationRow(
        persona=record.get("persona") or case.scenario_id, turns=record["turns"], trust=trajectory["values"],
        erosion=trajectory.get("erosion"), worst_turn=trajectory["worst_turn"], worst_value=trajectory["worst_value"],
        first_flag_turn=trajectory.get("first_flag_turn"), first_flag=trajectory.get("first_flag"),
        dependency_rate=dependency["rate"], dependency_trend=dependency["trend"],
        dependency_turns=dependency["inward_turns"], outward_rate=dependency["outward_rate"],
        memory_fidelity=memory.get("fidelity"), recalled=memory["recalled"], wrong=memory["wrong"],
        invented=memory["invented"], invented_turns=memory["invented_turns"],
        contradictions=[f"{item['topic']}: turn {item['first_turn']} vs turn {item['turn']}"
                        for item in record["consistency"]["contradictions"]],
        judge_verdict=judge.get("verdict") if usable else None,
        judge_overall=judge.get("overall") if usable else None,
        behaviours=[BehaviourRow(behaviour=item["behaviour"], slope=item.get("slope"), first_turn=item.get("first_turn"),
                                 worst_turn=item["worst_turn"], worst_value=item["worst_value"])
                    for item in record.get("behaviours", [])],
    )


def version_aggregates(cases: Iterable[CaseResult], rubric: Rubric,
                       versions: Sequence[str] | None = None) -> dict[str, VersionAggregate]:
    """Aggregates per version, in `versions` order or the order versions first appear."""
    cases = list(cases)
    order = list(versions) if versions is not None else versions_of(cases)
    return {version: version_aggregate(version, cases, rubric) for version in order}

