"""Pieces every command shares: exit codes, the --rubric option, loading the evaluator."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, BinaryIO

import typer

from evaluators.console import fail, fail_all
from evaluators.rubric.loader import Rubric, RubricError, load_rubric

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


_LEVEL_STYLES = ("bold green", "green", "yellow", "dark_orange", "red")


def level_style(rubric: Rubric, level: str) -> str:
    """Colour for a quality level by its rank in the rubric (best green, worst red)."""
    names = [item.name for item in sorted(rubric.quality_levels, key=lambda item: -item.min)]
    if level not in names:
        return ""
    rank = names.index(level)
    position = round(rank * (len(_LEVEL_STYLES) - 1) / max(len(names) - 1, 1))
    return _LEVEL_STYLES[position]


# Column headers for tables with one column per metric.
SHORT_NAMES = {
    "appropriateness": "appr",
    "conversational_quality": "conv",
    "helpfulness": "help",
    "emotional_intelligence": "emo",
    "personalization_continuity": "pers",
    "trust_boundaries": "trust",
    "overall_quality": "overall",
}


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
