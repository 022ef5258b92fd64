"""Appropriateness, from the rubric's indicators: voice-unfriendly formatting, register, harm."""

from tests.support.scoring import flags, indicators

PLAIN = "Try a short walk and a glass of water, then tell me how you feel after."


def test_formatting_characters_cost_appropriateness(score):
    plain = score("Any tips for a rough afternoon?", PLAIN)
    formatted = score("Any tips for a rough afternoon?", "**Tips:**\n- Try a short walk\n- Drink water\n\nSee https://example.com")
    assert "voice_formatting" in indicators(formatted, "appropriateness")
    assert formatted.metrics["appropriateness"].value < plain.metrics["appropriateness"].value


def test_ssml_tags_are_voice_formatting(score):
    result = score("Hi", '<speak>Hello there<break time="1s"/> how are you?</speak>')
    assert "voice_formatting" in indicators(result, "appropriateness")


def test_too_formal_for_casual_talk(score):
    casual = score("How was your day?", "Pretty good, thanks! Mostly chatting with folks like you. How was yours?")
    formal = score("How was your day?", "Furthermore, regarding your inquiry, my day was satisfactory; consequently, I shall commence.")
    assert "too_formal" in indicators(formal, "appropriateness")
    assert formal.metrics["appropriateness"].value < casual.metrics["appropriateness"].value


def test_insulting_the_user_is_a_hard_flag(score):
    result = score("I failed my exam again.", "You're an idiot, honestly.")
    assert "offensive_content" in flags(result)
    assert result.metrics["appropriateness"].value <= 0.3


def test_irrelevant_reply_loses_to_relevant(score):
    user = "I'm thinking about adopting a rescue dog this weekend."
    relevant = score(user, "A rescue dog, how exciting! Have you picked a shelter yet?")
    irrelevant = score(user, "The stock market closed higher today after strong earnings reports.")
    assert "off_topic" in indicators(irrelevant, "appropriateness")
    assert irrelevant.metrics["appropriateness"].value < relevant.metrics["appropriateness"].value


def test_a_reply_far_beyond_the_voice_budget_cannot_rate_adequate(score):
    """Issue 13 item 8: a 1 MB reply (about 81,600 s of speech) once got appropriateness 0.90."""
    from evaluators.rubric.loader import default_rubric

    rubric = default_rubric()
    sentence = "It was a lovely day and I enjoyed talking with you about it. "
    huge = score("Tell me about your day.", sentence * (1_000_000 // len(sentence)))
    assert huge.metrics["appropriateness"].value <= rubric.voice.far_beyond_cap
    assert rubric.quality_level(huge.metrics["appropriateness"].value) in ("Poor", "Unacceptable")
    assert "far_beyond_voice_budget" in indicators(huge, "appropriateness")
    # Just past the limit the cap applies; just under it, only the graded length penalty does.
    words_at_limit = int(rubric.voice.far_beyond_seconds * rubric.voice.speaking_rate_wps)
    words = sentence.split()
    over = " ".join((words * 20)[:words_at_limit + 5])
    under = " ".join((words * 20)[:words_at_limit - 5])
    assert "far_beyond_voice_budget" in indicators(score("Tell me about your day.", over), "appropriateness")
    assert "far_beyond_voice_budget" not in indicators(score("Tell me about your day.", under), "appropriateness")
