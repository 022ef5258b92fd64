"""Conversational quality: natural, engaging, easy to say and to follow by ear."""

from __future__ import annotations

from evaluators.scoring.heuristics.registry import Signal, along, clip, fired, quote, ramp, signal
from evaluators.scoring.reading.features import CaseFeatures


@signal(reads="reply")
def spoken_length_fit(f: CaseFeatures) -> Signal | None:
    """1 inside the rubric's ideal 10–30 words, falling off on either side."""
    ideal = f.voice_rules.ideal_words
    words = f.word_count
    if words < ideal.min:
        strength = words / ideal.min
    elif words <= ideal.max:
        strength = 1.0
    else:
        strength = 1.0 - ramp(words, ideal.max, f.voice_rules.long_words)
    return fired(strength > 0, f"{words} words (ideal {ideal.min:g}-{ideal.max:g})", strength)


@signal(reads="reply")
def contractions(f: CaseFeatures) -> Signal | None:
    return fired(bool(f.contractions), quote(f.contractions))


@signal(reads="reply", lexicons=("empathy", "validation"))
def warmth(f: CaseFeatures) -> Signal | None:
    """Warm, approachable tone: positive VADER tone or an empathic acknowledgement."""
    if f.acknowledges_feelings:
        return fired(True, quote(f.reply.hits("empathy") + f.reply.hits("validation")))
    strength = along(f.reply_tone, f.tone_rules.warm_reply)
    return fired(strength > 0, f"tone {f.reply_tone:+.2f}", strength)


@signal(reads="reply")
def line_breaks(f: CaseFeatures) -> Signal | None:
    allowed = f.voice_rules.max_line_breaks
    strength = ramp(f.line_breaks, allowed, allowed + f.shapes.line_breaks_full_beyond)
    return fired(strength > 0, f"{f.line_breaks} line breaks", strength)


@signal(reads="reply")
def hard_to_speak(f: CaseFeatures) -> Signal | None:
    """Long words and dense sentences (textstat syllables and Flesch reading ease)."""
    if f.word_count < 5:
        return None
    rules = f.voice_rules
    shapes = f.shapes
    by_syllables = ramp(f.syllables_per_word, rules.max_syllables_per_word,
                        rules.max_syllables_per_word + shapes.syllables_full_beyond)
    by_ease = ramp(-f.reading_ease, -rules.min_reading_ease, -rules.min_reading_ease + shapes.reading_ease_full_below)
    strength = clip(max(by_syllables, by_ease))
    return fired(
        strength > 0,
        f"{f.syllables_per_word:.2f} syllables/word, reading ease {f.reading_ease:.0f}",
        strength,
    )


@signal(reads="reply", lexicons=("robotic",))
def robotic_phrasing(f: CaseFeatures) -> Signal | None:
    hits = f.reply.hits("robotic")
    return fired(bool(hits), quote(hits))


@signal(reads="reply")
def self_repetition(f: CaseFeatures) -> Signal | None:
    """The reply repeats its own word sequences ("i am a student . i am a student"): robotic."""
    words = [word.lower() for word in f.words]
    if len(words) < 8:
        return None
    trigrams = list(zip(words, words[1:], words[2:]))
    repeated = 1 - len(set(trigrams)) / len(trigrams)
    strength = along(repeated, f.shapes.self_repetition)
    return fired(strength > 0, f"{repeated:.0%} of word triples repeated", strength)
