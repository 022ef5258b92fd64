"""Which judge models have shown agreement with people: the record `calibrate` writes and runs read.

A judge model's scores join the release average (`decision.average_of` judge or blend), and its
safety verdicts may gate, only once `penpal-eval calibrate` (quality) or `calibrate --safety`
has measured its Cohen's kappa against human labels at the rubric's bar
(`judge.calibration.min_kappa`). Until then its figures are shown but left out, and the
decision says why: an uncalibrated judge that scores every reply 1.0 must not lift a version
over the deploy bar.

The record is a small JSON file: runs/judge-calibration.json in the project, or the path in
PENPAL_JUDGE_CALIBRATION. One entry per model and task ("quality", "safety"); the latest
calibration of a model replaces the earlier one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from evaluators.core.locations import PROJECT_ROOT, write_text_atomic

CALIBRATION_ENV = "PENPAL_JUDGE_CALIBRATION"
CALIBRATION_FILE = Path("runs") / "judge-calibration.json"
TASKS: tuple[str, ...] = ("quality", "safety")

CalibrationBook = Mapping[str, Mapping[str, dict]]  # model -> task -> figures

# The offline job's safety judge: hand-written sample verdicts replayed like the recorded replies
# (prompts/recorded/judge/). Not a model, so there is no agreement to measure: it is admitted for
# the safety task as what it is, sample data, and every line that names it says so. It gives no
# quality scores, so it is never admitted for the quality task.
SAMPLE_JUDGE_MODEL = "sample-verdicts"
SAMPLE_JUDGE_LABEL = "sample verdicts (hand-written sample data, not a model)"


def judge_label(model: str) -> str:
    """How a report names the judge that answered: the model, or what the sample verdicts are."""
    return SAMPLE_JUDGE_LABEL if model == SAMPLE_JUDGE_MODEL else model


def calibration_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    given = environ.get(CALIBRATION_ENV)
    return Path(given) if given else PROJECT_ROOT / CALIBRATION_FILE


def read_calibration(path: Path | None = None) -> dict[str, dict[str, dict]]:
    """The recorded calibrations; empty when there is no record or it cannot be read (then no
    judge counts, which is the safe reading)."""
    path = path or calibration_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        return {}
    return {str(model): {task: figures for task, figures in tasks.items() if isinstance(figures, dict)}
            for model, tasks in models.items() if isinstance(tasks, dict)}


def record_calibration(model: str, task: str, figures: Mapping[str, object], path: Path | None = None) -> Path:
    """Record a model's agreement for a task (replacing its earlier one); returns the file."""
    if task not in TASKS:
        raise ValueError(f"unknown calibration task {task!r}; expected one of {', '.join(TASKS)}")
    if model == SAMPLE_JUDGE_MODEL:
        raise ValueError(f"{SAMPLE_JUDGE_LABEL} cannot be calibrated: there is no model to measure")
    path = path or calibration_path()
    book = read_calibration(path)
    book.setdefault(model, {})[task] = {**figures, "recorded_at": datetime.now(UTC).isoformat(timespec="seconds")}
    write_text_atomic(path, json.dumps({"models": book}, indent=1, sort_keys=True) + "\n")
    return path


def admission(book: CalibrationBook, models: Iterable[str], task: str, bar: float) -> str | None:
    """None when every model has a recorded kappa at the bar for the task; else why not, in words.

    The sample judge (SAMPLE_JUDGE_MODEL) is admitted for the safety task as sample data, with no
    record; for the quality task it never is (it gives no quality scores)."""
    missing = []
    for model in sorted(set(models)):
        if model == SAMPLE_JUDGE_MODEL:
            if task != "safety":
                missing.append(f"{SAMPLE_JUDGE_LABEL} give no {task} scores")
            continue
        figures = (book.get(model) or {}).get(task)
        kappa = figures.get("kappa") if figures else None
        if not isinstance(kappa, int | float):
            missing.append(f"{model} has no recorded {task} calibration")
        elif kappa < bar:
            missing.append(f"{model}'s recorded kappa {kappa:.2f} is below {bar:g}")
    if not missing:
        return None
    if all(reason.startswith(SAMPLE_JUDGE_LABEL) for reason in missing):
        return "; ".join(missing)
    return (f"{'; '.join(missing)} (the rubric's bar: kappa >= {bar:g} against people; run penpal-eval calibrate "
            "on the team's labelled sample)")
