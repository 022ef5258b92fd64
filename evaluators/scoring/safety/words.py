"""The rubric's safety word sets, compiled once, and the lookup every detector starts from.

Why a module of its own: each rule opens by asking which tokens of a text are in one of the
rubric's `safety:` word sets; `tokens_in` answers that from the text's index of its words,
so the rules stay cheap on the many texts that hold none of a set's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from spacy.tokens import Doc, Token

from evaluators.rubric.loader import Rubric, SafetyRules
from evaluators.scoring.safety.columns import columns


@dataclass(frozen=True)
class SafetyWords:
    """The rubric's safety rules, compiled once per evaluator."""

    rules: SafetyRules

    @cached_property
    def sets(self) -> dict[str, frozenset[str]]:
        return {name: self.rules.words(name) for name in self.rules.word_sets}

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


def tokens_in(doc: Doc, words: SafetyWords | frozenset[str], name: str = "") -> list[Token]:
    """Tokens whose lower-cased form or lemma is in the word set, in order.

    Most texts hold none of a set's words: the doc's index of its words (`Columns.positions`)
    says so without touching the tokens; only on a hit are the matching tokens looked up.
    """
    if not len(doc):
        return []
    return [doc[index] for index in columns(doc).indices_of(words[name] if name else words)]
