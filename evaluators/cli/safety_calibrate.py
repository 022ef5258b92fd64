"""`penpal-eval calibrate --safety`: the safety judge's agreement with people, per behaviour.

Reads replies labelled per behaviour (evaluators.judge.safety_calibration; the shipped sample
when no file is given), asks the safety judge about each, and prints per behaviour Cohen's kappa
with its bootstrap interval, recall, precision and the human-human kappa where two raters
labelled. The judge model's result is recorded (evaluators.judge.calibration_record) so a run
lets its safety verdicts gate only once every measured behaviour is at the rubric's bar.
Without a judge endpoint, it prints what the people's own agreement is and says the judge
was not asked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from evaluators.cli.common import EXIT_RECORD_ERRORS, fail, open_input
from evaluators.core.jsonl import read_json_lines
from evaluators.core.locations import display_path
from evaluators.core.text_safety import valid_tree
from evaluators.judge.calibration_record import record_calibration
from evaluators.judge.client import LLMJudge
from evaluators.judge.safety_calibration import (
    SAMPLE_PATH,
    BehaviourAgreement,
    SafetyLabelRecord,
    behaviour_agreement,
    gate_kappa,
    labelled_behaviours,
)
from evaluators.judge.safety_judge import SafetyJudge
from evaluators.report.console import stderr_console, stdout_console
from evaluators.rubric.loader import Rubric
from evaluators.scoring.contracts import validate_json_record


def read_labelled(path: Path | None) -> tuple[list[SafetyLabelRecord], list[str]]:
    """The labelled records and the problems of the lines that are not (line numbers named)."""
    records, problems = [], []
    with ExitStack() as stack:
        for item in read_json_lines(open_input(stack, path or SAMPLE_PATH)):
            if item.error is not None:
                problems.append(f"line {item.number}: {item.error}")
                continue
            try:
                record = validate_json_record(SafetyLabelRecord, valid_tree(item.record)[0])
            except ValueError as problem:
                problems.append(f"line {item.number}: {problem}")
                continue
            records.append(record if record.id else record.model_copy(update={"id": f"line-{item.number}"}))
    return records, problems


async def judge_records(judge: SafetyJudge, records: Sequence[SafetyLabelRecord]) -> list[dict[str, bool] | None]:
    """The judge's yes/no per question for each record; None where it gave no usable answer."""
    async def one(record: SafetyLabelRecord) -> dict[str, bool] | None:
        result = await judge.judge_item(record.judge_input(), ["calibration"])
        return {name: answer["answer"] == "yes" for name, answer in result.answers.items()} if result.usable else None
    try:
        return list(await asyncio.gather(*(one(record) for record in records)))
    finally:
        await judge.judge.aclose()


def _shown(value: float | None, form: str = "{:.2f}") -> str:
    return "—" if value is None else form.format(value)


def agreement_table(results: Sequence[BehaviourAgreement], total: int, model: str | None, bar: float) -> Table:
    """One row per behaviour, within 80 columns."""
    who = f"judge {model}" if model else "no judge asked"
    table = Table(title=f"Safety agreement with people ({total} labelled replies; {who})", header_style="bold",
                  box=box.SIMPLE_HEAD)
    for column in ("behaviour", "n", "κ", "95% interval", "recall", "prec.", "human κ (n)"):
        table.add_column(column, justify="left" if column == "behaviour" else "right", no_wrap=True)
    for result in results:
        interval = "—" if result.low is None else f"{result.low:.2f} to {result.high:.2f}"
        human = "—" if result.human_kappa is None else f"{result.human_kappa:.2f} ({result.human_n})"
        table.add_row(result.behaviour, str(result.n), _shown(result.kappa), interval, _shown(result.recall, "{:.0%}"),
                      _shown(result.precision, "{:.0%}"), human)
    table.caption = (f"κ: Cohen's kappa, judge against people (bar before it gates: {bar:g}; VERA-MH judge 0.81, "
                     "clinicians 0.77; Reese et al. 2026 judge 0.76, raters 0.80). Recall and precision of the "
                     "judge's yes.")
    return table


def calibrate_safety(file: Path | None, rubric: Rubric, judge: LLMJudge | None, as_json: bool) -> None:
    """The command's body: read, judge (when a judge is given), measure, print, record."""
    records, problems = read_labelled(file)
    for problem in problems:
        stderr_console().print(Text(problem, style="red"))
    if not records:
        raise fail("error: no valid labelled records", EXIT_RECORD_ERRORS)
    behaviours = labelled_behaviours(records, list(rubric.judge.safety.questions))
    settings = rubric.judge.calibration
    if judge is None:
        stderr_console().print(Text("notice: no judge endpoint is configured, so only the people's own agreement "
                                    "is shown; set PENPAL_JUDGE_BASE_URL or OPENAI_API_KEY to calibrate the judge",
                                    style="yellow"))
        answers: list[dict[str, bool] | None] = [None] * len(records)
    else:
        answers = asyncio.run(judge_records(SafetyJudge(judge), records))
    results = [behaviour_agreement(name, records, answers, settings.bootstrap) for name in behaviours]
    model = judge.settings.model if judge is not None else None
    if as_json:
        typer.echo(json.dumps({"labelled": len(records), "model": model, "bar": settings.min_kappa,
                               "behaviours": [result.to_record() for result in results]}, indent=2))
    else:
        stdout_console().print(agreement_table(results, len(records), model, settings.min_kappa))
    if judge is not None:
        _record(judge.settings.model, results, rubric, file)
    if problems:
        raise typer.Exit(code=EXIT_RECORD_ERRORS)


def _record(model: str, results: Sequence[BehaviourAgreement], rubric: Rubric, file: Path | None) -> None:
    settings = rubric.judge.calibration
    kappa = gate_kappa(results, settings.min_labelled)
    admitted = [r.behaviour for r in results if r.meets(settings.min_kappa, settings.min_labelled)]
    path = record_calibration(model, "safety", {
        "kappa": kappa, "bar": settings.min_kappa, "labels": file.name if file else "shipped sample",
        "admitted_behaviours": admitted, "behaviours": {r.behaviour: r.to_record() for r in results}})
    shown = "n/a" if kappa is None else f"{kappa:.2f}"
    verdict = ("every measured behaviour is at the bar: its safety verdicts may gate" if kappa is not None
               and kappa >= settings.min_kappa else f"below the bar {settings.min_kappa:g}: its safety verdicts "
               "do not gate")
    stderr_console().print(Text(f"recorded {model}: lowest behaviour kappa {shown} in {display_path(path)}; "
                                f"{verdict}", style="yellow" if "below" in verdict else "green"))
