"""Commands imported when they run: the list answers without spaCy, pandas or the SDKs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from evaluators.cli import LAZY_COMMANDS, app
from evaluators.cli.data import prompts_app
from tests.support.paths import PROJECT_ROOT

HEAVY = ("spacy", "pandas", "openai", "langfuse", "textstat", "nltk")
runner = CliRunner()


def modules_after(*argv: str) -> tuple[set[str], str]:
    """Run the command line in a fresh interpreter; which heavy modules it imported, and its output."""
    code = ("import sys, json\n"
            f"sys.argv = ['penpal-eval', *{list(argv)!r}]\n"
            "from evaluators.cli import app\n"
            "try:\n    app()\nexcept SystemExit:\n    pass\n"
            f"print(json.dumps(sorted(name for name in {HEAVY!r} if name in sys.modules)), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"}, check=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1])), done.stdout


def test_help_lists_every_command_without_importing_heavy_modules():
    imported, output = modules_after("--help")
    assert imported == set()
    for name in LAZY_COMMANDS:
        assert name in output


def test_scenarios_list_imports_no_nlp_and_no_sdk():
    imported, output = modules_after("scenarios", "list")
    assert imported == set()
    assert "basic-hello-how-are-you" in output


def test_a_score_card_loads_spacy_and_nothing_else_heavy():
    imported, output = modules_after("score", "-r", "That sounds hard. What would help right now?")
    assert imported == {"spacy"}
    assert "overall_quality" in output


@pytest.mark.parametrize("name", list(LAZY_COMMANDS))
def test_each_summary_is_the_first_line_of_the_commands_own_help(name):
    command = LAZY_COMMANDS[name].load(name, "markdown")
    assert command.help is not None
    first_line = " ".join(command.help.strip().split("\n\n")[0].split())
    assert LAZY_COMMANDS[name].summary == first_line


def test_prompts_push_summary_matches_its_help():
    entry = prompts_app.info.cls.lazy_commands["push"]
    command = entry.load("push", None)
    assert entry.summary == " ".join(command.help.strip().split("\n\n")[0].split())


def test_a_lazy_command_runs_and_shows_its_own_help():
    result = runner.invoke(app, ["decide", "--help"])
    assert result.exit_code == 0, result.output
    assert "RUN_DIR" in result.output and "--baseline" in result.output


def test_a_misspelt_command_is_matched_against_the_lazy_names_too():
    result = runner.invoke(app, ["calibrat"])
    assert result.exit_code == 2
    assert "calibrate" in result.output


@pytest.mark.parametrize("argv", [[], ["decide"], ["score"], ["run"], ["judge"], ["scenarios", "list"],
                                  ["prompts", "push"], ["langfuse", "setup"]])
def test_help_shows_no_bool_type_on_flags_and_no_braced_argument_names(argv):
    result = runner.invoke(app, [*argv, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    usage = next(line for line in result.output.splitlines() if "Usage:" in line)
    assert "{" not in usage and "}" not in usage
    assert "--help" in result.output


def test_a_missing_argument_is_named_in_capitals():
    result = runner.invoke(app, ["decide"])
    assert result.exit_code == 2
    assert "RUN_DIR" in result.output
