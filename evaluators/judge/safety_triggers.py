"""Which replies are safety-relevant, and why, from what a case already holds (ADR-003's triggered phase).

A reply goes to the safety judge when:
- it belongs to a safety scenario (`SAFETY_SCENARIO`);
- the quality judge judged it (`QUALITY_JUDGED`: a reason to ask, not a sign of risk);
- a harm detector (rubric `detectors.judge_triggers`) scored it at or above its `judge_from`,
  the low edge of its judge band, set out of fold so that 95% of its positives reach the judge;
- the user's message carries a risk cue the scorer read (crisis risk as the crisis rules and
  the crisis_risk detector combine it, or the crisis_cue / risk_cue words it counts).
Every persona conversation is judged once as a whole (`PERSONA_CONVERSATION`).

Why from stored data only: the release gate decides from stored cases, without a judge and
without scoring again, which replies needed the judge; it calls `planned_items` too. The
detector scores and the user's risk reading are on each turn's score record
(`turn.heuristics["detectors"]`, `["user_risk"]`). Reasons are sentences a person reads;
`reason_kind` groups them for counting. The scorer has no rule for delusional framing or
dependency cues in the user's message, so neither triggers here; the judge reads them where
it runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.judge.conversation import conversation_input
from evaluators.judge.result import JudgeInput
from evaluators.judge.stage import turn_inputs
from evaluators.rubric.loader import DetectorRules, Rubric, default_rubric
from evaluators.store.records import CaseResult, TurnResult

SAFETY_SCENARIO = "safety scenario"
QUALITY_JUDGED = "judged by the quality judge"
PERSONA_CONVERSATION = "persona conversation"
# The kinds the run summary counts reasons by (a detector or risk-cue reason is a sentence).
DETECTOR_BAND = "detector in its judge band"
RISK_CUE = "risk cue in the user's message"
BAND_WORDS = " in its judge band (from "
REASON_KINDS: tuple[str, ...] = (SAFETY_SCENARIO, PERSONA_CONVERSATION, DETECTOR_BAND, RISK_CUE, QUALITY_JUDGED)
Planned = tuple[JudgeInput, list[str]]
QUOTED_WORDS = 2  # words shown per kind of risk: enough to see why, short at 80 columns


def reason_kind(reason: str) -> str:
    """The kind of one reason: a fixed reason is its own kind; a sentence is read by its form."""
    if reason.startswith(RISK_CUE):
        return RISK_CUE
    if BAND_WORDS in reason:
        return DETECTOR_BAND
    return reason


def safety_relevant(reasons: list[str]) -> bool:
    """Any reason but the quality judge's makes a reply safety-relevant (the gate's test)."""
    return any(reason != QUALITY_JUDGED for reason in reasons)


def band_reasons(scores: Mapping[str, float], rules: DetectorRules) -> list[str]:
    """Each trigger detector scoring the reply at or above its judge_from, as a sentence."""
    found = []
    for name in rules.judge_triggers:
        score, start = scores.get(name), rules.behaviours[name].judge_from
        if score is not None and start is not None and score >= start:
            found.append(f"{name} {score:.2f}{BAND_WORDS}{start:g})")
    return found


def _quoted(words: list[str]) -> str:
    return ", ".join(f'"{word}"' for word in words[:QUOTED_WORDS])


def risk_reason(user_risk: Mapping[str, Mapping[str, list[str]]]) -> str | None:
    """The user's risk as the scorer read it, in one sentence; None where it read none."""
    parts = [f"crisis risk ({kind.replace('_', ' ')}: {_quoted(words)})"
             for kind, words in user_risk.get("crisis_risk", {}).items()]
    parts += [f"{lexicon.replace('_', ' ')} {_quoted(words)}" for lexicon, words in user_risk.get("cue_words", {}).items()]
    return f"{RISK_CUE}: {'; '.join(parts)}" if parts else None


def turn_reasons(turn: TurnResult, rules: DetectorRules) -> list[str]:
    """Why the turn's own stored readings send it to the judge (detector bands, risk cues)."""
    record = turn.heuristics or {}
    why = band_reasons(record.get("detectors") or {}, rules)
    risk = risk_reason(record.get("user_risk") or {})
    return why + ([risk] if risk else [])


def reply_reasons(case: CaseResult, rubric: Rubric | None = None) -> list[list[str]]:
    """Why each turn of the case goes to the safety judge (an empty list: it does not)."""
    rules = (rubric or default_rubric()).detectors
    quality = bool(case.judge) and not (case.judge or {}).get("skipped")
    reasons = []
    for turn in case.turns:
        why = [SAFETY_SCENARIO] if case.safety else []
        why += turn_reasons(turn, rules)
        if quality and turn.judge:
            why.append(QUALITY_JUDGED)
        reasons.append(why)
    return reasons


def planned_items(case: CaseResult, scenario=None, persona=None, *, rubric: Rubric | None = None) -> list[Planned]:
    """The case's items for the safety judge, each with why it was chosen."""
    items = [(item, why) for item, why in zip(turn_inputs(case, scenario), reply_reasons(case, rubric)) if why]
    if case.family == "personas" and case.turns:
        items.append((conversation_input(case, persona), [PERSONA_CONVERSATION]))
    return items


def reason_counts(reasons: list[list[str]]) -> dict[str, int]:
    """Items per kind of reason (an item with several reasons counts under each), every kind shown."""
    counts = dict.fromkeys(REASON_KINDS, 0)
    for why in reasons:
        for kind in dict.fromkeys(reason_kind(reason) for reason in why):
            counts[kind] = counts.get(kind, 0) + 1
    return counts
