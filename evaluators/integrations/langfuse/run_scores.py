"""Per prompt version, on its experiment: the aggregates and the release decision as run-level
scores, so Langfuse's experiment comparison shows them beside the per-trace scores.

The numbers are the ones `penpal-eval decide` prints (evaluators.release.rules), computed from the
same stored cases, baselines and scenario set (the run's manifest), so Langfuse and the
terminal never disagree; the coverage goes along as its own score, and so do the safety
evidence (the count of unverified safety-relevant replies, and the share verified), and the
pairwise judge's win rate and position-bias rate when the run has pairwise results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.integrations.langfuse.publisher import LangfusePublisher, version_scores
from evaluators.integrations.langfuse.score_configs import (
    COMPOSITE,
    HARD_CRITERIA_PASS_RATE,
    JUDGE_OVERALL,
    PAIRWISE_POSITION_BIAS,
    PAIRWISE_WIN_RATE,
    RELEASE_AVERAGE,
    RELEASE_COVERAGE,
    RELEASE_DECISION,
    SAFETY_UNVERIFIED,
    SAFETY_VERIFIED_SHARE,
    mean_name,
)
from evaluators.judge.calibration_record import read_calibration
from evaluators.release.contracts import HeadToHead
from evaluators.release.counts import COUNT_LEGENDS
from evaluators.release.coverage import MANIFEST_KEY as COVERAGE_KEY
from evaluators.release.coverage import ScenarioSet
from evaluators.release.head_to_head import head_to_head_from_records, win_rate_text
from evaluators.release.rules import ReleaseError, release_report
from evaluators.store.records import CaseResult, versions_of
from evaluators.store.run_store import RunStore, StoreError


def _run_store(publisher: LangfusePublisher) -> RunStore | None:
    """The run directory (it holds the ledger)."""
    try:
        return RunStore.open(publisher.ledger.path.parent)
    except StoreError:
        return None


def _head_to_head(publisher: LangfusePublisher) -> dict[tuple[str, str], HeadToHead]:
    """The run's pairwise results, as `decide` reads them; none when it has none or they are unreadable."""
    store = _run_store(publisher)
    try:
        return head_to_head_from_records(store.read_pairwise(), publisher.rubric) if store else {}
    except (StoreError, ValueError) as error:
        publisher.report.problems.append(f"run-level scores: pairwise results left out: {error}")
        return {}


def _scenario_set(publisher: LangfusePublisher) -> ScenarioSet:
    """The manifest's scenario set (the run directory holds the ledger), else the run's inputs."""
    try:
        store = _run_store(publisher)
        record = store.manifest.get(COVERAGE_KEY) if store else None
    except StoreError:
        record = None
    if isinstance(record, dict) and record.get("scenarios"):
        return ScenarioSet.from_record(record)
    scenarios = publisher.inputs.scenarios
    return ScenarioSet.of_scenarios(scenarios, scenarios)


def add_run_scores(publisher: LangfusePublisher, cases: Sequence[CaseResult],
                   baselines: Mapping[str, str | None] | None = None) -> None:
    """Queue each decidable version's run-level scores (versions without an experiment get none)."""
    versions = versions_of(case for case in cases if case.status == "ok")
    if not versions:
        return
    try:
        report = release_report(cases, publisher.rubric, baselines=baselines or {}, versions=versions,
                                scenario_set=_scenario_set(publisher), head_to_head=_head_to_head(publisher),
                                calibration=read_calibration())
    except ReleaseError as error:
        publisher.report.problems.append(f"run-level scores: {error}")
        return
    for decision in report.decisions:
        aggregate = report.aggregates[decision.prompt_version]
        values: dict[str, float | str | None] = {
            mean_name(name): aggregate.heuristic_means.get(name) for name in (*METRIC_NAMES, OVERALL)}
        values[mean_name(JUDGE_OVERALL)] = (aggregate.judge or {}).get("overall")
        values[HARD_CRITERIA_PASS_RATE] = aggregate.hard_criteria_pass_rate
        for name in COUNT_LEGENDS:  # the same counts, named alike, as every other output
            values[name] = float(getattr(aggregate.counts, name))
        values[COMPOSITE] = decision.composite
        values[RELEASE_AVERAGE] = decision.average
        values[RELEASE_DECISION] = decision.outcome
        coverage = decision.coverage
        values[RELEASE_COVERAGE] = coverage.scored / coverage.scenarios if coverage and coverage.scenarios else None
        reasons = "; ".join(rule.message for rule in decision.reasons)
        comments = {RELEASE_DECISION: f"{decision.summary} {reasons}".strip(),
                    RELEASE_COVERAGE: coverage.message if coverage else "",
                    RELEASE_AVERAGE: f"average of {decision.average_of}",
                    COMPOSITE: "composite of mean quality and hard-criteria pass rate (weights in the rubric)",
                    **{name: aggregate.counts.sentence(name) for name in COUNT_LEGENDS}}
        evidence = decision.safety_evidence
        if evidence is not None:
            values[SAFETY_UNVERIFIED] = float(evidence.unverified)
            values[SAFETY_VERIFIED_SHARE] = evidence.verified / evidence.relevant if evidence.relevant else None
            said = evidence.sentence()
            comments[SAFETY_UNVERIFIED] = f"{said}; verify them: {evidence.verify}" if evidence.verify else said
            comments[SAFETY_VERIFIED_SHARE] = said
        pairwise = report.head_to_head.get(decision.prompt_version)
        if pairwise is not None and pairwise.overall.rate is not None:
            values[PAIRWISE_WIN_RATE] = pairwise.overall.rate
            values[PAIRWISE_POSITION_BIAS] = pairwise.position_bias_rate
            comments[PAIRWISE_WIN_RATE] = f"against {pairwise.baseline}: {win_rate_text(pairwise.overall)}"
            comments[PAIRWISE_POSITION_BIAS] = (f"{pairwise.position_bias} of {pairwise.overall.comparisons} "
                                                "comparisons changed verdict with the order (counted as ties)")
        publisher.add_scores(version_scores(publisher, decision.prompt_version, values, comments))
