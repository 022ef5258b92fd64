"""The rubric names scoring reads, declared by each reader: the contract between code and file.

Why: a signal that asks for a lexicon, a safety word set or a pattern the rubric does not
have finds nothing, so a renamed entry would switch the signal off without a word. Each
reader (a signal, or a module of helpers several signals share) declares here the names it
reads, as a signal declares its own name; `missing_names` lists every declared name a rubric
lacks, with who reads it, and the evaluator refuses such a rubric on load
(`evaluators.scoring.heuristics.check_signals`). A pattern's groups (`formatting`,
`voice_blocker`) are fields of the pattern in the rubric; a reader that reads a group
declares the group, so a group no reader knows (a typo) is refused too; and the patterns it
names must carry that group, so a name or a group taken away is refused, not ignored. A new
pattern joins a group in the rubric alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evaluators.rubric.loader import Rubric


@dataclass(frozen=True)
class RubricNames:
    """What one reader reads from the rubric, by name."""

    lexicons: tuple[str, ...] = ()
    word_sets: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    pattern_groups: tuple[str, ...] = ()
    detectors: tuple[str, ...] = ()  # learned detectors by name (`detectors.behaviours`)


# Reader ("signal empathy", "safety.claims", ...) → the names it reads.
READERS: dict[str, RubricNames] = {}


def reads_rubric(reader: str, *, lexicons: Iterable[str] = (), word_sets: Iterable[str] = (),
                 patterns: Iterable[str] = (), pattern_groups: Iterable[str] = (),
                 detectors: Iterable[str] = ()) -> RubricNames:
    """Declare what `reader` reads from the rubric; returns the declaration (for the reader's
    own use, e.g. the lexicons of a check)."""
    names = RubricNames(tuple(lexicons), tuple(word_sets), tuple(patterns), tuple(pattern_groups), tuple(detectors))
    if reader in READERS and READERS[reader] != names:
        raise ValueError(f"{reader!r} declares its rubric names twice")
    READERS[reader] = names
    return names


def _readers_of(kind: str) -> dict[str, list[str]]:
    """Name of a `kind` ("lexicons", ...) → the readers that declare it, in order."""
    found: dict[str, list[str]] = {}
    for reader, names in READERS.items():
        for name in getattr(names, kind):
            found.setdefault(name, []).append(reader)
    return found


def missing_names(rubric: Rubric) -> list[str]:
    """Every declared name `rubric` lacks, one problem each naming its readers; and every
    pattern group in the rubric no reader reads."""
    have = {
        "lexicons": set(rubric.lexicons),
        "word_sets": set(rubric.safety.word_sets),
        "patterns": set(rubric.patterns),
        "pattern_groups": {group for pattern in rubric.patterns.values() for group in pattern.groups},
        "detectors": set(rubric.detectors.behaviours),
    }
    where = {"lexicons": "lexicons.{}", "word_sets": "safety.word_sets.{}", "patterns": "patterns.{}",
             "pattern_groups": "patterns.*.groups: no pattern in group {!r}", "detectors": "detectors.behaviours.{}"}
    problems = []
    for kind, place in where.items():
        for name, readers in _readers_of(kind).items():
            if name not in have[kind]:
                missing = "" if kind == "pattern_groups" else ": missing"
                problems.append(f"{place.format(name)}{missing}; read by {', '.join(sorted(readers))}")
    for reader, names in READERS.items():
        # A reader that reads patterns by group and names some of them needs each named one in
        # its groups: taking "hashtag" out of `formatting` would switch that part of it off.
        for name in names.patterns:
            pattern = rubric.patterns.get(name)
            lacking = [group for group in names.pattern_groups if pattern is not None and group not in pattern.groups]
            if lacking:
                problems.append(f"patterns.{name}.groups: lacks {', '.join(lacking)}; read so by {reader}")
    known_groups = _readers_of("pattern_groups")
    for pattern_name, pattern in rubric.patterns.items():
        for group in pattern.groups:
            if group not in known_groups:
                problems.append(f"patterns.{pattern_name}.groups: no reader reads group {group!r}; "
                                f"known: {', '.join(sorted(known_groups))}")
    return problems


def pattern_groups(rubric: Rubric) -> dict[str, tuple[str, ...]]:
    """Group → the names of the rubric's patterns in it, in the rubric's order."""
    groups: dict[str, list[str]] = {}
    for name, pattern in rubric.patterns.items():
        for group in pattern.groups:
            groups.setdefault(group, []).append(name)
    return {group: tuple(names) for group, names in groups.items()}
