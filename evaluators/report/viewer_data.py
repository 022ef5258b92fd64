"""What the per-case viewer shows, as JSON: every case of a run with its turns, scores,
evidence, flags, assertions, judge reasoning and typed failures.

Read from the run store only (the viewer changes nothing). The page renders it with
textContent, never as markup: a reply may well contain `<script>`.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.core.names import METRIC_NAMES, OVERALL, SCORE_COLUMNS
from evaluators.release.failures import case_failures
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult, TurnResult, version_order

EVIDENCE_PER_TURN = 8


def _evidence(turn: TurnResult) -> list[dict]:
    """The indicators that moved the turn's scores most, each with its metric and effect."""
    evidence = (turn.heuristics or {}).get("evidence") or {}
    items = [{"metric": metric, "indicator": item.get("indicator"), "effect": item.get("effect", 0.0),
              "text": item.get("text") or ""}
             for metric, entries in evidence.items() if metric != OVERALL for item in entries]
    items.sort(key=lambda item: -abs(item["effect"] or 0.0))
    return items[:EVIDENCE_PER_TURN]


def _turn(turn: TurnResult) -> dict:
    heuristics = turn.heuristics or {}
    judge = turn.judge or {}
    return {
        "index": turn.index, "user": turn.user, "reply": turn.reply, "truncated": turn.truncated,
        "scores": {name: heuristics.get(name) for name in SCORE_COLUMNS},
        "evidence": _evidence(turn),
        "flags": [{"name": flag.get("name"), "text": flag.get("text") or flag.get("description") or ""}
                  for flag in heuristics.get("flags", [])],
        "expectations": [outcome.model_dump() for outcome in turn.expectations],
        "assertions": [outcome.model_dump() for outcome in turn.assertions],
        "judge": {"overall": judge.get("overall"), "verdict": judge.get("verdict"),
                  "reasoning": judge.get("reasoning") or "", "failure_mode": judge.get("failure_mode")}
        if judge else None,
    }


def viewer_cases(cases: Sequence[CaseResult], rubric: Rubric) -> dict:
    """The viewer's data: the versions in order, and every case with its turns."""
    versions = sorted({case.prompt_version for case in cases}, key=version_order)
    return {
        "metrics": [*METRIC_NAMES, OVERALL],
        "versions": versions,
        "cases": [{
            "id": case.case_id, "version": case.prompt_version, "scenario": case.scenario_id,
            "family": case.family, "safety": case.safety, "status": case.status, "error": case.error,
            "scores": case.scores, "flags": case.flags,
            "failures": [failure.as_dict() | {"label": failure.label} for failure in case_failures(case, rubric)],
            "judge": {"overall": case.judge.get("overall"), "verdict": case.judge.get("verdict")}
            if case.judge else None,
            "turns": [_turn(turn) for turn in case.turns],
        } for case in sorted(cases, key=lambda case: (version_order(case.prompt_version), case.scenario_id))],
    }
