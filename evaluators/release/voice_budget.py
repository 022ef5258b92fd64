"""The voice budget's release rules: how long a version makes its user wait, and listen.

Both are `deploy` rules: a version over the rubric's `voice.budget` cannot deploy, and the
reason gives the observed p95 against the budget. Speaking time is estimated from the words
of every reply, so it is checked on any run. Time to first token exists only where a live,
streamed call was timed; on replayed replies it was never measured, and the rule is then a
`flag` that says so: it neither blocks a version nor lets it pass on a latency nobody saw.
"""

from __future__ import annotations

from evaluators.release.contracts import Percentiles, RuleOutcome, VersionAggregate, VersionLatency
from evaluators.release.latency import NOT_MEASURED
from evaluators.rubric.loader import Rubric

VOICE_FIRST_TOKEN = "voice_first_token"
VOICE_SPEAKING_TIME = "voice_speaking_time"
_DECIMALS = 9


def within_budget(observed: float, budget: float) -> bool:
    """At most the budget, free of float noise (1.0000000001 s is 1 s)."""
    return round(observed, _DECIMALS) <= round(budget, _DECIMALS)


def seconds_against(value: float, budget: float) -> str:
    """`value` in seconds with enough decimals that it does not look equal to a budget it missed
    (1.004 s over a 1 s budget shows as 1.004 s, not 1.00 s)."""
    passed = within_budget(value, budget)
    for places in range(2, _DECIMALS + 1):
        text = f"{value:.{places}f}"
        if within_budget(float(text), budget) == passed:
            return f"{text} s"
    return f"{value!r} s"


def _verdict(name: str, spread: Percentiles, budget: float, counted: str) -> tuple[bool, str]:
    passed = within_budget(spread.p95, budget)
    relation = "within the budget of" if passed else "over the budget of"
    return passed, (f"p95 {name} {seconds_against(spread.p95, budget)}, {relation} {budget:g} s "
                    f"(p50 {spread.p50:.2f} s over {counted}).")


def first_token_rule(latency: VersionLatency | None, rubric: Rubric) -> RuleOutcome:
    budget = rubric.voice.budget.p95_time_to_first_token_s
    spread = latency.time_to_first_token_s if latency is not None else None
    if spread is None:
        if latency is None:
            why = "no latency figures for this version"
        elif latency.replayed_turns:
            why = NOT_MEASURED
        else:
            why = "no time to first token recorded (replies made before the responder streamed)"
        return RuleOutcome(name=VOICE_FIRST_TOKEN, role="flag", passed=False, observed=None, threshold=budget,
                           message=f"{why[0].upper()}{why[1:]}: the p95 budget of {budget:g} s was not checked.")
    counted = f"{spread.count} timed turns" + (f", {latency.cached_turns} of them timed when first made and now "
                                                f"served from the response cache" if latency.cached_turns else "")
    passed, message = _verdict("time to first token", spread, budget, counted)
    return RuleOutcome(name=VOICE_FIRST_TOKEN, role="deploy", passed=passed, observed=spread.p95, threshold=budget,
                       message=message)


def speaking_time_rule(latency: VersionLatency | None, rubric: Rubric) -> RuleOutcome:
    budget = rubric.voice.budget.p95_speaking_time_s
    spread = latency.speaking_s if latency is not None else None
    if spread is None:  # a version with scored cases has replies; kept for aggregates made without them
        return RuleOutcome(name=VOICE_SPEAKING_TIME, role="deploy", passed=False, observed=None, threshold=budget,
                           message="No scored reply to estimate speaking time from.")
    counted = f"{spread.count} replies at {rubric.voice.speaking_rate_wps:g} words per second"
    passed, message = _verdict("speaking time", spread, budget, counted)
    return RuleOutcome(name=VOICE_SPEAKING_TIME, role="deploy", passed=passed, observed=spread.p95, threshold=budget,
                       message=message)


def voice_budget_rules(aggregate: VersionAggregate, rubric: Rubric) -> tuple[list[RuleOutcome], list[RuleOutcome]]:
    """The time-to-first-token and speaking-time rules for one version: (deploy rules, notes).

    A note (latency not measured) is reported with the other flags, after the deciding rules.
    """
    rules = [first_token_rule(aggregate.latency, rubric), speaking_time_rule(aggregate.latency, rubric)]
    return [rule for rule in rules if rule.role != "flag"], [rule for rule in rules if rule.role == "flag"]
