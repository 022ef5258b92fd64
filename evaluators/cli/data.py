"""`penpal-eval scenarios ...` and `penpal-eval prompts ...`: check and list the inputs of a run."""

from __future__ import annotations

from collections import Counter
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from evaluators.cli.common import fail_all
from evaluators.cli.lazy import HELP_MARKUP, LazyCommand, lazy_group
from evaluators.core.text import plural
from evaluators.inputs.contracts import FAMILIES, PromptVersion
from evaluators.inputs.personas import PersonaError, PersonaSet, load_personas, persona_scenario, personas_dir
from evaluators.inputs.prompts import DEFAULT_PROMPTS_DIR, PromptError, load_prompts
from evaluators.inputs.scenarios import (
    DEFAULT_SCENARIOS_DIR,
    PERSONAS_FAMILY,
    ScenarioError,
    ScenarioSet,
    load_scenarios,
)
from evaluators.inputs.targets import TargetError, resolve_target
from evaluators.report.console import compact_table, stdout_console, text_column, value_column

EXIT_INVALID = 1

Family = Enum("Family", {name: name for name in FAMILIES}, type=str)  # typer shows the choices

ScenariosDir = Annotated[
    Path, typer.Argument(help="Directory of scenario YAML files.", file_okay=False, show_default="scenarios/")
]
PromptsDir = Annotated[
    Path, typer.Argument(help="Directory of prompt Markdown files.", file_okay=False, show_default="prompts/")
]

scenarios_app = typer.Typer(help="Check and list the scenario sets.", no_args_is_help=True, add_completion=False,
                            rich_markup_mode=HELP_MARKUP)
prompts_app = typer.Typer(
    help="Check and list the companion prompt versions.", no_args_is_help=True, add_completion=False,
    rich_markup_mode=HELP_MARKUP,
    # `prompts push` needs the Langfuse SDK: imported only when it runs.
    cls=lazy_group({"push": LazyCommand("evaluators.cli.langfuse:prompts_push", "Create or update Langfuse prompts "
                                        "from prompts/: text as the prompt, model settings as config.")}),
)


def _report_problems(problems: list[str]) -> typer.Exit:
    return fail_all(problems, EXIT_INVALID)


def _scenarios_or_exit(directory: Path) -> tuple[ScenarioSet, PersonaSet]:
    """The scripted scenarios and the personas of `directory`, or every problem of both at once."""
    problems: list[str] = []
    scenarios = personas = None
    try:
        scenarios = load_scenarios(directory)
    except ScenarioError as error:
        problems += error.problems
    try:
        personas = load_personas(personas_dir(directory))
    except PersonaError as error:
        problems += error.problems
    if problems:
        raise _report_problems(problems)
    return scenarios, personas


def _prompts_or_exit(directory: Path) -> list[PromptVersion]:
    try:
        return load_prompts(directory)
    except PromptError as error:
        raise _report_problems(error.problems) from None


def _target_problems(prompts: list[PromptVersion], directory: Path) -> list[str]:
    """Every problem of the target files the versions name (front matter `target:`)."""
    problems: list[str] = []
    for prompt in prompts:
        if prompt.target is not None:
            try:
                resolve_target(prompt.target, base=directory, where=f"prompt {prompt.version}: target")
            except TargetError as error:
                problems += error.problems
    return problems


def _wide_console() -> Console:
    """stdout; when piped or logged, wide enough that rows are not folded."""
    console = stdout_console()
    if not console.is_terminal:
        console.width = max(console.width, 200)
    return console


@scenarios_app.command("validate")
def scenarios_validate(directory: ScenariosDir = DEFAULT_SCENARIOS_DIR) -> None:
    """Check every scenario file and every persona (personas/); each problem names the file, the
    scenario or persona, and the field.

    Exit codes: 0 valid; 1 problems found.
    """
    loaded, personas = _scenarios_or_exit(directory)
    counts = Counter(scenario.family for scenario in loaded.scenarios)
    per_family = ", ".join(f"{family} {counts[family]}" for family in FAMILIES if counts[family])
    line = f"✓ {plural(len(loaded.scenarios), 'scenario')} valid ({per_family})"
    if personas.personas:
        line += f"; {plural(len(personas.personas), 'persona')} valid"
    stdout_console().print(Text(line, style="green"))


@scenarios_app.command("list")
def scenarios_list(
    directory: ScenariosDir = DEFAULT_SCENARIOS_DIR,
    family: Annotated[list[Family] | None, typer.Option("--family", "-f", help="Only this family; repeatable.")] = None,
) -> None:
    """List scenarios: id, family, turns, profile, safety and tags; personas with their turn limit
    and opening."""
    loaded, personas = _scenarios_or_exit(directory)
    families = [item.value for item in family] if family else None
    chosen = loaded.by_family(families)
    if families is None or PERSONAS_FAMILY in families:
        chosen += [persona_scenario(persona) for persona in personas.personas]
        limits = {persona.id: persona.max_turns for persona in personas.personas}
    else:
        limits = {}
    table = compact_table()
    value_column(table, "id", justify="left")
    value_column(table, "turns")
    value_column(table, "group", justify="left")
    value_column(table, "safety", justify="left")
    text_column(table, "first user turn · tags", min_width=20)
    # Stacked: the family heads its scenarios, the tags go under the first user turn.
    for name in FAMILIES:
        members = [scenario for scenario in chosen if scenario.family == name]
        if not members:
            continue
        table.add_row(Text(f"{name} ({len(members)})", style="bold underline"))
        for scenario in members:
            text = Text(scenario.turns[0].user)
            if scenario.tags:
                text.append("\n" + ", ".join(scenario.tags), style="dim")
            turns = f"≤{limits[scenario.id]}" if scenario.id in limits else str(len(scenario.turns))
            table.add_row(scenario.id, turns, scenario.profile.demographic_group,
                          "yes" if scenario.safety else "", text)
    table.caption = (f"{plural(len(chosen), 'scenario')}; group = the demographic group score gaps are measured across"
                     + ("; personas: ≤ the turn limit, the first user turn is the opening, the rest are simulated"
                        if limits else ""))
    _wide_console().print(table)


@prompts_app.command("validate")
def prompts_validate(directory: PromptsDir = DEFAULT_PROMPTS_DIR) -> None:
    """Check every prompt file's front matter and the target files it names; each problem names
    the file and the field.

    Exit codes: 0 valid; 1 problems found.
    """
    prompts = _prompts_or_exit(directory)
    if problems := _target_problems(prompts, directory):
        raise _report_problems(problems)
    stdout_console().print(Text(f"✓ {len(prompts)} prompt versions valid ({', '.join(p.version for p in prompts)})",
                         style="green"))


@prompts_app.command("list")
def prompts_list(directory: PromptsDir = DEFAULT_PROMPTS_DIR) -> None:
    """List prompt versions with their model settings and baselines."""
    prompts = _prompts_or_exit(directory)
    table = compact_table()
    text_column(table, "version", min_width=10)
    text_column(table, "name", min_width=8)
    text_column(table, "model", min_width=8)
    value_column(table, "temp")
    value_column(table, "max tokens")
    for prompt in prompts:
        table.add_row(Text(prompt.version, style="bold"), prompt.name, prompt.model, f"{prompt.temperature:g}",
                      str(prompt.max_tokens))
    console = _wide_console()
    console.print(table)
    # Baseline and description stacked under the table, a paragraph per version, wrapped whole.
    for prompt in prompts:
        line = Text(prompt.version, style="bold")
        line.append(f" (baseline: {prompt.baseline or '—'}): ")
        line.append(" ".join(prompt.description.split()) or "no description")
        console.print(line)
