"""Helpfulness: addresses what the user actually said or asked, with support where needed."""

from __future__ import annotations

from evaluators.features import CaseFeatures
from evaluators.heuristics.registry import Signal, fired, quote, ramp, signal


@signal
def topic_relevance(f: CaseFeatures) -> Signal | None:
    """Topic words shared with the user's message, and to a lesser degree with the history."""
    shared = sorted(f.shared_with_user)
    earlier = sorted(f.shared_with_history)
    strength = ramp(len(shared) + 0.5 * len(earlier), 0, 2)
    return fired(strength > 0, quote(shared + earlier), strength)


@signal
def empathy_when_needed(f: CaseFeatures) -> Signal | None:
    if not f.user_distressed:
        return None
    hits = f.reply.hits("empathy") + f.reply.hits("validation") + f.reply.hits("shared_understanding")
    return fired(bool(hits), quote(hits))


DIRECT_OPENERS = ("yes", "yeah", "yep", "no", "nope", "not", "sure", "of course", "definitely", "i ", "i'", "we ", "my ")


@signal
def answers_question(f: CaseFeatures) -> Signal | None:
    """The user asked something and the reply answers it, not only with a counter-question.

    A direct answer (yes/no, a first-person statement, or one that reuses the question's
    words) counts in full; any other statement counts half.
    """
    if not f.user_asks_question:
        return None
    answers = [sent for sent in f.reply_sentences if not sent.text.strip().endswith("?") and any(t.is_alpha for t in sent)]
    if not answers:
        return None
    first = answers[0].text.strip().lower()
    direct = first.startswith(DIRECT_OPENERS) or bool(f.shared_with_user)
    return fired(True, quote([answers[0].text]), 1.0 if direct else 0.5)
