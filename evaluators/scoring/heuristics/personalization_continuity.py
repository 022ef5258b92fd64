"""Personalization & continuity: building on what was said before, in the user's own terms."""

from __future__ import annotations

from evaluators.scoring.heuristics.registry import Signal, along, fired, quote, signal
from evaluators.scoring.reading.features import WORD_TOKENS, CaseFeatures


@signal(lexicons=("continuity",))
def conversation_memory(f: CaseFeatures) -> Signal | None:
    """Explicit memory ("as we discussed", "you mentioned"); half credit with no history to recall."""
    hits = f.reply.hits("continuity")
    return fired(bool(hits), quote(hits), 1.0 if f.case.history else 0.5)


@signal
def history_carry_over(f: CaseFeatures) -> Signal | None:
    """Entities, noun chunks and topic words from earlier turns that the reply picks up again."""
    carried = sorted(f.shared_with_history)
    return fired(bool(carried), quote(carried), along(len(carried), f.shapes.history_carry_over))


@signal(reads="reply", lexicons=("personal_framing",))
def personal_framing(f: CaseFeatures) -> Signal | None:
    hits = f.reply.hits("personal_framing")
    return fired(bool(hits), quote(hits))


@signal
def repeats_itself(f: CaseFeatures) -> Signal | None:
    """The reply is (nearly) a turn already said in this conversation, the user's message
    included: echoing the user's words back scores as relevant by meaning, but says nothing."""
    mine = f.reply_word_set
    if len(mine) < 3:
        return None
    for turn in f.case.history:
        if _same_words(mine, frozenset(WORD_TOKENS.findall(turn.lower()))):
            return fired(True, quote([turn]))
    if _same_words(mine, f.user_word_set):
        return fired(True, quote([f.case.user_message]))
    return None


def _same_words(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Nearly the same words: four in five of all the words the two turns use are shared."""
    return bool(theirs) and len(mine & theirs) / len(mine | theirs) >= 0.8


INFORMAL_MARKERS = frozenset({"lol", "haha", "omg", "u", "ur", "gonna", "wanna", "gotta", "yeah", "nah", "kinda"})


@signal(reads="exchange")
def mirrors_register(f: CaseFeatures) -> Signal | None:
    """Answers a casual user casually (contractions): adapting to the user's style.

    Spoken conversation is casual by default, so contractions count half even when the
    user writes formally, and in full when the user's own message is casual (contractions,
    all lower case, chat words).
    """
    if not f.contractions:
        return None
    message = f.case.user_message
    casual = (
        ("'" in message or "’" in message)
        or (message == message.lower() and any(c.isalpha() for c in message))
        or bool(set(message.lower().split()) & INFORMAL_MARKERS)
    )
    return fired(True, quote(f.contractions), 1.0 if casual else 0.5)


@signal
def contradicts_previous(f: CaseFeatures) -> Signal | None:
    """The reply says the opposite of what the companion said a turn or two before
    ("I love dogs" then "I don't love dogs"): an inconsistent character loses trust."""
    found = f.contradiction
    if found is None:
        return None
    earlier, now = found
    return fired(True, f"{quote([earlier.text])} then {quote([now.text])}")
