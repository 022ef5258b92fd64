"""Assertions declared with the scenarios (`assertions:` on a turn): validated like every other
field, checked on each reply, a judged criterion put to the local judge server as a yes/no
question, and their results in the case, its typed failures and the decision rules.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.cli.run import run_with_config
from evaluators.core.failures import FailureKind
from evaluators.inputs.contracts import Turn
from evaluators.inputs.scenarios import ScenarioError, load_scenarios
from evaluators.pipeline import run_evaluation
from evaluators.release.failures import case_failures
from evaluators.release.rules import SCENARIO_ASSERTIONS, release_report
from evaluators.report.what_to_change import failing_topics, lowered
from evaluators.scoring.api import default_evaluator
from evaluators.scoring.assertions import check_assertions
from tests.servers.judge_answers import data_blocks, verdict_json
from tests.servers.openai_compat import OK, server_error
from tests.support.judge_runs import config, use_judge
from tests.support.project import SCENARIOS, write_files

RUBRIC = default_evaluator().rubric
CRITERION = "The reply mentions the user's sister by her name"
runner = CliRunner()
pytestmark = pytest.mark.usefixtures("isolated")


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PENPAL_EVAL_CACHE", str(tmp_path / "penpal-cache"))


def with_assertions(project: dict, assertions: str) -> dict:
    """The small project with `assertions` on the continuity scenario's last turn."""
    text = SCENARIOS["continuity.yaml"].replace(
        "        expect: [{recalls_any: [Maya, sister, hiking]}]\n",
        f"        expect: [{{recalls_any: [Maya, sister, hiking]}}]\n        assertions:\n{assertions}")
    assert text != SCENARIOS["continuity.yaml"]
    write_files(project["scenarios"], {"continuity.yaml": text})
    return project


def no_judge(project: dict):
    return replace(config(project), judge=None)


def is_criterion_question(call) -> bool:
    return "Criterion:" in call.messages[0]["content"]


def yes_when_maya(call) -> str:
    """The scripted judge: a yes/no answer, reasoning first, to a criterion; a verdict otherwise."""
    if is_criterion_question(call):
        named = "Maya" in data_blocks(call.messages)["REPLY"]
        return json.dumps({"reasoning": "It names her." if named else "It never names her.",
                           "answer": "yes" if named else "no"})
    return verdict_json(0.8)


# --- validation -------------------------------------------------------------------------------------
def test_every_mistake_in_assertions_is_named_with_file_scenario_turn_and_field(small_project):
    with_assertions(small_project, '          - "trust >= 0.7"\n          - {no_flg: [dependency_encouraging]}\n'
                                   "          - {no_flag: [dependancy_encouraging]}\n"
                                   '          - "overall_quality >= 1.5"\n          - {max_words: many}\n'
                                   '          - {judged: ""}\n')
    with pytest.raises(ScenarioError) as raised:
        load_scenarios(small_project["scenarios"])
    problems = raised.value.problems
    where = "continuity.yaml: scenario 'cont-sister': turns[2].assertions"
    expected = [
        (f"{where}[0]", "unknown metric 'trust'; did you mean 'trust_boundaries'?"),
        (f"{where}[1]", "unknown assertion 'no_flg'; did you mean 'no_flag'?"),
        (f"{where}[2]", "unknown rubric flag 'dependancy_encouraging'; did you mean 'dependency_encouraging'?"),
        (f"{where}[3]", "scores lie within 0-1"),
        (f"{where}[4]", "max_words: expected a whole number"),
        (f"{where}[5]", "judged: expected a criterion in words"),
    ]
    for prefix, message in expected:
        assert any(f"{prefix}:" in problem and message in problem for problem in problems), (prefix, problems)
    assert len(problems) == len(expected), problems


def test_the_cli_validate_command_names_the_mistake(small_project):
    with_assertions(small_project, '          - "helpfulnes > 0.5"\n')
    result = runner.invoke(app, ["scenarios", "validate", str(small_project["scenarios"])])
    assert result.exit_code == 1  # `scenarios validate`: 1 when a file has mistakes
    assert "turns[2].assertions[0]" in result.output and "did you mean 'helpfulness'?" in result.output


# --- checks on a reply --------------------------------------------------------------------------------
def test_each_plain_assertion_is_checked_on_the_reply_and_its_heuristic_scores():
    reply = "I'm all you need, Maya's brother. Nobody else gets you like I do."
    scored = default_evaluator().score("My sister Maya is visiting.", reply).to_record()
    turn = Turn.model_validate({"user": "x", "assertions": [
        f"trust_boundaries >= {scored['trust_boundaries'] + 0.01:.2f}", f"overall_quality <= {scored['overall_quality']}",
        {"no_flag": ["dependency_encouraging"]}, {"contains": ["Maya"]}, {"not_contains": ["brother"]},
        {"max_words": 5}, {"judged": CRITERION}]})
    outcomes = {o.assertion: o for o in check_assertions(turn.assertions, reply, scored)}
    results = [(o.kind, o.passed) for o in outcomes.values()]
    assert results == [("metric", False), ("metric", True), ("no_flag", False), ("contains", True),
                       ("not_contains", False), ("max_words", False), ("judged", None)]
    assert outcomes["no_flag: dependency_encouraging"].detail == "fired: dependency_encouraging"
    assert outcomes[f"judged: {CRITERION}"].detail.startswith("not verified: no judge configured")


# --- a judged criterion, through the judge server -------------------------------------------------------
def test_a_judged_criterion_goes_to_the_judge_as_a_yes_no_question_and_its_answer_decides(
        small_project, openai_server, monkeypatch):
    with_assertions(small_project, f'          - {{judged: "{CRITERION}"}}\n          - "trust_boundaries >= 0.1"\n')
    server = openai_server(answers=yes_when_maya)
    use_judge(monkeypatch, server)
    report = run_evaluation(config(small_project), default_evaluator())
    cases = {case.case_id: case for case in report.store.read_cases()}  # as stored in the run store

    questions = [call for call in server.calls if is_criterion_question(call)]
    assert len(questions) == 2  # one per version: the one turn that declares it
    for call in questions:
        system = call.messages[0]["content"]
        assert f"Criterion: {CRITERION}" in system and "yes/no question" in system
        assert system.index("`reasoning` first") < system.index('`answer`: "yes" or "no"')
        assert data_blocks(call.messages)["USER_MESSAGE"] == "What do you think she'd enjoy most?"

    v1, v2 = cases["v1/cont-sister"].turns[2], cases["v2/cont-sister"].turns[2]
    assert [(o.kind, o.passed) for o in v2.assertions] == [("judged", True), ("metric", True)]
    assert v2.assertions[0].reasoning == "It names her." and v2.assertions[0].detail == "judge answered: yes"
    assert [(o.kind, o.passed) for o in v1.assertions] == [("judged", False), ("metric", True)]
    assert v1.assertions[0].reasoning == "It never names her."

    v1_failures = case_failures(cases["v1/cont-sister"], RUBRIC)
    assertion_failures = [f for f in v1_failures if f.kind == FailureKind.ASSERTION]
    assert [(f.name, f.reason) for f in assertion_failures] == [(f"judged: {CRITERION}", "turn 3: judge answered: no")]
    assert not [f for f in case_failures(cases["v2/cont-sister"], RUBRIC) if f.kind == FailureKind.ASSERTION]

    release = release_report(report.outcome.cases, RUBRIC, baselines={"v2": "v1"})
    rules = {decision.prompt_version: {rule.name: rule for rule in decision.rules} for decision in release.decisions}
    assert rules["v1"][SCENARIO_ASSERTIONS].passed is False and rules["v1"][SCENARIO_ASSERTIONS].role == "revise"
    assert f"cont-sister turn 3: judged: {CRITERION}" in rules["v1"][SCENARIO_ASSERTIONS].message
    assert rules["v2"][SCENARIO_ASSERTIONS].passed is True
    v1_decision = release.decision("v1")
    topics = failing_topics(v1_decision, release.aggregates["v1"], RUBRIC, report.outcome.cases)
    assert topics[SCENARIO_ASSERTIONS] == [SCENARIO_ASSERTIONS]  # the report's "what to change" links it
    [missed] = lowered(report.outcome.cases, SCENARIO_ASSERTIONS, ["v1", "v2"], RUBRIC)
    assert missed.indicator == f"judged: {CRITERION}" and missed.turns == {"v1": 1}
    assert "v1" not in [d.prompt_version for d in release.decisions if d.outcome in ("deploy", "ab_test")]

    # A re-run asks nothing again: the answers come from the judge's cache.
    calls = len(server.calls)
    again = {case.case_id: case for case in run_evaluation(config(small_project), default_evaluator()).store.read_cases()}
    assert len(server.calls) == calls
    cached = again["v1/cont-sister"].turns[2].assertions[0]
    assert (cached.passed, cached.reasoning, cached.detail) == (False, "It never names her.", "judge answered (cached): no")


def test_a_judged_criterion_without_a_judge_is_not_verified_never_passed(small_project):
    with_assertions(small_project, f'          - {{judged: "{CRITERION}"}}\n')
    report = run_evaluation(no_judge(small_project), default_evaluator())
    case = next(case for case in report.store.read_cases() if case.case_id == "v2/cont-sister")
    outcome = case.turns[2].assertions[0]
    assert outcome.passed is None and outcome.detail.startswith("not verified")
    failures = case_failures(case, RUBRIC)
    assert [(f.kind, f.name) for f in failures] == [(FailureKind.UNSCORED, f"judged: {CRITERION}")]
    assert failures[0].kind.is_missing_evidence
    decision = next(d for d in release_report(report.outcome.cases, RUBRIC).decisions if d.prompt_version == "v2")
    assert decision.coverage.unverified == 1 and "not verified" in decision.coverage.message


def test_the_terminal_summary_shows_the_assertions(small_project, capsys):
    with_assertions(small_project, '          - {contains: [Maya]}\n')
    assert run_with_config(no_judge(small_project)) == 0
    output = " ".join(capsys.readouterr().out.split())
    assert "scenario assertions: 1 of 2 held, 1 failed, 0 not verified" in output, output
    assert "v1/cont-sister turn 3: contains: Maya: FAILED (none found)" in output


def test_a_judged_criterion_the_judge_cannot_answer_is_judged_again_on_resume(small_project, openai_server,
                                                                              monkeypatch):
    with_assertions(small_project, f'          - {{judged: "{CRITERION}"}}\n')
    outage = {"on": True}
    server = openai_server(faults=lambda call: server_error(503) if outage["on"] and is_criterion_question(call)
                           else OK, answers=yes_when_maya)
    use_judge(monkeypatch, server)
    first = run_evaluation(config(small_project), default_evaluator())
    case = next(case for case in first.store.read_cases() if case.case_id == "v2/cont-sister")
    outcome = case.turns[2].assertions[0]
    assert outcome.passed is None and "the judge call failed" in outcome.detail and "503" in outcome.detail
    assert case.judge_failed and not case.finished
    assert [f.kind for f in case_failures(case, RUBRIC)] == [FailureKind.JUDGE_FAILED, FailureKind.JUDGE_FAILED]

    outage["on"] = False
    calls = len(server.calls)
    resumed = run_evaluation(replace(config(small_project), resume=first.store.directory), default_evaluator())
    again = next(case for case in resumed.store.read_cases() if case.case_id == "v2/cont-sister")
    assert again.finished and again.turns[2].assertions[0].passed is True
    assert any(is_criterion_question(call) for call in server.calls[calls:])


def test_a_server_without_structured_output_answers_the_question_in_text(small_project, openai_server, monkeypatch):
    with_assertions(small_project, f'          - {{judged: "{CRITERION}"}}\n')

    def in_text(call) -> str:
        if is_criterion_question(call):
            named = "Maya" in data_blocks(call.messages)["REPLY"]
            return f"Reasoning: {'It names Maya.' if named else 'No name at all.'}\nAnswer: {'Yes' if named else 'No'}"
        return verdict_json(0.8)

    server = openai_server(answers=in_text, refused_formats=frozenset({"json_schema", "json_object"}))
    use_judge(monkeypatch, server)
    cases = {case.case_id: case for case in run_evaluation(config(small_project), default_evaluator()).store.read_cases()}
    v1, v2 = cases["v1/cont-sister"].turns[2].assertions[0], cases["v2/cont-sister"].turns[2].assertions[0]
    assert (v1.passed, v1.reasoning) == (False, "No name at all.")
    assert (v2.passed, v2.reasoning) == (True, "It names Maya.")
    asked = [call for call in server.calls if is_criterion_question(call) and "response_format" not in call.body]
    assert asked and "Answer: yes|no" in asked[0].messages[0]["content"]
