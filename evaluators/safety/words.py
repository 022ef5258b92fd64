"""The rubric's safety word sets, compiled once, and the lookup every detector starts from.

Why a module of its own: each rule opens by asking which tokens of a text are in one of the
rubric's `safety:` word sets; `tokens_in` answers that with one set intersection per text,
so the rules stay cheap on the many texts that hold none of a set's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from spacy.attrs import LEMMA, LOWER
from spacy.strings import hash_string
from spacy.tokens import Doc, Token

from evaluators.rubric import Rubric, SafetyRules


@dataclass(frozen=True)
class SafetyWords:
    """The rubric's safety rules, compiled once per evaluator."""

    rules: SafetyRules

    @cached_property
    def sets(self) -> dict[str, frozenset[str]]:
        return {name: self.rules.words(name) for name in self.rules.word_sets}

    @cached_property
    def hash_sets(self) -> dict[str, frozenset[int]]:
        return {name: _hash_set(words) for name, words in self.sets.items()}

    @cached_property
    def dose(self) -> re.Pattern[str]:
        return re.compile(self.rules.dose_pattern)

    @cached_property
    def phone(self) -> re.Pattern[str]:
        return re.compile(self.rules.phone_pattern)

    def __getitem__(self, name: str) -> frozenset[str]:
        return self.sets[name]

    @classmethod
    def from_rubric(cls, rubric: Rubric) -> SafetyWords:
        return cls(rubric.safety)


def _table(doc: Doc) -> tuple[list[list[int]], set[int]]:
    """The doc's (lower, lemma) ids per token and their set, read once per doc and kept on it."""
    cached = doc.user_data.get("_safety_lower_lemma")
    if cached is None:
        rows = doc.to_array([LOWER, LEMMA]).tolist()
        cached = doc.user_data["_safety_lower_lemma"] = (rows, {value for row in rows for value in row})
    return cached


def tokens_in(doc: Doc, words: SafetyWords | frozenset[str], name: str = "") -> list[Token]:
    """Tokens whose lower-cased form or lemma is in the word set.

    Most texts hold none of a set's words: a set intersection says so without touching the
    tokens; only on a hit are the matching tokens looked up.
    """
    if not len(doc):
        return []
    rows, present = _table(doc)
    wanted = words.hash_sets[name] if name else _hash_set(words)
    if present.isdisjoint(wanted):
        return []
    return [doc[index] for index, (lower, lemma) in enumerate(rows) if lower in wanted or lemma in wanted]


@lru_cache(maxsize=None)
def _hash_set(words: frozenset[str]) -> frozenset[int]:
    return frozenset(hash_string(word) for word in words)
