"""A/B candidates from pairwise evidence: the decision reads the run store's pairwise results.

Two versions whose metric means differ within noise (no paired bootstrap interval excludes
zero) are decided with and without a head-to-head by the pairwise judge: a win rate whose
interval lies above 50% makes the candidate an A/B test, one whose interval includes 50% does
not, and a run without pairwise results decides exactly as before.
"""

from __future__ import annotations

import pytest

from evaluators.judge.result import PairwiseComparison
from evaluators.release.head_to_head import head_to_head, head_to_head_record
from evaluators.release.rules import BEATS_BASELINE
from evaluators.release.stored_run import read_run, report_for_run
from evaluators.rubric.loader import default_rubric
from evaluators.store.run_store import RunStore
from tests.support.release_factory import FAMILIES, rubric_with, version_cases, write_run

RUBRIC = default_rubric()
BASELINE = [0.62, 0.68, 0.64, 0.66, 0.63, 0.67, 0.65, 0.61, 0.69, 0.64, 0.66, 0.65]
# Within noise: the candidate is 0.02 above on half the scenarios and 0.02 below on the others.
CANDIDATE = [value + (0.02 if index % 2 else -0.02) for index, value in enumerate(BASELINE)]


def comparisons(outcomes: list[str]) -> list[PairwiseComparison]:
    """One comparison per scenario s00, s01, ... with the candidate's outcome."""
    return [PairwiseComparison(scenario_id=f"s{index:02d}", family=FAMILIES[index % len(FAMILIES)], turn=1,
                               outcome=outcome) for index, outcome in enumerate(outcomes)]


def run_with_pairwise(tmp_path, outcomes: list[str] | None, rubric=RUBRIC):
    cases = version_cases("v1", BASELINE) + version_cases("v2", CANDIDATE)
    directory = write_run(tmp_path / "run", cases, baselines={"v1": None, "v2": "v1"})
    if outcomes is not None:
        RunStore.open(directory).write_pairwise(head_to_head_record(
            head_to_head("v2", "v1", comparisons(outcomes), rubric, judge_model="judge-model")))
    run = read_run(directory, rubric)
    return report_for_run(run, rubric, versions=["v2"])


def beats_rule(report):
    return next(rule for rule in report.decision("v2").rules if rule.name == BEATS_BASELINE)


def test_the_means_differ_within_noise_so_without_pairwise_results_it_is_revised(tmp_path):
    report = run_with_pairwise(tmp_path, None)
    assert all(delta.change == "no_difference" for delta in report.comparisons["v2"].deltas)
    decision = report.decision("v2")
    assert decision.outcome == "revise" and not beats_rule(report).passed
    assert "pairwise" not in beats_rule(report).message.lower()  # the reasons read as they always did
    assert report.head_to_head == {}


def test_a_pairwise_win_rate_above_half_beyond_noise_makes_an_ab_candidate(tmp_path):
    report = run_with_pairwise(tmp_path, ["win"] * 10 + ["tie", "loss"])
    decision = report.decision("v2")
    assert decision.outcome == "ab_test" and BEATS_BASELINE in decision.fired
    figures = report.head_to_head["v2"].overall
    assert figures.rate == (10 + 0.5) / 12 and figures.low > 0.5
    rule = beats_rule(report)
    assert rule.passed and rule.observed == 1.0  # the pairwise evidence alone: no metric improved
    assert "No metric is better than v1 beyond noise" in rule.message
    assert f"wins {figures.rate:.0%} (95% CI {figures.low:.0%} to {figures.high:.0%}; 12 scenarios" in rule.message
    assert "position bias 0%" in rule.message and "interval above 50%" in rule.message


def test_a_pairwise_interval_that_includes_half_is_not_a_candidate(tmp_path):
    report = run_with_pairwise(tmp_path, ["win", "loss"] * 5 + ["win", "tie"])
    figures = report.head_to_head["v2"].overall
    assert figures.low < 0.5 < figures.high
    decision = report.decision("v2")
    assert decision.outcome == "revise" and not beats_rule(report).passed
    assert "Pairwise not beyond noise (the interval includes or lies below 50%)" in beats_rule(report).message


def test_the_rubric_says_which_evidence_counts(tmp_path):
    rubric = rubric_with(ab_evidence=["bootstrap"])
    report = run_with_pairwise(tmp_path, ["win"] * 12, rubric=rubric)
    assert report.decision("v2").outcome == "revise"
    assert "not counted: the rubric's ab_evidence is bootstrap" in beats_rule(report).message


def test_position_bias_is_quoted_in_the_reasons(tmp_path):
    outcomes = ["win"] * 12
    results = comparisons(outcomes)
    results[0] = results[0].model_copy(update={"outcome": "tie", "position_bias": True})
    cases = version_cases("v1", BASELINE) + version_cases("v2", CANDIDATE)
    directory = write_run(tmp_path / "run", cases, baselines={"v1": None, "v2": "v1"})
    RunStore.open(directory).write_pairwise(head_to_head_record(head_to_head("v2", "v1", results, RUBRIC)))
    report = report_for_run(read_run(directory, RUBRIC), RUBRIC, versions=["v2"])
    assert report.head_to_head["v2"].position_bias_rate == pytest.approx(1 / 12)
    assert "position bias 8%" in beats_rule(report).message
