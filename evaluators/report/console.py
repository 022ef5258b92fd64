"""Terminal output shared by every command and the terminal reports: results to stdout,
diagnostics to stderr.

Tables read whole at 80 columns: numbers, levels and decisions never wrap nor shrink (a cut
value is worse than none), names and prose wrap at word or character boundaries instead of
ending in an ellipsis, and short column keys come with a legend (`key_legend`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from rich import box
from rich.console import Console
from rich.table import Table


def stdout_console() -> Console:
    return Console(highlight=False)


def stderr_console() -> Console:
    # soft_wrap: one diagnostic per line, never folded at the terminal width.
    return Console(stderr=True, highlight=False, soft_wrap=True)


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
