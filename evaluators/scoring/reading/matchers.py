"""Rubric lexicons compiled once into matchers.

`phrase` lexicons become lemma patterns that tolerate auxiliaries, adverbs and particles
between their words ("as we have discussed" matches "as we discuss"); a match whose extra
words or governing verb carry a negation ("I don't understand you") is set aside, because
the rubric's indicators are about what the reply says, not what it denies. `term` lexicons
are lower-cased word lists matched with a PhraseMatcher.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import spacy
from spacy.language import Language
from spacy.matcher import PhraseMatcher
from spacy.tokens import Doc, Span

from evaluators.core.locations import cache_dir
from evaluators.rubric.loader import Rubric
from evaluators.scoring.function_words import PHRASE_NEGATORS
from evaluators.scoring.reading.nlp import has_lemmas
from evaluators.scoring.reading.offline import write_json
from evaluators.scoring.safety.columns import columns

NEGATION_WORDS = PHRASE_NEGATORS
# Words that may sit between the words of a phrase without changing what it says: at most one
# token with one of these coarse tags between two words of the entry.
FILLER_POS = frozenset({"AUX", "ADV", "PART"})


@dataclass(frozen=True)
class LexiconMatch:
    lexicon: str
    text: str
    start: int
    end: int


# Inflected verb forms: matched by lemma so "as we discussed" also finds "as we discuss",
# "that sounds" finds "that sound", "I'm" finds "I am".
_INFLECTED_VERB_TAGS = frozenset({"VBD", "VBN", "VBP", "VBZ", "VB", "MD"})


def _pattern(entry: Doc, use_lemmas: bool) -> tuple[tuple[bool, str], ...]:
    """The words of one lexicon entry, each as (by lemma, the value it must have).

    Verbs match by lemma (any inflection); every other word matches by its lower-cased
    form, because the tagger may lemmatise it differently in the entry than in a reply
    ("challenging" is a verb alone, an adjective in "that sounds challenging").
    """
    words = []
    for token in entry:
        by_lemma = use_lemmas and token.tag_ in _INFLECTED_VERB_TAGS and token.pos_ in ("VERB", "AUX")
        words.append((True, token.lemma_) if by_lemma else (False, token.lower_))
    return tuple(words)


Reading = tuple[tuple[tuple[bool, str], ...], bool]  # an entry's pattern, and its own negation

# Bumped when `_pattern` or the negation test changes what a stored reading holds.
READINGS_FORMAT = 1
# Stores kept in the cache directory, newest first (about 40 KB each, one per set of entries).
KEPT_READINGS = 16


def _read_entries(nlp: Language, entries: list[str], use_lemmas: bool) -> list[Reading]:
    """Tag and lemmatise the entries: an entry's pattern reads its tags and lemmas only, so
    the parser and the entity recogniser are skipped."""
    unused = [name for name in ("parser", "ner") if name in nlp.pipe_names]
    return [(_pattern(doc, use_lemmas), any(t.lower_ in NEGATION_WORDS for t in doc))
            for doc in nlp.pipe(entries, disable=unused)]


def _readings_path(nlp: Language, entries: list[str], use_lemmas: bool) -> Path:
    """Named by everything a reading depends on: the entries, the pipeline and its version,
    spaCy's version, whether lemmas are read, and the format."""
    key = json.dumps([READINGS_FORMAT, spacy.__version__, nlp.meta.get("lang"), nlp.meta.get("name"),
                      nlp.meta.get("version"), nlp.pipe_names, use_lemmas, entries])
    return cache_dir() / "lexicon-patterns" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def entry_readings(nlp: Language, entries: list[str], use_lemmas: bool) -> list[Reading]:
    """Each phrase entry's pattern and whether it holds a negation, read once per rubric and
    pipeline and kept in the cache directory: tagging the rubric's ~800 entries took half a
    second of every start-up, the larger part of a first score card beyond the model loads.
    A damaged or unwritable store is read afresh; a stored reading equals a fresh one, since
    its name holds all it depends on."""
    path = _readings_path(nlp, entries, use_lemmas)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        readings = [(tuple((bool(by_lemma), str(value)) for by_lemma, value in pattern), bool(negated))
                    for pattern, negated in stored]
        if len(readings) == len(entries):
            return readings
    except (OSError, ValueError, TypeError):
        pass  # absent or damaged: read the entries afresh
    readings = _read_entries(nlp, entries, use_lemmas)
    try:
        write_json(path, readings)
        _forget_oldest(path.parent)
    except OSError:
        pass  # a read-only cache directory costs the next start-up the same half second
    return readings


def _forget_oldest(folder: Path) -> None:
    """Keep the `KEPT_READINGS` newest stores: every edit of a rubric's lexicons writes one."""
    stores = sorted(folder.glob("*.json"), key=lambda store: store.stat().st_mtime, reverse=True)
    for store in stores[KEPT_READINGS:]:
        store.unlink(missing_ok=True)


@dataclass
class _Node:
    """A trie of the phrase patterns, one word per level: the keys of the entries that end at
    this word, and the words that may come next, by lower-cased form and by lemma."""

    ends: list[str] = field(default_factory=list)
    by_lower: dict[str, _Node] = field(default_factory=dict)
    by_lemma: dict[str, _Node] = field(default_factory=dict)

    def add(self, word: tuple[bool, str]) -> _Node:
        by_lemma, value = word
        return (self.by_lemma if by_lemma else self.by_lower).setdefault(value, _Node())


class LexiconMatcher:
    """Finds the rubric lexicons that apply to one role ("reply" or "user") in a parsed text.

    Built once per evaluator and role: a user's message is searched only for the user-side
    lexicons (distress, crisis cues, ...), which keeps matching cheap.
    """

    def __init__(self, nlp: Language, rubric: Rubric, role: str = "reply") -> None:
        self._use_lemmas = has_lemmas(nlp)
        self._terms = PhraseMatcher(nlp.vocab, attr="LOWER")
        # The phrase patterns as a trie walked from each token: a text's words lead through
        # it only as far as some entry goes, so a pattern that cannot match costs nothing.
        # spaCy's Matcher tested every pattern at every token (a set-valued POS test for the
        # fillers, in Python) and cost more than the rest of the scoring together.
        self._phrases = _Node()
        # Whether an entry itself holds a negation ("I don't know"): then a negation in
        # the match is the entry's own, not a denial of it.
        self._entry_negations: dict[str, bool] = {}
        phrase_entries: list[tuple[str, str]] = []
        for name, lexicon in rubric.lexicons.items():
            if role not in lexicon.applies_to:
                continue
            if lexicon.kind == "term":
                self._terms.add(name, list(nlp.tokenizer.pipe(lexicon.entries)))
            else:
                phrase_entries.extend((name, entry) for entry in lexicon.entries)
        readings = entry_readings(nlp, [entry for _, entry in phrase_entries], self._use_lemmas)
        for (name, entry), (pattern, negated) in zip(phrase_entries, readings, strict=True):
            key = f"{name}\x1f{entry}"
            self._entry_negations[key] = negated
            node = self._phrases
            for word in pattern:
                node = node.add(word)
            if pattern:
                node.ends.append(key)

    def _phrase_matches(self, doc: Doc) -> set[tuple[str, int, int]]:
        """Every (entry key, start, end) whose entry's words are found at start, in order, each
        next word right after the one before or after one filler (`FILLER_POS`) between them:
        all the ways a pattern matches, as spaCy's Matcher finds them."""
        cols = columns(doc)
        lowers, lemmas, tags = cols.lower, cols.lemma, cols.pos  # coarse tags
        length = len(lowers)
        root = self._phrases
        found: set[tuple[str, int, int]] = set()
        for start in range(length):
            by_lower, by_lemma = root.by_lower.get(lowers[start]), root.by_lemma.get(lemmas[start])
            if by_lower is None and by_lemma is None:
                continue  # no entry starts with this word: the common case
            # (node reached, position of its word); the first word has no filler before it.
            frontier = [(node, start) for node in (by_lower, by_lemma) if node is not None]
            while frontier:
                node, at = frontier.pop()
                found.update((key, start, at + 1) for key in node.ends)
                if not node.by_lower and not node.by_lemma:
                    continue
                for position in (at + 1, at + 2):
                    if position >= length:
                        break
                    for following in (node.by_lower.get(lowers[position]), node.by_lemma.get(lemmas[position])):
                        if following is not None:
                            frontier.append((following, position))
                    if tags[position] not in FILLER_POS:
                        break  # the token after the word is no filler: nothing may come after it
        return found

    def find(self, doc: Doc) -> dict[str, list[LexiconMatch]]:
        """Lexicon name → non-negated matches in ``doc`` (longest match per start)."""
        found: dict[str, list[LexiconMatch]] = defaultdict(list)
        strings = doc.vocab.strings
        taken: set[tuple[str, int]] = set()
        for key, start, end in sorted(self._phrase_matches(doc), key=lambda m: (m[1], -(m[2] - m[1]), m[0])):
            lexicon = key.split("\x1f", 1)[0]
            if (lexicon, start) in taken:
                continue
            span = doc[start:end]
            if not self._entry_negations[key] and _is_negated(span):
                continue
            taken.add((lexicon, start))
            found[lexicon].append(LexiconMatch(lexicon, span.text, start, end))
        for match_id, start, end in self._terms(doc):
            lexicon = strings[match_id]
            found[lexicon].append(LexiconMatch(lexicon, doc[start:end].text, start, end))
        return found


def _is_negated(span: Span) -> bool:
    """True when a negation sits inside the match or hangs off a verb of it."""
    for token in span:
        if token.lower_ in NEGATION_WORDS:
            return True
        if token.pos_ in ("VERB", "AUX") and any(child.dep_ == "neg" for child in token.children):
            return True
    head = span.root.head
    if head.i < span.start or head.i >= span.end:
        return any(child.dep_ == "neg" and child.i < span.start for child in head.children)
    return False
