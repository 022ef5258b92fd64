"""Pieces every command shares: exit codes, the --rubric option, loading the evaluator, and
how a command fails (a red message on stderr and the exit code)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, BinaryIO

import typer
from rich.text import Text

from evaluators.core.text import plural
from evaluators.report.console import stderr_console
from evaluators.rubric.loader import RubricError, load_rubric

if TYPE_CHECKING:
    from evaluators.scoring.heuristics import HeuristicEvaluator

EXIT_OK = 0
EXIT_RECORD_ERRORS = 1
EXIT_USAGE = 2  # bad arguments or an invalid rubric file

# Shared by every command that scores (and by scripts/evaluate_prompts.py).
RubricOption = Annotated[
    Path | None,
    typer.Option("--rubric", help="Score with this rubric YAML file instead of the packaged one.",
                 show_default=False),
]


def load_evaluator(rubric_path: Path | None) -> HeuristicEvaluator:
    """The shared evaluator, or one built on another rubric file (exit 2 if it is invalid).

    Imported here, not at the top: spaCy loads only for the commands that score.
    """
    from evaluators.scoring.api import default_evaluator
    from evaluators.scoring.heuristics import HeuristicEvaluator

    if rubric_path is None:
        return default_evaluator()
    try:
        return HeuristicEvaluator(rubric=load_rubric(rubric_path))
    except RubricError as error:
        raise fail_all(error.problems, EXIT_USAGE) from None


def fail(message: str, code: int) -> typer.Exit:
    """Print `message` in red on stderr and return the Exit to raise."""
    stderr_console().print(Text(message, style="red"))
    return typer.Exit(code=code)


def fail_all(problems: Sequence[str], code: int) -> typer.Exit:
    """Every problem on its own line, then how many: a file's mistakes are all shown in one pass."""
    errors = stderr_console()
    for problem in problems:
        errors.print(Text(f"error: {problem}", style="red"))
    errors.print(Text(f"{plural(len(problems), 'problem')} found", style="bold red"))
    return typer.Exit(code=code)


def open_input(stack: ExitStack, file: Path) -> BinaryIO:
    """A JSON-lines input, '-' for stdin; an unreadable file is a usage error naming it."""
    if str(file) == "-":
        return typer.get_binary_stream("stdin")
    try:
        return stack.enter_context(file.open("rb"))
    except OSError as error:
        raise typer.BadParameter(f"cannot read {file}: {error.strerror}", param_hint="FILE") from None


def open_output(stack: ExitStack, output: Path | None) -> IO[str]:
    """Where JSON lines go: the --output file, else stdout."""
    if output is None:
        return sys.stdout
    try:
        return stack.enter_context(output.open("w", encoding="utf-8"))
    except OSError as error:
        raise fail(f"error: cannot write {output}: {error.strerror}", EXIT_USAGE) from None
