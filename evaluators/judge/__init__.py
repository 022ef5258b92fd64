"""The LLM judge: prompt, verdict parsing, client, run stage, sampling policy."""

from evaluators.judge.client import DEFAULT_JUDGE_MODEL, JudgeSettings, LLMJudge, ModeMemory
from evaluators.judge.factory import JudgeConfig, JudgeConfigError, create_judge, create_sampling_state
from evaluators.judge.result import HistoryItem, JudgeInput, JudgeResult
from evaluators.judge.stage import JudgeStage

__all__ = [
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
