"""Text made safe where it enters the suite, and where it leaves for a terminal or a spreadsheet.

Text comes from places the suite does not control: a server's reply, a JSON-lines record, a
judge's answer. JSON can carry a lone UTF-16 surrogate (`"\\ud800"`), which Python keeps in a
str although no UTF-8 byte sequence can hold it: the first cache write, run-store line or spaCy
parse that encodes it raises, and a whole run or batch is lost for one character. So text is
checked once at the boundary: each code point that cannot be encoded is replaced with U+FFFD,
and the record says so (`invalid_unicode_notice`), because a score of a changed text should
not pass for a score of the original.

On the way out, two more boundaries: a terminal interprets escape sequences, so text a server
wrote (an error message, a reply) is printed without control characters (`printable`); and a
spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` as a formula, so CSV cells that
do are written with a leading apostrophe (`spreadsheet_safe`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

REPLACEMENT = "\ufffd"
INVALID_UNICODE = "invalid_unicode"
# Code points no UTF-8 text can hold: the UTF-16 surrogates, which JSON's \\u escapes can produce
# one at a time. (A valid escaped pair is joined into one character by the JSON reader.)
_UNENCODABLE = re.compile("[\ud800-\udfff]")
# ANSI escape sequences (CSI, OSC and two-character ones), then any other control character but
# the line break and the tab.
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class Notice(BaseModel):
    """Something said about a text rather than a score of it: why it was left unscored
    (`unsupported_language`), or what was changed in it before it was scored (`invalid_unicode`).
    Not a flag: nothing was judged."""

    model_config = ConfigDict(frozen=True)

    name: str
    text: str


def valid_text(text: str) -> tuple[str, int]:
    """`text` with every code point UTF-8 cannot encode replaced by U+FFFD, and how many there were."""
    return _UNENCODABLE.subn(REPLACEMENT, text)


def valid_tree(value: object) -> tuple[object, int]:
    """A parsed JSON or YAML value with `valid_text` applied to every string in it (keys too),
    and how many code points were replaced in all."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        items = [valid_tree(item) for item in value]
        return [item for item, _ in items], sum(count for _, count in items)
    if isinstance(value, dict):
        pairs = [(valid_tree(key), valid_tree(item)) for key, item in value.items()]
        return ({key: item for (key, _), (item, _) in pairs},
                sum(key_count + item_count for (_, key_count), (_, item_count) in pairs))
    return value, 0


def invalid_unicode_notice(counts: Iterable[tuple[str, int]]) -> Notice | None:
    """The notice for a record whose fields (name, replaced count) lost characters; None if none did."""
    changed = [(field, count) for field, count in counts if count]
    if not changed:
        return None
    total = sum(count for _, count in changed)
    where = ", ".join(field for field, _ in changed)
    what = "invalid character (a lone surrogate)" if total == 1 else "invalid characters (lone surrogates)"
    return Notice(name=INVALID_UNICODE, text=f"{total} {what} in {where} replaced with U+FFFD")


def printable(text: str) -> str:
    """Text a server or a file wrote, fit for a terminal: escape sequences and control
    characters removed (line breaks and tabs kept), so it cannot recolour, move the cursor in
    or rewrite a CI log."""
    return _CONTROL.sub("", _ESCAPES.sub("", text))


def spreadsheet_safe(value: object) -> object:
    """A CSV cell that a spreadsheet will show as text: one that would start a formula gets a
    leading apostrophe (the usual guard; pandas reads it back with the apostrophe)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
