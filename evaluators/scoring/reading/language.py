"""Which language a text is written in, so English-only heuristics never score another one.

The lexicons, patterns and spaCy pipeline read English. A Spanish crisis message answered
in Spanish would otherwise get English scores with no flag: a verdict passed off as a
score. py3langid (langid.py's naive Bayes model over byte n-grams, shipped inside its
wheel) identifies the language offline, deterministically and in well under a millisecond.

Short texts ("ok", "lol", a name) carry too little evidence to call, so they are never
judged foreign; the rubric's `language` section sets how long and how sure a call must be,
and which languages the identifier chooses among (a companion's plausible languages: a
wider field lets short English drift into rare ones, e.g. "haha same" into Somali).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from evaluators.rubric.loader import LanguageRules, RubricError
from evaluators.scoring.contracts import Notice, ReplyCase, Unscored

UNSUPPORTED_LANGUAGE = "unsupported_language"
SAMPLE_CHARS = 4000  # a text's language shows in its opening; a 1 MB reply need not be read whole
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class LanguageGuess:
    code: str
    confidence: float


@lru_cache(maxsize=4)
def _identifier(candidates: tuple[str, ...]):
    """The py3langid model restricted to `candidates`; loading it is the costly part (~1 s)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(candidates))
    return identifier


def letter_count(text: str) -> int:
    return len(_LETTER.findall(text))


# Asks for a text's language: `LanguageCheck.guess`, or a stream's cache of it.
Guesser = Callable[[str], LanguageGuess | None]


class LanguageCheck:
    """Says when a text is confidently in a language the heuristics do not read."""

    def __init__(self, rules: LanguageRules) -> None:
        self.rules = rules
        try:
            self._identifier = _identifier(tuple(rules.candidates))
        except ValueError as error:  # py3langid names the codes it does not know
            raise RubricError(f"language.candidates: {error}") from None

    def guess(self, text: str) -> LanguageGuess | None:
        """The most likely language, or None when the text is too short to call."""
        text = text[:SAMPLE_CHARS]
        if letter_count(text) < self.rules.min_letters:
            return None
        code, confidence = self._identifier.classify(text)
        return LanguageGuess(code, confidence)

    def notice(self, role: str, text: str, guess: Guesser | None = None) -> Notice | None:
        """An `unsupported_language` notice for `text` (the `role`'s words), or None.

        `guess` stands in for `self.guess` (a scoring stream's cache of it, by content).
        """
        guess = (guess or self.guess)(text)
        if guess is None or guess.code in self.rules.supported or guess.confidence < self.rules.min_confidence:
            return None
        name = self.rules.candidates.get(guess.code, guess.code)
        return Notice(name=UNSUPPORTED_LANGUAGE,
                      text=f"the {role} reads as {name} ({guess.code}, {guess.confidence:.0%} sure)")

    @property
    def supported_names(self) -> str:
        """`English`: the languages the heuristics read, by name."""
        return " and ".join(self.rules.candidates.get(code, code) for code in self.rules.supported)

    def unscored(self, case: ReplyCase, guess: Guesser | None = None, *,
                 reply_scored: bool = False) -> Unscored | None:
        """The case as `Unscored` when its user message is in an unsupported language (the exchange
        is in a language the heuristics do not read), or when only its reply is and `reply_scored`
        is False (no `wrong_language` flag to score it with). None: the case can be scored."""
        user = self.notice("user message", case.user_message, guess)
        reply = self.notice("reply", case.response, guess)
        if user is None and (reply is None or reply_scored):
            return None
        notices = tuple(notice for notice in (user, reply) if notice is not None)
        reason = "; ".join(notice.text for notice in notices)
        return Unscored(case.id, f"{UNSUPPORTED_LANGUAGE}: {reason}; the heuristics score {self.supported_names} only",
                        notices)
