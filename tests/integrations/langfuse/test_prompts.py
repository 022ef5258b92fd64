"""Prompt management: `prompts push` creates or updates Langfuse prompts from prompts/, and
`run --prompt-source langfuse --label staging` evaluates the prompts Langfuse serves."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.ids import observation_id, turn_trace_id
from tests.support.langfuse_runs import run_replay

runner = CliRunner()
NAME = "test-companion"  # the front matter name of the small project's prompts


def versions(server) -> list[dict]:
    return server.prompts[NAME]


def test_prompts_push_creates_each_version_once_with_its_settings_and_moves_labels(small_project, langfuse):
    server = langfuse()
    first = runner.invoke(app, ["prompts", "push", str(small_project["prompts"])])
    assert first.exit_code == 0, first.output
    assert "v1: created as test-companion version 1" in first.output
    assert [version["version"] for version in versions(server)] == [1, 2]
    v1, v2 = versions(server)
    assert "You are a test companion (v2)." in v2["prompt"]
    assert v2["config"] == {"model": "test-model", "temperature": 0.0, "max_tokens": 64, "penpal_version": "v2",
                            "baseline": "v1", "description": "Test prompt v2."}
    assert "v1" in v1["labels"] and "v2" in v2["labels"]

    again = runner.invoke(app, ["prompts", "push", str(small_project["prompts"])])
    assert again.exit_code == 0, again.output
    assert len(versions(server)) == 2 and "unchanged" in again.output

    staged = runner.invoke(app, ["prompts", "push", str(small_project["prompts"]), "-p", "v2", "--label", "staging"])
    assert staged.exit_code == 0, staged.output
    assert len(versions(server)) == 2
    assert "staging" in versions(server)[1]["labels"] and "staging" not in versions(server)[0]["labels"]

    prompt_file = small_project["prompts"] / "v1.md"
    prompt_file.write_text(prompt_file.read_text().replace("one sentence", "two sentences"))
    changed = runner.invoke(app, ["prompts", "push", str(small_project["prompts"]), "-p", "v1"])
    assert changed.exit_code == 0, changed.output
    assert [version["version"] for version in versions(server)] == [1, 2, 3]
    assert "v1" in versions(server)[2]["labels"] and "v1" not in versions(server)[0]["labels"]
    assert server.schema_errors == []


def test_run_evaluates_the_prompts_langfuse_serves_under_a_label_and_links_them(small_project, langfuse):
    server = langfuse()
    pushed = runner.invoke(app, ["prompts", "push", str(small_project["prompts"]), "-p", "v2", "--label", "staging"])
    assert pushed.exit_code == 0, pushed.output
    langfuse_version = versions(server)[0]["version"]

    code, store = run_replay(small_project, prompt_source="langfuse", prompt_labels=["staging"])
    assert code == 0
    cases = store.read_cases()
    assert {case.prompt_version for case in cases} == {"v2"}
    assert {case.prompt_source for case in cases} == {"langfuse"}
    inputs = json.loads((store.directory / "inputs.json").read_text())
    assert inputs["prompts"][0]["langfuse_name"] == NAME
    assert inputs["prompts"][0]["langfuse_version"] == langfuse_version
    assert store.manifest["config"]["prompt_source"] == "langfuse"
    for case in cases:
        for turn in case.turns:
            trace_id = turn_trace_id(store.manifest["run_id"], "v2", case.scenario_id, turn.index)
            generation = server.observations[observation_id(trace_id, "reply")]
            assert (generation["promptName"], generation["promptVersion"]) == (NAME, langfuse_version)
            assert generation["input"][0]["content"].startswith("You are a test companion (v2).")


def test_a_missing_label_or_a_prompt_without_settings_is_a_clear_error(small_project, langfuse, capsys):
    server = langfuse()
    code, _ = run_replay(small_project, prompt_source="langfuse", prompt_labels=["nope"], run_id="missing")
    assert code == 2
    assert "no version has the label 'nope'" in capsys.readouterr().err

    server.add_prompt(name=NAME, prompt="Be kind.", labels=["bare"])
    code, _ = run_replay(small_project, prompt_source="langfuse", prompt_labels=["bare"], run_id="bare")
    assert code == 2
    err = capsys.readouterr().err
    assert "config.model: field required" in err and "label bare" in err


def test_langfuse_prompt_source_needs_langfuse_keys(small_project, capsys):
    code, _ = run_replay(small_project, prompt_source="langfuse", prompt_labels=["staging"], run_id="no-keys")
    assert code == 2
    assert "LANGFUSE_PUBLIC_KEY" in capsys.readouterr().err


def test_labels_the_server_would_refuse_are_refused_before_anything_is_sent(small_project, langfuse):
    server = langfuse()
    for label in ("Staging", "x" * 37, "blue green"):
        result = runner.invoke(app, ["prompts", "push", str(small_project["prompts"]), "--label", label])
        assert result.exit_code == 2, result.output
        assert repr(label) in result.output or label in result.output
    assert not server.requests_to("/api/public/v2/prompts", "POST")


def test_version_labels_fit_the_servers_pattern_and_length():
    from evaluators.integrations.langfuse.prompts import label_problem, version_label

    long_one, long_two = "v" + "x" * 60 + "-a", "v" + "x" * 60 + "-b"
    for version in ("v2-warm-boundaries", "V3 Verbose/Formatted", long_one, long_two):
        label = version_label(version)
        assert label_problem(label) is None, (version, label)
    assert version_label(long_one) != version_label(long_two)
    assert version_label("v2-warm-boundaries") == "v2-warm-boundaries"
    assert label_problem("Production") and label_problem("a" * 37) and label_problem("")


def test_a_run_refuses_a_label_langfuse_would_refuse_before_fetching(small_project, langfuse, capsys):
    server = langfuse()
    code, _ = run_replay(small_project, prompt_source="langfuse", prompt_labels=["Staging"], run_id="upper")
    assert code == 2
    assert "'Staging' is not a Langfuse prompt label" in " ".join(capsys.readouterr().err.split())
    assert not [request for request in server.requests if "/prompts" in request.path]
