"""penpal-eval: evaluation suite for voice AI companions, scored on the Penpal rubric."""

from evaluators.evaluation import RunConfig, run_evaluation
from evaluators.heuristics import HeuristicEvaluator
from evaluators.judge import JudgeConfig, JudgeInput, JudgeResult, LLMJudge, create_judge
from evaluators.models import (
    CaseResult,
    Decision,
    Evidence,
    Flag,
    HeuristicResult,
    MetricScore,
    Notice,
    PromptVersion,
    ReleaseReport,
    ReplyCase,
    Scenario,
)
from evaluators.prompts import load_prompts
from evaluators.release import ReleaseError, release_report
from evaluators.scenarios import load_scenarios
from evaluators.store import RunStore
from evaluators.summary import cases_frame, turns_frame, version_summaries
from evaluators.rubric import METRIC_NAMES, OVERALL, Rubric, RubricError, load_rubric
from evaluators.scoring import METRIC_COLUMNS, Unscored, score_frame, score_records, score_reply

__all__ = [
    "METRIC_COLUMNS",
    "JudgeConfig",
    "JudgeInput",
    "JudgeResult",
    "LLMJudge",
    "create_judge",
    "CaseResult",
    "PromptVersion",
    "RunConfig",
    "RunStore",
    "Scenario",
    "cases_frame",
    "load_prompts",
    "Decision",
    "ReleaseError",
    "ReleaseReport",
    "release_report",
    "load_scenarios",
    "run_evaluation",
    "turns_frame",
    "version_summaries",
    "METRIC_NAMES",
    "OVERALL",
    "Evidence",
    "Flag",
    "HeuristicEvaluator",
    "HeuristicResult",
    "MetricScore",
    "Notice",
    "ReplyCase",
    "Rubric",
    "RubricError",
    "Unscored",
    "load_rubric",
    "score_frame",
    "score_records",
    "score_reply",
]
