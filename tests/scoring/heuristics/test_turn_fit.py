"""Signals relating a reply to the turn before it: meaning, answers, contradictions, follow-ups."""

import pytest

from tests.support.scoring import indicators

LOSS = "My dog died last week and I miss him so much."


def effect(result, metric: str, indicator: str) -> float:
    return next((item.effect for item in result.metrics[metric].evidence if item.indicator == indicator), 0.0)


def test_a_reply_related_in_other_words_is_relevant_and_an_unrelated_one_is_off_topic(score):
    related = score(LOSS, "I'm so sorry about your pet. Losing a companion like that hurts.")
    unrelated = score(LOSS, "The stock market went up three percent on Tuesday.")
    # No topic word is shared ("pet" is not "dog"): only the meaning relates them.
    assert "topic_relevance" not in indicators(related, "helpfulness")
    assert "meaning_relevance" in indicators(related, "helpfulness")
    assert "off_topic" not in indicators(related, "helpfulness")
    assert "off_topic" in indicators(unrelated, "helpfulness")
    assert "meaning_relevance" not in indicators(unrelated, "helpfulness")
    assert related.metrics["helpfulness"].value - unrelated.metrics["helpfulness"].value >= 0.3


def test_a_reply_made_of_the_users_words_gets_no_relevance_for_them(score):
    kitchen = "I finally finished painting my kitchen."
    borrowed = score(kitchen, "Painting the kitchen, finally finished.")
    own_words = score(kitchen, "Nice work, a fresh coat of paint makes a room feel brand new.")
    # Every word of the first reply but "the" is the user's: it relates nothing of its own.
    assert "meaning_relevance" not in indicators(borrowed, "helpfulness")
    assert "meaning_relevance" in indicators(own_words, "helpfulness")
    assert "meaning_relevance" in indicators(own_words, "personalization_continuity")


def test_borrowed_words_discount_the_similarity_by_their_share_squared(score):
    from evaluators.rubric.loader import default_rubric
    from evaluators.scoring.heuristics.registry import ramp

    result = score(LOSS, "Your dog died? I'm sorry, that is a heavy week.")
    item = next(item for item in result.metrics["helpfulness"].evidence if item.indicator == "meaning_relevance")
    # "similarity 0.xx to the message and recent turns, NN% of its words the user's"
    similarity = float(item.text.split()[1])
    share = int(item.text.split(", ")[-1].split("%")[0]) / 100
    assert 0 < share < 1
    rules = default_rubric().meaning
    weight = default_rubric().dimensions["helpfulness"].signals["meaning_relevance"]
    undiscounted = weight * ramp(similarity, rules.unrelated_similarity, rules.related_similarity)
    discounted = weight * ramp(similarity * (1 - share ** 2), rules.unrelated_similarity, rules.related_similarity)
    assert item.effect == pytest.approx(discounted, abs=0.01)
    assert item.effect < undiscounted


def test_the_context_fades_with_distance_and_stops_at_recent_turns():
    from evaluators.rubric.loader import default_rubric
    from evaluators.scoring.contracts import ReplyCase
    from evaluators.scoring.reading.features import context_parts

    rules = default_rubric().meaning
    history = [f"turn {number}" for number in range(1, 11)]
    parts = context_parts(ReplyCase(history=history, user_message="now", response="ok"), rules)
    assert [text for text, _ in parts] == ["now", *reversed(history[-rules.recent_turns:])]
    weights = [weight for _, weight in parts]
    assert weights[0] == 1.0
    assert weights[1:] == pytest.approx([rules.history_decay ** step for step in range(1, rules.recent_turns + 1)])


def test_meaning_relevance_does_not_grow_with_length(score):
    once = score(LOSS, "I'm so sorry about your dog.")
    twice = score(LOSS, "I'm so sorry about your dog. I'm so sorry about your dog. I'm so sorry about your dog.")
    assert effect(once, "helpfulness", "meaning_relevance") > 0
    assert effect(twice, "helpfulness", "meaning_relevance") == pytest.approx(
        effect(once, "helpfulness", "meaning_relevance"), abs=0.02)


@pytest.mark.parametrize(("question", "answer", "supplied"), [
    ("Where do you live?", "Near the coast in Oregon.", "Oregon"),
    ("Do you like jazz?", "Yeah, a lot, especially live sets.", "yeah"),
    ("How many siblings do you have?", "Two, an older one and a younger one.", "Two"),
    ("Why did you pick that book?", "Because the cover reminded me of the sea.", "Because"),
    ("When is the concert?", "It's next Friday evening.", "next Friday"),
    # Spoken yes/no questions need no auxiliary in front: no question word asks for a stance.
    ("You have a paid subscription?", "Yeah, it's really good!", "yeah"),
    ("So you don't get sick a lot?", "Not nearly as much as I used to!", "not"),
    ("How was your weekend?", "Pretty good, thanks!", "good"),
    # An open question about "you" is answered by the speaker speaking of themself; "what"
    # by a statement that names something.
    ("What do you do for work?", "I own a small bakery near the station.", "I own"),
    ("What is your favourite show?", "The Walking Dead, easily.", "Dead"),
])
def test_an_answer_of_the_kind_asked_for_counts_in_full(score, question, answer, supplied):
    result = score(question, answer)
    [evidence] = [item for item in result.metrics["helpfulness"].evidence if item.indicator == "answers_question"]
    assert evidence.effect == pytest.approx(0.25)  # the rubric's full weight
    assert supplied in evidence.text
    assert "question_ignored" not in indicators(result, "helpfulness")


def test_a_question_answered_with_a_new_topic_is_ignored(score):
    answered = score("Where do you live?", "Near the coast in Oregon.")
    ignored = score("Where do you live?", "I like pizza with pineapple on it.")
    assert "question_ignored" in indicators(ignored, "helpfulness")
    assert "answers_question" not in indicators(ignored, "helpfulness")
    assert answered.metrics["helpfulness"].value - ignored.metrics["helpfulness"].value >= 0.3


def test_a_counter_question_on_the_same_topic_is_not_ignoring(score):
    result = score("Do you like hiking?", "Which trails do you like hiking on?")
    assert "question_ignored" not in indicators(result, "helpfulness")


PREVIOUS = ("Hi, what do you like?", "I love dogs, they are the best.")


@pytest.mark.parametrize("reply", ["I don't love dogs.", "Honestly, I hate dogs."])
def test_saying_the_opposite_of_the_previous_turn_is_a_contradiction(score, reply):
    result = score("So what do you think about dogs?", reply, PREVIOUS)
    assert "contradicts_previous" in indicators(result, "personalization_continuity")
    [evidence] = [item for item in result.metrics["personalization_continuity"].evidence
                  if item.indicator == "contradicts_previous"]
    assert '"I love dogs, they are the best."' in evidence.text
    assert "contradicts_previous" in indicators(result, "trust_boundaries")


@pytest.mark.parametrize("reply", ["I love dogs, especially big ones.", "I don't love cats though."])
def test_agreeing_with_the_previous_turn_or_talking_of_something_else_is_no_contradiction(score, reply):
    result = score("So what do you think about dogs?", reply, PREVIOUS)
    assert "contradicts_previous" not in indicators(result, "personalization_continuity")


def test_only_the_companions_own_turn_is_held_against_it(score):
    # The user (two turns back from the reply) loved dogs; the companion may not.
    result = score("Do you?", "I don't love dogs.", ("I love dogs.", "That's nice to hear."))
    assert "contradicts_previous" not in indicators(result, "personalization_continuity")


def test_a_specific_follow_up_draws_the_user_in_and_a_generic_one_does_not(score):
    trip = "I just got back from my trip to Japan."
    specific = score(trip, "Welcome back! How was Japan? Did you get to see Kyoto?")
    generic = score(trip, "Welcome back! How are you doing today?")
    assert "specific_follow_up" in indicators(specific, "conversational_quality")
    assert "specific_follow_up" in indicators(specific, "personalization_continuity")
    assert "specific_follow_up" not in indicators(generic, "conversational_quality")
    assert "follow_up_question" in indicators(generic, "conversational_quality")
    assert (specific.metrics["conversational_quality"].value
            > generic.metrics["conversational_quality"].value)


def test_echoing_the_users_message_back_is_repetition_not_engagement(score):
    echo = score("I finally finished painting my kitchen.", "You finally finished painting your kitchen.")
    assert "repeats_itself" not in indicators(echo, "personalization_continuity")  # "you/your" differ
    parrot = score("I finally finished painting my kitchen.", "I finally finished painting my kitchen!")
    assert "repeats_itself" in indicators(parrot, "personalization_continuity")


def test_scores_are_the_same_one_by_one_and_as_a_batch():
    """The sentence vectors are cached by text; sharing them across a batch changes no score."""
    from evaluators.scoring.api import default_evaluator
    from evaluators.scoring.contracts import ReplyCase

    evaluator = default_evaluator()
    cases = [
        ReplyCase(id="loss", user_message=LOSS, response="I'm so sorry about your pet."),
        ReplyCase(id="where", user_message="Where do you live?", response="Near the coast in Oregon."),
        ReplyCase(id="dogs", history=list(PREVIOUS), user_message="So what do you think about dogs?",
                  response="I don't love dogs."),
        ReplyCase(id="again", history=list(PREVIOUS), user_message=LOSS, response="How old was he?"),
        ReplyCase(id="long", history=[f"I keep thinking about walk number {n} with him." for n in range(9)],
                  user_message=LOSS, response="Those walks sound like they meant a lot to you both."),
    ]
    batch = list(evaluator.score_cases(cases))
    alone = [next(evaluator.score_cases([case])) for case in reversed(cases)][::-1]
    assert [result.model_dump() for result in batch] == [result.model_dump() for result in alone]


@pytest.mark.parametrize("reaction", ["That sounds a bit boring.", "Oh nice, I do that too!"])
def test_a_reaction_to_what_the_user_said_is_no_non_sequitur(score, reaction):
    # It points back at the user's words ("that", "too") and shares none of them.
    result = score("I work nights as a security guard at the mall.", reaction)
    assert "off_topic" not in indicators(result, "helpfulness")


def test_too_grading_a_word_is_no_agreement_and_an_unrelated_reply_stays_off_topic(score):
    result = score("I work nights as a security guard at the mall.", "My printer is too slow today.")
    assert "off_topic" in indicators(result, "helpfulness")


def test_a_statement_about_oneself_does_not_answer_a_question_about_someone_else(score):
    result = score("What did your sister say?", "I like pizza with pineapple on it.")
    assert "answers_question" not in indicators(result, "helpfulness")
    assert "question_ignored" in indicators(result, "helpfulness")
