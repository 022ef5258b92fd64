"""The rule that decides whether the fine-tuned reply model ships for a detector
(scripts/finetune_rule.py): its AUROC and each of its four checks on small hand-made arrays whose
answers are known. Pure numpy: runs without the train extra."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rule():
    spec = importlib.util.spec_from_file_location("finetune_rule", ROOT / "scripts" / "finetune_rule.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


LABELS = np.array([0, 0, 1, 1, 0, 1], float)
SOURCES = np.array(["a", "a", "a", "a", "b", "b"])
PERFECT = np.array([0.1, 0.2, 0.8, 0.9, 0.3, 0.7])
# Set a: one positive (0.15) above one negative of two, the other above both: 3 of 4 pairs
# right, AUROC 0.75. Set b: right, AUROC 1.0. Mean 0.875.
HALF = np.array([0.1, 0.2, 0.15, 0.9, 0.3, 0.7])
SPIRAL_LABELS = np.array([0, 1, 0, 1], float)


def block(rule, labels, sources, tuned, int8, linear):
    return rule.Block(labels, sources, np.asarray(tuned, float), np.asarray(int8, float), np.asarray(linear, float))


def test_auroc_counts_pairs_and_ties(rule):
    assert rule.auroc(np.array([0.1, 0.9, 0.5, 0.5]), np.array([0, 1, 0, 1])) == pytest.approx(0.875)
    assert rule.auroc(np.array([0.2, 0.8, 0.4]), np.array([1, 0, 1])) == 0.0
    assert np.isnan(rule.auroc(np.array([0.2, 0.8]), np.array([1, 1])))


def test_a_large_gain_everywhere_ships(rule):
    lodo = block(rule, LABELS, SOURCES, PERFECT, PERFECT, HALF)
    seed = block(rule, SPIRAL_LABELS, np.array(["s"] * 4), [0.1, 0.9, 0.2, 0.8], [0.1, 0.9, 0.2, 0.8],
                 [0.1, 0.9, 0.2, 0.8])
    figures = rule.figures(lodo, seed)
    assert figures["mean, fine-tuned"] == 1.0 and figures["mean, linear"] == 0.875
    assert figures["per data set (leave one data set out)"]["a"]["linear"] == 0.75
    decision = rule.decide(figures)
    assert decision["(a) mean LODO gain"] == 0.125 and decision["verdict"] == "ship"


def test_each_check_alone_keeps_the_linear_head(rule):
    spiral = np.array(["s"] * 4)
    good_seed = [0.1, 0.9, 0.2, 0.8]
    # (b): sets a and b gain (0.25, 1.0), set c loses 0.3333 (one of its three pairs turns wrong):
    # mean gain 0.3056 passes (a), the set's loss fails (b).
    labels = np.concatenate([LABELS, [0, 0, 0, 1]])
    sources = np.concatenate([SOURCES, ["c"] * 4])
    tuned = np.concatenate([PERFECT, [0.1, 0.2, 0.5, 0.4]])
    linear = np.concatenate([HALF[:4], [0.7, 0.3], [0.1, 0.2, 0.3, 0.4]])
    lodo = block(rule, labels, sources, tuned, tuned, linear)
    figures = rule.figures(lodo, block(rule, SPIRAL_LABELS, spiral, good_seed, good_seed, good_seed))
    assert figures["per data set (leave one data set out)"]["c"]["fine-tuned"] == pytest.approx(0.6667)
    decision = rule.decide(figures)
    assert decision["(a) mean LODO gain"] == pytest.approx(0.3056, abs=1e-4) and decision["(b) worst data set"] == -0.3333
    assert not decision["(b) passes"] and decision["verdict"] == "keep linear"
    # (c): LODO wins, but on the seed-held-out Spiral rows the linear head is better.
    lodo = block(rule, LABELS, SOURCES, PERFECT, PERFECT, HALF)
    seed = block(rule, SPIRAL_LABELS, spiral, [0.9, 0.1, 0.2, 0.8], [0.9, 0.1, 0.2, 0.8], good_seed)
    decision = rule.decide(rule.figures(lodo, seed))
    assert decision["(a) passes"] and decision["(b) passes"]
    assert decision["(c) Spiral-Bench seed-held-out change"] == -0.75 and decision["verdict"] == "keep linear"
    # (d): the int8 export ranks set a worse than the float model does.
    seed = block(rule, SPIRAL_LABELS, spiral, good_seed, good_seed, good_seed)
    lodo = block(rule, LABELS, SOURCES, PERFECT, HALF, HALF)
    decision = rule.decide(rule.figures(lodo, seed))
    assert decision["(c) passes"] and decision["(d) largest int8 vs float gap"] == 0.125
    assert decision["verdict"] == "keep linear"


def test_the_margins_are_the_stated_ones(rule):
    assert (rule.WIN, rule.SET_LOSS, rule.SPIRAL_LOSS, rule.INT8_GAP) == (0.03, 0.02, 0.02, 0.01)
    # A gain of exactly WIN ships; a loss of exactly SET_LOSS on a set is allowed.
    figures = {"per data set (leave one data set out)": {"a": {"fine-tuned": 0.80, "linear": 0.75},
                                                          "b": {"fine-tuned": 0.78, "linear": 0.80}},
               "mean, fine-tuned": 0.79, "mean, linear": 0.775, "mean, int8": 0.785}
    assert rule.decide(figures)["verdict"] == "keep linear"  # gain 0.015 < 0.03
    figures["per data set (leave one data set out)"]["a"]["fine-tuned"] = 0.86
    figures["mean, fine-tuned"], figures["mean, int8"] = 0.82, 0.81
    decision = rule.decide(figures)
    assert decision["(a) mean LODO gain"] == pytest.approx(0.045) and decision["(b) worst data set"] == -0.02
    assert decision["verdict"] == "ship"
