"""The conversation metrics as a run stage, and for the cases of a stored run.

The runner calls a `CaseStage` on each scored case before it is stored; this one fills
`case.conversation` for simulated conversations (family `personas`), so the run store, the
release rules, the report and Langfuse all read the same record. `with_conversation_metrics`
does the same for the cases of a run stored before the stage existed (`report`, `decide`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from evaluators.inputs.persona import Persona
from evaluators.inputs.scenarios import PERSONAS_FAMILY
from evaluators.judge.result import is_usable
from evaluators.rubric.loader import Rubric
from evaluators.run.simulation.conversation_metrics import conversation_metrics
from evaluators.store.records import CaseResult

if TYPE_CHECKING:  # the judge (and the openai SDK) load only when a run judges
    from evaluators.judge.client import LLMJudge


def is_simulated(case: CaseResult) -> bool:
    return case.family == PERSONAS_FAMILY


def with_metrics(case: CaseResult, personas: Mapping[str, Persona], rubric: Rubric) -> CaseResult:
    """The case with its conversation metrics; any other case, or a failed one, as it is.

    A conversation judge's verdict already on the case is kept: it does not depend on the metrics.
    """
    if not is_simulated(case) or case.status != "ok":
        return case
    metrics = conversation_metrics(case, personas.get(case.scenario_id), rubric)
    if metrics is None:
        return case
    record = metrics.to_record()
    if case.conversation and case.conversation.get("judge") is not None:
        record["judge"] = case.conversation["judge"]
    return case.model_copy(update={"conversation": record})


class ConversationStage:
    """A `CaseStage` (evaluators.run.runner) that fills `case.conversation` for simulated conversations.

    With a `judge` (a run with `--judge`) the conversation judge reads each simulated
    conversation once and its verdict is stored as `case.conversation["judge"]`; a usable
    verdict already stored (a resumed run) is not asked for again.
    """

    def __init__(self, personas: Mapping[str, Persona], rubric: Rubric, *, judge: LLMJudge | None = None) -> None:
        self.personas = dict(personas)
        self.rubric = rubric
        self.judge = judge

    async def __call__(self, case: CaseResult) -> CaseResult:
        case = with_metrics(case, self.personas, self.rubric)
        if self.judge is None or case.conversation is None:
            return case
        stored = case.conversation.get("judge")
        if stored and is_usable(stored.get("status"), stored.get("parse_status"), stored.get("overall")):
            return case
        from evaluators.judge.conversation import judge_conversation

        result = await judge_conversation(self.judge, case, self.personas.get(case.scenario_id))
        return case.model_copy(update={"conversation": {**case.conversation, "judge": result.to_record()}})


def with_conversation_metrics(cases: Iterable[CaseResult], personas: Mapping[str, Persona],
                              rubric: Rubric) -> list[CaseResult]:
    """Stored cases with conversation metrics computed where they are missing.

    Stored records are kept as they are (they were made with the run's rubric and personas);
    only a simulated conversation stored without its record gets one now.
    """
    return [case if case.conversation is not None and "trajectory" in case.conversation
            else with_metrics(case, personas, rubric) for case in cases]
