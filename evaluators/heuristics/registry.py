"""Named signals: each is a pure function of a case's features returning a strength.

The rubric file decides which signals count for which dimension and by how much; the code
here only says whether a signal fired, how strongly (0–1), and on which words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evaluators.features import CaseFeatures


@dataclass(frozen=True)
class Signal:
    strength: float
    text: str = ""


SignalFunction = Callable[[CaseFeatures], Signal | None]
SIGNALS: dict[str, SignalFunction] = {}


def signal(function: SignalFunction) -> SignalFunction:
    """Register a signal under its function name (the name the rubric file uses)."""
    if function.__name__ in SIGNALS:
        raise ValueError(f"signal {function.__name__!r} registered twice")
    SIGNALS[function.__name__] = function
    return function


def clip(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def ramp(value: float, start: float, end: float) -> float:
    """0 at ``start``, 1 at ``end``, linear between (either direction)."""
    if start == end:
        return 1.0 if value >= end else 0.0
    return clip((value - start) / (end - start))


def quote(items) -> str:
    """A short evidence string from matched words."""
    if isinstance(items, (list, tuple)) and not items:
        return ""  # most signals quote what they found, and most find nothing
    seen: list[str] = []
    for item in items:
        item = " ".join(str(item).split())
        if item and item not in seen:
            seen.append(item)
    text = ", ".join(f'"{item}"' for item in seen[:4])
    return text[:200]


def fired(condition: bool, text: str = "", strength: float = 1.0) -> Signal | None:
    return Signal(strength, text) if condition and strength > 0 else None
