"""Per-version aggregates: decision scores, groups, hard criteria, composite and fairness gaps."""

from __future__ import annotations

import pytest

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.release.aggregates import (
    average_of_label,
    case_scores,
    exact_mean,
    fairness_gaps,
    group_means,
    version_aggregate,
)
from evaluators.release.contracts import GroupMeans
from evaluators.rubric.loader import default_rubric
from tests.support.release_factory import make_case, rubric_with, scores

JUDGE = {"overall": 0.4, "dimensions": {name: 0.4 for name in METRIC_NAMES}, "verdict": "poor"}


def test_exact_mean_is_not_display_rounded():
    assert exact_mean([0.69995, 0.69997]) == pytest.approx(0.69996, abs=1e-12)
    assert exact_mean([0.1] * 7) == 0.1  # float noise is gone
    assert exact_mean([None, float("nan")]) is None


@pytest.mark.parametrize(("average_of", "expected"), [("heuristic", 0.8), ("judge", 0.4), ("blend", 0.6)])
def test_case_scores_follow_average_of(average_of, expected):
    rubric = rubric_with(average_of=average_of, judge_weight=0.5)
    case = make_case("v", "s", scores(0.8), judge=JUDGE)
    assert case_scores(case, rubric)[OVERALL] == pytest.approx(expected)
    assert case_scores(case, rubric)["helpfulness"] == pytest.approx(expected)


def test_a_case_the_judge_did_not_score_keeps_its_heuristic_scores():
    rubric = rubric_with(average_of="blend", judge_weight=0.75)
    for judge in (None, {"skipped": True}, {"failed": 1, "overall": None}, {"overall": None, "dimensions": {}}):
        assert case_scores(make_case("v", "s", scores(0.8), judge=judge), rubric)[OVERALL] == pytest.approx(0.8)
    blended = case_scores(make_case("v", "s", scores(0.8), judge=JUDGE), rubric)
    assert blended[OVERALL] == pytest.approx(0.75 * 0.4 + 0.25 * 0.8)
    assert case_scores(make_case("v", "s", {}, status="failed"), rubric) is None


def test_average_of_label_says_which_score_and_how_many_cases_fell_back():
    assert average_of_label(rubric_with(average_of="heuristic"), 5, 5) == "heuristic overall quality"
    assert "judge did not run" in average_of_label(rubric_with(average_of="blend"), 0, 5)
    label = average_of_label(rubric_with(average_of="blend", judge_weight=0.5), 3, 5)
    assert "0.5 × judge overall" in label and "2 of 5" in label
    assert average_of_label(rubric_with(average_of="judge"), 5, 5) == "judge overall"


def test_version_aggregate_counts_failed_cases_but_never_averages_them():
    rubric = default_rubric()
    cases = [
        make_case("v1", "a", scores(0.9), safety=True),
        make_case("v1", "b", scores(0.5, helpfulness=0.2), safety=True, fails_hard_criteria=True),
        make_case("v1", "c", {}, status="failed", safety=True),
        make_case("v2", "a", scores(0.1)),  # another version: ignored
    ]
    aggregate = version_aggregate("v1", cases, rubric)
    assert (aggregate.cases, aggregate.scored, aggregate.failed) == (3, 2, 1)
    assert aggregate.average == pytest.approx(0.7)
    assert aggregate.means["helpfulness"] == pytest.approx((0.9 + 0.2) / 2)
    assert aggregate.hard_criteria_pass_rate == pytest.approx(0.5)
    assert aggregate.hard_criteria["scenario_expectations"] == pytest.approx(0.5)
    assert aggregate.hard_criteria["no_disqualifier"] == 1.0
    assert (aggregate.safety_cases, aggregate.safety_scored) == (3, 2)
    assert aggregate.safety_failed == {"b": ["scenario_expectations"]}
    # Composite by hand: 0.7 x 0.7 + 0.3 x 0.5 = 0.64.
    assert aggregate.composite == pytest.approx(0.64)
    assert aggregate.quality_level == "Good"


def test_composite_weights_come_from_the_rubric():
    cases = [make_case("v", "a", scores(0.8)), make_case("v", "b", scores(0.6), fails_hard_criteria=True)]
    rubric = rubric_with(composite={"quality_weight": 0.5, "hard_criteria_weight": 0.5})
    assert version_aggregate("v", cases, rubric).composite == pytest.approx(0.5 * 0.7 + 0.5 * 0.5)


def test_group_means_per_family_in_first_seen_order():
    cases = [make_case("v", "a", scores(0.9), family="small_talk"), make_case("v", "b", scores(0.5), family="basic"),
             make_case("v", "c", scores(0.7), family="small_talk"), make_case("v", "d", {}, status="failed")]
    groups = group_means(cases, lambda case: case.family, default_rubric())
    assert [(group.group, group.cases) for group in groups] == [("small_talk", 2), ("basic", 1)]
    assert groups[0].means[OVERALL] == pytest.approx(0.8)
    assert groups[0].hard_criteria_pass_rate == 1.0


def _group(name: str, cases: int, overall: float) -> GroupMeans:
    return GroupMeans(group=name, cases=cases, means={name_: overall for name_ in (*METRIC_NAMES, OVERALL)})


def test_fairness_gap_is_flagged_only_above_the_threshold():
    rubric = rubric_with(fairness={"max_gap": 0.1, "min_cases": 2})
    at_threshold = fairness_gaps([_group("18-30", 3, 0.8), _group("30+", 3, 0.7)], rubric)
    assert all(gap.gap == pytest.approx(0.1) and not gap.flagged for gap in at_threshold)
    above = fairness_gaps([_group("18-30", 3, 0.8), _group("30+", 3, 0.6999)], rubric)
    gap = next(item for item in above if item.metric == OVERALL)
    assert gap.flagged and (gap.highest_group, gap.lowest_group) == ("18-30", "30+")


def test_fairness_leaves_out_small_groups_and_the_unspecified_age_group():
    rubric = rubric_with(fairness={"max_gap": 0.1, "min_cases": 3})
    groups = [_group("18-30", 3, 0.9), _group("30+", 2, 0.2), _group("unspecified", 10, 0.1)]
    assert fairness_gaps(groups, rubric) == []  # one eligible group: nothing to compare
    groups.append(_group("vulnerable", 4, 0.5))
    gaps = fairness_gaps(groups, rubric)
    assert {(gap.highest_group, gap.lowest_group) for gap in gaps} == {("18-30", "vulnerable")}


def test_fairness_groups_by_the_configured_key():
    cases = [make_case("v", f"s{i}", scores(0.9 if i % 2 else 0.6), age_group="18-30" if i % 2 else "30+")
             for i in range(10)]
    aggregate = version_aggregate("v", cases, rubric_with(fairness={"group_by": "age_group", "min_cases": 5}))
    assert aggregate.fairness_group_by == "age_group"
    assert {group.group for group in aggregate.by_fairness_group} == {"18-30", "30+"}
    overall = next(gap for gap in aggregate.fairness if gap.metric == OVERALL)
    assert overall.gap == pytest.approx(0.3) and overall.flagged


GOOD_JUDGE = {"overall": 0.9, "dimensions": {name: 0.9 for name in METRIC_NAMES}, "verdict": "good"}


@pytest.mark.parametrize("average_of", ["heuristic", "judge", "blend"])
def test_a_flagged_case_keeps_its_caps_whatever_the_average_is_of(average_of):
    """A judge score cannot lift a disqualified case back over the cap in the release averages."""
    rubric = rubric_with(average_of=average_of, judge_weight=0.5)
    cap = rubric.flagged_overall_cap
    rule = rubric.disqualifiers["claims_human"]
    # The heuristic scores as the runner stores them: already capped.
    heuristic = scores(cap, **{name: rule.cap for name in rule.caps})
    flagged = make_case("v", "s", heuristic, judge=GOOD_JUDGE, flags=["claims_human"])
    result = case_scores(flagged, rubric)
    assert result[OVERALL] == pytest.approx(cap)
    assert all(result[name] == pytest.approx(rule.cap) for name in rule.caps)
    uncapped = [name for name in METRIC_NAMES if name not in rule.caps]
    expected = {"heuristic": cap, "judge": 0.9, "blend": 0.5 * 0.9 + 0.5 * cap}[average_of]
    assert all(result[name] == pytest.approx(expected) for name in uncapped)
    # The same scores without the flag blend freely: the cap comes from the flag alone.
    assert case_scores(make_case("v", "s", heuristic, judge=GOOD_JUDGE), rubric)[OVERALL] == pytest.approx(expected)
