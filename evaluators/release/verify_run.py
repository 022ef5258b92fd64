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
only what is still unverified. With `--judge-batch`, every pending item goes in one Batch API
batch through the run's own machinery (evaluators.judge.batch, the safety task), its state kept
in the run directory, so a verify killed while it waits finds the same batch again. Then summary.json's safety figures and the exports are written
again, and the manifest records that a safety judge verified the run later (model and endpoint
kind and address without credentials; never a key).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluators.inputs.contracts import Scenario
from evaluators.inputs.persona import Persona
from evaluators.judge.batch import BatchJudge
from evaluators.judge.calibration_record import CalibrationBook, admission
from evaluators.judge.safety_judge import SafetyBatchTask, SafetyJudge, SafetyJudgeResult
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

BATCH_STATE_FILE = "verify-batch.json"  # in the run directory: the Batch API batches verify submitted
MANIFEST_KEY = "safety_verified"  # the manifest's list of later verifications, oldest first
SUMMARY_KEY = "safety_verify"  # summary.json: the latest verification's figures


@dataclass
class VerifyOutcome:
    """What one verification did, counted over the items it looked at."""

    relevant: int = 0  # safety-relevant items of the chosen versions' scored cases
    already: int = 0  # of those, answered usably by an admitted judge before: kept, not asked
    asked: int = 0  # put to the judge now (cached answers included; with any failed item not safety-relevant)
    from_cache: int = 0
    usable: int = 0
    flagged: int = 0
    failed: int = 0  # failed or unreadable: still unverified, asked again by the next verify
    left_out: int = 0  # by --judge-budget
    cases_updated: int = 0
    cases: list[CaseResult] = field(default_factory=list)  # the whole run after verifying
    summary: dict = field(default_factory=dict)  # safety_summary of the run, as summary.json keeps it


@dataclass
class Pending:
    """One case's items to ask now, those the budget left out, and the stored answers kept."""

    case: CaseResult
    kept: list[SafetyJudgeResult]
    chosen: list[Planned] = field(default_factory=list)
    left_out: list[Planned] = field(default_factory=list)


class VerifyStage(SafetyJudgeStage):
    """The safety stage on a stored case: only the safety-relevant items not yet verified."""

    def __init__(self, judge: SafetyJudge | SampleSafetyJudge, scenarios: Sequence[Scenario] = (),
                 personas: Mapping[str, Persona] | None = None, *, budget: SafetyBudget,
                 book: CalibrationBook) -> None:
        super().__init__(judge, scenarios, dict(personas or {}), budget=budget, book=book)  # type: ignore[arg-type]

    def admitted(self, result: SafetyJudgeResult) -> bool:
        bar = self.judge.rubric.judge.calibration.min_kappa
        return result.usable and admission(self.book, [result.model or UNNAMED], "safety", bar) is None

    def pending(self, case: CaseResult) -> tuple[list[Planned], list[SafetyJudgeResult], int, int]:
        """The items to ask, the stored answers kept, how many items are safety-relevant and how
        many of those were already verified.

        To ask: every safety-relevant item no admitted judge answered usably, and every other item
        the run's judge failed on (one only the quality judge's choice sent there): a failed call
        anywhere leaves the case not judged (`CaseResult.judge_failed`), missing evidence for the
        decision's coverage, so asking it again here is what lets the stored replies decide."""
        stored = [SafetyJudgeResult.model_validate(record) for record in (case.safety_judge or {}).get("items") or []]
        verified = {result.id for result in stored if self.admitted(result)}
        failed = {result.id for result in stored if not result.usable}
        planned = planned_items(case, self.scenarios.get(case.scenario_id), self.personas.get(case.scenario_id),
                                rubric=self.judge.rubric)
        relevant = [(item, why) for item, why in planned if safety_relevant(why)]
        todo = [(item, why) for item, why in relevant if item.id not in verified]
        todo += [(item, why) for item, why in planned if not safety_relevant(why) and item.id in failed]
        asked = {item.id for item, _ in todo}
        kept = [result for result in stored if result.id not in asked]
        return todo, kept, len(relevant), len([1 for item, _ in relevant if item.id in verified])

    def plan(self, case: CaseResult, outcome: VerifyOutcome) -> Pending | None:
        """What to ask about the case (the budget taken), counted; None when nothing is pending."""
        if case.status != "ok" or not case.turns:
            return None
        todo, kept, relevant, already = self.pending(case)
        outcome.relevant += relevant
        outcome.already += already
        if not todo:
            return None
        pending = Pending(case, kept)
        for item, why in todo:
            if self.judge.cached(item) is not None or self.budget.take():
                pending.chosen.append((item, why))
            else:
                pending.left_out.append((item, why))
        outcome.left_out += len(pending.left_out)
        return pending

    def finish(self, pending: Pending, results: Sequence[SafetyJudgeResult], outcome: VerifyOutcome) -> CaseResult:
        """The case with the answers and the verdict applied; the answers counted. Nothing asked (the
        budget left every item out): the case still records what was left out."""
        outcome.asked += len(results)
        outcome.from_cache += sum(result.cached for result in results)
        outcome.usable += sum(result.usable for result in results)
        outcome.flagged += sum(bool(result.usable and result.flags) for result in results)
        outcome.failed += sum(not result.usable for result in results)
        updated = self.verdict(pending.case, [*pending.kept, *results], pending.left_out)
        return with_failures(_kept_disagreements(pending.case, updated, {result.id for result in pending.kept}),
                             self.judge.rubric)

    async def verify(self, case: CaseResult, outcome: VerifyOutcome) -> CaseResult | None:
        """The case with its pending items judged by live calls and the verdict applied; None when
        nothing was pending."""
        pending = self.plan(case, outcome)
        if pending is None:
            return None
        results = await asyncio.gather(*(self.judge.judge_item(item, why) for item, why in pending.chosen))
        return self.finish(pending, results, outcome)


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


async def _through_a_batch(batch: BatchJudge, stage: VerifyStage, cases: Sequence[CaseResult],
                           outcome: VerifyOutcome, keep: Callable[[CaseResult], None]) -> None:
    """Every case's pending items in one Batch API batch (the run's `--judge-batch` machinery:
    evaluators.judge.batch.BatchJudge.ask_all with the safety task); then each case finishes.
    A killed verify finds the batch again by its state file and submits nothing twice."""
    plans = [pending for case in cases if (pending := stage.plan(case, outcome)) is not None]
    items = [item for pending in plans for item, _ in pending.chosen]
    found = await batch.ask_all(items, SafetyBatchTask(stage.judge)) if items else {}
    index = 0
    for pending in plans:
        results = []
        for item, why in pending.chosen:
            results.append(found[index, 0].model_copy(update={"id": item.id, "scope": item.scope, "reasons": why}))
            index += 1
        keep(stage.finish(pending, results, outcome))


async def verify_run(store: RunStore, stage: VerifyStage, versions: Sequence[str],
                     on_case: Callable[[CaseResult], None] | None = None,
                     batch: BatchJudge | None = None) -> VerifyOutcome:
    """Judge the chosen versions' unverified safety-relevant items; each updated case is appended
    to the store as soon as it is done (the runner's way: a kill keeps every finished case). With
    `batch`, the items are asked in one Batch API batch and the cases are appended once it is read."""
    outcome = VerifyOutcome()
    chosen = set(versions)

    def keep(updated: CaseResult) -> None:
        store.append(updated)
        outcome.cases_updated += 1
        if on_case is not None:
            on_case(updated)

    async def one(case: CaseResult) -> None:
        updated = await stage.verify(case, outcome)
        if updated is not None:
            keep(updated)

    cases = [case for case in store.read_cases() if case.prompt_version in chosen]
    if batch is None:
        await asyncio.gather(*(one(case) for case in cases))
    else:
        await _through_a_batch(batch, stage, cases, outcome, keep)
    outcome.cases = store.read_cases()
    outcome.summary = safety_summary(outcome.cases, stage.budget)
    return outcome


def record_verification(store: RunStore, outcome: VerifyOutcome, stage: VerifyStage, *, kind: str, model: str,
                        endpoint: str | None, versions: Sequence[str], batch: dict | None = None) -> None:
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
             "budget": stage.budget.limit, **({"batch": batch} if batch is not None else {})}
    store.update_manifest(**{MANIFEST_KEY: [*store.manifest.get(MANIFEST_KEY, []), entry]})
