"""penpal-eval: evaluation suite for voice AI companions, scored on the Penpal rubric."""

from evaluators.heuristics import HeuristicEvaluator
from evaluators.models import Evidence, Flag, HeuristicResult, MetricScore, ReplyCase
from evaluators.rubric import METRIC_NAMES, OVERALL, Rubric, RubricError, load_rubric
from evaluators.scoring import METRIC_COLUMNS, Unscored, score_frame, score_records, score_reply

__all__ = [
    "METRIC_COLUMNS",
    "METRIC_NAMES",
    "OVERALL",
    "Evidence",
    "Flag",
    "HeuristicEvaluator",
    "HeuristicResult",
    "MetricScore",
    "ReplyCase",
    "Rubric",
    "RubricError",
    "Unscored",
    "load_rubric",
    "score_frame",
    "score_records",
    "score_reply",
]
