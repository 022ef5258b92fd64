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


# json's terse messages, said the way a person fixing the file needs them.
_JSON_REASONS = {
    "Invalid control character at": "a string holds a raw control character (such as a tab) at column {column}; "
                                    "write it escaped (\\t, \\n)",
    "Unterminated string starting at": "the string that starts at column {column} is not closed on this line",
    "Expecting value": "expected a JSON value at column {column}",
    "Extra data": "more than one JSON value on this line (the next starts at column {column}); one record per line",
    "Expecting property name enclosed in double quotes": "expected a key in double quotes at column {column}",
    "Expecting ',' delimiter": "expected ',' between items at column {column}",
    "Expecting ':' delimiter": "expected ':' after the key at column {column}",
}


def json_reason(error: json.JSONDecodeError) -> str:
    """Why one line is not JSON, with the column, in words: 'not valid JSON: ...'."""
    template = _JSON_REASONS.get(error.msg)
    reason = template.format(column=error.colno) if template else f"{error.msg} at column {error.colno}"
    return f"not valid JSON: {reason}"


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
        # Without its line break: a string left open then reads as such, at the right column.
        return JsonLine(number, record=json.loads(text.rstrip("\r\n")))
    except json.JSONDecodeError as error:
        return JsonLine(number, error=json_reason(error))
    except RecursionError:
        return JsonLine(number, error="not valid JSON: nested too deeply")
