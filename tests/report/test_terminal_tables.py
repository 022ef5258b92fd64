"""Every table the command line prints reads whole at 80, 100 and 120 columns, in a real terminal.

The commands run in a pseudo-terminal (tests/support/terminal.py); a value counts as whole when
its row holds it complete on one line, and nothing anywhere ends in an ellipsis.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.inputs.prompts import load_prompts
from evaluators.inputs.scenarios import load_scenarios
from evaluators.release.rules import OUTCOME_TITLES
from evaluators.report.labels import SHORT_NAMES
from evaluators.rubric.loader import default_rubric
from evaluators.run.simulation.stage import with_conversation_metrics
from tests.support.conversations import ERODING, LONELY, STEADY, scored_case
from tests.support.paths import SAMPLE_REPLIES
from tests.support.release_factory import version_cases, write_run
from tests.support.terminal import run_in_pty

pytestmark = pytest.mark.slow  # every command in a pseudo-terminal, after a whole run

WIDTHS = (80, 100, 120)
METRICS = (*METRIC_NAMES, OVERALL)
USER = "I had a rough day at work."
REPLY = "That sounds really draining. Do you want to tell me what happened?"


@pytest.fixture(scope="module")
def screens(tmp_path_factory) -> dict[tuple[str, int], str]:
    """The shipped run (replayed), then each table-printing command at each width."""
    workdir = tmp_path_factory.mktemp("tables")
    result = CliRunner().invoke(app, ["run", "--output", str(workdir / "runs"), "--run-id", "shipped",
                                      "--responder", "replay", "--no-langfuse"])
    assert result.exit_code == 0, result.output
    run = workdir / "runs" / "shipped"
    labelled = workdir / "labelled.jsonl"
    labelled.write_text("".join(json.dumps({**json.loads(line), "human_score": (number % 5) / 4}) + "\n"
                                for number, line in enumerate(SAMPLE_REPLIES.read_text().splitlines())))
    commands = {
        "run": ["run", "--resume", str(run), "--no-langfuse"],
        "decide": ["decide", str(run)],
        "report": ["report", str(run), "--output", str(workdir / "report")],
        "compare": ["compare", str(run), str(run)],
        "calibrate": ["calibrate", str(labelled), "--no-judge"],
        "score": ["score", "-u", USER, "-r", REPLY],
        "rubric": ["rubric"],
        "scenarios": ["scenarios", "list"],
        "prompts": ["prompts", "list"],
    }
    plan = [(name, width) for name in commands for width in WIDTHS]
    outputs = run_in_pty([(width, commands[name]) for name, width in plan], cwd=workdir)
    return {**dict(zip(plan, outputs, strict=True)), ("summary", 0): (run / "summary.json").read_text(),
            ("run_dir", 0): str(run)}


def row(screen: str, first: str, width: int = 80) -> str:
    """The first line that starts with `first` (a table row), stripped; it must fit the terminal."""
    lines = [line for line in screen.splitlines() if line.strip().startswith(first)]
    assert lines, f"no line starts with {first!r}:\n{screen}"
    assert cell_len(lines[0]) <= width, lines[0]
    return lines[0].strip()


def assert_whole(screen: str) -> None:
    """Nothing was cut. (Diagnostics are one line each by design; the terminal wraps them, whole.)"""
    assert "…" not in screen, screen


def cells(line: str) -> list[str]:
    return line.split()


@pytest.mark.parametrize("width", WIDTHS)
def test_run_tables_show_every_mean_and_check_whole(screens, width):
    screen = screens["run", width]
    assert_whole(screen)
    summary = json.loads(screens["summary", 0])["versions"]
    for version, figures in summary.items():
        means, checks = [line for line in screen.splitlines() if line.strip().startswith(version + " ")][:2]
        assert cell_len(means) <= width and cell_len(checks) <= width
        assert cells(means) == [version, f"{figures['scored']}/{figures['cases']}",
                                *(f"{figures['means'][name]:.2f}" for name in METRICS)]
        counts = figures["counts"]
        assert cells(checks)[1:3] == [f"{counts['expectations_met']}/{counts['scored']}",
                                      f"{counts['safety_hard_criteria_passed']}/{counts['safety_scored']}"]
    for name in METRICS:
        assert SHORT_NAMES[name] in screen  # every short key is explained in the legend
    assert "appr = appropriateness" in " ".join(screen.split())


@pytest.mark.parametrize("command", ["decide", "report"])
@pytest.mark.parametrize("width", WIDTHS)
def test_decision_rows_are_whole(screens, command, width):
    screen = screens[command, width]
    assert_whole(screen)
    decisions = json.loads(CliRunner().invoke(app, ["decide", "--json", screens["run_dir", 0]]).stdout)
    assert len(decisions) == 3
    for decision in decisions:
        line = row(screen, decision["prompt_version"] + " ", width)
        assert OUTCOME_TITLES[decision["outcome"]] in line
        assert f"{decision['average']:.3f}" in cells(line)
        assert f"{decision['hard_criteria_pass_rate']:.0%}" in cells(line)
        counts = decision["counts"]
        assert cells(line)[-1] == f"{counts['safety_hard_criteria_passed']}/{counts['safety_scored']}"


@pytest.mark.parametrize("width", WIDTHS)
def test_comparison_rows_are_whole(screens, width):
    screen = screens["compare", width]
    assert_whole(screen)
    for name in METRICS:
        line = row(screen, SHORT_NAMES[name] + " ", width)
        assert line.endswith("no difference")
        assert "[+0.000, +0.000]" in line and "+0.000" in cells(line)


@pytest.mark.parametrize("width", WIDTHS)
def test_calibration_tables_are_whole(screens, width):
    screen = screens["calibrate", width]
    assert_whole(screen)
    assert cells(row(screen, "heuristics ", width))[:2] == ["heuristics", "14"]
    for verdict in ("poor", "acceptable", "good"):
        assert len(cells(row(screen, verdict + " ", width))) == 4  # the label and three whole counts


@pytest.mark.parametrize("width", WIDTHS)
def test_score_card_is_whole(screens, width):
    screen = screens["score", width]
    assert_whole(screen)
    for name in METRICS:
        line = row(screen.replace("│", " "), name + " ", width)
        value, level = cells(line)[1], cells(line)[-1]
        assert len(value) == 4 and value[1] == "."
        assert level in {item.name for item in default_rubric().quality_levels}
    assert REPLY in " ".join(screen.replace("│", " ").split())


@pytest.mark.parametrize("width", WIDTHS)
def test_rubric_summary_is_whole(screens, width):
    screen = screens["rubric", width].replace("│", " ")
    assert_whole(screen)
    for name, dimension in default_rubric().dimensions.items():
        assert cells(row(screen, name + " ", width))[-1] == f"{dimension.weight:.2f}"


@pytest.mark.parametrize("width", WIDTHS)
def test_scenario_list_shows_each_id_and_turn_count_whole(screens, width):
    screen = screens["scenarios", width]
    assert_whole(screen)
    for scenario in load_scenarios().scenarios:
        assert cells(row(screen, scenario.id + " ", width))[:2] == [scenario.id, str(len(scenario.turns))]


@pytest.mark.parametrize("width", WIDTHS)
def test_prompt_list_shows_each_setting_whole(screens, width):
    screen = screens["prompts", width]
    assert_whole(screen)
    for prompt in load_prompts():
        assert cells(row(screen, prompt.version + " ", width)) == [prompt.version, prompt.name, prompt.model,
                                                            f"{prompt.temperature:g}", str(prompt.max_tokens)]
        assert f"{prompt.version} (baseline: {prompt.baseline or '—'}):" in screen


@pytest.fixture(scope="module")
def conversation_screens(tmp_path_factory) -> dict[int, str]:
    """`decide` on a run with simulated conversations (built, not shipped), at each width."""
    run = tmp_path_factory.mktemp("conversations") / "run"
    cases = version_cases("v2-warm-boundaries", [0.85, 0.8, 0.82, 0.9, 0.78, 0.84, 0.8, 0.86])
    personas = {}
    for persona_id, exchanges in (("lonely-young-only-friend", ERODING), ("skeptic-over-promise", STEADY)):
        personas[persona_id] = LONELY.model_copy(update={"id": persona_id})
        cases.append(scored_case(exchanges, persona=persona_id, version="v2-warm-boundaries"))
    write_run(run, with_conversation_metrics(cases, personas, default_rubric()))
    outputs = run_in_pty([(width, ["decide", str(run)]) for width in WIDTHS], cwd=run.parent)
    return dict(zip(WIDTHS, outputs, strict=True))


@pytest.mark.parametrize("width", WIDTHS)
def test_conversation_rows_are_whole(conversation_screens, width):
    screen = conversation_screens[width]
    assert_whole(screen)
    assert "Simulated conversations: v2-warm-boundaries" in screen
    assert cells(row(screen, "lonely-young-only-friend ", width)) == [
        "lonely-young-only-friend", "6", "+0.112", "0.30@6", "@5", "33%", "—", "0", "—"]
    assert cells(row(screen, "skeptic-over-promise ", width))[:6] == [
        "skeptic-over-promise", "6", "-0.003", "0.75@1", "—", "0%"]
    assert "ctr = contradictions of its own statements" in " ".join(screen.split())


@pytest.mark.parametrize("width", WIDTHS)
def test_learned_behaviour_rows_are_whole(conversation_screens, width):
    """The detectors followed over the turns, a row per conversation and behaviour, after the
    conversations' table: each row whole, its figures those of the conversation's record."""
    screen = conversation_screens[width]
    assert_whole(screen)
    assert "Learned behaviours over the turns: v2-warm-boundaries" in screen
    followed = default_rubric().conversation.behaviour_trajectories
    table = screen.split("Learned behaviours over the turns")[1].split("slope = change")[0]
    rows = [line.split() for line in table.splitlines()
            if line.strip().startswith(("lonely-young-only-friend ", "skeptic-over-promise "))]
    assert all(cell_len(" ".join(cells)) <= width for cells in rows)
    assert [cells[1] for cells in rows] == list(followed) * 2
    assert all(re.fullmatch(r"[+-]\d\.\d{3}", cells[2]) and re.fullmatch(r"\d\.\d{2}@[1-6]", cells[4])
               for cells in rows), rows


def latency_rows(screen: str, version: str, width: int) -> list[str]:
    """The latency table's row for `version`: the second row starting with it (after the decisions')."""
    lines = [line for line in screen.splitlines() if line.strip().startswith(version + " ")]
    assert len(lines) >= 2, screen
    assert cell_len(lines[1]) <= width, lines[1]
    return cells(lines[1])


@pytest.mark.parametrize("command", ["decide", "report"])
@pytest.mark.parametrize("width", WIDTHS)
def test_replayed_runs_show_speaking_time_and_say_no_latency_was_measured(screens, command, width):
    from evaluators.release.rules import release_report
    from evaluators.store.run_store import RunStore

    screen = screens[command, width]
    assert_whole(screen)
    store = RunStore.open(Path(screens["run_dir", 0]))
    report = release_report(store.read_cases(), default_rubric())
    for version, aggregate in report.aggregates.items():
        spoken = aggregate.latency.speaking_s
        assert latency_rows(screen, version, width) == [version, f"{spoken.p50:.1f}", f"{spoken.p95:.1f}"]
    assert "no latency measured (replayed replies)" in " ".join(screen.split())


@pytest.mark.parametrize("width", (80, 100))
def test_measured_latency_rows_are_whole(width):
    from rich.console import Console

    from evaluators.release.rules import release_report
    from evaluators.report.terminal import latency_table
    from tests.support.release_factory import timed, version_cases

    cases = timed(version_cases("v2-warm-boundaries", [0.9] * 20), [0.3] * 10 + [1.2] * 10)
    report = release_report(cases, default_rubric())
    console = Console(width=width, record=True, force_terminal=False)
    console.print(latency_table(report, default_rubric()))
    screen = console.export_text()
    assert_whole(screen)
    latency = report.aggregates["v2-warm-boundaries"].latency
    assert cells(row(screen, "v2-warm-boundaries ", width)) == [
        "v2-warm-boundaries", "0.75", "1.20", "1.25", "1.70", "40", f"{latency.speaking_s.p50:.1f}",
        f"{latency.speaking_s.p95:.1f}"]
    assert "replayed" not in screen


def every_command() -> list[list[str]]:
    """Every command and subcommand of the command line, as argv prefixes (the top level is [])."""
    from evaluators.cli import LAZY_COMMANDS
    from evaluators.cli.lazy import HELP_MARKUP

    found: list[list[str]] = [[]]
    for name, entry in LAZY_COMMANDS.items():
        command = entry.load(name, HELP_MARKUP)
        found.append([name])
        found += [[name, sub] for sub in getattr(command, "commands", {})]
    return found


def help_texts(argv: list[str]) -> list[str]:
    """The help of each option and argument of the command at `argv`, as written in its code."""
    import typer

    from evaluators.cli import app

    command = typer.main.get_command(app)
    for name in argv:
        command = command.get_command(None, name) if hasattr(command, "get_command") else command
    return [param.help for param in command.params if getattr(param, "help", None)]


@pytest.fixture(scope="module")
def help_screens(tmp_path_factory) -> dict[tuple[str, ...], str]:
    """`COLUMNS=80 penpal-eval ... --help` for every command, in an 80-column terminal."""
    commands = every_command()
    outputs = run_in_pty([(80, [*argv, "--help"]) for argv in commands], cwd=tmp_path_factory.mktemp("help"),
                         environ={"COLUMNS": "80"})
    return {tuple(argv): output for argv, output in zip(commands, outputs, strict=True)}


def test_every_command_is_covered(help_screens):
    assert {"run", "score", "decide", "monitor", "langfuse", "scenarios"} <= {argv[0] for argv in help_screens if argv}
    assert ("langfuse", "setup") in help_screens and ("scenarios", "list") in help_screens
    assert len(help_screens) >= 20


def test_help_of_every_command_is_whole_at_80_columns(help_screens):
    for argv, screen in help_screens.items():
        where = "penpal-eval " + " ".join(argv)
        assert "Usage:" in screen and "Traceback" not in screen, (where, screen)
        assert "…" not in screen, (where, screen)
        long = [line for line in screen.splitlines() if cell_len(line) > 80]
        assert not long, (where, long)
        words = " ".join(re.sub(r"-\n\s+", "-", screen).split())  # a line may end at a hyphen: wrapped, not cut
        for text in help_texts(list(argv)):
            assert " ".join(text.split()) in words, (where, text)  # every description, whole


def test_the_version_is_printed(help_screens):
    from importlib.metadata import version

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"penpal-eval {version('penpal-eval')}"
    assert "--version" in help_screens[()]
