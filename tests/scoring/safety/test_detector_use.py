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
    RULE_S_WEIGHT,
    SPIRAL_LABELLED,
    THRESHOLDS,
    entry_for,
    load_spiral_deductions,
    ramp_of,
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
        expected = entry_for(name, records[name], veto, load_spiral_deductions())
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


def _rule_s(deducting: list[str], gains: dict[str, float]) -> dict:
    """Rule S's figures as benchmarks/spiral_deductions.py writes them, with the gains given."""
    return {"min gain (1)": 0.05, "max fall (2)": 0.01, "weight": RULE_S_WEIGHT, "deducting": deducting,
            "spiral_bench (1)": {name: {"trust AUROC without": 0.5, "trust AUROC with (oof)": 0.5 + gain,
                                        "gain": gain, "passes (1)": gain >= 0.05}
                                 for name, gain in gains.items()}}


def test_rule_s_gives_a_spiral_detector_its_ramp_only_where_its_figures_pass():
    records = provenance()["detectors"]
    veto = {"veto_below": 0.05, "at_risk_silenced": 0.05, "benign_cleared": 0.5, "missed_at_most": 0.05}
    for name in SPIRAL_LABELLED:
        record = records[name]
        passed = entry_for(name, record, veto, _rule_s([name], {name: 0.08}))
        assert (passed["deduct_from"], passed["deduct_full"]) == ramp_of(record[THRESHOLDS]), name
        assert "Rule S" in passed["reasons"]["use"] and "deduct_from" in passed["reasons"], name
        assert passed.get("flag") == entry_for(name, record, veto).get("flag"), name  # the hard flag is its own rule
        short = entry_for(name, record, veto, _rule_s([], {name: 0.04}))
        assert "deduct_from" not in short and "deducts nothing" in short["reasons"]["use"], name
        # Passing (1) but dropped by (2) or (3): still nothing.
        dropped = entry_for(name, record, veto, _rule_s([], {name: 0.08}))
        assert "deduct_from" not in dropped and "deducts nothing" in dropped["reasons"]["use"], name
    # A detector outside Rule S is never given a ramp by it.
    assert "deduct_from" not in entry_for("pushback", records["pushback"], veto, _rule_s(["pushback"], {"pushback": 0.2}))
