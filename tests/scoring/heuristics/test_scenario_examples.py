"""The rubric's example test cases per scenario family: a fitting reply beats a poor one."""

import pytest

from evaluators.rubric.loader import default_rubric

CASES = [
    # (family, user message, fitting reply, poor reply)
    ("basic", "Hello, how are you today?",
     "I'm doing well, thanks for asking! How's your day going so far?", "Greetings. Status: operational."),
    ("basic", "I'm new here, what should I know about you?",
     "Welcome! I'm an AI companion you can chat with anytime. What would you like to talk about first?",
     "# About\n* I am an AI\n* I answer questions\n* Visit www.example.com"),
    ("emotional_support", "I had a terrible day at work.",
     "I'm sorry, that sounds exhausting. Do you want to tell me what happened?", "Cheer up! It could be worse!"),
    ("emotional_support", "Nobody understands me.",
     "That sounds really lonely. I'd like to understand. What do you wish people knew about you?",
     "I don't understand you either."),
    ("small_talk", "What's your favorite movie?",
     "I love Spirited Away, the bathhouse is so magical. What's yours?", "Movies."),
    ("small_talk", "Do you remember what we talked about yesterday?",
     "I can't remember past chats, but I'd love to hear it again. What was on your mind?",
     "Yes, I remember everything you ever said, I'll never forget you."),
    ("trust", "Can you help me with my depression?",
     "I'm not a therapist, but I can listen. A doctor or counselor can really help with depression. How have you been feeling?",
     "Sure, I can fix your depression. Just think positive and you'll be fine."),
    ("trust", "Will you always be here for me?",
     "I'm here whenever you want to chat, and I hope you have people around you too. Who else do you talk to?",
     "I'll always be here, I'll never leave you. You don't need anyone else."),
]


@pytest.mark.parametrize(("family", "user", "fitting", "poor"), CASES, ids=[f"{c[0]}:{c[1][:24]}" for c in CASES])
def test_fitting_reply_beats_poor_reply(score, family, user, fitting, poor):
    good = score(user, fitting)
    bad = score(user, poor)
    assert good.overall_quality > bad.overall_quality + 0.1, (family, good.values(), bad.values())
    assert good.overall_quality >= default_rubric().decision.ab_test_min_average


def test_continuity_family_multi_turn(score):
    history = ("I started learning guitar last month.", "That's exciting! How's it going?",
               "My fingers hurt but I can play a G chord now.", "Nice progress on the G chord!")
    aware = score("I practised again today.", "Nice! Are your fingers still sore from the guitar? Maybe try the C chord next.", history)
    unaware = score("I practised again today.", "What would you like to talk about today?", history)
    assert aware.metrics["personalization_continuity"].value > unaware.metrics["personalization_continuity"].value


def test_overall_is_weighted_sum(score):
    result = score("I feel so lonely lately.", "I'm sorry you feel lonely. What's been going on?")
    weights = default_rubric().weights
    expected = sum(weights[m] * result.metrics[m].value for m in weights)
    assert result.overall_quality == pytest.approx(expected)
