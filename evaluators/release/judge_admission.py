"""Whether the judge's scores may count in a release decision: only once calibrated.

`decision.average_of` judge or blend asks for the judge's scores in the average; they count only
when every judge model that scored the run's cases has a recorded agreement with people at the
rubric's bar (evaluators.judge.calibration_record). Otherwise the decision averages the
heuristics and says why the judge was left out. Pure: the record is read by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.judge.calibration_record import CalibrationBook, admission
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult

UNNAMED = "an unnamed judge model"


def judge_models(cases: Sequence[CaseResult]) -> set[str]:
    """The judge models whose scores the cases hold (turn records name the model); a case with a
    judge score but no named model counts as an unnamed model, which no record calibrates."""
    models = set()
    for case in cases:
        named = {str(turn.judge["model"]) for turn in case.turns
                 if turn.judge and turn.judge.get("model") and turn.judge.get("status") == "ok"}
        scored = bool(case.judge) and (case.judge or {}).get("overall") is not None
        models |= named or ({UNNAMED} if scored else set())
    return models


def admitted_rubric(cases: Sequence[CaseResult], rubric: Rubric, book: CalibrationBook | None) -> tuple[Rubric, str | None]:
    """The rubric the decision reads, and why the judge's scores were left out (None: they count,
    or none were asked for)."""
    models = judge_models(cases)
    if rubric.decision.average_of == "heuristic" or not models:
        return rubric, None
    reason = admission(book or {}, models, "quality", rubric.judge.calibration.min_kappa)
    if reason is None:
        return rubric, None
    heuristic = rubric.decision.model_copy(update={"average_of": "heuristic"})
    return rubric.model_copy(update={"decision": heuristic}), f"the judge's scores were left out of the average: {reason}"
