"""The replay safety judge: the hand-written sample verdicts served as the safety judge's answers.

The offline job (replay responder, no --judge-model) has no judge model to ask, yet the safety
gate needs evidence on the safety-relevant replies. The sample verdicts in
prompts/recorded/judge/ (evaluators.run.sample_verdicts) are that evidence, labelled as what
they are: hand-written sample data, not a model. This judge stands in for the live SafetyJudge
in the same stage (evaluators.judge.safety_stage): each item's result is the same record a
live answer gives (answers, flags by the rubric's rule, reasoning), with the model
SAMPLE_JUDGE_MODEL. No network, no cost. An item with no recorded verdict is a failed item,
missing evidence, never a pass. A live run never uses it.
"""

from __future__ import annotations

from pathlib import Path

from evaluators.core.locations import read_data_file, short_hash
from evaluators.judge.calibration_record import SAMPLE_JUDGE_LABEL, SAMPLE_JUDGE_MODEL
from evaluators.judge.result import JudgeInput
from evaluators.judge.safety_judge import SafetyJudgeResult
from evaluators.judge.safety_stage import SafetyJudgeStage
from evaluators.rubric.loader import Rubric
from evaluators.run.sample_verdicts import (
    SampleVerdict,
    SampleVerdicts,
    load_version_verdicts,
    verdict_files,
)
from evaluators.store.records import REPEAT_MARK, CaseResult

SAMPLE_JUDGE_LINE = "safety judge: sample verdicts (hand-written sample data)"
CONVERSATION_MARK = "conversation"


def item_place(item_id: str) -> tuple[str, str, int, int | None] | None:
    """(version, scenario, repeat, turn or None for the conversation) of a judge item's id
    (`version/scenario[#rN]#turn`, evaluators.judge.stage.turn_inputs); None if it is not one."""
    case, _, last = item_id.rpartition("#")
    version, _, play = case.partition("/")
    scenario, _, repeat = play.partition(REPEAT_MARK)
    if not version or not scenario or (repeat and not repeat.isdigit()):
        return None
    if last == CONVERSATION_MARK:
        return version, scenario, int(repeat or 0), None
    return (version, scenario, int(repeat or 0), int(last)) if last.isdigit() else None


class SampleSafetyJudge:
    """Serves the recorded sample verdicts where the stage would ask the safety judge."""

    kind = "sample"
    label = SAMPLE_JUDGE_LABEL

    def __init__(self, verdicts: dict[str, SampleVerdicts], rubric: Rubric, files_hash: str | None = None) -> None:
        self.verdicts = verdicts
        self.files_hash = files_hash
        self.rubric = rubric
        self.safety = rubric.judge.safety
        self.calls_made = 0  # never a call: nothing spends a --judge-budget

    @property
    def model(self) -> str:
        return SAMPLE_JUDGE_MODEL

    def manifest_record(self) -> dict:
        """What the manifest keeps of it: what it is, and which versions' verdicts it serves."""
        return {"kind": self.kind, "model": self.model, "label": self.label, "versions": sorted(self.verdicts),
                "files": {version: verdicts.source for version, verdicts in sorted(self.verdicts.items())}}

    def verdict(self, item: JudgeInput) -> SampleVerdict | None:
        place = item_place(item.id)
        if place is None:
            return None
        version, scenario, repeat, turn = place
        found = self.verdicts.get(version)
        return found.get(scenario, repeat, turn) if found is not None else None

    def cached(self, item: JudgeInput) -> SafetyJudgeResult | None:
        """A recorded verdict costs nothing, like a cached answer: the stage charges no budget for it."""
        verdict = self.verdict(item)
        return None if verdict is None else self._result(item, verdict, [])

    async def judge_item(self, item: JudgeInput, reasons: list[str] | None = None) -> SafetyJudgeResult:
        """The recorded verdict as the live judge's result; a failed item when there is none."""
        verdict = self.verdict(item)
        if verdict is None:
            return SafetyJudgeResult(id=item.id, scope=item.scope, reasons=list(reasons or []), status="failed",
                                     model=self.model, error=f"no sample verdict for {_describe(item.id)}")
        return self._result(item, verdict, list(reasons or []))

    def _result(self, item: JudgeInput, verdict: SampleVerdict, reasons: list[str]) -> SafetyJudgeResult:
        return SafetyJudgeResult(
            id=item.id, scope=item.scope, reasons=reasons, status="ok", parse_status="json", mode="sample",
            reasoning=verdict.reasoning, answers={name: dict(answer) for name, answer in verdict.answers.items()},
            flags=self.safety.flags(verdict.answered()), model=self.model)


def _describe(item_id: str) -> str:
    place = item_place(item_id)
    if place is None:
        return item_id
    _, scenario, repeat, turn = place
    where = "the conversation" if turn is None else f"turn {turn}"
    return f"{scenario}{f' repeat {repeat}' if repeat else ''} {where}"


def sample_judge_for(versions: list[str], rubric: Rubric, recorded_dir: Path | None = None,
                     scenarios_dir: Path | None = None) -> SampleSafetyJudge | None:
    """The replay safety judge for the run's versions that have a sample-verdicts file; None when
    none has. A version without a file is not judged by it (its replies stay unverified); a
    malformed file stops the run (SampleVerdictError names the file, the item and the field)."""
    files = [path for path in verdict_files(recorded_dir) if path.stem in versions]
    if not files:
        return None
    chosen = load_version_verdicts(recorded_dir, scenarios_dir, rubric, known_only=True, versions=versions)
    digest = short_hash("".join(read_data_file(path) for path in files))
    return SampleSafetyJudge(chosen, rubric, files_hash=digest)


class SampleSafetyJudgeStage(SafetyJudgeStage):
    """The safety stage with the sample judge: a version with no sample-verdicts file is not
    judged by it at all (its cases stay as the heuristics left them, its replies unverified);
    a version with a file has each chosen item answered from it, or failed when it has none."""

    judge: SampleSafetyJudge

    async def __call__(self, case: CaseResult) -> CaseResult:
        if case.prompt_version not in self.judge.verdicts:
            return case
        return await super().__call__(case)
