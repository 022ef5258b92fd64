"""Terminal output shared by every command: results to stdout, diagnostics to stderr."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.text import Text


def stdout_console() -> Console:
    return Console(highlight=False)


def stderr_console() -> Console:
    # soft_wrap: one diagnostic per line, never folded at the terminal width.
    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int) -> typer.Exit:
    """Print `message` in red on stderr and return the Exit to raise."""
    stderr_console().print(Text(message, style="red"))
    return typer.Exit(code=code)


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
