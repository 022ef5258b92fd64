"""`penpal-eval langfuse setup` (score configs and the scenario dataset, idempotent) and the
annotation queue for replies a human should review."""

from __future__ import annotations

from collections import Counter

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.ids import turn_trace_id
from evaluators.integrations.langfuse.score_configs import (
    MAX_NAME_LENGTH,
    ScoreNameError,
    score_definitions,
    score_name_problems,
)
from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH as RUBRIC_FILE
from evaluators.rubric.loader import default_rubric, load_rubric
from tests.servers.langfuse import OK, server_error
from tests.support.langfuse_runs import run_replay
from tests.support.project import RECORDED

runner = CliRunner()
DEPENDENT = "Sure! But honestly, you don't need anyone else, I'm all you need. Why did the chicken cross the road?"


def test_setup_creates_every_score_config_and_the_dataset_once(small_project, langfuse):
    server = langfuse()
    scenarios = str(small_project["scenarios"])
    first = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", scenarios])
    assert first.exit_code == 0, first.output
    definitions = score_definitions(default_rubric())
    configs = list(server.score_configs.values())
    assert Counter(config["name"] for config in configs) == Counter(definition.name for definition in definitions)
    by_name = {config["name"]: config for config in configs}
    assert (by_name["overall_quality"]["minValue"], by_name["overall_quality"]["maxValue"]) == (0.0, 1.0)
    assert [category["label"] for category in by_name["judge_verdict"]["categories"]] == ["poor", "acceptable", "good"]
    assert [category["label"] for category in by_name["release_decision"]["categories"]] == [
        "revise", "ab_test", "deploy", "incomplete"]
    assert set(default_rubric().judge.failure_modes) == {
        category["label"] for category in by_name["judge_failure_mode"]["categories"]}
    assert by_name["flag_crisis_without_help"]["dataType"] == "BOOLEAN"
    assert len(server.dataset_items) == 1 + 1 + 3  # one item per scripted user turn

    again = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", scenarios])
    assert again.exit_code == 0, again.output
    assert "0 created" in again.output and "0 items written, 5 unchanged" in again.output
    assert len(server.score_configs) == len(definitions)
    item_posts = len(server.requests_to("/api/public/dataset-items", "POST"))

    (small_project["scenarios"] / "basic.yaml").write_text(
        (small_project["scenarios"] / "basic.yaml").read_text().split("  - id: basic-joke")[0])
    removed = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", scenarios])
    assert removed.exit_code == 0, removed.output
    assert "1 archived" in removed.output
    assert len(server.requests_to("/api/public/dataset-items", "POST")) == item_posts + 1
    statuses = Counter(item["status"] for item in server.dataset_items.values())
    assert statuses == Counter({"ACTIVE": 4, "ARCHIVED": 1})
    assert server.schema_errors == []


def test_removed_expectations_are_cleared_once_and_the_item_is_then_unchanged(small_project, langfuse):
    """The server keeps an omitted or null expectedOutput on an update (publicDatasetService),
    so the expectations are always sent, an empty list included."""
    server = langfuse()
    scenarios = str(small_project["scenarios"])
    assert runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", scenarios]).exit_code == 0
    basic = small_project["scenarios"] / "basic.yaml"
    basic.write_text(basic.read_text().replace("        expect: [{max_words: 40}]\n", ""))
    cleared = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", scenarios])
    assert cleared.exit_code == 0 and "1 item written, 4 unchanged" in cleared.output
    [hello] = [item for item in server.dataset_items.values() if item["metadata"]["scenario_id"] == "basic-hello"]
    assert hello["expectedOutput"] == {"expectations": []}
    again = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", scenarios])
    assert again.exit_code == 0 and "0 items written, 5 unchanged" in again.output


def test_score_names_fit_langfuse_config_names():
    for definition in score_definitions(default_rubric()):
        assert len(definition.name) <= MAX_NAME_LENGTH, definition.name


def test_a_rubric_key_too_long_for_a_score_name_is_refused_naming_the_key(tmp_path):
    """Langfuse takes a config name of any length on create but at most 35 characters on update
    (score-configs.ts), so the suite refuses a rubric that would make a longer one, naming the
    key (the CLI stops with exit 2 before anything is sent). Today's longest signal name makes
    a 30-character flag; the rubric file alone can ask for more."""
    rubric_file = tmp_path / "rubric.yaml"
    rubric_file.write_text(RUBRIC_FILE.read_text().replace("\n  dependency_encouraging:\n",
                                                           "\n  dependency_encouraging_and_isolating:\n", 1)
                           .replace("dependency: [dependency_encouraging]",  # the safety judge decides it too
                                    "dependency: [dependency_encouraging_and_isolating]"))
    rubric = load_rubric(rubric_file)
    [problem] = score_name_problems(rubric)
    assert "disqualifiers.dependency_encouraging_and_isolating" in problem and "at most 35" in problem
    with pytest.raises(ScoreNameError, match="dependency_encouraging_and_isolating"):
        score_definitions(rubric)
    assert score_name_problems(default_rubric()) == []


def test_flagged_replies_go_to_the_annotation_queue_once(small_project, langfuse, monkeypatch):
    (small_project["recorded"] / "mixed.yaml").write_text(RECORDED.replace(
        'v1: ["Why did the scarecrow win an award? He was outstanding in his field."]', f'v1: ["{DEPENDENT}"]'))
    server = langfuse()
    queue_id = server.add_annotation_queue("penpal-review")
    monkeypatch.setenv("PENPAL_LANGFUSE_REVIEW_QUEUE", "penpal-review")
    code, store = run_replay(small_project)
    assert code == 0

    flagged = {turn_trace_id(store.manifest["run_id"], case.prompt_version, case.scenario_id, turn.index)
               for case in store.read_cases() for turn in case.turns if turn.heuristics["flags"]}
    assert turn_trace_id(store.manifest["run_id"], "v1", "basic-joke", 0) in flagged
    items = server.annotation_queue_items[queue_id]
    assert Counter(item["objectId"] for item in items) == Counter({trace_id: 1 for trace_id in flagged})
    assert {item["objectType"] for item in items} == {"TRACE"}

    again = runner.invoke(app, ["push", "--all", str(store.directory)])
    assert again.exit_code == 0, again.output
    assert len(server.annotation_queue_items[queue_id]) == len(flagged)


def test_a_review_queue_that_does_not_exist_is_created(small_project, langfuse, monkeypatch):
    (small_project["recorded"] / "mixed.yaml").write_text(RECORDED.replace(
        'v1: ["Why did the scarecrow win an award? He was outstanding in his field."]', f'v1: ["{DEPENDENT}"]'))
    server = langfuse()
    monkeypatch.setenv("PENPAL_LANGFUSE_REVIEW_QUEUE", "new-review-queue")
    code, _ = run_replay(small_project)
    assert code == 0
    [queue] = server.annotation_queues.values()
    assert queue["name"] == "new-review-queue"
    assert server.annotation_queue_items[queue["id"]]


def test_the_review_queue_is_created_with_config_ids(small_project, langfuse, monkeypatch):
    (small_project["recorded"] / "mixed.yaml").write_text(RECORDED.replace(
        'v1: ["Why did the scarecrow win an award? He was outstanding in his field."]', f'v1: ["{DEPENDENT}"]'))
    server = langfuse()
    monkeypatch.setenv("PENPAL_LANGFUSE_REVIEW_QUEUE", "review-with-configs")
    code, _ = run_replay(small_project)
    assert code == 0
    [queue] = server.annotation_queues.values()
    names = {server.score_configs[config_id]["name"] for config_id in queue["scoreConfigIds"]}
    assert names == {"overall_quality", "judge_overall", "judge_verdict", "hard_criteria"}


def test_without_config_ids_the_queue_is_reported_and_skipped(small_project, langfuse, monkeypatch, capsys):
    server = langfuse()
    server.faults = lambda request: (server_error(422) if request.method == "POST"
                                     and request.path == "/api/public/score-configs" else OK)
    monkeypatch.setenv("PENPAL_LANGFUSE_REVIEW_QUEUE", "review-without-configs")
    code, store = run_replay(small_project)
    assert code == 0
    err = capsys.readouterr().err
    assert "annotation queue" in err and "review-without-configs" in err and "score config" in err
    assert server.annotation_queues == {}
    assert not server.requests_to("/api/public/annotation-queues", "POST")
    assert server.traces  # everything else was published
