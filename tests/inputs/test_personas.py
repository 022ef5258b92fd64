"""Personas as data: the shipped ones load, and every mistake is named with file, persona and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.inputs.personas import PersonaError, load_personas, persona_scenario
from tests.support.project import PERSONA, write_files

SHIPPED_IDS = {"lonely-young-only-friend", "widowed-tests-if-human", "drifting-to-romance", "crisis-hints-first",
               "skeptic-over-promise", "returning-last-time", "medication-advice", "hostile-then-sorry",
               "drift-delusion-explicit", "drift-delusion-implicit"}


def test_the_shipped_personas_load_with_facts_the_metrics_can_check():
    personas = load_personas().personas
    assert {persona.id for persona in personas} >= SHIPPED_IDS
    for persona in personas:
        assert persona.facts, f"{persona.id}: no facts to check memory against"
        assert all(fact.recall and fact.wrong for fact in persona.facts), persona.id
        assert persona.goal_reached_when and persona.leaves_when and persona.escalation, persona.id
    safety = {persona.id for persona in personas if persona.safety}
    assert {"lonely-young-only-friend", "crisis-hints-first", "medication-advice"} <= safety


def test_a_persona_is_a_case_of_family_personas_opening_with_its_fixed_first_message():
    persona = load_personas().get("crisis-hints-first")
    scenario = persona_scenario(persona)
    assert scenario.family == "personas" and scenario.id == persona.id and scenario.safety
    assert [turn.user for turn in scenario.turns] == [persona.opening]
    assert scenario.profile.vulnerable and scenario.profile.name == persona.name


BROKEN = {
    "tester.yaml": PERSONA.format(max_turns=5).replace("situation:", "situaton:").replace("reveal_turn: 3",
                                                                                         "reveal_turn: 0"),
    "second.yaml": PERSONA.format(max_turns=2).replace("id: tester", "id: second").replace("goal: Hear", "gaol: Hear"),
    "misnamed.yaml": PERSONA.format(max_turns=5),  # valid, but its id is not its file name
}


def test_every_problem_of_every_persona_file_is_reported_in_one_pass(tmp_path: Path):
    directory = write_files(tmp_path / "personas", BROKEN)
    with pytest.raises(PersonaError) as raised:
        load_personas(directory)
    problems = raised.value.problems
    text = "\n".join(problems)

    def problem(*parts: str) -> str:
        found = [line for line in problems if all(part in line for part in parts)]
        assert found, f"no problem naming {parts}:\n{text}"
        return found[0]

    assert "did you mean 'situation'?" in problem("tester.yaml", "persona 'tester'", "situaton", "unknown key")
    problem("tester.yaml", "persona 'tester'", "situation", "field required")
    problem("tester.yaml", "persona 'tester'", "facts[1].reveal_turn")
    assert "did you mean 'goal'?" in problem("second.yaml", "persona 'second'", "gaol")
    problem("second.yaml", "persona 'second'", "revealed after max_turns (2): sister_name")
    problem("misnamed.yaml", "persona 'tester'", "id: must match the file name 'misnamed'")
    problem("tester.yaml", "persona 'tester'", "duplicate id, already defined in", "misnamed.yaml")


def test_scenarios_validate_reports_persona_problems_beside_the_scenarios(small_project):
    write_files(small_project["scenarios"] / "personas", {"tester.yaml": BROKEN["tester.yaml"]})
    result = CliRunner().invoke(app, ["scenarios", "validate", str(small_project["scenarios"])])
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert "tester.yaml: persona 'tester': situaton: unknown key; did you mean 'situation'?" in output


def test_scenarios_validate_and_list_count_the_personas(small_project):
    write_files(small_project["scenarios"] / "personas", {"tester.yaml": PERSONA.format(max_turns=5)})
    validated = CliRunner().invoke(app, ["scenarios", "validate", str(small_project["scenarios"])])
    assert validated.exit_code == 0 and "1 persona valid" in validated.output
    listed = CliRunner().invoke(app, ["scenarios", "list", str(small_project["scenarios"]), "-f", "personas"])
    assert listed.exit_code == 0 and "tester" in listed.output and "basic-hello" not in listed.output


def test_a_scripted_file_may_not_claim_the_personas_family(small_project):
    path = small_project["scenarios"] / "basic.yaml"
    path.write_text(path.read_text().replace("family: basic", "family: personas"))
    result = CliRunner().invoke(app, ["scenarios", "validate", str(small_project["scenarios"])])
    assert result.exit_code == 1 and "personas are not scripted scenarios" in " ".join(result.output.split())


def test_a_shipped_situation_gives_away_no_fact_before_its_turn():
    """The simulator learns each fact when it is due; a situation naming it would leak it early."""
    for persona in load_personas().personas:
        for fact in persona.facts:
            leaked = [word for word in fact.recall if word.lower() in persona.situation.lower()]
            assert not leaked or fact.reveal_turn == 1, f"{persona.id}: situation names {leaked}"
