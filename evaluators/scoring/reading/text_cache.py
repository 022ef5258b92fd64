"""What one scoring stream has already read, kept by content and bounded by a count.

A conversation scored turn by turn repeats itself: turn k's history is turn k-1's history
plus one message, and that message was turn k-1's user message. Kept by content, each text
is parsed once however many later turns read it, and a history's carried-over topics are
built from the previous turn's plus the one new turn's, so a conversation's cost grows with
its length, not with the square of it.

Everything kept is a pure function of its text (a parse, the rubric's lexicon matches on it,
its anchors, its language), so a cache hit gives exactly what a fresh parse would: records
do not depend on batch sizes or on what was scored before them. The cache lives as long as one
`HeuristicEvaluator.score_cases` stream and is dropped with it. Each of its tables is a
least-recently-used table with a fixed number of entries, so memory stays bounded on
streams of any length; a batch keeps what it is using until it is scored, whatever is evicted.
"""

from __future__ import annotations

from evaluators.scoring.reading.features import HistoryView, TextView, TurnReading
from evaluators.scoring.reading.language import SAMPLE_CHARS, LanguageCheck, LanguageGuess
from evaluators.scoring.reading.lru import LruTable

# Parsed texts kept across batches: enough for the replies and user messages of several
# hundred recent conversations (a conversation's turns are scored close together, so they
# hit). A parse costs about 0.7 KB per token (the doc and its tensor): some 30 MB for short
# spoken turns, under 400 MB even if every kept text were as long as MAX_CACHED_CHARS.
MAX_CACHED_PARSES = 2048
# Small entries (a history turn's text and anchors, a text's opening and language guess): a
# few hundred bytes for a spoken turn, some 50 MB all told at MAX_CACHED_CHARS each.
MAX_CACHED_TEXTS = 4096
# A history's view holds its turns and the union of their anchors, up to ~100 KB for a
# history at the parse limit. It is read once more, by the conversation's next turn, scored
# right after it: a table this size serves hundreds of conversations scored side by side.
MAX_CACHED_HISTORIES = 256
# What is kept across batches costs memory in proportion to the text's length, and long texts
# (pasted articles, runaway replies) rarely recur verbatim: past this many characters a text
# is shared within its batch only. Spoken replies and user turns are far shorter.
MAX_CACHED_CHARS = 1000

class TextCache:
    """Parsed texts by role, history turns' anchors, histories' views and language guesses.

    Every table is bounded: `max_parses` parsed views, `max_histories` histories and
    `max_texts` entries in each other table; texts longer than `max_chars` are not kept.

    - `views`: (role, text) → `TextView` (the parse and the role's lexicon matches), at
      most `max_parses` of them;
    - `turn_readings`: a history turn's text → its anchors and first-person claims (no parse
      is kept for them);
    - `histories`: a history's turns → its `HistoryView`, so the next turn's history is
      built from this one plus its last turn;
    - `languages`: a text's opening → the language identifier's guess for it.
    """

    def __init__(self, max_parses: int = MAX_CACHED_PARSES, max_texts: int = MAX_CACHED_TEXTS,
                 max_histories: int = MAX_CACHED_HISTORIES, max_chars: int = MAX_CACHED_CHARS) -> None:
        self.max_chars = max_chars
        self._evaluator: object | None = None
        self.views: LruTable[tuple[str, str], TextView] = LruTable(max_parses)
        self.turn_readings: LruTable[str, TurnReading] = LruTable(max_texts)
        self.histories: LruTable[tuple[str, ...], HistoryView] = LruTable(max_histories)
        # The guess is None for a text too short to call: kept in a 1-tuple to tell it from a miss.
        self.languages: LruTable[str, tuple[LanguageGuess | None]] = LruTable(max_texts)

    def serve(self, evaluator: object) -> None:
        """Bind the cache to the evaluator that fills it: lexicon matches are that rubric's,
        so another evaluator (another rubric) must not read them."""
        if self._evaluator is None:
            self._evaluator = evaluator
        elif self._evaluator is not evaluator:
            raise ValueError("this TextCache holds another evaluator's parses and matches; "
                             "give each evaluator its own")

    def sizes(self) -> dict[str, int]:
        """Entries held per table: what the bound limits."""
        return {"views": len(self.views), "turn_readings": len(self.turn_readings),
                "histories": len(self.histories), "languages": len(self.languages)}

    def keep_view(self, role: str, text: str, view: TextView) -> None:
        if len(text) <= self.max_chars:
            self.views.put((role, text), view)

    def keep_turn_reading(self, turn: str, reading: TurnReading) -> None:
        if len(turn) <= self.max_chars:
            self.turn_readings.put(turn, reading)

    def language_guess(self, language: LanguageCheck, text: str) -> LanguageGuess | None:
        """`language.guess(text)`, asked once per distinct opening of a text."""
        key = text[:SAMPLE_CHARS]
        known = self.languages.get(key)
        if known is None:
            known = (language.guess(key),)
            if len(key) <= self.max_chars:
                self.languages.put(key, known)
        return known[0]
