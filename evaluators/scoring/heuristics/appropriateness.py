"""Appropriateness: fit for voice and for the context (register, safety, relevance)."""

from __future__ import annotations

from evaluators.scoring.heuristics.registry import Signal, along, fired, quote, signal
from evaluators.scoring.reading.features import CaseFeatures


@signal(reads="reply", lexicons=("formal_register",))
def too_formal(f: CaseFeatures) -> Signal | None:
    """Written-register connectives ("furthermore", "regarding") in casual speech."""
    hits = f.reply.hits("formal_register")
    return fired(bool(hits), quote(hits), along(len(hits), f.shapes.too_formal))
