"""The fine-tune measurement (scripts/finetune_detectors.py, docs/detectors-finetune.md): its
figures file names every detector, holds out only data sets that detector learns from, and its
verdict is the stated rule applied to its own figures. Runs without torch (the script imports it
only inside the fitting functions)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "finetune_detectors.py"
FIGURES = ROOT / "evaluators" / "scoring" / "safety" / "finetune_measured.json"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("finetune_detectors", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def figures():
    return json.loads(FIGURES.read_text(encoding="utf-8"))


def test_every_detector_is_measured_on_its_own_data_sets_only(script, figures):
    per_detector = figures["held-out AUROC per detector and split"]
    assert set(per_detector) == set(script.SPECS)
    for name, splits in per_detector.items():
        spec = script.SPECS[name]
        for split, value in splits.items():
            if split.startswith("without "):
                assert split.removeprefix("without ") in spec.sources, (name, split)
            else:
                assert name in script.SPIRAL_ONLY and split == "Spiral-Bench seed folds, pooled"
            assert 0 < value["positives"] < value["rows"]
            assert 0.0 <= value["fine-tuned"] <= 1.0 and 0.0 <= value["linear"] <= 1.0
    for name in script.SPIRAL_ONLY:
        assert "Spiral-Bench seed folds, pooled" in per_detector[name]
    assert set(figures["data"]) <= set(script.LICENCES)


def test_the_verdict_is_the_rule_applied_to_the_figures(script, figures):
    summary = script.held_out_summary(figures["held-out AUROC per detector and split"])
    assert summary == figures["held-out summary"]
    assert script.verdict(summary) == figures["verdict"]


def test_the_rule_refuses_a_majority_of_wins_with_one_clear_loss(script):
    def summary(*differences):
        return {f"d{n}": {"fine-tuned": 0.7 + d, "linear": 0.7, "difference": d} for n, d in enumerate(differences)}

    assert script.verdict(summary(0.05, 0.04, -0.01))["ship"]
    assert not script.verdict(summary(0.05, 0.04, -0.03))["ship"]
    assert not script.verdict(summary(0.05, 0.01, 0.0))["ship"]


def test_length_batches_read_every_row_once_and_repeat_with_the_seed(script):
    texts = ["x" * (n % 37) for n in range(300)]
    batches = script.length_batches(texts, 0)
    assert sorted(int(row) for batch in batches for row in batch) == list(range(300))
    assert max(len(batch) for batch in batches) == script.BATCH
    again = script.length_batches(texts, 0)
    assert all((first == second).all() for first, second in zip(batches, again, strict=True))
