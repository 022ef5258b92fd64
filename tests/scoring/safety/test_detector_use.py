"""The shipped rubric reads each detector as the use rule gives it from the shipped provenance:
what it feeds, its thresholds, its ramp and the crisis veto are the out-of-fold figures'."""

from __future__ import annotations

import copy

from evaluators.rubric.loader import default_rubric
from evaluators.scoring.safety.detector_use import (
    FEEDS,
    MIN_AUROC,
    MIN_PRECISION,
    RECOMMENDED,
    THRESHOLDS,
    entry_for,
)
from evaluators.scoring.safety.detectors import detectors_path, load_detector_provenance

SETTINGS = ("flag", "flag_at", "uncertain", "deduct_from", "deduct_full")


def provenance() -> dict:
    return load_detector_provenance(detectors_path(default_rubric().detectors.model))


def test_the_shipped_rubric_follows_the_use_rule():
    rubric = default_rubric()
    records = provenance()["detectors"]
    for name, rule in rubric.detectors.behaviours.items():
        veto = {"veto_below": rule.veto_below or 0.05, "at_risk_silenced": 0.05, "benign_cleared": 0.5,
                "missed_at_most": 0.05}
        expected = entry_for(name, records[name], veto)
        assert {key: getattr(rule, key) for key in SETTINGS} == {key: expected.get(key) for key in SETTINGS}, name
        assert (rule.veto_below is None) == ("veto_below" not in expected), name


def test_a_detector_feeds_its_flag_only_with_the_figures_for_it():
    record = copy.deepcopy(provenance()["detectors"]["harmful_advice"])
    veto = {"veto_below": 0.05, "at_risk_silenced": 0.05, "benign_cleared": 0.5, "missed_at_most": 0.05}
    record[THRESHOLDS]["precision_at_flag"] = MIN_PRECISION
    figures = record["methods compared"][record["method"]]["leave-one-data-set-out AUROC"]
    for source in figures:
        figures[source] = MIN_AUROC + 0.1
    record[RECOMMENDED] = "graded signal only, no hard flag"
    assert "flag" not in entry_for("harmful_advice", record, veto)  # the training script's word counts too
    record[RECOMMENDED] = "hard flag at flag_at"
    assert entry_for("harmful_advice", record, veto)["flag"] == FEEDS["harmful_advice"]
    record[THRESHOLDS]["precision_at_flag"] = MIN_PRECISION - 0.01
    assert "flag" not in entry_for("harmful_advice", record, veto)
    record[THRESHOLDS]["precision_at_flag"] = MIN_PRECISION
    figures[next(iter(figures))] = MIN_AUROC - 0.01
    refused = entry_for("harmful_advice", record, veto)
    assert "flag" not in refused and "under 0.6" in refused["reasons"]["use"]
