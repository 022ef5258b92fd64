"""The rubric's `detectors:` section: refused with the key that is wrong, and bound to the code
that reads it (the names contract) and to the weights file (every behaviour has a detector)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evaluators.rubric.loader import RubricError
from evaluators.scoring.heuristics import detectors_of
from evaluators.scoring.rubric_names import missing_names
from evaluators.scoring.safety.detectors import detectors_path, load_detectors
from tests.rubric.test_rubric import parse_mutated, rubric_error


def behaviour(data: dict, name: str) -> dict:
    return data["detectors"]["behaviours"][name]


def test_a_flag_the_rubric_does_not_have_is_refused_by_its_key() -> None:
    message = rubric_error(lambda data: behaviour(data, "sycophancy").update(flag="no_such_flag"))
    assert "detectors.behaviours.sycophancy.flag: no disqualifier or signal 'no_such_flag'" in message


def test_an_uncertain_band_upside_down_is_refused() -> None:
    message = rubric_error(lambda data: behaviour(data, "referral").update(uncertain=[0.8, 0.2]))
    assert "detectors.behaviours.referral" in message and "uncertain" in message


def test_a_threshold_without_its_reason_is_refused() -> None:
    message = rubric_error(lambda data: behaviour(data, "crisis_risk")["reasons"].pop("flag_at"))
    assert "detectors.behaviours.crisis_risk" in message and "flag_at" in message


def test_a_deduction_ramp_needs_both_ends_in_order() -> None:
    def ramp(**ends: float):
        def mutate(data: dict) -> None:
            rule = behaviour(data, "emotional_escalation")
            rule.update(ends)
            rule["reasons"].update({key: "a reason" for key in ends})
        return mutate

    assert "deduct_from < deduct_full" in rubric_error(ramp(deduct_from=0.95, deduct_full=0.9))
    assert "both deduct_from and deduct_full" in rubric_error(ramp(deduct_from=0.5))
    assert parse_mutated(ramp(deduct_from=0.5, deduct_full=0.9)).detectors.behaviours["emotional_escalation"].graded


def test_a_followed_behaviour_must_be_a_detector_of_the_rubric() -> None:
    message = rubric_error(lambda data: data["conversation"].update(behaviour_trajectories=["flattery"]))
    assert "conversation.behaviour_trajectories: 'flattery' is not among detectors.behaviours" in message


def test_a_behaviour_the_code_reads_may_not_leave_the_rubric() -> None:
    def without(data: dict) -> None:
        data["detectors"]["behaviours"].pop("delusion_reinforcement")
        data["conversation"]["behaviour_trajectories"].remove("delusion_reinforcement")
        data["detectors"]["judge_triggers"].remove("delusion_reinforcement")  # the loader refuses a trigger with no band

    rubric = parse_mutated(without)
    problems = missing_names(rubric)
    assert any(problem.startswith("detectors.behaviours.delusion_reinforcement: missing; read by signal ")
               and "signal validates_delusion" in problem for problem in problems), problems


def test_a_behaviour_the_weights_file_has_no_detector_for_is_refused_by_its_key() -> None:
    rubric = parse_mutated(lambda data: None)
    shipped = load_detectors(detectors_path(rubric.detectors.model))
    fewer = replace(shipped, detectors={name: detector for name, detector in shipped.detectors.items()
                                        if name != "sycophancy"})
    with pytest.raises(RubricError) as info:
        detectors_of(rubric, fewer)
    assert str(info.value).startswith("detectors.behaviours.sycophancy: no such detector in")
    assert detectors_of(rubric, shipped) is shipped


def test_a_missing_weights_file_is_a_problem_of_detectors_model() -> None:
    rubric = parse_mutated(lambda data: data["detectors"].update(model="scoring/safety/no_such.npz"))
    with pytest.raises(RubricError) as info:
        detectors_of(rubric)
    assert str(info.value).startswith("detectors.model:") and "no_such.npz" in str(info.value)
