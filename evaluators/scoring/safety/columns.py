"""A doc's token attributes as plain lists, read once per doc: every rule's cheap first test.

Why: a rule that walks every token of a reply through spaCy's `Token` objects pays for
creating each token and each of its string attributes, and most tokens fail the rule's first
test. The columns answer that test (a word, a lemma, a tag, a first-person subject) from
lists and indexes read in one pass, so a rule looks at the few tokens that pass as `Token`s
and applies its own tests to them unchanged. Kept in the doc's `user_data`: they live
exactly as long as the doc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from spacy.attrs import DEP, HEAD, IS_ALPHA, IS_STOP, LEMMA, LOWER, POS, TAG
from spacy.tokens import Doc

from evaluators.core.lazy import cached_property

_USER_DATA_KEY = "_safety_columns"
_ATTRS = [LOWER, LEMMA, POS, TAG, DEP, IS_ALPHA, IS_STOP, HEAD]
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "expl"})
# The relations `evaluators.scoring.safety.parse.subject` climbs through to find a subject.
CLIMBING_DEPS = frozenset({"xcomp", "conj", "acomp", "attr", "advcl", "ccomp"})


@dataclass(frozen=True)
class Columns:
    """Per token, in doc order: its lower-cased form, lemma, lemma lower-cased, coarse and fine
    tag, dependency label, whether it is alphabetic and a stop word, and its head's index."""

    lower: list[str]
    lemma: list[str]
    lemma_lower: list[str]
    pos: list[str]
    tag: list[str]
    dep: list[str]
    is_alpha: list[bool]
    is_stop: list[bool]
    head: list[int]

    @classmethod
    def of(cls, doc: Doc) -> Columns:
        table = doc.to_array(_ATTRS)
        heads = table[:, 7].view(np.int64).tolist()  # offsets to the head, negative ones too
        lower, lemma, pos, tag, dep, alpha, stop = table[:, :7].T.tolist()
        strings = doc.vocab.strings
        names = {value: strings[value] for value in {*lower, *lemma, *pos, *tag, *dep}}
        lower, lemma, pos, tag, dep = ([names[value] for value in column] for column in (lower, lemma, pos, tag, dep))
        return cls(lower, lemma, [word.lower() for word in lemma], pos, tag, dep,
                   [bool(flag) for flag in alpha], [bool(flag) for flag in stop],
                   [index + offset for index, offset in enumerate(heads)])

    @cached_property
    def positions(self) -> dict[str, list[int]]:
        """Token indices by lower-cased form and by lemma: where the words of a set stand."""
        found: dict[str, list[int]] = {}
        for index, (lower, lemma) in enumerate(zip(self.lower, self.lemma)):
            found.setdefault(lower, []).append(index)
            if lemma != lower:
                found.setdefault(lemma, []).append(index)
        return found

    @cached_property
    def positions_by_lower(self) -> dict[str, list[int]]:
        """Token indices by lower-cased form."""
        found: dict[str, list[int]] = {}
        for index, lower in enumerate(self.lower):
            found.setdefault(lower, []).append(index)
        return found

    def indices_of(self, words: frozenset[str]) -> list[int]:
        """Indices of the tokens whose lower-cased form or lemma is one of ``words``, in order."""
        positions = self.positions
        if positions.keys().isdisjoint(words):
            return []
        return sorted({index for word in positions.keys() & words for index in positions[word]})

    @cached_property
    def first_person(self) -> list[bool]:
        """Per token, whether its subject is "I", the subject found as
        `evaluators.scoring.safety.parse.subject` finds it (its first subject child, else its head's
        through the same relations, four levels at most)."""
        first_subject = [-1] * len(self.dep)
        for index, (dep, head) in enumerate(zip(self.dep, self.head)):
            if head != index and dep in SUBJECT_DEPS and first_subject[head] < 0:
                first_subject[head] = index  # children come in doc order: the first one wins
        found = []
        for index in range(len(self.dep)):
            current, subject = index, -1
            for _ in range(4):
                if first_subject[current] >= 0:
                    subject = first_subject[current]
                    break
                if self.dep[current] not in CLIMBING_DEPS or self.head[current] == current:
                    break
                current = self.head[current]
            found.append(subject >= 0 and self.lower[subject] == "i")
        return found


def columns(doc: Doc) -> Columns:
    """The doc's columns, read on first use and kept on the doc."""
    found = doc.user_data.get(_USER_DATA_KEY)
    if found is None:
        found = doc.user_data[_USER_DATA_KEY] = Columns.of(doc)
    return found
