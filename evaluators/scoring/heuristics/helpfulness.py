"""Helpfulness: addresses what the user actually said or asked, with support where needed."""

from __future__ import annotations

from evaluators.scoring.heuristics.registry import Signal, along, fired, quote, signal
from evaluators.scoring.reading.features import CaseFeatures


@signal
def topic_relevance(f: CaseFeatures) -> Signal | None:
    """Topic words shared with the user's message, and to a lesser degree with the history."""
    shared = sorted(f.shared_with_user)
    earlier = sorted(f.shared_with_history)
    strength = along(len(shared) + 0.5 * len(earlier), f.shapes.topic_relevance)
    return fired(strength > 0, quote(shared + earlier), strength)


@signal(reads="exchange", lexicons=("empathy", "shared_understanding", "validation"))
def empathy_when_needed(f: CaseFeatures) -> Signal | None:
    if not f.user_distressed:
        return None
    hits = f.reply.hits("empathy") + f.reply.hits("validation") + f.reply.hits("shared_understanding")
    return fired(bool(hits), quote(hits))


@signal(reads="exchange")
def answers_question(f: CaseFeatures) -> Signal | None:
    """The user asked something and the reply answers it, not only with a counter-question.

    An answer of the kind asked for (a place to "where", a stance to "do you ...?") counts in
    full; a statement related to the question by meaning or topic words counts half.
    """
    if f.answer is None:
        return None
    how, evidence = f.answer
    return fired(True, quote([evidence]), 1.0 if how == "kind" else 0.5)


@signal(reads="exchange")
def question_ignored(f: CaseFeatures) -> Signal | None:
    """The user asked a question and the reply neither answers it nor relates to it.

    A counter-question about the same thing is no answer, but it is not ignoring either;
    only a reply that goes elsewhere counts.
    """
    if not f.user_questions or f.answer is not None or f.meaning is None or f.meaning_rules is None:
        return None
    question = f.user_questions[-1]
    if f.question_spans and (f.shared_with_user or f.meaning.similarity(
            f.case.response[:5000], question.text) >= f.meaning_rules.off_topic_below):
        return None
    return fired(True, f"not answered: {quote([question.text])}")
