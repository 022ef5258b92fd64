"""`penpal-eval decide --apply` against the local Langfuse stand-in: the right labels move onto the
right prompt versions, nothing moves without --apply, and a prompt that differs from the one
evaluated never gets a label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.cli.release import EXIT_REVISE
from evaluators.inputs.prompts import load_prompts
from evaluators.store.run_store import RunInputs, RunStore
from tests.support.project import write_files
from tests.support.release_factory import version_cases, write_run

runner = CliRunner()
NAME = "penpal-companion"
BASELINE = [0.52, 0.55, 0.58, 0.5, 0.6, 0.54, 0.57, 0.53, 0.56, 0.59, 0.51, 0.55]
PROMPT = """\
---
name: penpal-companion
version: {version}
model: gpt-4o-mini
temperature: 0.7
max_tokens: 120
baseline: {baseline}
---
You are Penpal ({version}). Speak warmly and briefly.
"""


@pytest.fixture
def decided_run(tmp_path: Path) -> tuple[Path, Path]:
    """A run where v1 is to be revised, v2 deploys and v3 is an A/B candidate, with its prompts."""
    prompts_dir = write_files(tmp_path / "prompts", {
        "v1.md": PROMPT.format(version="v1", baseline="null"),
        "v2.md": PROMPT.format(version="v2", baseline="v1"),
        "v3.md": PROMPT.format(version="v3", baseline="v1")})
    cases = (version_cases("v1", BASELINE, failed_safety=1) + version_cases("v2", [0.85] * 12)
             + version_cases("v3", [round(value + 0.1, 6) for value in BASELINE]))
    run_dir = write_run(tmp_path / "run", cases, {"v1": None, "v2": "v1", "v3": "v1"})
    RunStore.open(run_dir).write_inputs(RunInputs(prompts=load_prompts(prompts_dir), scenarios=[]))
    return run_dir, prompts_dir


def labels(server) -> dict[int, set[str]]:
    return {version["version"]: set(version["labels"]) - {"latest"} for version in server.prompts[NAME]}


def test_decide_apply_moves_production_and_the_ab_label_and_says_what_changed(decided_run, langfuse):
    run_dir, prompts_dir = decided_run
    server = langfuse()
    pushed = runner.invoke(app, ["prompts", "push", str(prompts_dir)])
    assert pushed.exit_code == 0, pushed.output
    current = runner.invoke(app, ["prompts", "push", str(prompts_dir), "-p", "v1", "--label", "production"])
    assert current.exit_code == 0, current.output
    before = labels(server)
    assert before == {1: {"v1", "production"}, 2: {"v2"}, 3: {"v3"}}

    dry = runner.invoke(app, ["decide", str(run_dir)])
    assert dry.exit_code == EXIT_REVISE, dry.output
    assert labels(server) == before  # nothing moves without --apply
    assert not server.requests_to(f"/api/public/v2/prompts/{NAME}/versions/2", "PATCH")

    applied = runner.invoke(app, ["decide", str(run_dir), "--apply"])
    assert applied.exit_code == EXIT_REVISE, applied.output  # the exit code still gates on the decisions
    assert labels(server) == {1: {"v1"}, 2: {"v2", "production"}, 3: {"v3", "ab-test"}}
    assert "production: moved to penpal-companion version 2 (v2) (was on version 1)" in applied.stdout
    assert "ab-test: moved to penpal-companion version 3 (v3)" in applied.stdout

    again = runner.invoke(app, ["decide", str(run_dir), "--apply", "--ab-label", "canary"])
    assert again.exit_code == EXIT_REVISE, again.output
    assert "production: already on penpal-companion version 2 (v2); unchanged" in again.stdout
    assert labels(server) == {1: {"v1"}, 2: {"v2", "production"}, 3: {"v3", "ab-test", "canary"}}
    assert server.schema_errors == []


def test_a_label_never_moves_onto_a_prompt_that_differs_from_the_one_evaluated(decided_run, langfuse):
    run_dir, prompts_dir = decided_run
    server = langfuse()
    assert runner.invoke(app, ["prompts", "push", str(prompts_dir)]).exit_code == 0
    edited = prompts_dir / "v2.md"
    edited.write_text(edited.read_text().replace("briefly", "at length"))  # edited after the evaluation
    assert runner.invoke(app, ["prompts", "push", str(prompts_dir), "-p", "v2"]).exit_code == 0

    applied = runner.invoke(app, ["decide", str(run_dir), "--apply", "-p", "v2"])
    assert "production: not moved: v2: Langfuse's penpal-companion version 4 differs from the evaluated prompt" in " ".join(
        applied.stdout.split())
    assert all("production" not in names for names in labels(server).values())


def test_a_version_that_was_never_pushed_is_named_and_nothing_moves(decided_run, langfuse):
    run_dir, _ = decided_run
    server = langfuse()
    applied = runner.invoke(app, ["decide", str(run_dir), "--apply", "-p", "v2"])
    assert "v2: not in Langfuse as prompt penpal-companion; run `penpal-eval prompts push` first" in applied.stdout
    assert NAME not in server.prompts


def test_apply_needs_langfuse_keys(decided_run):
    run_dir, _ = decided_run
    result = runner.invoke(app, ["decide", str(run_dir), "--apply"])
    assert result.exit_code == 2
    assert "LANGFUSE_PUBLIC_KEY" in " ".join(result.output.split())


def test_apply_output_is_on_stdout_after_the_json(decided_run, langfuse):
    run_dir, prompts_dir = decided_run
    langfuse()
    assert runner.invoke(app, ["prompts", "push", str(prompts_dir)]).exit_code == 0
    result = runner.invoke(app, ["decide", str(run_dir), "--apply", "--json", "-p", "v2"])
    decisions_text, _, label_lines = result.stdout.rpartition("]\n")
    assert json.loads(decisions_text + "]")[0]["outcome"] == "deploy"
    assert "production: moved to penpal-companion version 2 (v2)" in label_lines
