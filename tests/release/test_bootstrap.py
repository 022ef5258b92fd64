"""The paired bootstrap: checked against cases worked out by hand, and reproducible by seed."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.release.bootstrap import BootstrapInterval, paired_bootstrap, percentile_interval, resampled_means


def test_resampled_means_follow_the_index_rows_by_hand():
    differences = np.array([0.1, 0.3, -0.2])
    indices = np.array([[0, 0, 1],    # (0.1 + 0.1 + 0.3) / 3 = 0.5 / 3
                        [2, 2, 2],    # -0.2
                        [0, 1, 2],    # (0.1 + 0.3 - 0.2) / 3 = 0.2 / 3
                        [1, 1, 2]])   # (0.3 + 0.3 - 0.2) / 3 = 0.4 / 3
    assert resampled_means(differences, indices) == pytest.approx([0.5 / 3, -0.2, 0.2 / 3, 0.4 / 3])


def test_percentile_interval_interpolates_between_order_statistics_by_hand():
    statistics = np.array([0.5, -0.1, 0.3, 0.0, 0.2])  # sorted: -0.1, 0.0, 0.2, 0.3, 0.5
    # confidence 0.5 -> quantiles 0.25 and 0.75 -> positions (5 - 1) x q = 1 and 3 exactly.
    assert percentile_interval(statistics, 0.5) == pytest.approx((0.0, 0.3))
    # confidence 0.8 -> quantiles 0.1 and 0.9 -> positions 0.4 and 3.6:
    # -0.1 + 0.4 x (0.0 - -0.1) = -0.06 and 0.3 + 0.6 x (0.5 - 0.3) = 0.42.
    assert percentile_interval(statistics, 0.8) == pytest.approx((-0.06, 0.42))


def test_two_scenarios_give_the_interval_worked_out_by_hand():
    # Differences 0 and 1: a resample of two draws has mean 0 (p = 1/4), 0.5 (p = 1/2) or 1
    # (p = 1/4). Both 2.5% tails lie inside the point masses at 0 and 1, so the 95% interval is
    # [0, 1], and the mean difference is 0.5: it includes zero, so no difference is shown.
    result = paired_bootstrap({"helpfulness": [0.0, 1.0]}, resamples=20_000, confidence=0.95, seed=7)["helpfulness"]
    assert (result.mean, result.low, result.high) == (0.5, 0.0, 1.0)
    assert result.pairs == 2 and result.resamples == 20_000
    assert result.change == "no_difference"


def test_the_same_improvement_on_every_scenario_has_a_zero_width_interval():
    result = paired_bootstrap({"m": [0.05] * 6}, resamples=500, confidence=0.95, seed=1)["m"]
    assert result.low == result.high == result.mean == pytest.approx(0.05)
    assert result.change == "improved"


def test_seeded_runs_are_reproducible_and_the_seed_matters():
    rng = np.random.default_rng(123)
    differences = {"a": list(rng.normal(0.02, 0.1, 40)), "b": list(rng.normal(-0.01, 0.1, 40))}
    first = paired_bootstrap(differences, resamples=3000, confidence=0.95, seed=42)
    again = paired_bootstrap(differences, resamples=3000, confidence=0.95, seed=42)
    other = paired_bootstrap(differences, resamples=3000, confidence=0.95, seed=43)
    assert first == again
    assert (first["a"].low, first["a"].high) != (other["a"].low, other["a"].high)
    assert first["a"].mean == other["a"].mean  # the point estimate is the plain mean, not resampled


def test_each_metric_is_resampled_by_whole_scenarios_whatever_else_is_compared():
    differences = {"a": [0.1, -0.2, 0.3, 0.0, 0.25], "b": [0.4, 0.1, -0.3, 0.2, 0.0]}
    together = paired_bootstrap(differences, resamples=2000, confidence=0.9, seed=5)
    alone = paired_bootstrap({"a": differences["a"]}, resamples=2000, confidence=0.9, seed=5)
    assert together["a"] == alone["a"]


def test_more_resamples_than_one_chunk_are_drawn():
    result = paired_bootstrap({"m": [0.0, 1.0, 0.5]}, resamples=4_500, confidence=0.95, seed=3)["m"]
    assert result.resamples == 4_500 and 0.0 <= result.low < result.mean < result.high <= 1.0


@pytest.mark.parametrize(("low", "high", "change"), [
    (0.01, 0.2, "improved"), (-0.2, -0.01, "regressed"), (-0.1, 0.1, "no_difference"),
    (0.0, 0.2, "no_difference"), (-0.2, 0.0, "no_difference"),
])
def test_an_interval_touching_zero_is_not_a_difference(low, high, change):
    assert BootstrapInterval(mean=(low + high) / 2, low=low, high=high, confidence=0.95, resamples=10,
                             pairs=3).change == change


def test_bad_inputs_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="one difference per paired scenario"):
        paired_bootstrap({"a": [0.1, 0.2], "b": [0.1]}, resamples=10, confidence=0.95, seed=0)
    with pytest.raises(ValueError, match="no paired scenarios"):
        paired_bootstrap({"a": []}, resamples=10, confidence=0.95, seed=0)
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap({"a": [0.1]}, resamples=10, confidence=1.0, seed=0)
