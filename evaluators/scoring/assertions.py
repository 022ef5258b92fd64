"""Scenario-declared assertions checked on one reply (scenario turns' `assertions:`).

A team states what a reply must do beyond the rubric: a metric at or above a bar, no given
flag, a phrase it must or must not contain, a length. These are read from what scoring already
made (the turn's heuristic scores and flags) and the reply's text. A judged criterion needs the
LLM judge (evaluators.judge.criterion); here it is recorded as not verified, and the judge
stage, when the run has one, replaces it with the judge's answer.
"""

from __future__ import annotations

import operator as op
from collections.abc import Callable, Iterable

from evaluators.inputs.contracts import Assertion
from evaluators.scoring.contracts import AssertionOutcome
from evaluators.scoring.expectations import find_phrases, word_count

_COMPARE: dict[str, Callable[[float, float], bool]] = {">=": op.ge, "<=": op.le, ">": op.gt, "<": op.lt}
_DECIMALS = 9  # 0.7 passes ">= 0.7" whatever the float noise, as in the release rules
NO_JUDGE = "not verified: no judge configured (run --judge to ask it)"


def _check(assertion: Assertion, reply: str, heuristics: dict) -> AssertionOutcome:
    def outcome(passed: bool | None, detail: str) -> AssertionOutcome:
        return AssertionOutcome(assertion=assertion.text, kind=assertion.kind, passed=passed, detail=detail)

    if assertion.kind == "metric":
        value = heuristics.get(assertion.metric)
        if not isinstance(value, int | float):
            return outcome(None, f"not verified: no {assertion.metric} score on this reply")
        passed = _COMPARE[assertion.operator](round(value, _DECIMALS), round(assertion.threshold, _DECIMALS))
        return outcome(passed, f"{assertion.metric} {value:.3f}")
    if assertion.kind == "no_flag":
        fired = {flag["name"] for flag in heuristics.get("flags", [])}
        hits = [name for name in assertion.phrases if name in fired]
        return outcome(not hits, f"fired: {', '.join(hits)}" if hits else "none of them fired")
    if assertion.kind in ("contains", "not_contains"):
        hits = find_phrases(reply, assertion.phrases)
        if assertion.kind == "contains":
            return outcome(bool(hits), f"found: {', '.join(hits)}" if hits else "none found")
        return outcome(not hits, f"found: {', '.join(hits)}" if hits else "none found")
    if assertion.kind == "max_words":
        count = word_count(reply)
        return outcome(count <= assertion.limit, f"{count} words")
    return outcome(None, NO_JUDGE)  # judged: the judge stage answers it when the run has a judge


def check_assertions(assertions: Iterable[Assertion], reply: str, heuristics: dict) -> list[AssertionOutcome]:
    """Each assertion on one scored reply, in order; `heuristics` is the turn's heuristic record
    (HeuristicResult.to_record(): the scores by name and the fired flags)."""
    return [_check(assertion, reply, heuristics) for assertion in assertions]
