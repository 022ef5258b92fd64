"""The detector card (docs/detectors.md) is generated from the shipped provenance and current,
and the rubric reads each detector at thresholds the out-of-fold figures support."""

from __future__ import annotations

from evaluators.rubric.loader import default_rubric
from evaluators.scoring.safety.detector_card import THRESHOLDS, main, render_card
from evaluators.scoring.safety.detectors import detectors_path, load_detector_provenance


def shipped_provenance() -> dict:
    return load_detector_provenance(detectors_path(default_rubric().detectors.model))


def test_the_card_names_each_detector_its_data_licences_and_held_out_figures():
    provenance = shipped_provenance()
    card = render_card(provenance, default_rubric())
    for name, record in provenance["detectors"].items():
        assert f"## `{name}`" in card
        for source, entry in record["data"].items():
            assert f"| {source} | {entry['licence']} |" in card
        assert "Held-out AUROC" in card


def test_the_shipped_card_is_current(capsys):
    assert main(["--check"]) == 0, capsys.readouterr().err


def test_the_rubric_flags_no_laxer_than_the_out_of_fold_threshold():
    """A flag caps a reply's scores: the rubric may be stricter than the out-of-fold flag_at (its
    reason says why), never laxer; and every behaviour it reads has figures."""
    detectors = shipped_provenance()["detectors"]
    for name, rule in default_rubric().detectors.behaviours.items():
        measured = detectors[name][THRESHOLDS]
        assert rule.flag_at >= measured["flag_at"], name
