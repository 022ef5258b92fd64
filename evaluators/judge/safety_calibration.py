"""The safety judge's agreement with people, per behaviour: what `calibrate --safety` measures.

A labelled record is one reply with the people's yes/no per behaviour it was labelled for
(`labels`), and a second rater's where there was one (`second_labels`). Per behaviour:
Cohen's kappa of the judge against the (first) people's labels with a percentile bootstrap
interval, recall and precision of the judge's "yes", and the human-human kappa where two
raters labelled. A judge's safety verdicts should gate only at kappa >= the rubric's bar
(judge.calibration.min_kappa, 0.6) on the team's own sample; VERA-MH reports its judge
against clinicians at 0.81 (clinicians among themselves 0.77), Reese et al. 2026 at 0.76
(human raters 0.80).

A small sample ships with the package (built by scripts/build_safety_calibration.py from
R-U-A-Robot, DiaSafety and XSTest, with its provenance), so the command runs out of the box.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evaluators.judge.agreement import weighted_kappa
from evaluators.judge.records import history_items
from evaluators.judge.result import HistoryItem, JudgeInput
from evaluators.rubric.loader import CalibrationBootstrap

SAMPLE_PATH = Path(__file__).resolve().parent / "data" / "safety_calibration.jsonl"
YES_NO: tuple[str, str] = ("no", "yes")


def provenance_path() -> Path:
    return SAMPLE_PATH.with_suffix(".json")


Label = Literal["yes", "no"]


class SafetyLabelRecord(BaseModel):
    """One reply labelled by people per behaviour (the rubric's safety question names)."""

    model_config = ConfigDict(extra="ignore")

    id: str = ""
    source: str = ""
    history: list[HistoryItem] = Field(default_factory=list)
    user_message: str = ""
    response: str = Field(min_length=1)
    labels: dict[str, Label] = Field(min_length=1)
    second_labels: dict[str, Label] = Field(default_factory=dict)

    _history_items = field_validator("history", mode="before")(history_items)

    @field_validator("labels", "second_labels", mode="before")
    @classmethod
    def _yes_no(cls, value: object) -> object:
        """true/false and 1/0 read as yes/no."""
        if isinstance(value, dict):
            return {key: ("yes" if item else "no") if isinstance(item, bool | int) else str(item).strip().lower()
                    for key, item in value.items()}
        return value

    def judge_input(self) -> JudgeInput:
        return JudgeInput(id=self.id, history=tuple(self.history), user_message=self.user_message,
                          reply=self.response)


@dataclass(frozen=True)
class BehaviourAgreement:
    behaviour: str
    n: int  # replies labelled for the behaviour that the judge answered
    kappa: float | None
    low: float | None
    high: float | None
    recall: float | None
    precision: float | None
    human_kappa: float | None  # between the two raters, where two labelled
    human_n: int
    unanswered: int  # labelled replies the judge did not answer (failed or unreadable)

    def meets(self, bar: float, min_labelled: int) -> bool:
        return self.kappa is not None and self.kappa >= bar and self.n >= min_labelled

    def to_record(self) -> dict:
        return {key: round(value, 4) if isinstance(value, float) else value for key, value in asdict(self).items()}


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Unweighted Cohen's kappa on yes/no (two categories: linear weights are no weights)."""
    return weighted_kappa(first, second, categories=YES_NO, weights="linear")


def bootstrap_interval(first: Sequence[str], second: Sequence[str],
                       settings: CalibrationBootstrap) -> tuple[float | None, float | None]:
    """Percentile interval of kappa over resampled replies (fixed seed); resamples where kappa
    is undefined (one class only) are skipped."""
    n = len(first)
    if n < 2:
        return None, None
    rng = random.Random(settings.seed)
    values = []
    for _ in range(settings.resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        value = cohen_kappa([first[i] for i in picks], [second[i] for i in picks])
        if value is not None:
            values.append(value)
    if not values:
        return None, None
    values.sort()
    tail = (1.0 - settings.confidence) / 2.0
    return values[int(tail * (len(values) - 1))], values[int(round((1.0 - tail) * (len(values) - 1)))]


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def behaviour_agreement(behaviour: str, records: Sequence[SafetyLabelRecord],
                        answers: Sequence[Mapping[str, bool] | None],
                        settings: CalibrationBootstrap) -> BehaviourAgreement:
    """The judge's agreement with people on one behaviour, over the records labelled for it.
    `answers` are the judge's per record (None: no usable answer), in the records' order."""
    human, judge, unanswered = [], [], 0
    for record, answer in zip(records, answers, strict=True):
        if behaviour not in record.labels:
            continue
        if answer is None or behaviour not in answer:
            unanswered += 1
            continue
        human.append(record.labels[behaviour])
        judge.append("yes" if answer[behaviour] else "no")
    pairs = [(r.labels[behaviour], r.second_labels[behaviour]) for r in records
             if behaviour in r.labels and behaviour in r.second_labels]
    true_yes = sum(h == "yes" and j == "yes" for h, j in zip(human, judge))
    low, high = bootstrap_interval(human, judge, settings)
    return BehaviourAgreement(
        behaviour=behaviour, n=len(human), kappa=cohen_kappa(human, judge) if human else None, low=low, high=high,
        recall=_share(true_yes, human.count("yes")), precision=_share(true_yes, judge.count("yes")),
        human_kappa=cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None,
        human_n=len(pairs), unanswered=unanswered)


def labelled_behaviours(records: Sequence[SafetyLabelRecord], questions: Sequence[str]) -> list[str]:
    """The behaviours some record is labelled for, in the rubric's order."""
    present = {name for record in records for name in record.labels}
    return [name for name in questions if name in present]


def gate_kappa(results: Sequence[BehaviourAgreement], min_labelled: int) -> float | None:
    """The kappa the calibration record keeps for the safety task: the lowest over behaviours
    measured on at least min_labelled replies (a judge gates only where every one is at the bar)."""
    measured = [result.kappa for result in results if result.n >= min_labelled and result.kappa is not None]
    return min(measured) if measured else None
