"""A run's figures per prompt version: counts, means, expectations, usage, cost, latency and
the judge's own figures, as the run's summary.json and the terminal show them.

One function per shape, so every report and the release rules read the same numbers (the flat
per-case and per-turn frames are the run store's: evaluators.store.frames). Failed cases are
counted but never enter a mean: a missing reply is not a score of zero.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from evaluators.core.completion import Usage
from evaluators.core.names import METRIC_NAMES, OVERALL, SCORE_COLUMNS
from evaluators.inputs.pricing import Price, price_for
from evaluators.judge.calibration_record import CalibrationBook
from evaluators.judge.reliability import same_family_warning, verbosity_bias
from evaluators.judge.result import is_usable
from evaluators.release.counts import version_counts
from evaluators.release.failures import failure_counts
from evaluators.release.latency import version_latency
from evaluators.release.repeats import repeats_record, scenario_repeats
from evaluators.release.safety_evidence import version_safety_evidence
from evaluators.rubric.loader import VERDICTS, Rubric, VoiceRules
from evaluators.store.records import CaseResult, api_turns, versions_of

if TYPE_CHECKING:
    from evaluators.judge.client import LLMJudge



def _cost(cases: Sequence[CaseResult], prices: Mapping[str, Price] | None) -> float | None:
    """Dollars spent on fresh calls; None when some fresh call's model has no known price."""
    total = 0.0
    for case in cases:
        for turn in api_turns(case):
            if turn.usage.total_tokens == 0:
                continue
            price = price_for(turn.model, prices)
            if price is None:
                return None
            total += price.cost(turn.usage)
    return round(total, 6)


def simulator_usage(cases: Sequence[CaseResult], prices: Mapping[str, Price] | None) -> dict:
    """The simulated users' own calls, tokens and cost, kept apart from the companion's: they
    are the price of the persona family, not of the prompt version under test."""
    records = [case.simulation for case in cases if case.simulation]
    cost: float | None = 0.0
    for record in records:
        usage = Usage(prompt_tokens=record.get("prompt_tokens", 0),
                      completion_tokens=record.get("completion_tokens", 0))
        if usage.total_tokens == 0:
            continue
        price = price_for(str(record.get("model", "")), prices)
        cost = None if price is None or cost is None else cost + price.cost(usage)
    return {
        "calls": sum(record.get("calls", 0) for record in records),
        "cached_calls": sum(record.get("cached_calls", 0) for record in records),
        "prompt_tokens": sum(record.get("prompt_tokens", 0) for record in records),
        "completion_tokens": sum(record.get("completion_tokens", 0) for record in records),
        "cost_usd": None if cost is None else round(cost, 6),
        # The models the simulator's responses named (their `model` field), whatever was asked for.
        "answered_by": sorted({model for record in records for model in record.get("answered_by") or ()}),
        # Conversations whose simulated user failed a check (evaluators.run.simulation.validity).
        "invalid": sum(bool((record.get("validity") or {}).get("valid") is False) for record in records),
    }


def version_summaries(
    cases: Iterable[CaseResult], versions: Sequence[str] | None = None,
    prices: Mapping[str, Price] | None = None, voice: VoiceRules | None = None, *, rubric: Rubric | None = None,
    calibration: CalibrationBook | None = None,
) -> dict[str, dict]:
    """Per prompt version: counts, metric means over scored cases, expectations, usage, cost, and
    (given the rubric's voice rules) latency and speaking time (evaluators.release.latency).

    Given the rubric, `counts` holds the checks passed (evaluators.release.counts: the very
    figures the release decision shows) and `safety_evidence` (evaluators.release.safety_evidence:
    the safety-relevant replies and what verified them, judges admitted by `calibration`);
    versions come in `versions` order, else sorted by name.
    """
    cases = list(cases)
    order = list(versions) if versions is not None else versions_of(cases)
    voice = voice if voice is not None or rubric is None else rubric.voice
    summaries: dict[str, dict] = {}
    for version in order:
        mine = [case for case in cases if case.prompt_version == version]
        scored = [case for case in mine if case.status == "ok"]
        fresh_turns = [turn for case in mine for turn in api_turns(case)]
        unreported = sum(not turn.usage.reported for turn in fresh_turns)
        summaries[version] = {
            "cases": len(mine),
            "scored": len(scored),
            "failed": len(mine) - len(scored),
            # of the failed, simulated conversations left out because the simulated user was invalid
            "invalid_simulations": sum(case.invalid_simulation for case in mine),
            "means": {name: _mean(case.scores.get(name) for case in scored) for name in SCORE_COLUMNS},
            "expectations_pass_rate": _mean(float(bool(case.expectations_passed)) for case in scored),
            "counts": version_counts(mine, rubric).model_dump() if rubric is not None else None,
            "flagged_cases": sum(bool(case.flags) for case in scored),
            "api_calls": len(fresh_turns),
            "cached_calls": sum(turn.cached for case in mine for turn in case.turns),
            "replayed_turns": sum(len(case.turns) for case in mine if case.responder == "replay"),
            "prompt_tokens": sum(turn.usage.prompt_tokens for turn in fresh_turns),
            "completion_tokens": sum(turn.usage.completion_tokens for turn in fresh_turns),
            # Calls whose server reported no token usage: their tokens and cost are unknown, not 0.
            "usage_unknown_calls": unreported,
            "cost_usd": None if unreported else _cost(mine, prices),
            "mean_latency_s": _mean(turn.latency_s for turn in fresh_turns),
            "judge": judge_aggregates(mine),
            "simulator": simulator_usage(mine, prices),
            "latency": version_latency(mine, voice).model_dump() if voice is not None else None,
        }
        if rubric is not None:
            summaries[version].update(_repeat_figures(mine, rubric))
            evidence = version_safety_evidence(mine, version, rubric, calibration)
            summaries[version]["safety_evidence"] = evidence.model_dump(mode="json", exclude={"verify"})
    return summaries


def _repeat_figures(cases: Sequence[CaseResult], rubric: Rubric) -> dict:
    """The failure kinds and, when some scenario was played more than once (run --repeat), each
    scenario's pass rate with its interval and the spread of its heuristic overall quality."""
    figures: dict = {"failure_kinds": failure_counts(cases, rubric)}
    rows = scenario_repeats(cases, rubric, lambda case: case.scores.get(OVERALL) if case.status == "ok" else None)
    if any(row.scored > 1 for row in rows):
        figures["pass_rates"] = repeats_record(rows)
    return figures


def _usable(record: dict) -> bool:
    return is_usable(record.get("status"), record.get("parse_status"), record.get("overall"))


def judge_aggregates(cases: Sequence[CaseResult]) -> dict | None:
    """The judge's figures for a set of cases; fallbacks and failures are counted, never averaged."""
    if not any(case.judge for case in cases):
        return None
    judged = [case for case in cases if case.status == "ok" and case.judge and not case.judge.get("skipped")]
    records = [turn.judge for case in judged for turn in case.turns if turn.judge]
    usable = [record for record in records if _usable(record)]
    fallback = sum(record.get("parse_status") == "fallback" for record in records)
    verdicts = Counter(case.judge.get("verdict") for case in judged if case.judge.get("verdict"))
    return {
        "cases_judged": len(judged),
        "cases_skipped": sum(bool(case.judge and case.judge.get("skipped")) for case in cases),
        "turns_judged": len(records),
        "usable_turns": len(usable),
        "fallback_turns": fallback,
        "fallback_share": round(fallback / len(records), 4) if records else None,
        "failed_turns": sum(record.get("status") == "failed" for record in records),
        "cached_turns": sum(bool(record.get("cached")) for record in records),
        "unstable_turns": sum(bool(record.get("unstable")) for record in records),
        "review_cases": sum(bool(case.judge.get("review")) for case in judged),
        "overall": _mean(case.judge.get("overall") for case in judged),
        "dimensions": {name: _mean(case.judge.get("dimensions", {}).get(name) for case in judged)
                       for name in METRIC_NAMES},
        "verdicts": {verdict: verdicts.get(verdict, 0) for verdict in reversed(VERDICTS)},
        "failure_modes": dict(Counter(mode for case in judged for mode in case.judge.get("failure_modes", []))),
        "verbosity_bias": judge_verbosity_bias(cases),
    }


def judge_verbosity_bias(cases: Iterable[CaseResult]) -> float | None:
    """Spearman correlation of the judge's turn scores with reply length in words."""
    pairs = [(turn.judge["overall"], len(turn.reply.split())) for case in cases for turn in case.turns
             if turn.judge and _usable(turn.judge)]
    value = verbosity_bias([score for score, _ in pairs], [words for _, words in pairs]) if pairs else None
    return None if value is None else round(value, 4)


def run_judge_summary(cases: Sequence[CaseResult], judge: LLMJudge, rubric: Rubric, warnings: Sequence[str]) -> dict:
    """The run's judge figures: what it cost, what came from cache, and how far to trust it."""
    aggregates = judge_aggregates(cases) or {}
    share = aggregates.get("fallback_share")
    stats = judge.stats
    warnings = [*warnings, *answered_family_warnings(stats.answered_by - {judge.settings.model}, cases)]
    return {
        "model": judge.settings.model,
        "endpoint": judge.endpoint,
        "samples": judge.settings.samples,
        "response_mode": judge.modes.get(judge.endpoint, judge.settings.model),
        **aggregates,
        "judged_now": stats.judged,
        "from_cache": stats.cached,
        "calls": stats.calls,
        "answered_by": sorted(stats.answered_by),
        "prompt_tokens": stats.usage.prompt_tokens,
        "completion_tokens": stats.usage.completion_tokens,
        "fallback_warning": share is not None and share > rubric.judge.fallback_warn_share,
        "warnings": list(warnings),
    }


def answered_family_warnings(answered_by: Iterable[str], cases: Sequence[CaseResult]) -> list[str]:
    """The family warning for each model that answered in the judge's place (a router or alias
    answering with another model than the one configured), against the companion models that
    answered in the run."""
    companions = {turn.model for case in cases if case.responder != "replay" for turn in case.turns if turn.model}
    found = (same_family_warning(model, companions) for model in sorted(answered_by))
    return [f"answered by {warning}" for warning in found if warning]


def _mean(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(sum(present) / len(present), 4) if present else None
