"""Win rates from pairwise comparisons: is a candidate better than its baseline beyond noise?

Each comparison gives the candidate a win (1), a tie (0.5) or a loss (0). A scenario scores
the mean of its comparisons (one per turn of a scripted scenario, one for a simulated
conversation), so a long scenario weighs no more than a short one; the win rate is the mean
over scenarios. Its interval resamples whole scenarios with the rubric's bootstrap settings
(evaluators.release.bootstrap), so the comparisons of one conversation, which are not independent,
move together. The candidate is better beyond noise when the interval lies above 50%.

Pure: comparisons in, figures out. The judging is evaluators.judge.pairwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean

from evaluators.core.text import plural
from evaluators.judge.result import PairwiseComparison
from evaluators.release.bootstrap import paired_bootstrap
from evaluators.release.contracts import HeadToHead, WinRate
from evaluators.rubric.loader import Rubric

OUTCOME_SCORES = {"win": 1.0, "tie": 0.5, "loss": 0.0}
_DECIMALS = 9


def scenario_scores(comparisons: Sequence[PairwiseComparison]) -> dict[str, float]:
    """Per scenario (in first-seen order), the mean score of its comparisons that have an outcome."""
    outcomes: dict[str, list[float]] = {}
    for comparison in comparisons:
        if comparison.outcome is not None:
            outcomes.setdefault(comparison.scenario_id, []).append(OUTCOME_SCORES[comparison.outcome])
    return {scenario: fmean(values) for scenario, values in outcomes.items()}


def win_rate(comparisons: Sequence[PairwiseComparison], rubric: Rubric) -> WinRate:
    """The win rate of these comparisons with its bootstrap interval (None when nothing was scored)."""
    settings = rubric.decision.bootstrap
    scored = [comparison for comparison in comparisons if comparison.outcome is not None]
    counts = {outcome: sum(c.outcome == outcome for c in scored) for outcome in OUTCOME_SCORES}
    scores = scenario_scores(scored)
    figures = WinRate(scenarios=len(scores), comparisons=len(scored), wins=counts["win"], ties=counts["tie"],
                      losses=counts["loss"], confidence=settings.confidence)
    if not scores:
        return figures
    interval = paired_bootstrap({"win_rate": list(scores.values())}, resamples=settings.resamples,
                                confidence=settings.confidence, seed=settings.seed)["win_rate"]
    return figures.model_copy(update={"rate": round(interval.mean, _DECIMALS), "low": interval.low,
                                      "high": interval.high})


def head_to_head(candidate: str, baseline: str, comparisons: Sequence[PairwiseComparison], rubric: Rubric,
                 judge_model: str = "") -> HeadToHead:
    """The candidate's win rates against the baseline, overall and per scenario family, and the
    position-bias rate (among comparisons with a verdict in both orders)."""
    settings = rubric.decision.bootstrap
    scored = [comparison for comparison in comparisons if comparison.outcome is not None]
    families = list(dict.fromkeys(comparison.family for comparison in comparisons))
    biased = sum(comparison.position_bias for comparison in scored)
    return HeadToHead(
        candidate=candidate, baseline=baseline, judge_model=judge_model, overall=win_rate(comparisons, rubric),
        by_family={family: win_rate([c for c in comparisons if c.family == family], rubric) for family in families},
        position_bias=biased, position_bias_rate=round(biased / len(scored), _DECIMALS) if scored else None,
        unscored=len(comparisons) - len(scored), resamples=settings.resamples, seed=settings.seed,
        comparisons=list(comparisons),
    )


def win_rate_text(figures: WinRate) -> str:
    """'wins 68% (95% CI 55% to 80%; 20 scenarios, 40 comparisons: 25 wins, 4 ties, 11 losses)'."""
    if figures.rate is None:
        return "no comparison with a verdict in both orders"
    counts = ", ".join([plural(figures.wins, "win"), plural(figures.ties, "tie"),
                        plural(figures.losses, "loss", "losses")])
    return (f"wins {figures.rate:.0%} ({figures.confidence:.0%} CI {figures.low:.0%} to {figures.high:.0%}; "
            f"{plural(figures.scenarios, 'scenario')}, {plural(figures.comparisons, 'comparison')}: {counts})")


def head_to_head_from_records(records: Sequence[dict], rubric: Rubric) -> dict[tuple[str, str], HeadToHead]:
    """Stored pairwise records (evaluators.store.run_store) as figures by (candidate, baseline), computed
    with the rubric given now, so a changed bootstrap setting follows like every threshold."""
    results = {}
    for record in records:
        comparisons = [PairwiseComparison.model_validate(item) for item in record.get("comparisons", [])]
        pair = (str(record["candidate"]), str(record["baseline"]))
        results[pair] = head_to_head(*pair, comparisons, rubric, judge_model=str(record.get("judge_model", "")))
    return results


def head_to_head_record(figures: HeadToHead) -> dict:
    """What the run store keeps of a head-to-head: the comparisons, and the figures for people."""
    return figures.model_dump(mode="json")
