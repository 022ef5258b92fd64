"""The safety judge as a run stage: which replies it reads, why, and what a budget left out.

In a run with the judge, the safety judge reads what ADR-003's triggered phase names
(evaluators/judge/safety_triggers.py decides it, from the case's stored readings):
- every reply of a safety scenario, whatever the sampling policy decided;
- every persona conversation, as a whole, once;
- every reply a harm detector scores inside its judge band (at or above its `judge_from`);
- every reply to a user message with a risk cue the scorer read;
- every reply the quality judge judged in the case (where the quality judge runs).
Each judged item records why it was chosen, in words.

`--judge-budget N` caps the safety judge's fresh calls for the run (answers from the cache
cost nothing): past it, an item is left out with its reasons, and the case and the run summary
say how many and which. A failed call is missing evidence: the case counts as not judged
(`CaseResult.judge_failed`), so the decision cannot deploy on it and a resume asks again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from evaluators.judge.batch import BatchJudge
from evaluators.judge.calibration_record import CalibrationBook, read_calibration
from evaluators.judge.result import JudgeInput
from evaluators.judge.safety_judge import SafetyBatchTask, SafetyJudge, SafetyJudgeResult
from evaluators.judge.safety_triggers import (
    DETECTOR_BAND,
    PERSONA_CONVERSATION,
    QUALITY_JUDGED,
    RISK_CUE,
    SAFETY_SCENARIO,
    Planned,
    planned_items,
    reason_counts,
    reason_kind,
    reply_reasons,
    safety_relevant,
)
from evaluators.judge.safety_verdict import apply_safety_verdict, disagreement_counts
from evaluators.store.records import CaseResult

__all__ = ["DETECTOR_BAND", "PERSONA_CONVERSATION", "QUALITY_JUDGED", "RISK_CUE", "SAFETY_SCENARIO", "Planned",
           "BatchSafetyJudgeStage", "SafetyBudget", "SafetyJudgeStage", "case_record", "planned_items",
           "reason_counts", "reason_kind", "reply_reasons", "safety_relevant", "safety_summary"]


class SafetyBudget:
    """Fresh safety-judge calls left for the run; None: no cap."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit < 0:
            raise ValueError("the judge budget must be 0 or more")
        self.limit = limit
        self.spent = 0
        self.left_out = 0

    def take(self) -> bool:
        if self.limit is not None and self.spent >= self.limit:
            self.left_out += 1
            return False
        self.spent += 1
        return True


def case_record(results: Sequence[SafetyJudgeResult], left_out: Sequence[tuple[JudgeInput, list[str]]]) -> dict:
    """What the safety judge did in a case: counts, flags by item, failures, and what the budget left out."""
    usable = [result for result in results if result.usable]
    return {
        "judged": len(results),
        "usable": len(usable),
        "failed": sum(result.status == "failed" for result in results),
        "fallback": sum(result.parse_status == "fallback" for result in results),
        "flags": sorted({flag for result in usable for flag in result.flags}),
        "flagged": [{"id": result.id, "flags": result.flags} for result in usable if result.flags],
        "left_out": [{"id": item.id, "reasons": why} for item, why in left_out],
        "items": [result.to_record() for result in results],
    }


class SafetyJudgeStage:
    """A `CaseStage` for the runner, after the quality judge: the safety questions where they matter,
    then one safety verdict per reply by the rubric's rule (evaluators.judge.safety_verdict).

    `book` is the calibration record that says whose verdicts are admitted (read from the
    project's record when not given)."""

    def __init__(self, judge: SafetyJudge, scenarios: Sequence = (), personas: dict | None = None, *,
                 budget: SafetyBudget | None = None, book: CalibrationBook | None = None) -> None:
        self.judge = judge
        self.scenarios = {scenario.id: scenario for scenario in scenarios}
        self.personas = dict(personas or {})
        self.budget = budget or SafetyBudget(None)
        self.book = read_calibration() if book is None else book

    async def __call__(self, case: CaseResult) -> CaseResult:
        chosen, left_out = self.choose(case)
        if not chosen and not left_out:
            return case
        results = await asyncio.gather(*(self.judge.judge_item(item, why) for item, why in chosen))
        return self.verdict(case, results, left_out)

    def verdict(self, case: CaseResult, results: Sequence[SafetyJudgeResult], left_out: Sequence[Planned]) -> CaseResult:
        """The judge's record on the case, and the flags the combination rule decides."""
        judged = case.model_copy(update={"safety_judge": case_record(results, left_out)})
        return apply_safety_verdict(judged, self.judge.rubric, self.book, self.scenarios.get(case.scenario_id))

    def choose(self, case: CaseResult) -> tuple[list[Planned], list[Planned]]:
        """The case's items to ask about, and those the budget leaves out (cached answers are free)."""
        if case.status != "ok" or not case.turns:
            return [], []
        chosen, left_out = [], []
        for item, why in planned_items(case, self.scenarios.get(case.scenario_id), self.personas.get(case.scenario_id),
                                       rubric=self.judge.rubric):
            if self.judge.cached(item) is not None or self.budget.take():
                chosen.append((item, why))
            else:
                left_out.append((item, why))
        return chosen, left_out


class BatchSafetyJudgeStage(SafetyJudgeStage):
    """The safety stage through the Batch API, beside `--judge-batch`: every case's items in one batch.

    As evaluators.judge.stage.BatchJudgeStage does for the reply verdicts: items are collected
    until the runner says how many cases come (`cases_expected`) and all of them arrived; one
    batch (the quality judge's machinery, evaluators.judge.batch.BatchJudge.ask_all) asks them
    all; each case then finishes with its answers.
    """

    def __init__(self, batch: BatchJudge, judge: SafetyJudge, scenarios: Sequence = (), personas: dict | None = None,
                 *, budget: SafetyBudget | None = None, book: CalibrationBook | None = None) -> None:
        super().__init__(judge, scenarios, personas, budget=budget, book=book)
        self.batch = batch
        self._items: list[JudgeInput] = []
        self._answers: list[asyncio.Future[SafetyJudgeResult]] = []
        self._arrived = 0
        self._expected: int | None = None
        self._judging: asyncio.Task | None = None

    def cases_expected(self, count: int) -> None:
        self._expected = count
        self._ask_when_all_arrived()

    async def __call__(self, case: CaseResult) -> CaseResult:
        self._arrived += 1
        try:
            chosen, left_out = self.choose(case)
        except Exception:
            self._ask_when_all_arrived()  # this case fails alone; the others must not wait for it
            raise
        loop = asyncio.get_running_loop()
        answers = [loop.create_future() for _ in chosen]
        self._items += [item for item, _ in chosen]
        self._answers += answers
        self._ask_when_all_arrived()
        if not chosen and not left_out:
            return case
        results = [result.model_copy(update={"id": item.id, "scope": item.scope, "reasons": why})
                   for result, (item, why) in zip(await asyncio.gather(*answers), chosen, strict=True)]
        return self.verdict(case, results, left_out)

    def _ask_when_all_arrived(self) -> None:
        if self._judging is None and self._expected is not None and self._arrived >= self._expected:
            self._judging = asyncio.get_running_loop().create_task(self._ask_all())

    async def _ask_all(self) -> None:
        try:
            found = await self.batch.ask_all(self._items, SafetyBatchTask(self.judge))
        except Exception as error:  # noqa: BLE001 - every waiting case fails with the reason (and resumes)
            for answer in self._answers:
                answer.set_exception(error)
            return
        for index, answer in enumerate(self._answers):
            answer.set_result(found[index, 0])


def safety_summary(cases: Sequence[CaseResult], budget: SafetyBudget) -> dict:
    """The run's safety-judge figures: what was judged, flagged, failed, and what the budget left out."""
    records = [case.safety_judge for case in cases if case.safety_judge]
    left_out = [entry for record in records for entry in record.get("left_out", [])]
    judged_reasons = [item.get("reasons", []) for record in records for item in record.get("items", [])]
    scored = [case for case in cases if case.status == "ok"]
    items = sum(len(case.turns) for case in scored) + sum(case.family == "personas" for case in scored)
    judged = sum(record.get("judged", 0) for record in records)
    return {
        "replies": items,  # every reply of the run's scored cases, and each persona conversation once
        "share_judged": round(judged / items, 4) if items else None,  # what triggering costs
        "judged": judged,
        "usable": sum(record.get("usable", 0) for record in records),
        "failed": sum(record.get("failed", 0) for record in records),
        "fallback": sum(record.get("fallback", 0) for record in records),
        "flagged": sum(len(record.get("flagged", [])) for record in records),
        "budget": budget.limit,
        "calls_spent": budget.spent,
        "left_out": len(left_out),
        "left_out_ids": [entry["id"] for entry in left_out],
        # Where the judge and the rules disagree (evaluators.judge.safety_verdict), by flag and direction.
        "disagreements": disagreement_counts(cases),
        # Why items were judged, and why the ones the budget left out were chosen, by kind
        # (an item with several reasons counts under each).
        "judged_by_reason": reason_counts(judged_reasons),
        "left_out_by_reason": reason_counts([entry.get("reasons", []) for entry in left_out]),
    }
