"""Prompt versions: the shipped ones, and errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.inputs.prompts import PromptError, load_prompts, parse_prompt
from tests.support.project import write_files

runner = CliRunner()

GOOD = """\
---
name: penpal-companion
version: v9-test
model: gpt-4o-mini
temperature: 0.7
max_tokens: 150
baseline: null
description: A test prompt.
---
You are Penpal. Keep replies short.
"""


def test_shipped_versions_are_valid_and_differ():
    prompts = load_prompts()
    versions = {prompt.version: prompt for prompt in prompts}
    assert len(prompts) >= 3
    assert {"v1-minimal", "v2-warm-boundaries", "v3-verbose-formatted"} <= set(versions)
    # Baselines form a chain back to a version without one.
    assert versions["v2-warm-boundaries"].baseline == "v1-minimal"
    assert versions["v1-minimal"].baseline is None
    # The verbose drift asks for formatting the voice versions forbid.
    assert "bullet" in versions["v3-verbose-formatted"].text.lower()
    assert "never use lists" in versions["v2-warm-boundaries"].text.lower()
    assert len({prompt.content_hash for prompt in prompts}) == len(prompts)


def test_body_is_the_system_prompt_and_front_matter_the_settings():
    prompt = parse_prompt(GOOD, "prompts/v9.md")
    assert prompt.text == "You are Penpal. Keep replies short."
    assert (prompt.model, prompt.temperature, prompt.max_tokens, prompt.baseline) == ("gpt-4o-mini", 0.7, 150, None)


@pytest.mark.parametrize(("text", "expected"), [
    (GOOD.replace("model: gpt-4o-mini\n", ""), "prompts/v9.md: model: field required"),
    (GOOD.replace("temperature: 0.7", "temperature: hot"), "prompts/v9.md: temperature: Input should be a valid number"),
    (GOOD.replace("temperature: 0.7", "temperature: 3.5"), "prompts/v9.md: temperature: Input should be less than or equal to 2"),
    (GOOD.replace("max_tokens: 150", "max_tokens: [150]"), "prompts/v9.md: max_tokens: Input should be a valid integer"),
    (GOOD.replace("description: A test prompt.", "colour: blue"),
     "prompts/v9.md: colour: unknown key; known: baseline, description, max_tokens, model, name, target, temperature, version"),
    (GOOD.replace("temperature: 0.7", "temprature: 0.7"), "prompts/v9.md: temprature: unknown key; did you mean "
                                                          "'temperature'?"),
    (GOOD.replace("max_tokens: 150", "max_tokens: 150: 200"), "prompts/v9.md: front matter: not valid YAML: line 6"),
    (GOOD.replace("---\nname", "name", 1), "prompts/v9.md: expected YAML front matter"),
    (GOOD.replace("You are Penpal. Keep replies short.\n", ""), "prompts/v9.md: text: String should have at least 1 character"),
])
def test_each_mistake_names_the_file_and_field(text, expected):
    with pytest.raises(PromptError) as caught:
        parse_prompt(text, "prompts/v9.md")
    assert any(problem.startswith(expected) for problem in caught.value.problems), caught.value.problems


def test_a_misspelt_key_is_named_beside_the_field_it_leaves_missing():
    with pytest.raises(PromptError) as caught:
        parse_prompt(GOOD.replace("temperature: 0.7", "temprature: 0.7").replace("model: gpt-4o-mini\n", ""),
                     "prompts/v9.md")
    assert sorted(caught.value.problems) == sorted([
        "prompts/v9.md: model: field required",
        "prompts/v9.md: temperature: field required",
        "prompts/v9.md: temprature: unknown key; did you mean 'temperature'?",
    ])


def write_prompts(tmp_path: Path, files: dict[str, str]) -> Path:
    return write_files(tmp_path / "prompts", files)


def test_duplicate_version_and_unknown_baseline_are_named(tmp_path):
    directory = write_prompts(tmp_path, {
        "a.md": GOOD,
        "b.md": GOOD,
        "c.md": GOOD.replace("v9-test", "v10-test").replace("baseline: null", "baseline: v0-missing"),
    })
    with pytest.raises(PromptError) as caught:
        load_prompts(directory)
    problems = caught.value.problems
    assert any(p.endswith("b.md: version: duplicate version 'v9-test', already in " + str(directory / "a.md"))
               or ("b.md: version: duplicate version 'v9-test'" in p) for p in problems), problems
    assert any("c.md: baseline: 'v0-missing' is not a prompt version" in p for p in problems), problems


def test_a_broken_file_is_still_checked_for_a_duplicate_version(tmp_path):
    directory = write_prompts(tmp_path, {"a.md": GOOD, "b.md": GOOD.replace("max_tokens: 150\n", ""),
                                         "c.md": GOOD.replace("v9-test", "v10-test").replace("baseline: null",
                                                                                            "baseline: v9-tset")})
    with pytest.raises(PromptError) as caught:
        load_prompts(directory)
    problems = caught.value.problems
    assert any("b.md: max_tokens: field required" in p for p in problems), problems
    assert any("b.md: version: duplicate version 'v9-test'" in p for p in problems), problems
    assert any("c.md: baseline: 'v9-tset' is not a prompt version" in p and "did you mean 'v9-test'?" in p
               for p in problems), problems


def test_choosing_versions(tmp_path):
    directory = write_prompts(tmp_path, {"a.md": GOOD, "b.md": GOOD.replace("v9-test", "v10-test")})
    assert [p.version for p in load_prompts(directory, ["v10-test"])] == ["v10-test"]
    with pytest.raises(PromptError, match="unknown prompt version.*v11"):
        load_prompts(directory, ["v11"])


def test_cli_validate_and_list():
    validated = runner.invoke(app, ["prompts", "validate"])
    assert validated.exit_code == 0, validated.output
    listed = runner.invoke(app, ["prompts", "list"])
    assert "v2-warm-boundaries" in listed.stdout and "v1-minimal" in listed.stdout


def test_cli_validate_reports_problems_with_exit_1(tmp_path):
    directory = write_prompts(tmp_path, {"a.md": GOOD.replace("max_tokens: 150\n", "")})
    result = runner.invoke(app, ["prompts", "validate", str(directory)])
    assert result.exit_code == 1
    assert "a.md: max_tokens: field required" in result.stderr
