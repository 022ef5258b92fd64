"""Commands imported only when they run, so `penpal-eval --help` answers at once.

Most commands pull in spaCy, pandas, the OpenAI or Langfuse SDK; importing all of them to
print the command list took seconds. A lazy group names each command with its module and
a one-line summary (shown in the list; a test keeps it equal to the command's own help)
and imports the module only when that command is invoked or its own help is asked for.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
from typer import _click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

# Help is click's plain layout, not typer's rich panels: the panels squeeze option names, types
# and descriptions into a table that, at 80 columns, cuts descriptions with "…"; the plain layout
# wraps every description whole, under its option when the option is long.
HELP_MARKUP = None


class _PlainArgument(TyperArgument):
    """An argument shown as RUN_DIR in the usage line, not typer's {run_dir}."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def tidy_help(command: _click.Command) -> _click.Command:
    """Help a newcomer can read: arguments in capitals, no `<bool>` beside a flag (it takes no value).

    Applied to every command as it loads, and to the subcommands of a group.
    """
    help_option = command.get_help_option(_click.Context(command))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if isinstance(param, TyperArgument):
            param.metavar = param.metavar or (param.name or "").upper()
            param.__class__ = _PlainArgument
        elif isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
        elif isinstance(param, TyperOption) and param.metavar is None and _long_choices(param):
            # `--family <list[basic|emotional_support|...]>` would not fit a line: name the value, list the choices.
            param.metavar = (param.name or "value").upper()
            param.help = f"{param.help or ''} One of: {', '.join(_long_choices(param))}.".strip()
    for subcommand in getattr(command, "commands", {}).values():
        tidy_help(subcommand)
    return command


def _long_choices(param: TyperOption) -> list[str]:
    """The option's choices when, written out as its metavar, they would not fit beside it."""
    descriptor = param.type_descriptor
    if not descriptor.is_choice:
        return []
    choices = [str(getattr(choice, "value", choice)) for choice in descriptor.choices or ()]
    return choices if len("|".join(choices)) > 40 else []


def build_command(function: Any, name: str, rich_markup_mode: Any = HELP_MARKUP) -> _click.Command:
    """The click command for one command function, tidied (also used by scripts/evaluate_prompts.py)."""
    single = typer.Typer(rich_markup_mode=rich_markup_mode, add_completion=False)
    single.command(name)(function)
    command = typer.main.get_command(single)
    command.name = name
    return tidy_help(command)


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives: `module:attribute`, a command function or a typer sub-app."""

    target: str
    summary: str  # the first line of the command's help, for the command list

    def load(self, name: str, rich_markup_mode: Any) -> _click.Command:
        module_name, attribute = self.target.split(":")
        value = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(value, typer.Typer):
            return build_command(value, name, rich_markup_mode)
        group = typer.main.get_group(value)
        group.name = name
        return tidy_help(group)


def lazy_group(commands: dict[str, LazyCommand]) -> type[TyperGroup]:
    """A TyperGroup class that also offers `commands`, each imported on first use."""

    class LazyGroup(TyperGroup):
        lazy_commands = commands

        def __init__(self, **attrs: Any) -> None:
            super().__init__(**attrs)
            tidy_help(self)
            self._listing = False
            for name, entry in self.lazy_commands.items():
                # A placeholder keeps the order of the list and lets typos be matched against every name.
                self.commands.setdefault(name, TyperCommand(name, help=entry.summary, short_help=entry.summary))

        def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
            entry = self.lazy_commands.get(cmd_name)
            command = self.commands.get(cmd_name)
            if entry is None or self._listing or getattr(command, "_loaded", False):
                return command
            command = entry.load(cmd_name, self.rich_markup_mode)
            command._loaded = True  # type: ignore[attr-defined]
            self.commands[cmd_name] = command
            return command

        def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
            self._listing = True  # the list shows summaries: nothing is imported for it
            try:
                super().format_help(ctx, formatter)
            finally:
                self._listing = False

    return LazyGroup
