"""Conversational quality: 10–30 spoken words, engaging, no formatting, easy to say."""

from tests.support.scoring import indicators

USER = "Can you tell me a joke?"
GOOD = "Sure! Why don't skeletons fight each other? They don't have the guts. Want another one?"


def test_ideal_length_and_question_score_well(score):
    result = score(USER, GOOD)
    assert {"spoken_length_fit", "follow_up_question", "contractions"} <= indicators(result, "conversational_quality")
    assert result.metrics["conversational_quality"].value >= 0.7


def test_over_fifty_words_is_too_long_for_voice(score):
    long_reply = " ".join([GOOD] * 5)
    result = score(USER, long_reply)
    assert "too_long_for_voice" in indicators(result, "conversational_quality")
    assert result.metrics["conversational_quality"].value < score(USER, GOOD).metrics["conversational_quality"].value


def test_list_formatting_and_line_breaks_are_penalised(score):
    listy = "Here are jokes:\n\n1. Skeletons lack guts.\n2. Atoms make up everything.\n3. Eggs crack up.\n\n*Enjoy!*"
    result = score(USER, listy)
    found = indicators(result, "conversational_quality")
    assert {"voice_formatting", "line_breaks"} <= found


def test_jargon_is_hard_to_speak(score):
    jargon = ("Epistemologically, anthropomorphization of computational conversationalists "
              "necessitates interdisciplinary methodological considerations regarding intersubjectivity.")
    result = score("What do you think about AI?", jargon)
    assert "hard_to_speak" in indicators(result, "conversational_quality")


def test_one_word_reply_is_flat(score):
    flat = score("Hello, how are you today?", "Fine.")
    warm = score("Hello, how are you today?", "I'm doing great, thanks for asking! How's your day going so far?")
    assert flat.metrics["conversational_quality"].value < warm.metrics["conversational_quality"].value
