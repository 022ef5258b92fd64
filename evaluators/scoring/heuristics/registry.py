"""Named signals: each is a pure function of a case's features returning a strength.

The rubric file decides which signals count for which dimension and by how much; the code
here only says whether a signal fired, how strongly (0–1), and on which words.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass

from evaluators.rubric.loader import Ramp
from evaluators.scoring.reading.features import CaseFeatures
from evaluators.scoring.rubric_names import reads_rubric


@dataclass(frozen=True)
class Signal:
    strength: float
    text: str = ""


SignalFunction = Callable[[CaseFeatures], Signal | None]
# What scoring calls, by the name the rubric file uses: each signal in the form that computes
# it once per reply or per exchange where it reads no more (`signal`); `__wrapped__` is the
# signal's own function.
SIGNALS: dict[str, SignalFunction] = {}
# What each signal reads besides the rubric: "reply", "exchange" (the reply and the user's
# message) or "case" (the conversation's history too).
SIGNAL_READS: dict[str, str] = {}
READS = ("reply", "exchange", "case")


def signal(function: SignalFunction | None = None, *, reads: str = "case", lexicons: tuple[str, ...] = (),
           word_sets: tuple[str, ...] = (), patterns: tuple[str, ...] = (),
           pattern_groups: tuple[str, ...] = (), detectors: tuple[str, ...] = (),
           ) -> SignalFunction | Callable[[SignalFunction], SignalFunction]:
    """Register a signal under its function name (the name the rubric file uses).

    ``@signal(reads="reply")`` declares that the signal reads the reply alone, and
    ``reads="exchange"`` the reply and the user's message, besides the rubric; the default
    is the whole case, history included. Such a signal is computed once per reply or per
    exchange (`CaseFeatures.once_per_reply`, `once_per_exchange`) however many cases share
    it: most signals read no history, and replies and exchanges recur across a run. A
    declaration is checked by tests/scoring/heuristics/test_signal_reads.py, which scores with what
    a signal says it does not read taken away.

    `lexicons`, `word_sets`, `patterns`, `pattern_groups` and `detectors` name what the signal itself reads
    from the rubric by name (`evaluators.scoring.rubric_names`): a rubric without one of them
    is refused on load, naming the signal, instead of leaving the signal silently off.
    """
    if reads not in READS:
        raise ValueError(f"reads={reads!r}: one of {', '.join(READS)}")

    def register(function: SignalFunction) -> SignalFunction:
        name = function.__name__
        if name in SIGNALS:
            raise ValueError(f"signal {name!r} registered twice")
        SIGNALS[name] = _once(function, reads)
        SIGNAL_READS[name] = reads
        reads_rubric(f"signal {name}", lexicons=lexicons, word_sets=word_sets, patterns=patterns,
                     pattern_groups=pattern_groups, detectors=detectors)
        return function

    return register(function) if function is not None else register


def _once(function: SignalFunction, reads: str) -> SignalFunction:
    """`function` computed once per reply or per exchange, as far as `reads` allows."""
    if reads == "case":
        return function
    key = f"signal\0{function.__name__}"
    table_of = operator.attrgetter("reply_table" if reads == "reply" else "exchange_table")

    @functools.wraps(function)
    def scored(f: CaseFeatures) -> Signal | None:
        # `CaseFeatures.once_per_reply` / `once_per_exchange`, inlined: called ~60 times a case.
        table = table_of(f)
        if table is None:
            return function(f)
        if key not in table:
            table[key] = function(f)
        return table[key]

    return scored


def clip(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def ramp(value: float, start: float, end: float) -> float:
    """0 at ``start``, 1 at ``end``, linear between (either direction)."""
    if start == end:
        return 1.0 if value >= end else 0.0
    return clip((value - start) / (end - start))


def along(value: float, shape: Ramp) -> float:
    """`ramp` along one of the rubric's shapes (`shapes:`, `tone:`): 0 at its start, 1 at full."""
    return ramp(value, shape.start, shape.full)


QUOTED = 4  # distinct items an evidence string shows


def quote(items) -> str:
    """A short evidence string from matched words: the first few distinct ones."""
    if isinstance(items, (list, tuple)) and not items:
        return ""  # most signals quote what they found, and most find nothing
    seen: list[str] = []
    for item in items:
        item = " ".join(str(item).split())
        if item and item not in seen:
            seen.append(item)
            if len(seen) == QUOTED:
                break  # the rest would not be shown
    text = ", ".join(f'"{item}"' for item in seen)
    return text[:200]


def fired(condition: bool, text: str = "", strength: float = 1.0) -> Signal | None:
    return Signal(strength, text) if condition and strength > 0 else None
