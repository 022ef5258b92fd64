"""The LLM judge: prompt, verdict parsing, client, Batch API, run stage, sampling policy."""

from evaluators.judge.batch import BatchJudge, BatchSettings
from evaluators.judge.client import DEFAULT_JUDGE_MODEL, JudgeSettings, LLMJudge, ModeMemory
from evaluators.judge.factory import JudgeConfig, JudgeConfigError, create_judge, create_sampling_state
from evaluators.judge.result import HistoryItem, JudgeInput, JudgeResult
from evaluators.judge.stage import BatchJudgeStage, JudgeStage

__all__ = [
    "BatchJudge",
    "BatchSettings",
    "BatchJudgeStage",
    "DEFAULT_JUDGE_MODEL",
    "HistoryItem",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeInput",
    "JudgeResult",
    "JudgeSettings",
    "JudgeStage",
    "LLMJudge",
    "ModeMemory",
    "create_judge",
    "create_sampling_state",
]
