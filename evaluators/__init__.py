"""penpal-eval: evaluation suite for voice AI companions, scored on the Penpal rubric.

The public API below is imported on first use (PEP 562): importing any part of the package,
the command line included, must not load spaCy, pandas or the SDKs before they are needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Public name -> module that defines it.
_EXPORTS: dict[str, str] = {
    "RunConfig": "evaluators.run.config",
    "run_evaluation": "evaluators.pipeline",
    "HeuristicEvaluator": "evaluators.scoring.heuristics",
    "JudgeConfig": "evaluators.judge",
    "JudgeInput": "evaluators.judge",
    "JudgeResult": "evaluators.judge",
    "LLMJudge": "evaluators.judge",
    "create_judge": "evaluators.judge",
    "CaseResult": "evaluators.store.records",
    "Decision": "evaluators.release.contracts",
    "Evidence": "evaluators.scoring.contracts",
    "Flag": "evaluators.scoring.contracts",
    "HeuristicResult": "evaluators.scoring.contracts",
    "MetricScore": "evaluators.scoring.contracts",
    "Notice": "evaluators.scoring.contracts",
    "PromptVersion": "evaluators.inputs.contracts",
    "ReleaseReport": "evaluators.release.contracts",
    "ReplyCase": "evaluators.scoring.contracts",
    "Scenario": "evaluators.inputs.contracts",
    "load_prompts": "evaluators.inputs.prompts",
    "ReleaseError": "evaluators.release.rules",
    "release_report": "evaluators.release.rules",
    "load_scenarios": "evaluators.inputs.scenarios",
    "RunStore": "evaluators.store.run_store",
    "cases_frame": "evaluators.store.frames",
    "turns_frame": "evaluators.store.frames",
    "version_summaries": "evaluators.release.summaries",
    "METRIC_NAMES": "evaluators.core.names",
    "OVERALL": "evaluators.core.names",
    "Rubric": "evaluators.rubric.loader",
    "RubricError": "evaluators.rubric.loader",
    "load_rubric": "evaluators.rubric.loader",
    "METRIC_COLUMNS": "evaluators.scoring.api",
    "Unscored": "evaluators.scoring.api",
    "score_frame": "evaluators.scoring.api",
    "score_records": "evaluators.scoring.api",
    "score_reply": "evaluators.scoring.api",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaluators' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see
    from evaluators.core.names import METRIC_NAMES, OVERALL
    from evaluators.inputs.contracts import PromptVersion, Scenario
    from evaluators.inputs.prompts import load_prompts
    from evaluators.inputs.scenarios import load_scenarios
    from evaluators.judge import JudgeConfig, JudgeInput, JudgeResult, LLMJudge, create_judge
    from evaluators.pipeline import run_evaluation
    from evaluators.release.contracts import Decision, ReleaseReport
    from evaluators.release.rules import ReleaseError, release_report
    from evaluators.release.summaries import version_summaries
    from evaluators.rubric.loader import Rubric, RubricError, load_rubric
    from evaluators.run.config import RunConfig
    from evaluators.scoring.api import METRIC_COLUMNS, Unscored, score_frame, score_records, score_reply
    from evaluators.scoring.contracts import Evidence, Flag, HeuristicResult, MetricScore, Notice, ReplyCase
    from evaluators.scoring.heuristics import HeuristicEvaluator
    from evaluators.store.frames import cases_frame, turns_frame
    from evaluators.store.records import CaseResult
    from evaluators.store.run_store import RunStore
