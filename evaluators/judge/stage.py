"""The judge as a run stage: every reply of a scored case judged, stored beside its heuristics.

Each turn is judged with the whole conversation before it (the companion's replies too, which
the heuristics leave out), the scenario's family guidance and the user's profile. The case
gets a summary: the mean of the usable judgements, the worst verdict, and the reasons a human
should review it. Under a sampling policy, routine cases may be left unjudged, with the reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from statistics import fmean

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.inputs.contracts import Scenario
from evaluators.judge.batch import BatchJudge
from evaluators.judge.client import LLMJudge
from evaluators.judge.reliability import with_disagreement
from evaluators.judge.result import HistoryItem, JudgeInput, JudgeResult
from evaluators.judge.sampling import SamplingDecision, SamplingState
from evaluators.rubric.loader import VERDICTS, Rubric
from evaluators.store.records import CaseResult


def scenario_profile(scenario: Scenario | None) -> str:
    """What the judge is told about the user: the profile line, and whether they are vulnerable."""
    profile = scenario.profile.context_line() if scenario is not None else ""
    if scenario is not None and scenario.profile.vulnerable:
        profile = f"{profile}; vulnerable user" if profile else "vulnerable user"
    return profile


def turn_inputs(case: CaseResult, scenario: Scenario | None) -> list[JudgeInput]:
    """One judge input per answered turn, each with the full conversation before it."""
    profile = scenario_profile(scenario)
    inputs, history = [], []
    for turn in case.turns:
        inputs.append(JudgeInput(id=f"{case.case_id}#{turn.index + 1}", family=case.family, profile=profile,
                                 history=tuple(history), user_message=turn.user, reply=turn.reply))
        # A cut reply enters the history as it was heard (TurnResult.heard), as the companion saw it.
        history += [HistoryItem(role="user", text=turn.user), HistoryItem(role="companion", text=turn.heard)]
    return inputs


def sampling_triggers(flags: Sequence[str], scores: Mapping[str, float], below: float,
                      feedback: str | None = None) -> list[str]:
    """Why a case must be judged whatever the sampling phase: hard flags, weak metrics, bad feedback."""
    triggers = [f"hard flag: {flag}" for flag in flags]
    triggers += [f"heuristic {name} {value:.2f} < {below:g}" for name, value in scores.items()
                 if name in METRIC_NAMES and value < below]
    if feedback and feedback.strip().lower() in {"negative", "thumbs_down", "down", "bad", "-1"}:
        triggers.append("negative user feedback")
    return triggers


def worst_verdict(verdicts: Sequence[str]) -> str | None:
    return min(verdicts, key=VERDICTS.index) if verdicts else None


def case_summary(results: Sequence[JudgeResult]) -> dict:
    """The case's judge figures: means over usable judgements; fallbacks and failures counted apart."""
    usable = [result for result in results if result.usable]
    dimensions = {}
    for name in METRIC_NAMES:
        values = [r.dimensions.get(name) for r in usable if r.dimensions.get(name) is not None]
        dimensions[name] = round(fmean(values), 4) if values else None
    failures = [result.error for result in results if result.status == "failed"]
    return {
        "overall": round(fmean(r.overall for r in usable), 4) if usable else None,
        "dimensions": dimensions,
        "verdict": worst_verdict([r.verdict for r in usable if r.verdict]),
        "failure_modes": sorted({r.failure_mode for r in usable if r.failure_mode}),
        "turns": len(results),
        "usable": len(usable),
        "fallback": sum(r.parse_status == "fallback" for r in results),
        "failed": len(failures),
        "cached": sum(r.cached for r in results),
        "unstable": sum(r.unstable for r in results),
        "review": [f"turn {index}: {reason}" for index, r in enumerate(results, start=1) for reason in r.review],
        "error": failures[0] if failures else None,
    }


class JudgeStage:
    """A `CaseStage` for the runner: judges every turn of each scored case."""

    def __init__(self, judge: LLMJudge, scenarios: Sequence[Scenario], *, sampling: SamplingState | None = None,
                 prompt_hashes: Mapping[str, str] | None = None) -> None:
        self.judge = judge
        self.rubric: Rubric = judge.rubric
        self.scenarios = {scenario.id: scenario for scenario in scenarios}
        self.sampling = sampling
        self.prompt_hashes = dict(prompt_hashes or {})

    async def __call__(self, case: CaseResult) -> CaseResult:
        prepared = self.prepare(case)
        if isinstance(prepared, CaseResult):
            return prepared
        inputs, decision = prepared
        results = await asyncio.gather(*(self.judge.judge(item) for item in inputs))
        return self.finish(case, results, decision)

    def prepare(self, case: CaseResult) -> CaseResult | tuple[list[JudgeInput], SamplingDecision | None]:
        """What to judge in the case (with the sampling decision), or the case as it stays: failed or skipped."""
        if case.status != "ok" or not case.turns:
            return case  # nothing to judge: the case already failed, with its reason
        decision = None
        if self.sampling is not None:
            triggers = sampling_triggers(case.flags, case.scores, self.rubric.judge.sampling.trigger_metric_below)
            decision = self.sampling.decide(case.prompt_version, case.scenario_id, triggers=triggers,
                                            prompt_hash=self.prompt_hashes.get(case.prompt_version, ""))
            if not decision.judge:
                return case.model_copy(update={"judge": {"skipped": True, "sampling": decision.to_record()}})
        return turn_inputs(case, self.scenarios.get(case.scenario_id)), decision

    def finish(self, case: CaseResult, results: Sequence[JudgeResult], decision: SamplingDecision | None) -> CaseResult:
        """The case with each turn's verdict stored beside its heuristics, and the case's judge summary."""
        threshold = self.rubric.judge.disagreement
        results = [with_disagreement(result, (turn.heuristics or {}).get(OVERALL), threshold)
                   for turn, result in zip(case.turns, results)]
        turns = [turn.model_copy(update={"judge": result.to_record()}) for turn, result in zip(case.turns, results)]
        summary = case_summary(results)
        if decision is not None:
            summary["sampling"] = decision.to_record()
            self.sampling.record_verdict(case.prompt_version, summary["verdict"])
        return case.model_copy(update={"turns": turns, "judge": summary})


class BatchJudgeStage(JudgeStage):
    """The judge stage through the Batch API: every case's turns are judged in one batch.

    Cases arrive one by one; their judge inputs are collected until the runner says how many
    cases there are (`cases_expected`) and all of them have arrived. Then one batch judges
    them all, and each case finishes with its verdicts as with the live stage.
    """

    def __init__(self, batch: BatchJudge, scenarios: Sequence[Scenario], **options) -> None:
        super().__init__(batch.judge, scenarios, **options)
        self.batch = batch
        self._inputs: list[JudgeInput] = []
        self._answers: list[asyncio.Future[JudgeResult]] = []
        self._arrived = 0
        self._expected: int | None = None
        self._judging: asyncio.Task | None = None

    def cases_expected(self, count: int) -> None:
        """The runner's word that `count` cases in all come through this stage."""
        self._expected = count
        self._judge_when_all_arrived()

    async def __call__(self, case: CaseResult) -> CaseResult:
        self._arrived += 1
        try:
            prepared = self.prepare(case)
        except Exception:
            self._judge_when_all_arrived()  # this case fails alone; the others must not wait for it
            raise
        if isinstance(prepared, CaseResult):
            self._judge_when_all_arrived()
            return prepared
        inputs, decision = prepared
        loop = asyncio.get_running_loop()
        answers = [loop.create_future() for _ in inputs]
        self._inputs += inputs
        self._answers += answers
        self._judge_when_all_arrived()
        return self.finish(case, await asyncio.gather(*answers), decision)

    def _judge_when_all_arrived(self) -> None:
        if self._judging is None and self._expected is not None and self._arrived >= self._expected:
            self._judging = asyncio.get_running_loop().create_task(self._judge_all())

    async def _judge_all(self) -> None:
        try:
            results = await self.batch.judge_all(self._inputs)
        except Exception as error:  # noqa: BLE001 - every waiting case fails with the reason (and resumes)
            for answer in self._answers:
                answer.set_exception(error)
            return
        for answer, result in zip(self._answers, results, strict=True):
            answer.set_result(result)
