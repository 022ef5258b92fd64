"""Rubric lexicons compiled once into spaCy matchers.

`phrase` lexicons become lemma patterns that tolerate auxiliaries, adverbs and particles
between their words ("as we have discussed" matches "as we discuss"); a match whose extra
words or governing verb carry a negation ("I don't understand you") is set aside, because
the rubric's indicators are about what the reply says, not what it denies. `term` lexicons
are lower-cased word lists matched with a PhraseMatcher.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from spacy.language import Language
from spacy.attrs import LEMMA, LOWER
from spacy.matcher import Matcher, PhraseMatcher
from spacy.tokens import Doc, Span

from evaluators.nlp import has_lemmas
from evaluators.rubric import Rubric

NEGATION_WORDS = frozenset({"not", "n't", "never", "no", "nt", "cannot"})
# Words that may sit between the words of a phrase without changing what it says.
_FILLER = {"POS": {"IN": ["AUX", "ADV", "PART"]}, "OP": "?"}


@dataclass(frozen=True)
class LexiconMatch:
    lexicon: str
    text: str
    start: int
    end: int


# Inflected verb forms: matched by lemma so "as we discussed" also finds "as we discuss",
# "that sounds" finds "that sound", "I'm" finds "I am".
_INFLECTED_VERB_TAGS = frozenset({"VBD", "VBN", "VBP", "VBZ", "VB", "MD"})


def _pattern(entry: Doc, use_lemmas: bool) -> list[dict]:
    """Token pattern for one lexicon entry, with optional fillers between its words.

    Verbs match by lemma (any inflection); every other word matches by its lower-cased
    form, because the tagger may lemmatise it differently in the entry than in a reply
    ("challenging" is a verb alone, an adjective in "that sounds challenging"). Exact-value
    predicates only: set-membership predicates made the matcher slower than the parse.
    """
    pattern: list[dict] = []
    for index, token in enumerate(entry):
        if index:
            pattern.append(dict(_FILLER))
        by_lemma = use_lemmas and token.tag_ in _INFLECTED_VERB_TAGS and token.pos_ in ("VERB", "AUX")
        pattern.append({"LEMMA": token.lemma_} if by_lemma else {"LOWER": token.lower_})
    return pattern


class LexiconMatcher:
    """Finds the rubric lexicons that apply to one role ("reply" or "user") in a parsed text.

    Built once per evaluator and role: a user's message is searched only for the user-side
    lexicons (distress, crisis cues, ...), which keeps matching cheap.
    """

    def __init__(self, nlp: Language, rubric: Rubric, role: str = "reply") -> None:
        self._use_lemmas = has_lemmas(nlp)
        self._vocab = nlp.vocab
        self._terms = PhraseMatcher(nlp.vocab, attr="LOWER")
        # Phrase patterns are bucketed by their most telling word ("understand" for "I
        # understand"); a bucket's Matcher runs only on texts that contain that word. One
        # Matcher over all phrases tested every pattern at every token and cost more than
        # the rest of the scoring together.
        self._buckets: dict[int, dict[int, Matcher]] = {LOWER: {}, LEMMA: {}}
        # The longest pattern (in tokens, fillers included) of each bucket.
        self._widths: dict[int, dict[int, int]] = {LOWER: {}, LEMMA: {}}
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
        # An entry's pattern reads its tags and lemmas only: the parser and the entity
        # recogniser are skipped, which took most of the time to build the matchers.
        unused = [name for name in ("parser", "ner") if name in nlp.pipe_names]
        entry_docs = nlp.pipe((entry for _, entry in phrase_entries), disable=unused)
        for (name, entry), doc in zip(phrase_entries, entry_docs):
            key = f"{name}\x1f{entry}"
            self._entry_negations[key] = any(t.lower_ in NEGATION_WORDS for t in doc)
            pattern = _pattern(doc, self._use_lemmas)
            attr, value = _bucket_key(pattern, nlp)
            self._buckets[attr].setdefault(value, Matcher(nlp.vocab)).add(key, [pattern])
            widths = self._widths[attr]
            widths[value] = max(widths.get(value, 0), len(pattern))

    def _phrase_matches(self, doc: Doc) -> list[tuple[int, int, int]]:
        """Each bucket's Matcher run on windows around its word only, not the whole text.

        Every pattern of a bucket holds the bucket's word, so every match lies within the
        bucket's widest pattern of an occurrence of it: the windows give the same matches
        as the whole text, in the same order, at a fraction of the cost on long replies.
        """
        table = doc.to_array([LOWER, LEMMA])
        length = len(doc)
        matches: list[tuple[int, int, int]] = []
        for column, attr in enumerate((LOWER, LEMMA)):
            buckets = self._buckets[attr]
            values = table[:, column].tolist()
            for value in set(values) & buckets.keys():
                reach = self._widths[attr][value] - 1
                windows: list[list[int]] = []
                for position in (index for index, found in enumerate(values) if found == value):
                    start, end = max(0, position - reach), min(length, position + reach + 1)
                    if windows and start <= windows[-1][1]:
                        windows[-1][1] = end
                    else:
                        windows.append([start, end])
                for start, end in windows:
                    matches.extend((key, start + first, start + last)
                                   for key, first, last in buckets[value](doc[start:end]))
        return matches

    def find(self, doc: Doc) -> dict[str, list[LexiconMatch]]:
        """Lexicon name → non-negated matches in ``doc`` (longest match per start)."""
        found: dict[str, list[LexiconMatch]] = defaultdict(list)
        strings = doc.vocab.strings
        taken: set[tuple[str, int]] = set()
        for match_id, start, end in sorted(self._phrase_matches(doc), key=lambda m: (m[1], -(m[2] - m[1]))):
            key = strings[match_id]
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


def _bucket_key(pattern: list[dict], nlp: Language) -> tuple[int, int]:
    """The (attribute, value hash) of the pattern's least common required word."""
    required = [(attr, value) for token in pattern for attr, value in token.items() if attr in ("LEMMA", "LOWER")]
    attr, value = max(required, key=lambda item: (not nlp.vocab[item[1]].is_stop, len(item[1])))
    return (LEMMA if attr == "LEMMA" else LOWER), nlp.vocab.strings.add(value)


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
