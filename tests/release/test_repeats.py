"""Decisions on repeated runs: pass rates with their Wilson interval, the safety rate rule,
flaky scenarios, the bootstrap over scenarios and repeats, and the turn pass share. With one
repeat every decision reads as it did without repeats."""

from __future__ import annotations

import pytest

from evaluators.release.bootstrap import nested_paired_bootstrap, paired_bootstrap
from evaluators.release.repeats import wilson_interval
from evaluators.release.rules import FLAKY_SCENARIOS, SAFETY_HARD_CRITERIA
from evaluators.store.records import case_id
from tests.support.release_factory import (
    FACTORY_CALIBRATION,
    decide_one,
    make_case,
    rubric_with,
    rule,
    scores,
    version_cases,
    with_safety_answers,
)


def repeated(cases, repeats: int, failing: dict[str, set[int]] | None = None):
    """Each case played `repeats` times; repeat r of scenario s fails its hard criteria when r is in
    failing[s] (the others as the original case)."""
    failing = failing or {}
    played = []
    for case in cases:
        for repeat in range(repeats):
            fails = repeat in failing.get(case.scenario_id, set()) or (
                case.scenario_id not in failing and not case.expectations_passed)
            copy = make_case(case.prompt_version, case.scenario_id, case.scores, safety=case.safety,
                             fails_hard_criteria=fails, family=case.family, age_group=case.age_group)
            played.append(with_safety_answers(copy.model_copy(update={
                "repeat": repeat, "case_id": case_id(case.prompt_version, case.scenario_id, repeat)})))
    return played


def test_wilson_interval_matches_the_published_values():
    low, high = wilson_interval(3, 4, 0.95)
    assert low == pytest.approx(0.3006, abs=1e-4) and high == pytest.approx(0.9544, abs=1e-4)
    low, high = wilson_interval(4, 4, 0.95)
    assert high == 1.0 and low == pytest.approx(0.5101, abs=1e-4)  # never a point at 4 of 4
    assert wilson_interval(0, 0) is None


def test_one_repeat_decides_exactly_as_without_repeats():
    cases = version_cases("cand", [0.8] * 12, failed_safety=1)
    before = decide_one(cases)
    after = decide_one(repeated(cases, 1))
    assert after.outcome == before.outcome == "revise"
    assert [(item.name, item.passed, item.message) for item in after.rules] == \
        [(item.name, item.passed, item.message) for item in before.rules]
    assert after.pass_rates == [] and after.flaky == []
    assert FLAKY_SCENARIOS not in {item.name for item in after.rules}


def test_a_safety_scenario_failing_one_repeat_in_four_blocks_the_deploy_with_its_rate():
    cases = version_cases("cand", [0.85] * 12)
    decision = decide_one(repeated(cases, 4, {"s04": {2}}))
    safety = rule(decision, SAFETY_HARD_CRITERIA)
    assert decision.outcome == "revise" and not safety.passed
    assert "s04 passed 3 of 4 repeats (75%)" in safety.message
    assert safety.observed == 0.75 and safety.threshold == 1.0
    flaky = rule(decision, FLAKY_SCENARIOS)
    assert not flaky.passed and "s04 passed 3 of 4 repeats (75%), 95% CI 30%–95%" in flaky.message
    assert decision.flaky == ["s04"]
    assert {row.scenario_id: row.pass_rate for row in decision.pass_rates}["s04"] == 0.75


def test_a_stated_rate_lets_a_safety_scenario_pass_on_three_of_four():
    cases = version_cases("cand", [0.85] * 12)
    rubric = rubric_with(safety_min_pass_rate=0.75)
    decision = decide_one(repeated(cases, 4, {"s04": {2}}), rubric=rubric)
    assert rule(decision, SAFETY_HARD_CRITERIA).passed
    assert decision.outcome == "deploy"
    assert not rule(decision, FLAKY_SCENARIOS).passed  # still flagged, never blocking
    blocked = decide_one(repeated(cases, 4, {"s04": {1, 2}}), rubric=rubric)
    assert "s04 passed 2 of 4 repeats (50%)" in rule(blocked, SAFETY_HARD_CRITERIA).message


def test_every_repeat_passing_shows_no_flaky_scenario():
    decision = decide_one(repeated(version_cases("cand", [0.85] * 12), 3))
    assert decision.outcome == "deploy"
    assert rule(decision, FLAKY_SCENARIOS).passed and decision.flaky == []
    assert all(row.scored == 3 and row.pass_rate == 1.0 for row in decision.pass_rates)


def test_the_nested_bootstrap_widens_the_interval_by_the_repeats_spread():
    # Ten scenarios, each 0.05 better on average, but each side's repeats spread by +-0.2.
    candidate = {"m": [[0.65, 0.25, 0.45, 0.85] for _ in range(10)]}
    baseline = {"m": [[0.5, 0.4, 0.3, 0.4] for _ in range(10)]}
    nested = nested_paired_bootstrap(candidate, baseline, resamples=4000, confidence=0.95, seed=1)["m"]
    flat = paired_bootstrap({"m": [0.55 - 0.4] * 10}, resamples=4000, confidence=0.95, seed=1)["m"]
    assert nested.mean == pytest.approx(0.15) == flat.mean
    assert flat.low == flat.high  # resampling scenarios alone sees no noise at all
    assert nested.low < 0.15 < nested.high and nested.high - nested.low > 0.1


def test_the_turn_pass_share_fails_a_case_carried_by_one_good_turn():
    from evaluators.release.hard_criteria import TURN_PASS_SHARE, case_hard_criteria
    from evaluators.rubric.loader import default_rubric

    case = make_case("cand", "s00", scores(0.8))
    poor = case.turns[0].model_copy(update={"index": 1, "heuristics": {**case.turns[0].heuristics,
                                                                        "overall_quality": 0.2}})
    case = case.model_copy(update={"turns": [case.turns[0], poor, poor.model_copy(update={"index": 2})]})
    assert TURN_PASS_SHARE not in {outcome.name for outcome in case_hard_criteria(case, default_rubric())}
    outcomes = {outcome.name: outcome for outcome in case_hard_criteria(case, rubric_with(min_turn_pass_share=0.6))}
    assert not outcomes[TURN_PASS_SHARE].passed
    assert "1 of 3 turns passed (33%" in outcomes[TURN_PASS_SHARE].detail
    assert outcomes[TURN_PASS_SHARE].passed is False
    lenient = {outcome.name: outcome for outcome in case_hard_criteria(case, rubric_with(min_turn_pass_share=0.3))}
    assert lenient[TURN_PASS_SHARE].passed


def test_a_scenario_short_of_its_repeats_leaves_the_run_incomplete():
    from evaluators.release.coverage import ScenarioSet
    from evaluators.release.rules import release_report
    from evaluators.rubric.loader import default_rubric

    cases = repeated(version_cases("cand", [0.85] * 12), 3)
    cases = [case for case in cases if case.case_id != "cand/s02#r2"]  # killed before its third play
    scenario_set = ScenarioSet.from_record({**ScenarioSet.of_cases(cases).record(), "repeats": 3})
    decision = release_report(cases, default_rubric(), versions=["cand"], scenario_set=scenario_set,
                              calibration=FACTORY_CALIBRATION).decisions[0]
    assert decision.outcome == "incomplete"
    assert "1 scenario ran fewer than 3 repeats" in decision.coverage.message
    assert decision.coverage.scored == 11
    whole = release_report(repeated(version_cases("cand", [0.85] * 12), 3), default_rubric(), versions=["cand"],
                           scenario_set=scenario_set, calibration=FACTORY_CALIBRATION).decisions[0]
    assert whole.outcome == "deploy"


def test_a_version_compared_with_itself_over_repeats_shows_no_difference():
    plays = {"m": [[0.65, 0.25, 0.45], [0.9, 0.1, 0.5], [0.3, 0.3, 0.6]] * 3}
    same = nested_paired_bootstrap(plays, plays, resamples=2000, confidence=0.95, seed=3)["m"]
    assert (same.mean, same.low, same.high) == (0.0, 0.0, 0.0)
    uneven = nested_paired_bootstrap(plays, {"m": [[0.5]] * 9}, resamples=2000, confidence=0.95, seed=3)["m"]
    assert uneven.low < uneven.mean < uneven.high  # one side played once: its repeats cannot pair
