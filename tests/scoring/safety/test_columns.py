"""The token columns (evaluators/scoring/safety/columns.py) say what the tokens themselves say: the
rules filter on them first, and read "I" as a subject from them, so a disagreement would
drop a token a rule should have read."""

from __future__ import annotations

import pytest

from evaluators.scoring.reading.nlp import load_pipeline
from evaluators.scoring.safety.columns import columns
from evaluators.scoring.safety.parse import subject

TEXTS = [
    "I have an older sister, and I grew up in Maine.",
    "I want to go swimming tomorrow, and I think I will.",
    "Just got back from the gym. My knees hurt and I'm starving!",
    "You should tell yourself: I am enough. We went to Paris last year.",
    "There is a cat, and I am a dancer who loves steak and jazz.",
    "I, honestly, don't know what I'd do; she said I could come.",
    "",
    "   ",
]


@pytest.mark.parametrize("text", TEXTS)
def test_columns_match_the_tokens_and_first_person(text: str) -> None:
    doc = load_pipeline()(text)
    cols = columns(doc)
    assert len(cols.lower) == len(doc)
    for token in doc:
        i = token.i
        assert (cols.lower[i], cols.lemma[i], cols.lemma_lower[i]) == (token.lower_, token.lemma_, token.lemma_.lower())
        assert (cols.pos[i], cols.tag[i], cols.dep[i], cols.head[i]) == (token.pos_, token.tag_, token.dep_, token.head.i)
        assert (cols.is_alpha[i], cols.is_stop[i]) == (token.is_alpha, token.is_stop)
        found = subject(token)
        assert cols.first_person[i] == (found is not None and found.lower_ == "i")
    words = frozenset({"i", "be", "sister", "go", "enough", "nothing-here"})
    assert cols.indices_of(words) == [t.i for t in doc if t.lower_ in words or t.lemma_ in words]
    assert columns(doc) is cols  # read once, kept on the doc
