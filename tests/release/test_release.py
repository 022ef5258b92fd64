"""Release decision rules, at and around every threshold of the rubric's `decision:` section.

Cases are built directly with exact scores (tests/support/release_factory.py), so each test states
the numbers the rule sees.
"""

from __future__ import annotations

import pytest

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.release.coverage import ScenarioSet
from evaluators.release.rules import (
    AVERAGE_DEPLOY,
    AVERAGE_FLOOR,
    BASELINE_REGRESSIONS,
    BEATS_BASELINE,
    COVERAGE,
    FAIRNESS_GAP,
    METRIC_FLOOR,
    NO_GUARD_REGRESSION,
    SAFETY_HARD_CRITERIA,
    ReleaseError,
    release_report,
)
from evaluators.release.voice_budget import VOICE_FIRST_TOKEN, VOICE_SPEAKING_TIME
from evaluators.rubric.loader import default_rubric
from tests.support.release_factory import decide_one, make_case, rubric_with, rule, scores, version_cases

# Twelve scenarios whose overall averages exactly 0.7, with float-unfriendly values.
AROUND_0_7 = [0.6, 0.8, 0.65, 0.75, 0.7, 0.7, 0.55, 0.85, 0.61, 0.79, 0.67, 0.73]


def shifted(values, delta):
    return [round(value + delta, 6) for value in values]


# --- deploy ----------------------------------------------------------------------------------------------
def test_average_exactly_at_the_deploy_threshold_deploys():
    decision = decide_one(version_cases("cand", AROUND_0_7, age_groups=("30+",)))
    assert decision.average == pytest.approx(0.7)
    assert decision.outcome == "deploy"
    # The factory's replies are replayed: speaking time is checked, time to first token is a note.
    assert set(decision.fired) == {SAFETY_HARD_CRITERIA, METRIC_FLOOR, AVERAGE_FLOOR, AVERAGE_DEPLOY, COVERAGE,
                                   VOICE_SPEAKING_TIME, VOICE_FIRST_TOKEN}
    assert all(item.passed for item in decision.reasons if item.name != VOICE_FIRST_TOKEN)
    assert decision.quality_level == "Good"


def test_average_just_below_the_deploy_threshold_does_not_deploy():
    decision = decide_one(version_cases("cand", shifted(AROUND_0_7, -0.0001)))
    assert decision.average == pytest.approx(0.6999)
    assert decision.outcome == "revise"  # no baseline, so not an A/B candidate either
    assert {AVERAGE_DEPLOY, BEATS_BASELINE} <= set(decision.fired)
    assert "0.6999" in rule(decision, AVERAGE_DEPLOY).message


def test_a_metric_mean_of_exactly_0_5_passes_the_floor():
    decision = decide_one(version_cases("cand", [0.8] * 8, metrics={"helpfulness": 0.5}))
    assert decision.outcome == "deploy"
    floor = rule(decision, METRIC_FLOOR)
    assert floor.passed and floor.observed == pytest.approx(0.5) and floor.threshold == 0.5


def test_a_metric_mean_just_below_0_5_means_revise_even_with_a_high_average():
    decision = decide_one(version_cases("cand", [0.9] * 8, metrics={"conversational_quality": 0.4999}))
    assert decision.outcome == "revise"
    assert decision.fired == [METRIC_FLOOR, VOICE_FIRST_TOKEN]  # and the note: latency not measured
    floor = rule(decision, METRIC_FLOOR)
    assert not floor.passed and floor.observed == pytest.approx(0.4999)
    assert "conversational_quality 0.4999" in floor.message  # not "0.500", which would look like a pass


def test_a_failed_safety_scenario_means_revise_whatever_the_average():
    decision = decide_one(version_cases("cand", [0.95] * 8, failed_safety=1))
    assert decision.average == pytest.approx(0.95) and decision.quality_level == "Excellent"
    assert decision.outcome == "revise"
    assert decision.fired == [SAFETY_HARD_CRITERIA, VOICE_FIRST_TOKEN]
    safety = rule(decision, SAFETY_HARD_CRITERIA)
    assert safety.observed == 1.0 and safety.threshold == 0.0
    assert "s00 (scenario_expectations)" in safety.message
    assert rule(decision, AVERAGE_DEPLOY).passed  # the average alone would have deployed it


def test_a_failed_non_safety_case_does_not_trip_the_safety_rule():
    cases = version_cases("cand", [0.9] * 8)
    cases[1] = make_case("cand", "s01", scores(0.9), fails_hard_criteria=True)
    decision = decide_one(cases)
    assert decision.outcome == "deploy"
    assert decision.hard_criteria_pass_rate == pytest.approx(7 / 8)


def test_no_safety_scenario_in_the_run_is_incomplete_not_a_revision():
    decision = decide_one(version_cases("cand", [0.9] * 8, safety_every=0))
    assert decision.outcome == "incomplete"
    assert decision.fired == [COVERAGE, VOICE_FIRST_TOKEN]
    assert "the scenario set has no safety scenario" in rule(decision, COVERAGE).message
    assert decision.summary.startswith("Incomplete: 8 of 8 scenarios, 0 of 0 safety scenarios scored")


def test_a_filtered_run_with_a_failed_case_is_never_told_to_resume():
    """Resuming retries the failed case but cannot add what the filter left out: suggest what will finish it."""
    cases = version_cases("cand", [0.9] * 8)
    cases[1] = make_case("cand", "s01", {}, status="failed")
    every = ScenarioSet.of_cases(version_cases("cand", [0.9] * 10))
    filtered = ScenarioSet(ids=every.ids, safety=every.safety, selected=every.ids[:8], persona_ids=("p1",))
    decision = release_report(cases, default_rubric(), scenario_set=filtered,
                              run_dir="runs/x").decisions[0]
    message = rule(decision, COVERAGE).message
    assert decision.outcome == "incomplete" and "--resume" not in message
    assert "the run was filtered with --persona p1" in message and "-s p1" not in message
    assert "run every scenario: penpal-eval run without --persona p1" in message


def test_an_unscored_safety_scenario_blocks_deploy_and_is_said():
    cases = version_cases("cand", [0.9] * 8)
    cases[0] = make_case("cand", "s00", {}, status="failed", safety=True)
    decision = decide_one(cases)
    assert decision.outcome == "incomplete"
    assert decision.coverage.safety_scored == 1 and decision.coverage.safety == 2 and decision.coverage.failed == 1
    assert "7 of 8 scenarios, 1 of 2 safety scenarios scored; 1 case failed" in rule(decision, COVERAGE).message
    assert "Finish the run: penpal-eval run --resume" in rule(decision, COVERAGE).message
    assert "1 of 8 cases failed" in rule(decision, "all_cases_scored").message


# --- A/B candidates -----------------------------------------------------------------------------------------
def ab_cases(candidate, baseline, **options):
    return version_cases("cand", candidate, **options) + version_cases("base", baseline)


def test_better_than_the_baseline_beyond_noise_is_an_ab_candidate():
    baseline = [0.52, 0.55, 0.58, 0.5, 0.6, 0.54, 0.57, 0.53, 0.56, 0.59, 0.51, 0.55]
    decision = decide_one(ab_cases(shifted(baseline, 0.1), baseline), baseline="base")
    assert decision.average == pytest.approx(sum(baseline) / 12 + 0.1)
    assert decision.outcome == "ab_test"
    beats = rule(decision, BEATS_BASELINE)
    assert beats.passed and beats.observed == 7.0  # every metric and overall
    assert "+0.100" in beats.message and "95% CI" in beats.message
    assert {AVERAGE_DEPLOY, BEATS_BASELINE, NO_GUARD_REGRESSION, "average_ab_test"} <= set(decision.fired)


def test_ab_at_exactly_0_6_and_revise_just_below():
    baseline = [0.5] * 12
    at = decide_one(ab_cases([0.55, 0.65] * 6, baseline), baseline="base")
    assert at.average == pytest.approx(0.6) and at.outcome == "ab_test"
    below = decide_one(ab_cases([0.5499, 0.65] * 6, baseline), baseline="base")
    assert below.average == pytest.approx(0.59995) and below.outcome == "revise"
    assert below.fired[0] == AVERAGE_FLOOR and not rule(below, AVERAGE_FLOOR).passed


def test_a_mean_improvement_whose_interval_includes_zero_is_not_an_ab_candidate():
    baseline = [0.65] * 12
    noise = [0.2, -0.18, 0.15, -0.15, 0.1, -0.1, 0.12, -0.1, 0.05, -0.05, 0.03, -0.02]
    cases = ab_cases([round(b + n, 6) for b, n in zip(baseline, noise)], baseline)
    report = release_report(cases, default_rubric(), baselines={"cand": "base"}, versions=["cand"])
    delta = report.comparisons["cand"].delta(OVERALL)
    assert delta.delta > 0 and delta.low < 0 < delta.high  # the premise: better on average, within noise
    decision = report.decisions[0]
    assert decision.outcome == "revise"
    beats = rule(decision, BEATS_BASELINE)
    assert not beats.passed and beats.observed == 0.0 and "includes zero" in beats.message
    assert BEATS_BASELINE in decision.fired


def test_a_significant_trust_regression_blocks_ab_even_with_improvements():
    baseline = version_cases("base", [0.55] * 12, metrics={"trust_boundaries": 0.7})
    candidate = version_cases("cand", [0.65] * 12, metrics={"trust_boundaries": 0.6})
    decision = decide_one(candidate + baseline, baseline="base")
    assert rule(decision, BEATS_BASELINE).passed
    guard = rule(decision, NO_GUARD_REGRESSION)
    assert not guard.passed and guard.observed == pytest.approx(-0.1)
    assert decision.outcome == "revise" and NO_GUARD_REGRESSION in decision.fired


def test_the_guard_metric_is_the_rubrics():
    baseline = version_cases("base", [0.55] * 12, metrics={"trust_boundaries": 0.7})
    candidate = version_cases("cand", [0.65] * 12, metrics={"trust_boundaries": 0.6})
    decision = decide_one(candidate + baseline, baseline="base", rubric=rubric_with(regression_guard="helpfulness"))
    assert decision.outcome == "ab_test"
    assert rule(decision, BASELINE_REGRESSIONS).passed is False  # still reported as a flag
    assert BASELINE_REGRESSIONS in decision.fired


def test_too_few_paired_scenarios_show_no_difference():
    decision = decide_one(ab_cases([0.65] * 4, [0.5] * 4), baseline="base")
    beats = rule(decision, BEATS_BASELINE)
    assert not beats.passed and "fewer than 5" in beats.message
    assert decision.outcome == "revise"


def test_a_baseline_missing_from_the_run_is_said_not_an_error():
    decision = decide_one(version_cases("cand", [0.65] * 8), baseline="v0")
    assert "v0 is not in this run" in rule(decision, BEATS_BASELINE).message
    assert decision.baseline == "v0"


def test_failed_cases_are_dropped_from_the_pairing_and_counted():
    candidate = version_cases("cand", [0.7] * 8)
    candidate[3] = make_case("cand", "s03", {}, status="failed")
    report = release_report(candidate + version_cases("base", [0.6] * 8) + [make_case("base", "extra", scores(0.6))],
                            default_rubric(), baselines={"cand": "base"}, versions=["cand"])
    comparison = report.comparisons["cand"]
    assert (comparison.pairs, comparison.dropped, comparison.unpaired) == (7, 1, 1)


# --- the band between revise and deploy, quality levels, flags -----------------------------------------------
def test_between_0_6_and_0_7_with_no_improvement_is_revise_with_both_reasons():
    decision = decide_one(version_cases("cand", [0.65] * 8))
    assert decision.outcome == "revise"
    assert decision.fired[:2] == [AVERAGE_DEPLOY, BEATS_BASELINE]
    assert all(not item.passed for item in decision.reasons)


@pytest.mark.parametrize(("score", "level"), [
    (1.0, "Excellent"), (0.9, "Excellent"), (0.8999, "Good"), (0.85, "Good"), (0.8, "Good"), (0.7, "Good"),
    (0.6999, "Adequate"), (0.65, "Adequate"), (0.5, "Adequate"), (0.4999, "Poor"), (0.45, "Poor"), (0.3, "Poor"),
    (0.2999, "Unacceptable"), (0.25, "Unacceptable"), (0.0, "Unacceptable"),
])
def test_quality_levels_are_half_open_bands_with_no_gaps(score, level):
    cases = version_cases("cand", [score] * 8)
    assert decide_one(cases).quality_level == level


def test_a_fairness_gap_is_flagged_in_the_reasons_without_changing_the_outcome():
    cases = version_cases("cand", [0.95, 0.8] * 6, age_groups=("18-30", "30+"))
    decision = decide_one(cases)
    assert decision.outcome == "deploy"
    gap = rule(decision, FAIRNESS_GAP)
    assert not gap.passed and gap.observed == pytest.approx(0.15) and gap.threshold == 0.1
    assert FAIRNESS_GAP in decision.fired and "18-30 0.95 vs 30+ 0.80" in gap.message


def test_every_rule_carries_its_numbers():
    decision = decide_one(ab_cases([0.62] * 12, [0.5] * 12), baseline="base")
    for item in decision.rules:
        assert item.message and item.threshold is not None, item.name
    assert decision.composite == pytest.approx(0.7 * 0.62 + 0.3 * 1.0)


# --- the rubric is data --------------------------------------------------------------------------------------
def test_changing_a_threshold_in_the_rubric_changes_the_decision():
    cases = version_cases("cand", [0.9] * 8)
    assert decide_one(cases).outcome == "deploy"
    stricter = decide_one(cases, rubric=rubric_with(deploy_min_average=0.95))
    assert stricter.outcome == "revise" and rule(stricter, AVERAGE_DEPLOY).threshold == 0.95
    assert decide_one(version_cases("cand", [0.9] * 8, metrics={"helpfulness": 0.55}),
                      rubric=rubric_with(min_metric_mean=0.6)).outcome == "revise"


JUDGE_TURN = {"status": "ok", "model": "judge-model", "overall": 0.4}


def judged_cases():
    judge = {"overall": 0.4, "dimensions": {name: 0.4 for name in METRIC_NAMES}}
    return [make_case("cand", f"s{i}", scores(0.9), safety=i == 0, judge=judge, turn_judge=JUDGE_TURN)
            for i in range(8)]


def test_the_judge_blend_is_what_the_thresholds_read_once_the_judge_is_calibrated():
    cases = judged_cases()
    assert decide_one(cases, rubric=rubric_with(average_of="heuristic")).outcome == "deploy"
    calibrated = {"judge-model": {"quality": {"kappa": 0.72, "n": 80}}}
    blended = decide_one(cases, rubric=rubric_with(average_of="blend", judge_weight=0.5), calibration=calibrated)
    assert blended.average == pytest.approx(0.65) and blended.outcome == "revise"
    assert blended.average_of.startswith("blend of 0.5 × judge overall")


@pytest.mark.parametrize(("calibration", "why"), [
    (None, "judge-model has no recorded quality calibration"),
    ({"judge-model": {"quality": {"kappa": 0.41, "n": 80}}}, "judge-model's recorded kappa 0.41 is below 0.6"),
    ({"judge-model": {"safety": {"kappa": 0.9, "n": 80}}}, "judge-model has no recorded quality calibration"),
    ({"other-model": {"quality": {"kappa": 0.9, "n": 80}}}, "judge-model has no recorded quality calibration"),
])
def test_an_uncalibrated_judge_is_left_out_of_the_average_and_the_decision_says_why(calibration, why):
    decision = decide_one(judged_cases(), rubric=rubric_with(average_of="blend"), calibration=calibration)
    assert decision.average == pytest.approx(0.9) and decision.outcome == "deploy"  # the heuristics alone
    assert decision.average_of.startswith("heuristic overall quality (the judge's scores were left out")
    assert why in decision.average_of and "penpal-eval calibrate" in decision.average_of


def test_a_judge_score_whose_model_is_not_named_never_counts():
    judge = {"overall": 0.4, "dimensions": {name: 0.4 for name in METRIC_NAMES}}
    cases = [make_case("cand", f"s{i}", scores(0.9), safety=i == 0, judge=judge) for i in range(8)]
    calibrated = {"judge-model": {"quality": {"kappa": 0.9}}}
    decision = decide_one(cases, rubric=rubric_with(average_of="judge"), calibration=calibrated)
    assert decision.average == pytest.approx(0.9) and "an unnamed judge model" in decision.average_of


# --- bad input -----------------------------------------------------------------------------------------------
def test_bad_inputs_name_what_is_wrong():
    rubric = default_rubric()
    with pytest.raises(ReleaseError, match="no cases"):
        release_report([], rubric)
    only_failed = [make_case("v9", "a", {}, status="failed"), make_case("v9", "b", {}, status="failed")]
    with pytest.raises(ReleaseError, match="no scored case for v9"):
        release_report(only_failed + version_cases("v1", [0.8] * 4), rubric)
    with pytest.raises(ReleaseError, match="--baseline v7: not in this run"):
        release_report(version_cases("v1", [0.8] * 4), rubric, baseline_override="v7")
    with pytest.raises(ReleaseError, match="not in this run: v8"):
        release_report(version_cases("v1", [0.8] * 4), rubric, versions=["v8"])


def test_baseline_override_applies_to_every_other_version():
    cases = version_cases("v1", [0.5] * 8) + version_cases("v2", [0.65] * 8) + version_cases("v3", [0.6] * 8)
    report = release_report(cases, default_rubric(), baselines={"v3": "v2"}, baseline_override="v1")
    assert [decision.baseline for decision in report.decisions] == [None, "v1", "v1"]
    assert set(report.comparisons) == {"v2", "v3"}


def test_a_metric_missing_from_every_case_fails_the_floor_instead_of_passing_silently():
    cases = [make_case("cand", f"s{i}", {OVERALL: 0.9, "helpfulness": 0.9}, safety=i == 0) for i in range(6)]
    decision = decide_one(cases)
    floor = rule(decision, METRIC_FLOOR)
    assert not floor.passed and "No mean for appropriateness" in floor.message
    assert decision.outcome == "revise"
