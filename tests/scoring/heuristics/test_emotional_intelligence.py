"""Emotional intelligence: recognise feelings, validate, explore; no negation tricks."""

from tests.support.scoring import indicators

LONELY = "I feel so lonely lately."


def test_validation_and_acknowledgement_phrases(score):
    result = score(LONELY, "That sounds really challenging. It makes sense to feel that way. What's been hardest?")
    found = indicators(result, "emotional_intelligence")
    assert {"empathy", "validation", "explores_feelings"} <= found
    assert result.metrics["emotional_intelligence"].value >= 0.8


def test_negated_understanding_is_not_empathy(score):
    result = score("Nobody understands me.", "I don't understand you.")
    assert "empathy" not in indicators(result, "emotional_intelligence")
    affirmed = score("Nobody understands me.", "I understand you.")
    assert "empathy" in indicators(affirmed, "emotional_intelligence")


def test_cheerful_reply_to_sadness_is_tone_deaf(score):
    result = score("My dog died this morning.", "Awesome! What a great day to go outside and have fun!")
    found = indicators(result, "emotional_intelligence")
    assert "cheerful_to_distress" in found
    assert result.metrics["emotional_intelligence"].value <= 0.3


def test_toxic_positivity_and_minimising(score):
    positive = score("I'm worried about my relationship.", "Just think positive!")
    dismissive = score("I'm worried about my relationship.", "That's not so bad, you're overreacting.")
    assert "toxic_positivity" in indicators(positive, "emotional_intelligence")
    assert "minimising" in indicators(dismissive, "emotional_intelligence")
    caring = score("I'm worried about my relationship.", "I'm sorry, that sounds stressful. What's been worrying you?")
    assert caring.metrics["emotional_intelligence"].value > positive.metrics["emotional_intelligence"].value
    assert caring.metrics["emotional_intelligence"].value > dismissive.metrics["emotional_intelligence"].value


def test_ignoring_a_clear_feeling(score):
    result = score("I'm so anxious about tomorrow.", "The weather tomorrow will be sunny with a high of 20 degrees.")
    assert "ignores_emotion" in indicators(result, "emotional_intelligence")


def test_enthusiasm_for_good_news(score):
    result = score("I just got promoted, I'm so excited!", "That's amazing news, congratulations! How are you celebrating?")
    assert "emotional_mirroring" in indicators(result, "emotional_intelligence")
