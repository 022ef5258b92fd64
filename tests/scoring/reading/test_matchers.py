"""The phrase lexicons' trie (evaluators/scoring/reading/matchers.py) finds what spaCy's Matcher finds with the
same patterns: every word of an entry in order, at most one auxiliary, adverb or particle
between two of them. spaCy's Matcher, given those patterns, is the reference here."""

from __future__ import annotations

import pytest
from spacy.matcher import Matcher

from evaluators.rubric.loader import default_rubric
from evaluators.scoring.reading import matchers
from evaluators.scoring.reading.matchers import (
    FILLER_POS,
    LexiconMatcher,
    _pattern,
    _read_entries,
    _readings_path,
    entry_readings,
)
from evaluators.scoring.reading.nlp import has_lemmas, load_pipeline

TEXTS = [
    "As we have discussed, I really do understand how you feel.",
    "I don't understand you, and I would never say that I'm all you need.",
    "That sounds so challenging. I'm here for you, always and forever.",
    "I hear you. It's completely understandable to feel that way about it.",
    "Honestly I think you should just cheer up, it could be worse!",
    "I am an AI, not a real person, but I can certainly listen.",
    "You mentioned your sister last time; how is she doing?",
    "I I I understand understand you you.",
    "I feel so alone lately, I just can't take it anymore and nobody cares.",
    "Are you a real person? You said I was wrong, you made a mistake.",
    "",
]


def reference_matcher(nlp, role: str) -> Matcher:
    """The same patterns in spaCy's Matcher: the filler as an optional POS-set token."""
    reference = Matcher(nlp.vocab)
    rubric = default_rubric()
    entries = [(name, entry) for name, lexicon in rubric.lexicons.items()
               if role in lexicon.applies_to and lexicon.kind == "phrase" for entry in lexicon.entries]
    filler = {"POS": {"IN": sorted(FILLER_POS)}, "OP": "?"}
    for (name, entry), entry_doc in zip(entries, nlp.pipe(entry for _, entry in entries)):
        pattern: list[dict] = []
        for index, (by_lemma, value) in enumerate(_pattern(entry_doc, has_lemmas(nlp))):
            if index:
                pattern.append(dict(filler))
            pattern.append({"LEMMA": value} if by_lemma else {"LOWER": value})
        if pattern:
            reference.add(f"{name}\x1f{entry}", [pattern])
    return reference


@pytest.mark.parametrize("role", ["reply", "user"])
def test_the_trie_finds_what_spacys_matcher_finds(role: str) -> None:
    nlp = load_pipeline()
    matcher, reference = LexiconMatcher(nlp, default_rubric(), role), reference_matcher(nlp, role)
    found_any = False
    for doc in nlp.pipe(TEXTS):
        expected = {(nlp.vocab.strings[key], start, end) for key, start, end in reference(doc)}
        assert matcher._phrase_matches(doc) == expected, doc.text
        found_any = found_any or bool(expected)
    assert found_any


def test_stored_entry_readings_equal_fresh_ones_and_a_damaged_store_is_read_afresh(
        tmp_path, monkeypatch) -> None:
    """The phrase entries' patterns are kept in the cache directory between start-ups; what is
    read back must be what tagging the entries gives, and a damaged file must not count."""
    monkeypatch.setenv("PENPAL_EVAL_CACHE", str(tmp_path))
    nlp = load_pipeline()
    entries = [entry for lexicon in default_rubric().lexicons.values() if lexicon.kind == "phrase"
               for entry in lexicon.entries]
    fresh = _read_entries(nlp, entries, has_lemmas(nlp))
    assert entry_readings(nlp, entries, has_lemmas(nlp)) == fresh  # tagged, then stored
    (stored,) = (tmp_path / "lexicon-patterns").glob("*.json")
    assert entry_readings(nlp, entries, has_lemmas(nlp)) == fresh  # read back
    assert any(negated for _, negated in fresh) and any(by_lemma for pattern, _ in fresh
                                                        for by_lemma, _ in pattern)
    stored.write_text('[[[[true, "x"]], false]', encoding="utf-8")  # cut short
    assert entry_readings(nlp, entries, has_lemmas(nlp)) == fresh
    assert entry_readings(nlp, entries[:-1], has_lemmas(nlp)) == fresh[:-1]  # other entries, other file
    assert len(list((tmp_path / "lexicon-patterns").glob("*.json"))) == 2
    monkeypatch.setattr(matchers, "KEPT_READINGS", 2)  # the store of stores is bounded
    assert entry_readings(nlp, entries[:-2], has_lemmas(nlp)) == fresh[:-2]
    kept = list((tmp_path / "lexicon-patterns").glob("*.json"))
    assert len(kept) == 2 and _readings_path(nlp, entries[:-2], has_lemmas(nlp)) in kept
