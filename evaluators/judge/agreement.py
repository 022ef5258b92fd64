"""How far an automatic evaluator agrees with human labels.

`calibrate` asks whether the LLM judge and the heuristics can stand in for a human rater. Two
views answer it: Spearman correlation of the 0-1 scores (does the evaluator *order* replies as
people do, whatever its scale) and weighted Cohen's kappa on a three-point verdict (does it
reach the same decision, beyond what chance would give, with near misses counting less than
far ones). The confusion table shows where the disagreements are.

Only pandas and the standard library are used: scipy is a test-time cross-check, not a
runtime dependency. Ranks and counts are integers, so the statistics are computed exactly
(integers and fractions) and turned into a float once at the end: perfect agreement is exactly
1.0, not 0.9999999999999998.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import pandas as pd

VERDICTS: tuple[str, ...] = ("poor", "acceptable", "good")
"""The three-point verdict, ordered low to high: the order is what weighted kappa weighs."""

WEIGHTS: tuple[str, ...] = ("linear", "quadratic")

_SCORE_DECIMALS = 9  # float sums such as 0.1 * 7 land on 0.7000000000000001


def _check_lengths(**sides: Sequence[object]) -> int:
    """Length shared by paired sequences; pairs that do not line up are a caller's bug."""
    lengths = {name: len(values) for name, values in sides.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name}={length}" for name, length in lengths.items())
        raise ValueError(f"paired sequences differ in length: {shown}")
    return next(iter(lengths.values()), 0)


def _double_ranks(values: Sequence[float]) -> list[int]:
    """Twice the average (1-based) rank of each value, ties sharing the mean of their ranks.

    Doubled so every rank is an integer: a tie over positions i..j (0-based) has average rank
    (i + j + 2) / 2, and the correlation is unchanged by scaling.
    """
    order = sorted(range(len(values)), key=lambda index: values[index])
    ranks = [0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = start + end + 2
        start = end + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman rank correlation, ties given their average rank (Pearson on average ranks).

    Rank-based because judges and heuristics use the 0-1 scale differently: what matters for
    calibration is whether they order replies the way humans do. None when it is undefined:
    fewer than 3 pairs (two points always correlate perfectly) or a constant side (no ranks
    to correlate). Raises ValueError for unequal lengths or non-finite values, which cannot
    be ranked.
    """
    n = _check_lengths(xs=xs, ys=ys)
    for name, values in (("xs", xs), ("ys", ys)):
        for value in values:
            if not math.isfinite(value):
                raise ValueError(f"{name}: cannot rank non-finite value {value!r}")
    if n < 3 or len(set(xs)) == 1 or len(set(ys)) == 1:
        return None
    rx, ry = _double_ranks(xs), _double_ranks(ys)
    # n * Sxy, n * Sxx, n * Syy in exact integers (centred sums, scaled by n).
    cov = n * sum(a * b for a, b in zip(rx, ry)) - sum(rx) * sum(ry)
    var_x = n * sum(a * a for a in rx) - sum(rx) ** 2
    var_y = n * sum(b * b for b in ry) - sum(ry) ** 2
    if cov * cov == var_x * var_y:  # exactly monotone: report exactly +1 or -1
        return 1.0 if cov > 0 else -1.0
    return max(-1.0, min(1.0, cov / (math.sqrt(var_x) * math.sqrt(var_y))))


def _check_categories(categories: Sequence[str]) -> dict[str, int]:
    """Position of each category; kappa's weights need at least two distinct ones."""
    positions = {category: index for index, category in enumerate(categories)}
    if len(positions) != len(categories):
        raise ValueError(f"categories must be distinct, got {list(categories)}")
    if len(positions) < 2:
        raise ValueError(f"need at least two categories, got {list(categories)}")
    return positions


def _positions(labels: Sequence[str], positions: Mapping[str, int], who: str) -> list[int]:
    """Category index of each label; an unknown label would silently skew every count."""
    indices = []
    for label in labels:
        if label not in positions:
            raise ValueError(f"{who}: unknown category {label!r}; allowed: {', '.join(map(repr, positions))}")
        indices.append(positions[label])
    return indices


def _counts(rater_a: Sequence[str], rater_b: Sequence[str],
            categories: Sequence[str]) -> list[list[int]]:
    """k x k table of counts, rows rater_a, columns rater_b, after validating both sides."""
    _check_lengths(rater_a=rater_a, rater_b=rater_b)
    positions = _check_categories(categories)
    rows = _positions(rater_a, positions, "rater_a")
    columns = _positions(rater_b, positions, "rater_b")
    table = [[0] * len(positions) for _ in positions]
    for row, column in zip(rows, columns):
        table[row][column] += 1
    return table


def weighted_kappa(rater_a: Sequence[str], rater_b: Sequence[str], *,
                   categories: Sequence[str] = VERDICTS, weights: str = "linear") -> float | None:
    """Cohen's weighted kappa for ordered categories: agreement beyond chance.

    Weighted because the verdicts are ordered: calling a poor reply "acceptable" is a smaller
    miss than calling it "good". Disagreement weights are |i-j|/(k-1) ("linear") or
    ((i-j)/(k-1))**2 ("quadratic"), and kappa = 1 - sum(w*O) / sum(w*E), with O the observed
    proportions and E the outer product of the two raters' marginals (chance agreement).

    None when undefined: fewer than 2 items, or no disagreement expected by chance (both raters
    used one and the same category). Raises ValueError for unknown labels or weights, and for
    unequal lengths.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"unknown weights {weights!r}; allowed: {', '.join(map(repr, WEIGHTS))}")
    table = _counts(rater_a, rater_b, categories)
    n = len(rater_a)
    if n < 2:
        return None
    k = len(table)
    row_totals = [sum(row) for row in table]
    column_totals = [sum(column) for column in zip(*table)]

    def weight(i: int, j: int) -> Fraction:
        distance = Fraction(abs(i - j), k - 1)
        return distance if weights == "linear" else distance * distance

    # Both sums scaled to counts: observed by n, expected by n**2.
    observed = sum(weight(i, j) * table[i][j] for i in range(k) for j in range(k))
    expected = sum(weight(i, j) * row_totals[i] * column_totals[j] for i in range(k) for j in range(k))
    if expected == 0:
        return None
    return float(1 - observed * n / expected)


def confusion(rater_a: Sequence[str], rater_b: Sequence[str], *,
              categories: Sequence[str] = VERDICTS) -> pd.DataFrame:
    """Counts of (human, evaluator) verdict pairs: where kappa's disagreements are.

    Rows are rater_a's categories (index named "human"), columns rater_b's (named
    "evaluator"), every category present even at zero so tables from different evaluators
    line up.
    """
    table = _counts(rater_a, rater_b, categories)
    return pd.DataFrame(table, index=pd.Index(list(categories), name="human"),
                        columns=pd.Index(list(categories), name="evaluator"), dtype="int64")


def verdict_for(score: float, bands: Mapping[str, float]) -> str:
    """Three-point verdict for a 0-1 score, so heuristic and human scores can be compared with
    the judge's verdicts.

    ``bands`` gives each verdict's lower bound, e.g. {"good": 0.7, "acceptable": 0.5}; bands
    are half-open, so 0.7 is good and 0.69 acceptable, and a score below every bound is the
    lowest verdict. The score is rounded to 9 decimals first, so float sums that are a bound
    in exact arithmetic (0.7000000000000001, 0.6999999999999999) land in the intended band.
    Raises ValueError for a score outside [0, 1] or bands that are not ordered like VERDICTS.
    """
    rounded = round(score, _SCORE_DECIMALS)
    if not 0.0 <= rounded <= 1.0:  # also refuses NaN
        raise ValueError(f"score must be in [0, 1], got {score!r}")
    for name in bands:
        if name not in VERDICTS:
            raise ValueError(f"bands: unknown verdict {name!r}; allowed: {', '.join(map(repr, VERDICTS))}")
    ordered = [(name, bands[name]) for name in VERDICTS if name in bands]
    for (low, low_min), (high, high_min) in zip(ordered, ordered[1:]):
        if not low_min < high_min:
            raise ValueError(f"bands: {high!r} ({high_min}) must start above {low!r} ({low_min})")
    for name, minimum in reversed(ordered):
        if rounded >= minimum:
            return name
    return VERDICTS[0]


@dataclass(frozen=True, eq=False)
class Agreement:
    """One evaluator's agreement with the human labels, as `calibrate` reports it.

    Compared by identity (eq=False): a DataFrame field has no single truth value, so the
    generated field-by-field equality and hash would raise.
    """

    evaluator: str
    n: int
    spearman: float | None
    kappa: float | None
    weights: str
    confusion: pd.DataFrame
    exact_agreement: float | None

    def to_record(self) -> dict:
        """JSON-able summary; statistics rounded to 4 places, as many as a report can carry."""
        return {
            "evaluator": self.evaluator,
            "n": self.n,
            "spearman": _round(self.spearman),
            "kappa": _round(self.kappa),
            "weights": self.weights,
            "exact_agreement": _round(self.exact_agreement),
            "confusion": {str(human): {str(verdict): int(count) for verdict, count in row.items()}
                          for human, row in self.confusion.iterrows()},
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def agreement(evaluator: str, human_scores: Sequence[float], evaluator_scores: Sequence[float | None],
              human_verdicts: Sequence[str], evaluator_verdicts: Sequence[str | None], *,
              weights: str = "linear") -> Agreement:
    """Spearman on scores, weighted kappa and confusion on verdicts, over the same items.

    Items the evaluator did not score (None score or verdict: the judge fell back or failed)
    are left out of every statistic, not counted as disagreement, and ``n`` counts the pairs
    actually used, so a report shows how much evidence stands behind the numbers.
    """
    _check_lengths(human_scores=human_scores, evaluator_scores=evaluator_scores,
                   human_verdicts=human_verdicts, evaluator_verdicts=evaluator_verdicts)
    kept = [(human_score, score, human_verdict, verdict)
            for human_score, score, human_verdict, verdict
            in zip(human_scores, evaluator_scores, human_verdicts, evaluator_verdicts)
            if score is not None and verdict is not None]
    h_scores = [item[0] for item in kept]
    e_scores = [item[1] for item in kept]
    h_verdicts = [item[2] for item in kept]
    e_verdicts = [item[3] for item in kept]
    n = len(kept)
    matches = sum(a == b for a, b in zip(h_verdicts, e_verdicts))
    return Agreement(
        evaluator=evaluator,
        n=n,
        spearman=spearman(h_scores, e_scores),
        kappa=weighted_kappa(h_verdicts, e_verdicts, weights=weights),
        weights=weights,
        confusion=confusion(h_verdicts, e_verdicts),
        exact_agreement=matches / n if n else None,
    )
