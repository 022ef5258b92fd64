"""Terminal output shared by every command: results to stdout, diagnostics to stderr.

Tables read whole at 80 columns: numbers, levels and decisions never wrap nor shrink (a cut
value is worse than none), names and prose wrap at word or character boundaries instead of
ending in an ellipsis, and short column keys come with a legend (`key_legend`).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import typer
from rich import box
from rich.console import Console
from rich.table import Table
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


def fail_all(problems: Sequence[str], code: int) -> typer.Exit:
    """Every problem on its own line, then how many: a file's mistakes are all shown in one pass."""
    errors = stderr_console()
    for problem in problems:
        errors.print(Text(f"error: {problem}", style="red"))
    errors.print(Text(f"{plural(len(problems), 'problem')} found", style="bold red"))
    return typer.Exit(code=code)


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def compact_table(title: str | None = None) -> Table:
    """A table for the terminal: a rule under the header, no side borders, narrow gaps between columns.

    Columns added with `value_column` never shrink; `text_column` ones wrap to make room.
    """
    return Table(title=title, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1),
                 collapse_padding=True, show_edge=False, caption_justify="left")


def value_column(table: Table, header: str, justify: str = "right") -> None:
    """A number, level or decision: never wrapped at a space, and never cut.

    Layouts leave these columns their full width; were a terminal narrower still, the value
    would fold onto a second line rather than lose its end.
    """
    table.add_column(header, justify=justify, no_wrap=True, overflow="fold")  # type: ignore[arg-type]


def text_column(table: Table, header: str, min_width: int | None = None) -> None:
    """A name or prose: wraps (at spaces, else mid-word) rather than losing its end."""
    table.add_column(header, overflow="fold", min_width=min_width)


def key_legend(keys: Mapping[str, str]) -> str:
    """`appr = appropriateness, conv = conversational quality, …` for the short keys a table uses."""
    return ", ".join(f"{key} = {name.replace('_', ' ')}" for name, key in keys.items() if key != name)


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`1 case`, `3 cases`: counts a person reads, never `1 cases`."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside, SIGTERM (what a cancelled CI job or `kill` sends) is handled as SIGINT (Ctrl-C):
    the command stops where it is, keeps what it finished and says how to go on, with the exit
    code of an interruption, instead of dying with nothing written. Only the main thread can
    take signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def as_interrupt(signum: int, frame: object) -> None:
        handler = signal.getsignal(signal.SIGINT)  # asyncio.run's, while a loop runs: it cancels the run
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
