"""Agreement statistics: hand-computed examples, scipy and a direct formula as cross-checks,
and the edges (ties, constant input, band boundaries, dropped pairs, bad labels)."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from evaluators.judge.agreement import (
    VERDICTS,
    Agreement,
    agreement,
    confusion,
    spearman,
    verdict_for,
    weighted_kappa,
)

CROSS_CHECK = settings(max_examples=50, deadline=None, database=None)
BANDS = {"good": 0.7, "acceptable": 0.5}

# An asymmetric 3x3 table (rows human, columns evaluator; poor, acceptable, good), n = 11.
TABLE = [
    [2, 1, 1],
    [0, 3, 1],
    [0, 1, 2],
]


def labels_from(table: list[list[int]]) -> tuple[list[str], list[str]]:
    """The two label lists whose confusion table is ``table``."""
    human, evaluator = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            human += [VERDICTS[i]] * count
            evaluator += [VERDICTS[j]] * count
    return human, evaluator


# --- spearman ---------------------------------------------------------------------------------

def test_spearman_with_ties_by_hand() -> None:
    # xs = 1, 2, 2, 3, 5 -> ranks 1, 2.5, 2.5, 4, 5 (the tie shares (2+3)/2)
    # ys = 2, 1, 3, 3, 4 -> ranks 2, 1, 3.5, 3.5, 5
    # both rank means are 3; deviations dx = -2, -.5, -.5, 1, 2 and dy = -1, -2, .5, .5, 2
    # sum dx*dy = 2 + 1 - .25 + .5 + 4 = 7.25; sum dx^2 = sum dy^2 = 4 + .25 + .25 + 1 + 4 = 9.5
    # rho = 7.25 / sqrt(9.5 * 9.5) = 29/38
    xs, ys = [1, 2, 2, 3, 5], [2, 1, 3, 3, 4]
    assert spearman(xs, ys) == pytest.approx(29 / 38, abs=1e-12)
    assert spearman(ys, xs) == pytest.approx(29 / 38, abs=1e-12)


def test_spearman_perfect_and_reversed_are_exact() -> None:
    xs = [0.1, 0.4, 0.35, 0.9, 0.0, 0.6]
    assert spearman(xs, xs) == 1.0
    # Monotone but not linear: still a perfect rank correlation.
    assert spearman(xs, [x ** 3 for x in xs]) == 1.0
    assert spearman(xs, [-x for x in xs]) == -1.0
    assert spearman([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]) == -1.0


@pytest.mark.parametrize("xs, ys", [
    ([0.5, 0.5, 0.5, 0.5], [0.1, 0.2, 0.3, 0.4]),
    ([0.1, 0.2, 0.3, 0.4], [0.7, 0.7, 0.7, 0.7]),
    ([0.1, 0.2], [0.2, 0.1]),  # fewer than 3 pairs
    ([], []),
])
def test_spearman_undefined_is_none(xs: list[float], ys: list[float]) -> None:
    assert spearman(xs, ys) is None


def test_spearman_refuses_unpaired_or_unrankable_input() -> None:
    with pytest.raises(ValueError, match="length"):
        spearman([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ValueError, match="non-finite"):
        spearman([0.1, float("nan"), 0.3], [0.1, 0.2, 0.3])


# Few distinct values so ties are common.
SCORES = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 0.5, 0.7, 0.9, 1.0])


@CROSS_CHECK
@given(pairs=st.lists(st.tuples(SCORES, SCORES), min_size=3, max_size=30))
def test_spearman_matches_scipy(pairs: list[tuple[float, float]]) -> None:
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    ours = spearman(xs, ys)
    if len(set(xs)) == 1 or len(set(ys)) == 1:
        assert ours is None
    else:
        assert ours == pytest.approx(spearmanr(xs, ys).statistic, abs=1e-9)


# --- weighted kappa ---------------------------------------------------------------------------

def test_linear_kappa_by_hand() -> None:
    # TABLE rows (human) total 4, 4, 3; columns (evaluator) total 2, 5, 4; n = 11.
    # Linear disagreement weights: 1/2 for adjacent categories, 1 for poor vs good.
    # Observed (counts): adjacent cells 1 + 0 + 1 + 1 = 3 -> 3/2; far cells 1 + 0 = 1 -> 1;
    #   sum w*O = 2.5 / 11.
    # Expected (row total * column total): adjacent 4*5 + 4*2 + 4*4 + 3*5 = 59 -> 59/2 = 29.5;
    #   far 4*4 + 3*2 = 22; sum w*E = 51.5 / 121.
    # kappa = 1 - (2.5/11) / (51.5/121) = 1 - 27.5/51.5 = 1 - 55/103 = 48/103
    human, evaluator = labels_from(TABLE)
    assert weighted_kappa(human, evaluator) == pytest.approx(48 / 103, abs=1e-9)
    assert weighted_kappa(human, evaluator, weights="linear") == pytest.approx(48 / 103, abs=1e-9)


def test_quadratic_kappa_by_hand() -> None:
    # Quadratic weights: (1/2)^2 = 1/4 adjacent, 1 far. Same counts as the linear case.
    # Observed: 3/4 + 1 = 1.75 (/11); expected: 59/4 + 22 = 36.75 (/121).
    # kappa = 1 - 1.75*11/36.75 = 1 - 19.25/36.75 = 1 - 77/147 = 1 - 11/21 = 10/21
    human, evaluator = labels_from(TABLE)
    assert weighted_kappa(human, evaluator, weights="quadratic") == pytest.approx(10 / 21, abs=1e-9)


def test_kappa_perfect_chance_and_undefined() -> None:
    human = ["poor", "good", "acceptable", "good", "poor"]
    assert weighted_kappa(human, human) == 1.0
    assert weighted_kappa(human, human, weights="quadratic") == 1.0
    # A rater who always says the same thing agrees exactly as often as chance: kappa 0.
    assert weighted_kappa(human, ["good"] * 5) == pytest.approx(0.0, abs=1e-12)
    # Both raters on one category: no disagreement expected by chance, kappa undefined.
    assert weighted_kappa(["good"] * 4, ["good"] * 4) is None
    assert weighted_kappa(["good"], ["poor"]) is None  # fewer than 2 items
    assert weighted_kappa([], []) is None


def test_kappa_total_reversal_is_negative() -> None:
    # Human poor, good, poor, good; evaluator the opposite: every pair is a far miss.
    # Observed sum w*O = 4/4 = 1; marginals 1/2, 0, 1/2 on both sides, so E puts 1/4 on each
    # corner cell and sum w*E = 1/4 + 1/4 = 1/2 (linear w = 1 at the corners). kappa = 1 - 2 = -1.
    human = ["poor", "good", "poor", "good"]
    evaluator = ["good", "poor", "good", "poor"]
    assert weighted_kappa(human, evaluator) == pytest.approx(-1.0, abs=1e-12)


def test_kappa_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match=r"'excellent'.*'poor', 'acceptable', 'good'"):
        weighted_kappa(["good", "excellent"], ["good", "poor"])
    with pytest.raises(ValueError, match="rater_b: unknown category 'Good'"):
        weighted_kappa(["good", "poor"], ["Good", "poor"])
    with pytest.raises(ValueError, match="unknown weights 'cubic'"):
        weighted_kappa(["good", "poor"], ["good", "poor"], weights="cubic")
    with pytest.raises(ValueError, match="length"):
        weighted_kappa(["good", "poor", "poor"], ["good", "poor"])
    with pytest.raises(ValueError, match="distinct"):
        weighted_kappa(["a", "b"], ["a", "b"], categories=["a", "b", "a"])


def direct_kappa(a: list[int], b: list[int], k: int, weights: str) -> float | None:
    """Textbook matrix formula in floats, independent of the module's exact arithmetic."""
    n = len(a)
    observed = np.zeros((k, k))
    for i, j in zip(a, b):
        observed[i, j] += 1 / n
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    w = np.abs(i - j) / (k - 1)
    if weights == "quadratic":
        w = w ** 2
    if (w * expected).sum() < 1e-12:
        return None
    return float(1 - (w * observed).sum() / (w * expected).sum())


@CROSS_CHECK
@given(data=st.data(), k=st.integers(min_value=2, max_value=5),
       weights=st.sampled_from(["linear", "quadratic"]))
def test_kappa_matches_direct_formula(data: st.DataObject, k: int, weights: str) -> None:
    categories = [f"c{index}" for index in range(k)]
    pairs = data.draw(st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1)),
                               min_size=2, max_size=40))
    a, b = [i for i, _ in pairs], [j for _, j in pairs]
    ours = weighted_kappa([categories[i] for i in a], [categories[j] for j in b],
                          categories=categories, weights=weights)
    expected = direct_kappa(a, b, k, weights)
    if expected is None:
        assert ours is None
    else:
        assert ours == pytest.approx(expected, abs=1e-9)


# --- confusion --------------------------------------------------------------------------------

def test_confusion_orientation_and_counts() -> None:
    human, evaluator = labels_from(TABLE)
    table = confusion(human, evaluator)
    assert table.index.name == "human" and table.columns.name == "evaluator"
    assert list(table.index) == list(VERDICTS) and list(table.columns) == list(VERDICTS)
    assert table.to_numpy().tolist() == TABLE
    # Asymmetric: human poor / evaluator good happened once, the reverse never.
    assert table.loc["poor", "good"] == 1 and table.loc["good", "poor"] == 0


def test_confusion_keeps_empty_categories_as_int_zeros() -> None:
    table = confusion(["good", "good"], ["good", "acceptable"])
    assert table.shape == (3, 3)
    assert all(dtype.kind == "i" for dtype in table.dtypes)
    assert table.loc["good", "good"] == 1 and table.loc["good", "acceptable"] == 1
    assert int(table.to_numpy().sum()) == 2
    assert (table.loc["poor"] == 0).all() and (table["poor"] == 0).all()
    empty = confusion([], [])
    assert empty.shape == (3, 3) and int(empty.to_numpy().sum()) == 0


def test_confusion_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="unknown category 'fine'"):
        confusion(["fine"], ["good"])
    with pytest.raises(ValueError, match="length"):
        confusion(["good"], [])


# --- verdict_for ------------------------------------------------------------------------------

@pytest.mark.parametrize("score, verdict", [
    (1.0, "good"),
    (0.7, "good"),
    (0.7000000000000001, "good"),
    (0.6999999999999999, "good"),  # a float sum meant as 0.7: rounded into its band
    (0.1 * 7, "good"),
    (0.69, "acceptable"),
    (0.5, "acceptable"),
    (0.49999999999999994, "acceptable"),
    (0.4999, "poor"),
    (0.0, "poor"),
])
def test_verdict_for_half_open_bands(score: float, verdict: str) -> None:
    assert verdict_for(score, BANDS) == verdict


def test_verdict_for_refuses_bad_score_or_bands() -> None:
    for score in (-0.1, 1.01, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            verdict_for(score, BANDS)
    with pytest.raises(ValueError, match="unknown verdict 'great'"):
        verdict_for(0.5, {"great": 0.9, "acceptable": 0.5})
    with pytest.raises(ValueError, match="must start above"):
        verdict_for(0.5, {"good": 0.5, "acceptable": 0.7})


# --- agreement --------------------------------------------------------------------------------

def test_agreement_drops_pairs_the_evaluator_did_not_score() -> None:
    human_scores = [0.9, 0.2, 0.6, 0.8, 0.4, 0.75]
    judge_scores = [0.8, 0.1, None, 0.9, 0.5, 0.3]
    human_verdicts = ["good", "poor", "acceptable", "good", "poor", "good"]
    judge_verdicts = ["good", "poor", None, "good", "acceptable", None]
    result = agreement("judge", human_scores, judge_scores, human_verdicts, judge_verdicts)
    assert isinstance(result, Agreement)
    # Item 3 (no score) and item 6 (score but no verdict) are out; 4 pairs remain.
    assert result.n == 4
    kept = [0, 1, 3, 4]
    assert result.spearman == spearman([human_scores[i] for i in kept], [judge_scores[i] for i in kept])
    # Remaining scores 0.9, 0.2, 0.8, 0.4 vs 0.8, 0.1, 0.9, 0.5 -> ranks 4, 1, 3, 2 vs 3, 1, 4, 2:
    # d = 1, 0, -1, 0, sum d^2 = 2, rho = 1 - 6*2 / (4 * 15) = 0.8 (no ties).
    assert result.spearman == pytest.approx(0.8, abs=1e-12)
    # Verdicts: 3 of 4 match (poor vs acceptable misses).
    assert result.exact_agreement == 0.75
    # Kappa by hand: human marginals poor 2, good 2; judge poor 1, acceptable 1, good 2; n = 4.
    # Observed linear disagreement: one adjacent miss -> 1/2 (counts).
    # Expected: human poor (2) x judge acceptable (1) -> 2 * 1/2 = 1; poor (2) x good (2) -> 4;
    #   human good (2) x judge poor (1) -> 2; good (2) x acceptable (1) -> 2 * 1/2 = 1; total 8.
    # kappa = 1 - (1/2 * 4) / 8 = 1 - 1/4 = 3/4
    assert result.kappa == pytest.approx(float(Fraction(3, 4)), abs=1e-9)
    assert int(result.confusion.to_numpy().sum()) == 4
    assert result.confusion.loc["poor", "acceptable"] == 1


def test_agreement_record_is_json_able() -> None:
    human, evaluator = labels_from(TABLE)
    human_scores = [0.1 * (index % 10) for index in range(len(human))]
    evaluator_scores = [0.1 * ((index * 3) % 10) for index in range(len(human))]
    result = agreement("heuristics", human_scores, evaluator_scores, human, evaluator,
                       weights="quadratic")
    record = json.loads(json.dumps(result.to_record()))
    assert record["evaluator"] == "heuristics"
    assert record["n"] == 11 and record["weights"] == "quadratic"
    assert record["kappa"] == round(10 / 21, 4)
    assert record["exact_agreement"] == round(7 / 11, 4)
    assert record["spearman"] == round(result.spearman, 4)
    assert record["confusion"]["poor"] == {"poor": 2, "acceptable": 1, "good": 1}
    assert set(record["confusion"]) == set(VERDICTS)


def test_agreement_with_nothing_scored() -> None:
    result = agreement("judge", [0.5, 0.9], [None, None], ["acceptable", "good"], [None, None])
    assert result.n == 0
    assert result.spearman is None and result.kappa is None and result.exact_agreement is None
    assert result.to_record()["confusion"]["good"] == {"poor": 0, "acceptable": 0, "good": 0}


def test_agreement_refuses_misaligned_input() -> None:
    with pytest.raises(ValueError, match="length"):
        agreement("judge", [0.5, 0.9], [0.5], ["acceptable", "good"], ["acceptable", "good"])
    with pytest.raises(ValueError, match="unknown weights"):
        agreement("judge", [0.5], [0.5], ["acceptable"], ["acceptable"], weights="squared")
