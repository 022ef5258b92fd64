"""`penpal-eval verify`: the safety judge reads a stored run's safety-relevant replies afterwards.

The gate (evaluators.release.safety_evidence) refuses a version whose safety-relevant items no
admitted judge verified. Running the companion again would judge new replies, not the stored
ones the decision rests on; this judges the stored ones. For every scored case of the chosen
versions, the safety-relevant items (the triggers' `safety_relevant` reasons, the gate's own
definition) that no admitted judge answered usably are put to the safety judge, through the
run stage's own parts (`SafetyJudgeStage.verdict`: the case record and the combination rule of
evaluators.judge.safety_verdict). Answers an admitted judge already gave are kept as they are;
a cached answer costs no call and no budget.

Each updated case is appended to cases.jsonl as it finishes, the way the runner writes it (the
latest line of a case wins on reading), so a killed verify loses nothing and a second one asks
only what is still unverified. Then summary.json's safety figures and the exports are written
again, and the manifest records that a safety judge verified the run later (model and endpoint
kind and address without credentials; never a key).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluators.inputs.contracts import Scenario
from evaluators.inputs.persona import Persona
from evaluators.judge.calibration_record import CalibrationBook, admission
from evaluators.judge.safety_judge import SafetyJudge, SafetyJudgeResult
from evaluators.judge.safety_stage import (
    Planned,
    SafetyBudget,
    SafetyJudgeStage,
    planned_items,
    safety_relevant,
    safety_summary,
)
from evaluators.release.failures import with_failures
from evaluators.release.judge_admission import UNNAMED
from evaluators.release.safety_evidence import version_safety_evidence
from evaluators.run.sample_judge import SampleSafetyJudge
from evaluators.store.records import CaseResult, versions_of
from evaluators.store.run_store import RunStore, utc_now

MANIFEST_KEY = "safety_verified"  # the manifest's list of later verifications, oldest first
SUMMARY_KEY = "safety_verify"  # summary.json: the latest verification's figures


@dataclass
class VerifyOutcome:
    """What one verification did, counted over the items it looked at."""

    relevant: int = 0  # safety-relevant items of the chosen versions' scored cases
    already: int = 0  # of those, answered usably by an admitted judge before: kept, not asked
    asked: int = 0  # put to the judge now (cached answers included)
    from_cache: int = 0
    usable: int = 0
    flagged: int = 0
    failed: int = 0  # failed or unreadable: still unverified, asked again by the next verify
    left_out: int = 0  # by --judge-budget
    cases_updated: int = 0
    cases: list[CaseResult] = field(default_factory=list)  # the whole run after verifying
    summary: dict = field(default_factory=dict)  # safety_summary of the run, as summary.json keeps it


class VerifyStage(SafetyJudgeStage):
    """The safety stage on a stored case: only the safety-relevant items not yet verified."""

    def __init__(self, judge: SafetyJudge | SampleSafetyJudge, scenarios: Sequence[Scenario] = (),
                 personas: Mapping[str, Persona] | None = None, *, budget: SafetyBudget,
                 book: CalibrationBook) -> None:
        super().__init__(judge, scenarios, dict(personas or {}), budget=budget, book=book)  # type: ignore[arg-type]

    def admitted(self, result: SafetyJudgeResult) -> bool:
        bar = self.judge.rubric.judge.calibration.min_kappa
        return result.usable and admission(self.book, [result.model or UNNAMED], "safety", bar) is None

    def pending(self, case: CaseResult) -> tuple[list[Planned], list[SafetyJudgeResult], int]:
        """The items to ask, the stored answers kept, and how many relevant items were already verified."""
        stored = [SafetyJudgeResult.model_validate(record) for record in (case.safety_judge or {}).get("items") or []]
        verified = {result.id for result in stored if self.admitted(result)}
        relevant = [(item, why) for item, why in planned_items(
            case, self.scenarios.get(case.scenario_id), self.personas.get(case.scenario_id), rubric=self.judge.rubric)
            if safety_relevant(why)]
        todo = [(item, why) for item, why in relevant if item.id not in verified]
        asked = {item.id for item, _ in todo}
        kept = [result for result in stored if result.id not in asked]
        return todo, kept, len(relevant) - len(todo)

    async def verify(self, case: CaseResult, outcome: VerifyOutcome) -> CaseResult | None:
        """The case with its pending items judged and the verdict applied; None when nothing was pending."""
        if case.status != "ok" or not case.turns:
            return None
        todo, kept, already = self.pending(case)
        outcome.relevant += len(todo) + already
        outcome.already += already
        if not todo:
            return None
        chosen, left_out = [], []
        for item, why in todo:
            if self.judge.cached(item) is not None or self.budget.take():
                chosen.append((item, why))
            else:
                left_out.append((item, why))
        outcome.left_out += len(left_out)
        # Nothing asked (the budget left every item out): the case still records what was left out.
        results = await asyncio.gather(*(self.judge.judge_item(item, why) for item, why in chosen))
        outcome.asked += len(results)
        outcome.from_cache += sum(result.cached for result in results)
        outcome.usable += sum(result.usable for result in results)
        outcome.flagged += sum(bool(result.usable and result.flags) for result in results)
        outcome.failed += sum(not result.usable for result in results)
        updated = self.verdict(case, [*kept, *results], left_out)
        return with_failures(_kept_disagreements(case, updated, {result.id for result in kept}), self.judge.rubric)


def _kept_disagreements(before: CaseResult, after: CaseResult, kept: set[str]) -> CaseResult:
    """The disagreements of the answers kept from before stay as they were recorded then (the flags
    they changed are already on the case, so applying them again finds no disagreement)."""
    old = [entry for entry in (before.safety_judge or {}).get("disagreements") or [] if entry.get("id") in kept]
    record = dict(after.safety_judge or {})
    new = [entry for entry in record.get("disagreements") or [] if entry.get("id") not in kept]
    record["disagreements"] = old + new
    earlier = (before.safety_judge or {}).get("verdict")
    if earlier and record.get("verdict"):
        record["verdict"] = {**record["verdict"], "flags_before": earlier.get("flags_before", []),
                             "changed": [*earlier.get("changed", []), *record["verdict"].get("changed", [])]}
    return after.model_copy(update={"safety_judge": record})


async def verify_run(store: RunStore, stage: VerifyStage, versions: Sequence[str],
                     on_case: Callable[[CaseResult], None] | None = None) -> VerifyOutcome:
    """Judge the chosen versions' unverified safety-relevant items; each updated case is appended
    to the store as soon as it is done (the runner's way: a kill keeps every finished case)."""
    outcome = VerifyOutcome()
    chosen = set(versions)

    async def one(case: CaseResult) -> None:
        updated = await stage.verify(case, outcome)
        if updated is not None:
            store.append(updated)
            outcome.cases_updated += 1
            if on_case is not None:
                on_case(updated)

    await asyncio.gather(*(one(case) for case in store.read_cases() if case.prompt_version in chosen))
    outcome.cases = store.read_cases()
    outcome.summary = safety_summary(outcome.cases, stage.budget)
    return outcome


def record_verification(store: RunStore, outcome: VerifyOutcome, stage: VerifyStage, *, kind: str, model: str,
                        endpoint: str | None, versions: Sequence[str]) -> None:
    """summary.json's safety figures, the exports, and the manifest's record of this verification."""
    cases = outcome.cases
    rubric = stage.judge.rubric
    summary = store.read_summary() or {"run_id": store.manifest.get("run_id"), "versions": {}}
    for version in versions_of(cases):
        figures = summary.setdefault("versions", {}).setdefault(version, {})
        evidence = version_safety_evidence(cases, version, rubric, stage.book)
        figures["safety_evidence"] = evidence.model_dump(mode="json", exclude={"verify"})
    summary["judge_failed"] = sum(case.judge_failed for case in cases)
    summary[SUMMARY_KEY] = {"model": model, "kind": kind, "at": utc_now(), **outcome.summary}
    store.write_summary(summary)
    store.export(cases)
    entry = {"at": utc_now(), "kind": kind, "model": model, "endpoint": endpoint, "versions": list(versions),
             "asked": outcome.asked, "failed": outcome.failed, "left_out": outcome.left_out,
             "budget": stage.budget.limit}
    store.update_manifest(**{MANIFEST_KEY: [*store.manifest.get(MANIFEST_KEY, []), entry]})
