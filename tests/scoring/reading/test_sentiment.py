"""The tone scores (evaluators/scoring/reading/sentiment.py) are VADER's own, to the last digit: its negation
and idiom checks only lower-case fewer words."""

from __future__ import annotations

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from evaluators.scoring.reading.sentiment import SentimentAnalyzer

TEXTS = [
    "VADER is smart, handsome, and funny.",
    "VADER is not smart, handsome, nor funny.",
    "I never was so happy! Without doubt the best day, kind of amazing though.",
    "That's the bomb, yeah right. It's not that bad, but it isn't good either.",
    "She is sort of sad, at least not the least bit angry; hardly a kiss of death.",
    "I wouldn't say it's great... NEVER this good, no not at all!!! 😊",
    "good", "", "   ", "no", "no good", "not bad at all", "Kind of good but really terrible",
]


def test_scores_are_vaders_own() -> None:
    ours, vader = SentimentAnalyzer(), SentimentIntensityAnalyzer()
    for text in TEXTS:
        assert ours.polarity_scores(text) == vader.polarity_scores(text), text
