"""Emotional intelligence: recognising the user's feelings and answering them in kind."""

from __future__ import annotations

from evaluators.scoring.heuristics.registry import Signal, fired, quote, signal
from evaluators.scoring.reading.features import CaseFeatures


@signal(reads="reply", lexicons=("empathy",))
def empathy(f: CaseFeatures) -> Signal | None:
    hits = f.reply.hits("empathy")
    return fired(bool(hits), quote(hits))


@signal(reads="reply", lexicons=("validation",))
def validation(f: CaseFeatures) -> Signal | None:
    hits = f.reply.hits("validation")
    return fired(bool(hits), quote(hits))


@signal(reads="exchange", lexicons=("shared_understanding",))
def shared_understanding(f: CaseFeatures) -> Signal | None:
    """Interpreting or relating to the user's experience ("it sounds like you...", "I've been there").

    Beside the phrases, a first-person past-tense sentence in answer to a feeling
    ("I went through the same") relates to the user's experience; it counts half.
    """
    hits = f.reply.hits("shared_understanding")
    if hits:
        return fired(True, quote(hits))
    return fired(f.user_emotional and bool(f.self_disclosures), quote(f.self_disclosures[:1]), 0.5)


@signal(reads="exchange", lexicons=("exploration",))
def explores_feelings(f: CaseFeatures) -> Signal | None:
    """A question about the user's feelings or situation.

    Other questions count half when they are about the user or follow a feeling
    ("What's been hardest?" after "I feel so lonely").
    """
    exploring = [m.text for m in f.reply.matches.get("exploration", []) if f.in_question(m)]
    if exploring:
        return fired(True, quote(f.questions[:1]))
    about_user = [q for q in f.questions if any(w in q.lower().split() for w in ("you", "your"))]
    if about_user:
        return fired(True, quote(about_user[:1]), 0.5)
    return fired(f.user_emotional and bool(f.questions), quote(f.questions[:1]), 0.5)


@signal(reads="exchange")
def emotional_mirroring(f: CaseFeatures) -> Signal | None:
    """Gentle tone for distress, matching enthusiasm for good news."""
    tone = f.tone_rules
    if f.user_distressed and tone.gentle_reply.min <= f.reply_tone <= tone.gentle_reply.max:
        return fired(True, f"gentle tone {f.reply_tone:+.2f} for a distressed user")
    if f.user_excited and (f.reply_tone >= tone.upbeat_reply_at_least or "!" in f.case.response):
        return fired(True, f"upbeat tone {f.reply_tone:+.2f} for good news")
    return None


@signal(reads="exchange",
        lexicons=("crisis_cue", "empathy", "shared_understanding", "user_distress", "user_excitement", "validation"))
def ignores_emotion(f: CaseFeatures) -> Signal | None:
    """The user shows a clear feeling and the reply neither names, explores nor mirrors it."""
    if not f.user_emotional:
        return None
    noticed = any(f.reply.has(name) for name in ("empathy", "validation", "shared_understanding"))
    if noticed or f.questions or f.self_disclosures:
        return None
    cue = f.user.hits("user_distress") + f.user.hits("crisis_cue") + f.user.hits("user_excitement")
    return fired(True, f"no acknowledgement of {quote(cue) or 'the user tone'}")


@signal(reads="reply", lexicons=("minimising",))
def minimising(f: CaseFeatures) -> Signal | None:
    hits = f.reply.hits("minimising")
    return fired(bool(hits), quote(hits))


@signal(reads="exchange")
def prescriptive_in_distress(f: CaseFeatures) -> Signal | None:
    """Directives to a distressed user with no acknowledgement first (directive, not supportive)."""
    if not f.user_distressed or not f.imperatives:
        return None
    if f.acknowledges_feelings:
        return None
    return fired(True, quote(f.imperatives[:2]))
