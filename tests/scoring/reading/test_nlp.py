"""The text as the evaluators read it (evaluators/scoring/reading/nlp.py `as_read`)."""

from __future__ import annotations

import pytest

from evaluators.scoring.reading.nlp import as_read


@pytest.mark.parametrize(("written", "read"), [
    ("I\u2019m fine, it\u2019s \u201cgood\u201d", "I'm fine, it's \"good\""),
    ("hu\u200bman", "human"),             # zero-width space
    ("hu\u00adman", "human"),             # soft hyphen
    ("a\u00a0b", "a b"),                  # non-breaking space
    ("\uff28\uff49", "Hi"),               # full-width letters
    ("nul\x00 and bell\x07", "nul and bell"),
    ("caf\u00e9 \u00a1\u00c1nimo!", "caf\u00e9 \u00a1\u00c1nimo!"),  # letters of other languages stay
])
def test_as_read_folds_what_a_reader_cannot_see(written, read):
    assert as_read(written) == read


def test_as_read_keeps_line_breaks_and_tabs():
    text = "line one\nline two\r\n\tindented"
    assert as_read(text) == text


def test_plain_ascii_comes_back_as_the_same_object():
    text = "Hello there, how was your day?"
    assert as_read(text) is text
