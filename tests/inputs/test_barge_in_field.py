"""`interrupt_after_words` on a scripted turn is validated like every scenario field: each
mistake names the file, the scenario, the turn and the field, in one pass."""

from __future__ import annotations

from evaluators.inputs.scenarios import parse_scenario_file

TEMPLATE = """\
family: basic
scenarios:
  - id: basic-barge
    title: Barge-in
    turns:
      - user: "Tell me about your day."
        interrupt_after_words: {first}
      - user: "Wait, actually, what about mine?"
{last}"""


def problems(first: str, last: str = "") -> list[str]:
    return parse_scenario_file(TEMPLATE.format(first=first, last=last), "scenarios/basic.yaml")[1]


def test_a_positive_whole_number_is_accepted():
    scenarios, found = parse_scenario_file(TEMPLATE.format(first="5", last=""), "scenarios/basic.yaml")
    assert found == []
    assert scenarios[0].interrupt_after(0) == 5 and scenarios[0].interrupt_after(1) is None


def test_zero_negative_fraction_text_and_true_are_errors_naming_file_scenario_turn_and_field():
    for bad in ("0", "-3", "2.5", "five", "true"):
        (problem,) = problems(bad)
        assert problem.startswith("scenarios/basic.yaml: scenario 'basic-barge': turns[0].interrupt_after_words:"), problem
        assert "whole number of words" in problem


def test_the_last_turn_cannot_be_interrupted():
    (problem,) = problems("5", "        interrupt_after_words: 3\n")
    assert "scenario 'basic-barge'" in problem and "turns[1].interrupt_after_words" in problem
    assert "needs a user turn after it" in problem
