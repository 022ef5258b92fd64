"""Building a judge from options and the environment, checked at once.

`run --judge`, `judge` and `calibrate` all build their judge here, so they read the same
variables, use the same caches and reject the same mistakes with the same messages.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from evaluators.core.response_cache import JsonFileCache
from evaluators.core.retry import RetryPolicy
from evaluators.judge.batch import BatchJudge, BatchSettings
from evaluators.judge.client import DEFAULT_JUDGE_MODEL, JudgeSettings, LLMJudge, ModeMemory, judge_cache_dir
from evaluators.judge.sampling import SamplingPolicy, SamplingState
from evaluators.rubric.loader import Rubric

SAMPLING_CHOICES = ("all", "policy")
JUDGE_ENV_HELP = ("set PENPAL_JUDGE_BASE_URL (and PENPAL_JUDGE_API_KEY) for the judge's OpenAI-compatible "
                  "endpoint, or OPENAI_API_KEY / OPENAI_BASE_URL to share the companion's")


class JudgeConfigError(ValueError):
    """The judge cannot be built as configured; the message says what to change."""


@dataclass(frozen=True)
class JudgeConfig:
    model: str | None = None  # None: PENPAL_JUDGE_MODEL, else DEFAULT_JUDGE_MODEL
    samples: int = 1
    sampling: str = "all"  # "all" judges every case (offline runs); "policy" follows the sampling policy
    sample_rate: float | None = None  # established-phase rate; None: the rubric's
    state_path: Path | None = None  # sampling state file (policy); None: in memory only
    use_cache: bool = True
    cache_dir: Path | None = None  # None: ~/.cache/penpal-eval/judgements
    timeout_s: float = 120.0
    max_attempts: int = 5
    concurrency: int = 4
    max_tokens: int = 700
    retry_base_delay_s: float = 0.5
    batch: bool = False  # judge through the OpenAI Batch API instead of live calls
    batch_poll_s: float = 30.0  # first wait between batch status polls
    batch_retry: str = "live"  # failed or expired batch requests: "live" calls or a new "batch"
    budget: int | None = None  # the safety judge's fresh calls per run (--judge-budget); None: no cap
    safety: bool = True  # with the quality judge, the safety judge where it matters (evaluators.judge.safety_stage)

    def resolved(self, environ: Mapping[str, str]) -> JudgeConfig:
        """The same config with the model filled in from the environment or the default."""
        return replace(self, model=self.model or environ.get("PENPAL_JUDGE_MODEL") or DEFAULT_JUDGE_MODEL)


def judge_configured(environ: Mapping[str, str]) -> bool:
    return any(environ.get(name) for name in
               ("PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"))


def sampling_policy(rubric: Rubric, sample_rate: float | None = None) -> SamplingPolicy:
    settings = rubric.judge.sampling
    try:
        return SamplingPolicy(calibration_uses=settings.calibration_uses,
                              established_max_uses=settings.established_max_uses,
                              established_rate=settings.established_rate if sample_rate is None else sample_rate,
                              trusted_min_share=settings.trusted_min_share)
    except ValueError as error:
        raise JudgeConfigError(f"--judge-sample-rate: {error}") from None


def create_judge(config: JudgeConfig, rubric: Rubric, environ: Mapping[str, str] | None = None) -> LLMJudge:
    environ = os.environ if environ is None else environ
    if not judge_configured(environ):
        raise JudgeConfigError(f"the judge needs an endpoint: {JUDGE_ENV_HELP}")
    if config.sampling not in SAMPLING_CHOICES:
        raise JudgeConfigError(f"--judge-sampling: {config.sampling!r} is not one of {', '.join(SAMPLING_CHOICES)}")
    config = config.resolved(environ)
    try:
        settings = JudgeSettings(model=config.model, samples=config.samples, timeout_s=config.timeout_s,
                                 concurrency=config.concurrency, max_tokens=config.max_tokens)
        retry = RetryPolicy(max_attempts=config.max_attempts, base_delay_s=config.retry_base_delay_s)
    except ValueError as error:
        raise JudgeConfigError(str(error)) from None
    directory = config.cache_dir or judge_cache_dir()
    cache = JsonFileCache(directory) if config.use_cache else None
    # The response mode that worked is remembered beside the judgements, per endpoint and model.
    return LLMJudge.from_environment(rubric, settings, environ, retry=retry, cache=cache,
                                     modes=ModeMemory(directory / "response-modes.json"))


def create_sampling_state(config: JudgeConfig, rubric: Rubric) -> SamplingState | None:
    """The persisted sampling state when the policy is in force; None when every case is judged."""
    if config.sampling != "policy":
        return None
    policy = sampling_policy(rubric, config.sample_rate)
    if config.state_path is None:
        return SamplingState(None, policy)
    try:
        return SamplingState.load(config.state_path, policy)
    except ValueError as error:
        raise JudgeConfigError(str(error)) from None


def create_batch_judge(config: JudgeConfig, judge: LLMJudge, state_path: Path) -> BatchJudge:
    """The Batch API judge over `judge` (its settings, cache and reading); its state kept at `state_path`."""
    try:
        settings = BatchSettings(poll_s=config.batch_poll_s, poll_max_s=max(600.0, config.batch_poll_s),
                                 retry=config.batch_retry)
        return BatchJudge(judge, state_path, settings)
    except ValueError as error:
        raise JudgeConfigError(f"--batch: {error}") from None
