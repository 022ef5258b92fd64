"""Reading a scored reply in the scoring tests: which indicators fired on a metric, which flags."""

from __future__ import annotations

from evaluators.scoring.contracts import HeuristicResult


def indicators(result: HeuristicResult, metric: str) -> set[str]:
    return {item.indicator for item in result.metrics[metric].evidence}


def flags(result: HeuristicResult) -> set[str]:
    return {flag.name for flag in result.flags}
