"""Paired bootstrap over scenarios: is a difference between two versions more than noise?

Two prompt versions answer the same scenarios, so the question is about the per-scenario
differences (candidate minus baseline). Resampling those differences with replacement, many
times, gives the spread of their mean that the scenario set alone would produce; the
percentile interval of the resampled means is the confidence interval. A difference is
significant when the interval excludes zero.

Pure and reproducible: the resamples come from a numpy Generator seeded with the rubric's
seed, created afresh for each call, so a comparison's interval depends only on its data and
the settings, never on what was compared before it. Every metric of one comparison is read
through the same resamples, as pairs of whole scenarios.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

_DECIMALS = 9
_CHUNK = 2_000  # resamples drawn at a time: memory stays bounded for large scenario sets


@dataclass(frozen=True)
class BootstrapInterval:
    """The mean paired difference and its percentile interval."""

    mean: float
    low: float
    high: float
    confidence: float
    resamples: int
    pairs: int

    @property
    def change(self) -> str:
        """improved (interval above zero), regressed (below zero) or no_difference."""
        if self.low > 0:
            return "improved"
        if self.high < 0:
            return "regressed"
        return "no_difference"


def _check_settings(pairs: int, resamples: int, confidence: float) -> None:
    """Both bootstraps refuse the same impossible settings, with the same words."""
    if pairs == 0:
        raise ValueError("no paired scenarios to resample")
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")


def resample_indices(pairs: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """`resamples` rows of `pairs` indices drawn with replacement from range(pairs)."""
    return rng.integers(0, pairs, size=(resamples, pairs))


def resampled_means(differences: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """The mean of `differences` over each row of `indices`."""
    return differences[indices].mean(axis=1)


def percentile_interval(statistics: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central `confidence` share of `statistics`, by linear interpolation between order
    statistics (numpy's default, Hyndman & Fan type 7)."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(statistics, [tail, 1.0 - tail])
    return round(float(low), _DECIMALS), round(float(high), _DECIMALS)


def paired_bootstrap(
    differences: Mapping[str, Sequence[float]], *, resamples: int, confidence: float, seed: int,
) -> dict[str, BootstrapInterval]:
    """Per metric, the mean of the paired differences and its bootstrap percentile interval.

    `differences[metric][i]` is candidate minus baseline on scenario i; every metric must list
    the same scenarios in the same order, because each resample picks whole scenarios.
    """
    lengths = {len(values) for values in differences.values()}
    if len(lengths) > 1:
        raise ValueError(f"every metric needs one difference per paired scenario; got lengths {sorted(lengths)}")
    pairs = lengths.pop() if lengths else 0
    _check_settings(pairs, resamples, confidence)
    matrix = {name: np.asarray(values, dtype=float) for name, values in differences.items()}
    rng = np.random.default_rng(seed)
    means: dict[str, list[np.ndarray]] = {name: [] for name in matrix}
    for start in range(0, resamples, _CHUNK):
        indices = resample_indices(pairs, min(_CHUNK, resamples - start), rng)
        for name, values in matrix.items():
            means[name].append(resampled_means(values, indices))
    result = {}
    for name, values in matrix.items():
        low, high = percentile_interval(np.concatenate(means[name]), confidence)
        result[name] = BootstrapInterval(mean=round(float(values.mean()), _DECIMALS), low=low, high=high,
                                         confidence=confidence, resamples=resamples, pairs=pairs)
    return result


def _padded(groups: Sequence[Sequence[float]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Ragged per-scenario repeats as one array (NaN beyond each scenario's count) and the counts."""
    values = np.full((len(groups), width), np.nan)
    for row, group in enumerate(groups):
        values[row, :len(group)] = group
    return values, np.array([len(group) for group in groups])


def _resampled_repeat_means(values: np.ndarray, counts: np.ndarray, indices: np.ndarray,
                            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """For each resample and picked scenario, draws as many repeats as it has, with replacement:
    (the picks, the mask of draws that count) to read every metric through the same draws."""
    picked = counts[indices]  # (resamples, scenarios)
    width = values.shape[1]
    draws = np.floor(rng.random((*indices.shape, width)) * picked[..., None]).astype(int)
    mask = np.arange(width) < picked[..., None]
    return draws, mask


def nested_paired_bootstrap(
    candidate: Mapping[str, Sequence[Sequence[float]]], baseline: Mapping[str, Sequence[Sequence[float]]], *,
    resamples: int, confidence: float, seed: int,
) -> dict[str, BootstrapInterval]:
    """The paired bootstrap when scenarios were played several times (`run --repeat N`): each
    resample picks scenarios with replacement and, within each picked scenario, each side's repeats
    with replacement, so the interval holds the model's randomness as well as the scenario set's.

    `candidate[metric][i]` lists the scores of scenario i's scored repeats (baseline alike); the
    difference on a scenario is the mean of its candidate repeats minus the mean of its baseline
    repeats. With one repeat everywhere use `paired_bootstrap` (this gives the same intervals in
    law, but not the same draws).

    Where both sides played a scenario equally often, repeat k of one is resampled with repeat k of
    the other (they were sampled with the same seed): for independent repeats this is the same
    bootstrap in law, and a run compared with itself shows no difference at all.
    """
    metrics = list(candidate)
    pairs = len(candidate[metrics[0]]) if metrics else 0
    _check_settings(pairs, resamples, confidence)
    width = max(len(group) for side in (candidate, baseline) for groups in side.values() for group in groups)
    ours = {name: _padded(candidate[name], width) for name in metrics}
    theirs = {name: _padded(baseline[name], width) for name in metrics}
    rng = np.random.default_rng(seed)
    means: dict[str, list[np.ndarray]] = {name: [] for name in metrics}
    first = metrics[0]
    for start in range(0, resamples, _CHUNK):
        indices = resample_indices(pairs, min(_CHUNK, resamples - start), rng)
        our_draws, our_mask = _resampled_repeat_means(*ours[first], indices, rng)
        their_draws, their_mask = _resampled_repeat_means(*theirs[first], indices, rng)
        paired = (ours[first][1] == theirs[first][1])[indices][..., None]  # equal repeat counts: draw alike
        their_draws = np.where(paired, our_draws, their_draws)
        rows = indices[..., None]
        for name in metrics:
            (our_values, our_counts), (their_values, their_counts) = ours[name], theirs[name]
            our_mean = np.where(our_mask, our_values[rows, our_draws], 0.0).sum(axis=2) / our_counts[indices]
            their_mean = (np.where(their_mask, their_values[rows, their_draws], 0.0).sum(axis=2)
                          / their_counts[indices])
            means[name].append((our_mean - their_mean).mean(axis=1))
    result = {}
    for name in metrics:
        observed = np.array([np.mean(a) - np.mean(b) for a, b in zip(candidate[name], baseline[name])])
        low, high = percentile_interval(np.concatenate(means[name]), confidence)
        result[name] = BootstrapInterval(mean=round(float(observed.mean()), _DECIMALS), low=low, high=high,
                                         confidence=confidence, resamples=resamples, pairs=pairs)
    return result
