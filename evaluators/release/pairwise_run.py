"""Head-to-head judging of a stored run: which pairs, judged how, kept where.

`penpal-eval pairwise RUN` and `penpal-eval run --pairwise` both come here: each candidate is
compared with its baseline (the front-matter `baseline:` the manifest records, or the pair
asked for) over the scenarios both scored, by the pairwise judge (evaluators.judge.pairwise);
the win rates come from evaluators.release.head_to_head and the comparisons go to the run store's
pairwise.json, where `decide` and `report` read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluators.inputs.contracts import Scenario
from evaluators.judge.pairwise import PairwiseJudge, judge_comparisons, plan_comparisons
from evaluators.release.contracts import HeadToHead
from evaluators.release.head_to_head import head_to_head, head_to_head_record
from evaluators.store.records import CaseResult, versions_of
from evaluators.store.run_store import RunStore


class PairwiseError(ValueError):
    """Nothing can be compared as asked; the message says why."""


@dataclass(frozen=True)
class PairwiseOutcome:
    results: list[HeadToHead]
    calls: int  # API calls made (cache hits make none)
    cached: int  # comparisons answered wholly from the cache


def baseline_pairs(cases: Sequence[CaseResult], baselines: Mapping[str, str | None]) -> list[tuple[str, str]]:
    """(candidate, baseline) for every version of the run whose baseline the run also holds."""
    present = versions_of(cases)
    return [(version, baselines[version]) for version in present
            if baselines.get(version) in present and baselines[version] != version]


def chosen_pairs(cases: Sequence[CaseResult], baselines: Mapping[str, str | None], a: str | None,
                 b: str | None) -> list[tuple[str, str]]:
    """The pair asked for (A the candidate, B its baseline), else every version against its baseline."""
    present = versions_of(cases)
    if (a is None) != (b is None):
        raise PairwiseError("--a and --b go together: --a the candidate, --b the version it is compared with")
    if a is not None and b is not None:
        unknown = [name for name in (a, b) if name not in present]
        if unknown:
            raise PairwiseError(f"not in this run: {', '.join(unknown)}; the run has {', '.join(present)}")
        if a == b:
            raise PairwiseError(f"--a and --b are both {a}: compare two different versions")
        return [(a, b)]
    pairs = baseline_pairs(cases, baselines)
    if not pairs:
        declared = ", ".join(f"{version} (baseline {baseline or 'none'})" for version, baseline in baselines.items())
        raise PairwiseError("no version of this run has its baseline in the run"
                            + (f" ({declared})" if declared else "") + "; name a pair with --a and --b")
    return pairs


async def judge_pairs(judge: PairwiseJudge, cases: Sequence[CaseResult], scenarios: Sequence[Scenario],
                      pairs: Sequence[tuple[str, str]]) -> PairwiseOutcome:
    """Every pair judged over the scenarios both versions scored; closes the judge's client."""
    results = []
    try:
        for candidate, baseline in pairs:
            planned = plan_comparisons(candidate, baseline, cases, scenarios)
            if not planned:
                raise PairwiseError(f"{candidate} and {baseline} share no scored scenario")
            comparisons = await judge_comparisons(judge, planned)
            results.append(head_to_head(candidate, baseline, comparisons, judge.rubric, judge_model=judge.model))
    finally:
        await judge.aclose()
    return PairwiseOutcome(results, judge.judge.stats.calls, judge.stats.cached)


def store_results(store: RunStore, results: Sequence[HeadToHead]) -> None:
    for figures in results:
        store.write_pairwise(head_to_head_record(figures))
