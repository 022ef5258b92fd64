"""Replies the signals cannot read, scored as the failures they are: silence and another language.

A voice companion that says nothing, or answers an English speaker in Spanish, has failed the
turn: its user hears silence, or words they may not follow. Leaving such a reply unscored would
keep the case from completing and the version from a decision; scoring its words with English
lexicons would invent evidence. So neither is read: the reply gets the rubric's
`silent_reply` or `wrong_language` disqualifier, whose cap every metric it names takes, with
the reason on the flag and on each metric's evidence.

A user message in another language is different: the exchange as a whole is in a language the
heuristics do not read, and it stays unscored (`unsupported_language`, see
evaluators.scoring.reading.language). A rubric without these disqualifiers keeps the older
behaviour: such a reply is left unscored with its reason.
"""

from __future__ import annotations

from evaluators.core.names import METRIC_NAMES
from evaluators.rubric.loader import Rubric
from evaluators.scoring.contracts import Evidence, Flag, HeuristicResult, MetricScore, Notice, ReplyCase

SILENT_REPLY = "silent_reply"
WRONG_LANGUAGE = "wrong_language"
# Disqualifiers decided before any signal is read (no signal function stands behind them).
READING_FLAGS: tuple[str, ...] = (SILENT_REPLY, WRONG_LANGUAGE)
SILENCE_REASON = "the reply is empty: the companion said nothing"


def is_silent(case: ReplyCase) -> bool:
    """Nothing to say aloud: empty or whitespace only, as a reader sees it (invisible characters dropped)."""
    return not case.response.strip()


def wrong_language_reason(reply: Notice, supported: str) -> str:
    """`the reply reads as Spanish (es, 99% sure); the conversation is in English`."""
    return f"{reply.text}; the conversation is in {supported}"


def disqualified_result(case: ReplyCase, flag: str, reason: str, rubric: Rubric) -> HeuristicResult:
    """The reply scored by the one disqualifier that applies to it, without reading its words.

    Each metric the flag caps starts at its dimension's base and takes the cap, the evidence
    saying why; a metric the rubric does not cap keeps its base (nothing was read to move it).
    Overall quality follows the rubric's rule for a flagged reply.
    """
    rule = rubric.disqualifiers[flag]
    metrics = {}
    for name in METRIC_NAMES:
        base = rubric.dimensions[name].base
        if name in rule.caps and base > rule.cap:
            evidence = [Evidence(indicator=f"capped_by_{flag}", text=reason, effect=round(rule.cap - base, 4))]
            metrics[name] = MetricScore(value=rule.cap, evidence=evidence)
        else:
            metrics[name] = MetricScore(value=min(base, rule.cap) if name in rule.caps else base)
    weighted = sum(rubric.weights[name] * metrics[name].value for name in METRIC_NAMES)
    overall = rubric.flagged_overall(weighted)
    return HeuristicResult(
        id=case.id, metrics=metrics, overall_quality=overall, quality_level=rubric.quality_level(overall),
        flags=[Flag(name=flag, description=rule.description, text=reason)],
        overall_evidence=[Evidence(indicator=f"capped_by_{flag}", text=reason, effect=round(overall - weighted, 4))],
    )
