"""Reading JSON lines one at a time, keeping each line's number and the reason a line is unusable."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO


@dataclass(frozen=True)
class JsonLine:
    number: int
    record: object = None
    error: str | None = None  # why the line is not a JSON value at all


def read_json_lines(stream: BinaryIO) -> Iterator[JsonLine]:
    """Parse JSON lines lazily, one at a time; blank lines are skipped."""
    for number, raw in enumerate(stream, start=1):
        if (line := parse_json_line(number, raw)) is not None:
            yield line


def parse_json_line(number: int, raw: bytes) -> JsonLine | None:
    """One raw line as a record or the reason it is unusable; None for a blank line.

    Shared by every reader (local files, and Ray workers scoring lines read elsewhere), so a bad
    line gets the same reason wherever it is scored.
    """
    try:
        text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as error:
        return JsonLine(number, error=f"not valid UTF-8 (byte {error.start})")
    if not text.strip():
        return None
    try:
        return JsonLine(number, record=json.loads(text))
    except json.JSONDecodeError as error:
        return JsonLine(number, error=f"not valid JSON: {error.msg} (column {error.colno})")
    except RecursionError:
        return JsonLine(number, error="not valid JSON: nested too deeply")
