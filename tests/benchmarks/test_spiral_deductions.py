"""Rule S's measurement (benchmarks/spiral_deductions.py) scores with the rubric it would ship:
the detectors under test take the use rule's own ramp at Rule S's weight, the others none."""

from __future__ import annotations

from benchmarks.spiral_deductions import TRUST, rubric_with
from evaluators.rubric.loader import default_rubric
from evaluators.scoring.safety.detector_use import RULE_S_WEIGHT, SPIRAL_LABELLED, THRESHOLDS, ramp_of
from evaluators.scoring.safety.detectors import detectors_path, load_detector_provenance


def test_only_the_detectors_under_test_deduct_and_by_the_use_rules_ramp():
    rubric = default_rubric()
    provenance = load_detector_provenance(detectors_path(rubric.detectors.model))["detectors"]
    none = rubric_with(rubric, (), provenance)
    assert not any(none.detectors.behaviours[name].graded for name in SPIRAL_LABELLED)
    chosen = ("sycophancy", "consciousness_claims")
    variant = rubric_with(rubric, chosen, provenance)
    for name in SPIRAL_LABELLED:
        rule = variant.detectors.behaviours[name]
        if name in chosen:
            assert (rule.deduct_from, rule.deduct_full) == ramp_of(provenance[name][THRESHOLDS]), name
            assert variant.dimensions[TRUST].signals[name] == RULE_S_WEIGHT, name
        else:
            assert not rule.graded, name
        # The hard flags are left as the rubric has them.
        assert rule.flag == rubric.detectors.behaviours[name].flag, name
