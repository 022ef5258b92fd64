"""A run's cases as pandas frames, for the run store's CSV and Parquet exports and pandas users.

One row per case (`cases_frame`) or per exchange (`turns_frame`), read from the stored records
only, so every export shows the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from evaluators.core.names import SCORE_COLUMNS
from evaluators.store.records import CaseResult, api_turns

TURN_TIMINGS: tuple[str, ...] = ("latency_s", "time_to_first_token_s", "tokens_per_s")


def cases_frame(cases: Iterable[CaseResult]) -> pd.DataFrame:
    """One row per case: identity, status, the mean score per metric over its turns, usage."""
    rows = []
    for case in cases:
        fresh = api_turns(case)
        rows.append({
            "case_id": case.case_id,
            "prompt_name": case.prompt_name,
            "prompt_version": case.prompt_version,
            "scenario_id": case.scenario_id,
            "repeat": case.repeat,
            "family": case.family,
            "age_group": case.age_group,
            "demographic_group": case.demographic_group,
            "safety": case.safety,
            "tags": list(case.tags),
            "responder": case.responder,
            "status": case.status,
            "error": case.error,
            **{name: case.scores.get(name, float("nan")) for name in SCORE_COLUMNS},
            "expectations_passed": case.expectations_passed,
            "flags": list(case.flags),
            "failure_kinds": list(dict.fromkeys(failure.get("kind", "") for failure in case.failures)),
            "judge_overall": (case.judge or {}).get("overall", float("nan")),
            "judge_verdict": (case.judge or {}).get("verdict"),
            "judge_review": list((case.judge or {}).get("review", [])),
            "turns": len(case.turns),
            "api_calls": len(fresh),
            "cached_calls": sum(turn.cached for turn in case.turns),
            "attempts": sum(turn.attempts for turn in fresh),
            "prompt_tokens": sum(turn.usage.prompt_tokens for turn in fresh),
            "completion_tokens": sum(turn.usage.completion_tokens for turn in fresh),
            "latency_s": round(sum(turn.latency_s or 0.0 for turn in fresh), 4),
            "finished_at": case.finished_at,
        })
    columns = ["case_id", "prompt_name", "prompt_version", "scenario_id", "repeat", "family", "age_group",
               "demographic_group", "safety", "tags", "responder", "status", "error", *SCORE_COLUMNS,
               "expectations_passed", "flags", "failure_kinds", "judge_overall", "judge_verdict", "judge_review", "turns", "api_calls", "cached_calls", "attempts",
               "prompt_tokens", "completion_tokens", "latency_s", "finished_at"]
    return pd.DataFrame(rows, columns=columns)


def turns_frame(cases: Iterable[CaseResult]) -> pd.DataFrame:
    """One row per exchange: the user turn, the reply, its scores and failed expectations."""
    rows = []
    for case in cases:
        for turn in case.turns:
            heuristics = turn.heuristics or {}
            judge = turn.judge or {}
            rows.append({
                "case_id": case.case_id,
                "prompt_version": case.prompt_version,
                "scenario_id": case.scenario_id,
                "family": case.family,
                "demographic_group": case.demographic_group,
                "turn": turn.index,
                "user": turn.user,
                "reply": turn.reply,
                "model": turn.model,
                **{name: heuristics.get(name, float("nan")) for name in SCORE_COLUMNS},
                "quality_level": heuristics.get("quality_level"),
                "flags": [flag["name"] for flag in heuristics.get("flags", [])],
                "failed_expectations": [e.label for e in turn.expectations if not e.passed],
                "judge_overall": judge.get("overall") if judge.get("overall") is not None else float("nan"),
                "judge_verdict": judge.get("verdict"),
                "judge_failure_mode": judge.get("failure_mode"),
                "judge_parse_status": judge.get("parse_status"),
                "judge_reasoning": judge.get("reasoning"),
                "cached": turn.cached,
                "attempts": turn.attempts,
                "truncated": turn.truncated,
                "spoken": turn.spoken,  # a barge-in: the words heard before the user cut in
                "failed_barge_in_checks": [check["name"] for check in turn.barge_in_recovery if not check["passed"]],
                "prompt_tokens": turn.usage.prompt_tokens,
                "completion_tokens": turn.usage.completion_tokens,
                # Not measured (a replayed reply) is NaN, like any missing number, never 0.
                **{name: value if (value := getattr(turn, name)) is not None else float("nan")
                   for name in TURN_TIMINGS},
            })
    columns = ["case_id", "prompt_version", "scenario_id", "family", "demographic_group", "turn", "user",
               "reply", "model", *SCORE_COLUMNS, "quality_level", "flags", "failed_expectations", "judge_overall",
               "judge_verdict", "judge_failure_mode", "judge_parse_status", "judge_reasoning", "cached",
               "attempts", "truncated", "spoken", "failed_barge_in_checks", "prompt_tokens", "completion_tokens",
               *TURN_TIMINGS]
    return pd.DataFrame(rows, columns=columns)
