"""Small helpers for text a person reads, shared by every stage (no terminal library needed)."""

from __future__ import annotations


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`1 case`, `3 cases`: counts a person reads, never `1 cases`."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"
