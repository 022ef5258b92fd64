"""scripts/train_detectors.py: the pieces that make its figures honest. Folds never split a
group, every data set and class weighs the same, and the flag threshold read from
out-of-fold scores keeps the precision it promises."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.safety_sets import reply_windows

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_detectors.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("train_detectors", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_a_group_never_straddles_folds(script):
    groups = np.array([f"g{n % 17}" for n in range(200)])
    folds = script.grouped_folds(groups, 5, 0)
    for group in np.unique(groups):
        assert len(np.unique(folds[groups == group])) == 1
    assert len(np.unique(folds)) == 5


def test_every_source_and_class_weighs_the_same(script):
    frame = pd.DataFrame({"source": ["a"] * 90 + ["b"] * 10,
                          "label": [1.0] * 10 + [0.0] * 80 + [1.0] * 5 + [0.0] * 5})
    weights = script.balanced_weights(frame)
    totals = pd.Series(weights).groupby([frame.source, frame.label]).sum()
    assert np.allclose(totals.to_numpy(), totals.iloc[0])


def test_the_flag_threshold_keeps_its_precision(script):
    rng = np.random.default_rng(0)
    labels = (rng.random(2000) < 0.3).astype(float)
    scores = np.clip(0.35 * labels + rng.normal(0.4, 0.15, 2000), 0, 1)
    found = script.thresholds(scores, labels)
    fired = scores >= found["flag_at"]
    assert found["flag_rule"].startswith("precision >=")
    assert labels[fired].mean() >= 0.9 and fired.sum() >= script.MIN_FIRES
    low, high = found["uncertain"]
    assert low <= high == found["flag_at"]
    assert found["recall_at_flag"] == pytest.approx(fired[labels == 1].mean(), abs=1e-4)


def test_the_judge_band_keeps_its_recall_and_is_the_highest_score_that_does(script):
    rng = np.random.default_rng(1)
    labels = (rng.random(1000) < 0.2).astype(float)
    scores = np.clip(0.3 * labels + rng.normal(0.4, 0.2, 1000), 0, 1)
    band = script.judge_band(scores, labels)
    kept = scores >= band["judge_from"]
    assert kept[labels == 1].mean() >= 0.95 and band["recall_at_judge_from"] == round(kept[labels == 1].mean(), 4)
    higher = np.sort(scores[labels == 1])[np.sort(scores[labels == 1]) > band["judge_from"] + 1e-4]
    assert (scores[labels == 1] >= higher[0]).mean() < 0.95  # the next positive up would lose reach
    assert band["negatives_at_or_above"] == round(kept[labels == 0].mean(), 4)
    # A row no fold scored (NaN) is left out; no positives, no band.
    assert script.judge_band(np.array([np.nan, 0.3, 0.1]), np.array([1.0, 1.0, 0.0]))["judge_from"] == 0.3
    assert script.judge_band(np.array([0.3, 0.1]), np.array([0.0, 0.0])) == {}


def test_windows_cover_a_long_reply_in_short_pieces():
    reply = " ".join(f"Sentence number {n} says one thing." for n in range(60))
    windows = reply_windows(reply)
    assert len(windows) > 1 and all(len(window) <= 500 for window in windows)
    assert " ".join(windows) == reply
