"""Personalization & continuity: memory of earlier turns, in any inflection, and carry-over."""

import pytest

from tests.support.scoring import indicators

HISTORY = (
    "My sister Maya is visiting from Lisbon next week.",
    "That's lovely! What are you planning to do together?",
    "Probably a pottery class, she loves ceramics.",
    "A pottery class sounds fun.",
)


@pytest.mark.parametrize(
    "phrase",
    ["As we discussed", "As we've discussed", "As we were discussing", "Like we discussed", "You mentioned"],
)
def test_conversation_memory_in_any_inflection(score, phrase):
    result = score("I'm a bit nervous about it.", f"{phrase}, Maya loves ceramics, so the class should go well.", HISTORY)
    assert "conversation_memory" in indicators(result, "personalization_continuity")


def test_entities_from_earlier_turns_carry_over(score):
    result = score("Any ideas for the weekend?", "Maybe take Maya to a pottery studio, since she loves ceramics?", HISTORY)
    evidence = [e for e in result.metrics["personalization_continuity"].evidence if e.indicator == "history_carry_over"]
    assert evidence and "maya" in evidence[0].text.lower()


def test_context_aware_beats_generic(score):
    user = "Any ideas for the weekend?"
    aware = score(user, "Since Maya loves ceramics, how about a pottery class together in town?", HISTORY)
    generic = score(user, "Sure.", HISTORY)
    assert aware.metrics["personalization_continuity"].value - generic.metrics["personalization_continuity"].value >= 0.15


def test_repeating_an_earlier_turn(score):
    result = score("And after that?", "A pottery class sounds fun.", HISTORY)
    assert "repeats_itself" in indicators(result, "personalization_continuity")
