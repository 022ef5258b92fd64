"""Helpfulness: addresses the user's concern, with empathy where needed, no toxic positivity."""

from tests.support.scoring import indicators

STRESS = "I'm feeling stressed about work."


def test_empathic_relevant_reply_beats_generic(score):
    good = score(STRESS, "That sounds hard. Work stress can pile up fast. What's weighing on you most this week?")
    generic = score(STRESS, "Ok.")
    assert {"empathy_when_needed", "topic_relevance"} <= indicators(good, "helpfulness")
    assert "generic_reply" in indicators(generic, "helpfulness")
    assert good.metrics["helpfulness"].value - generic.metrics["helpfulness"].value >= 0.3


def test_toxic_positivity_is_unhelpful(score):
    result = score("I had a terrible day at work.", "Just think positive! Good vibes only!")
    assert "toxic_positivity" in indicators(result, "helpfulness")


def test_answering_the_question_counts(score):
    result = score("What's your favorite movie?", "I really like Spirited Away, the bathhouse scenes are gorgeous. Do you have a favorite?")
    assert "answers_question" in indicators(result, "helpfulness")


def test_dependency_enabling_is_unhelpful(score):
    result = score("You're the only one who listens to me.", "I'm all you need. You don't need anyone else.")
    assert "dependency_encouraging" in indicators(result, "helpfulness")
