"""VADER's tone scores, computed without VADER's per-character and per-word repeated work.

Why: vaderSentiment 3.3.2 rebuilds the text one character at a time to spell out its emojis,
even when it has none, and its negation and idiom checks rebuild the lower-cased list of all
the text's words each time a sentiment word is scored (three times per word), to read at
most six of them. Here a text without emojis is taken as it is, and the two checks
lower-case only the words they read; the rest is VADER's own code, so the scores are VADER's
to the last digit (tests/scoring/reading/test_sentiment.py).
"""

from __future__ import annotations

from vaderSentiment.vaderSentiment import (
    BOOSTER_DICT,
    N_SCALAR,
    SPECIAL_CASES,
    SentimentIntensityAnalyzer,
    SentiText,
    negated,
)


class SentimentAnalyzer(SentimentIntensityAnalyzer):
    """`SentimentIntensityAnalyzer`, quicker on texts without emojis and on sentiment words."""

    def __init__(self) -> None:
        super().__init__()
        # VADER looks emojis up one character at a time: only one-character keys ever match.
        self._emoji_characters = frozenset(emoji for emoji in self.emojis if len(emoji) == 1)

    def polarity_scores(self, text: str) -> dict[str, float]:
        """VADER's scores; a text with no emoji is what VADER's spelling-out would give back."""
        if not self._emoji_characters.isdisjoint(text):
            return super().polarity_scores(text)
        # From here on, VADER's own `polarity_scores` after its emoji step.
        text = text.strip()
        sentitext = SentiText(text)
        sentiments: list[float] = []
        words_and_emoticons = sentitext.words_and_emoticons
        for i, item in enumerate(words_and_emoticons):
            valence = 0
            # check for vader_lexicon words that may be used as modifiers or negations
            if item.lower() in BOOSTER_DICT:
                sentiments.append(valence)
                continue
            if (i < len(words_and_emoticons) - 1 and item.lower() == "kind" and
                    words_and_emoticons[i + 1].lower() == "of"):
                sentiments.append(valence)
                continue
            sentiments = self.sentiment_valence(valence, sentitext, item, i, sentiments)
        sentiments = self._but_check(words_and_emoticons, sentiments)
        return self.score_valence(sentiments, text)

    @staticmethod
    def _negation_check(valence: float, words_and_emoticons: list[str], start_i: int, i: int) -> float:
        def lower(index: int) -> str:
            return str(words_and_emoticons[index]).lower()

        if start_i == 0:
            if negated([lower(i - (start_i + 1))]):  # 1 word preceding lexicon word (w/o stopwords)
                valence = valence * N_SCALAR
        if start_i == 1:
            if lower(i - 2) == "never" and (lower(i - 1) == "so" or lower(i - 1) == "this"):
                valence = valence * 1.25
            elif lower(i - 2) == "without" and lower(i - 1) == "doubt":
                valence = valence
            elif negated([lower(i - (start_i + 1))]):  # 2 words preceding the lexicon word position
                valence = valence * N_SCALAR
        if start_i == 2:
            if lower(i - 3) == "never" and (lower(i - 2) == "so" or lower(i - 2) == "this") or \
                    (lower(i - 1) == "so" or lower(i - 1) == "this"):
                valence = valence * 1.25
            elif lower(i - 3) == "without" and (lower(i - 2) == "doubt" or lower(i - 1) == "doubt"):
                valence = valence
            elif negated([lower(i - (start_i + 1))]):  # 3 words preceding the lexicon word position
                valence = valence * N_SCALAR
        return valence

    @staticmethod
    def _special_idioms_check(valence: float, words_and_emoticons: list[str], i: int) -> float:
        def lower(index: int) -> str:
            return str(words_and_emoticons[index]).lower()

        onezero = f"{lower(i - 1)} {lower(i)}"
        twoonezero = f"{lower(i - 2)} {lower(i - 1)} {lower(i)}"
        twoone = f"{lower(i - 2)} {lower(i - 1)}"
        threetwoone = f"{lower(i - 3)} {lower(i - 2)} {lower(i - 1)}"
        threetwo = f"{lower(i - 3)} {lower(i - 2)}"
        for seq in (onezero, twoonezero, twoone, threetwoone, threetwo):
            if seq in SPECIAL_CASES:
                valence = SPECIAL_CASES[seq]
                break
        if len(words_and_emoticons) - 1 > i:
            zeroone = f"{lower(i)} {lower(i + 1)}"
            if zeroone in SPECIAL_CASES:
                valence = SPECIAL_CASES[zeroone]
        if len(words_and_emoticons) - 1 > i + 1:
            zeroonetwo = f"{lower(i)} {lower(i + 1)} {lower(i + 2)}"
            if zeroonetwo in SPECIAL_CASES:
                valence = SPECIAL_CASES[zeroonetwo]
        # check for booster/dampener bi-grams such as 'sort of' or 'kind of'
        for n_gram in (threetwoone, threetwo, twoone):
            if n_gram in BOOSTER_DICT:
                valence = valence + BOOSTER_DICT[n_gram]
        return valence
