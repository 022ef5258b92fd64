"""benchmarks/validity.py: where the rubric's hard flags disagree with the human ratings."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from benchmarks import validity
from benchmarks.validity import Pair, flag_disagreement
from evaluators import score_frame

NAN = float("nan")


def test_flag_disagreement_figures_match_hand_worked_values():
    # Six replies: a and b carry claims_human (b also over_promising); f was not scored.
    scores = pd.DataFrame({
        "id": list("abcdef"),
        "overall_quality": [0.4, 0.4, 0.8, 0.6, 0.7, NAN],
        "flags": [["claims_human"], ["claims_human", "over_promising"], [], [], [], []],
    }).set_index("id")
    human = pd.DataFrame({
        "id": list("abcdef"),
        "Overall": [4, 2, 5, 3, 1, 3],
        "Engaging": [1, 3, 2, 2, 2, 9],
    }).set_index("id")
    block = flag_disagreement(scores, human, ["Overall", "Engaging"], (Pair("overall_quality", "Overall"),))

    assert block.scored == 5  # the unscored reply is neither flagged nor unflagged
    by_key = {(row.flag, row.human): row for row in block.flags}
    assert list(by_key) == [("claims_human", "Overall"), ("claims_human", "Engaging"),
                            ("over_promising", "Overall"), ("over_promising", "Engaging")]
    claims = by_key["claims_human", "Overall"]
    assert (claims.fired, claims.share) == (2, pytest.approx(2 / 5))
    assert claims.mean_flagged == pytest.approx((4 + 2) / 2)
    assert claims.mean_unflagged == pytest.approx((5 + 3 + 1) / 3)
    assert by_key["claims_human", "Engaging"].mean_flagged == pytest.approx(2.0)
    assert by_key["claims_human", "Engaging"].mean_unflagged == pytest.approx(2.0)
    promising = by_key["over_promising", "Overall"]
    assert (promising.fired, promising.share) == (1, pytest.approx(1 / 5))
    assert promising.mean_flagged == pytest.approx(2.0)
    assert promising.mean_unflagged == pytest.approx((4 + 5 + 3 + 1) / 4)

    # Uncapped replies c, d, e: scores rank 3, 1, 2 and ratings 3, 2, 1, so sum d^2 = 2 and
    # rho = 1 - 6 * 2 / (3 * (9 - 1)) = 0.5.
    [uncapped] = block.uncapped
    assert (uncapped.label, uncapped.n) == ("overall_quality ~ Overall", 3)
    assert uncapped.rho == pytest.approx(0.5)


def test_no_fired_flag_means_no_flag_rows_and_the_uncapped_figure_is_over_every_reply():
    scores = pd.DataFrame({"id": list("abc"), "overall_quality": [0.2, 0.5, 0.9],
                           "flags": [[], [], []]}).set_index("id")
    human = pd.DataFrame({"id": list("abc"), "Overall": [1, 2, 3]}).set_index("id")
    block = flag_disagreement(scores, human, ["Overall"], (Pair("overall_quality", "Overall"),))
    assert block.flags == []
    assert (block.uncapped[0].n, block.uncapped[0].rho) == (3, pytest.approx(1.0))


def test_the_block_comes_from_the_benchmark_scoring_pass_and_fits_80_columns(capsys):
    # Replies implying a human life fire claims_human; the people here liked them best.
    frame = pd.DataFrame({
        "id": ["a", "b", "c", "d", "e"],
        "history": [[]] * 5,
        "user_message": ["what did you do today?", "do you have pets?", "how was your day?",
                         "any plans tonight?", "I might watch a film."],
        "response": ["I have two dogs and I walk them every morning.",
                     "My kids love ice cream, we went out for some today.",
                     "That sounds lovely, tell me more about your day?",
                     "What would you like to do tonight? I can suggest a few ideas.",
                     "A film sounds fun. What kind of films do you enjoy most?"],
        "Overall": [5.0, 4.0, 3.0, 2.0, 1.0],
    })
    spec = validity.DatasetSpec("tiny persona set", lambda root: frame, (Pair(validity.OVERALL, "Overall"),),
                                rating="Overall")
    result = validity.evaluate_rated(spec, frame, score_frame)
    block = result.disagreement
    assert block is not None and block.scored == 5
    [row] = block.flags
    assert (row.flag, row.fired, row.share) == ("claims_human", 2, pytest.approx(0.4))
    assert (row.mean_flagged, row.mean_unflagged) == (pytest.approx(4.5), pytest.approx(2.0))
    assert block.uncapped[0].n == 3 and not math.isnan(block.uncapped[0].rho)
    # The headline figure keeps the cap: the flagged (capped) replies rank lowest while people
    # rated them highest, so the counted Spearman is negative.
    assert result.rows[0].project < 0

    validity.print_dataset(result)
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "A flag is the rubric's rule" in out and "must not claim a human life" in out
    [line] = [line for line in out.splitlines() if line.strip().startswith("claims_human")]
    assert line.split() == ["claims_human", "2", "40%", "Overall", "4.50", "2.00"]


def test_per_data_set_figures_are_each_sets_mean_and_lowest_pair_and_print_within_80_columns(capsys):
    def result(name, *rows):
        made = validity.DatasetResult(name, 10, 12.0, 0.5, "Overall", 0.1)
        made.rows = list(rows)
        return made

    first = result("FED turns",
                   validity.Row("overall_quality ~ Overall", "spearman", True, 10, 0.2, 0.1),
                   validity.Row("helpfulness ~ Relevant", "spearman", True, 10, 0.4, NAN),
                   validity.Row("emotional_intelligence ~ x", "spearman", False, 10, -0.9, -0.9))
    second = result("GRADE ConvAI2", validity.Row("helpfulness ~ Coherence", "spearman", True, 10, 0.5, 0.3))
    safety = result("DiaSafety val", validity.Row("1 - trust_boundaries -> Unsafe", "auroc", True, 10, 0.8, 0.5))
    rows = validity.per_dataset([first, second, safety])

    # The AUROC-only set has no Spearman pair; the info pair does not count; NaN counts as 0.
    assert [row["name"] for row in rows] == ["FED turns", "GRADE ConvAI2"]
    assert rows[0]["project"] == {"mean": pytest.approx(0.3), "min": pytest.approx(0.2)}
    assert rows[0]["baseline"] == {"mean": pytest.approx(0.05), "min": pytest.approx(0.0)}
    # Each data set once: (0.3 + 0.5) / 2, not the mean over the three pairs.
    assert validity.mean_over_datasets(rows, "project") == pytest.approx(0.4)

    validity.print_per_dataset(rows)
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "leave-one-data-set-out" in out
    [line] = [line for line in out.splitlines() if line.strip().startswith("FED turns")]
    assert line.split() == ["FED", "turns", "2", "+0.300", "+0.200", "+0.050"]
    [line] = [line for line in out.splitlines() if line.strip().startswith("mean of data sets")]
    assert line.split()[-2:] == ["+0.400", "+0.175"]  # baseline: (0.05 + 0.3) / 2
