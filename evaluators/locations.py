"""Where project files live, and how to name a location in an error message.

Messages name files relative to the project (never this machine's absolute paths) and
fields the way the YAML author wrote them (`turns[0].expect[1]`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def display_path(path: Path) -> str:
    """The path relative to the project when it is inside it, else as given."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def field_path(loc: Sequence[object]) -> str:
    """A pydantic error location as the file's author wrote it: turns[0].expect[1] ("" for the whole)."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text
