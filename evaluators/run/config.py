"""An evaluation run's configuration: what it runs, against what, and how (`penpal-eval run`'s
options as data), and which of them a resumed run keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evaluators.core.locations import PROJECT_ROOT
from evaluators.inputs.pricing import Price
from evaluators.inputs.prompts import DEFAULT_PROMPTS_DIR
from evaluators.inputs.scenarios import DEFAULT_SCENARIOS_DIR
from evaluators.judge.factory import JudgeConfig
from evaluators.run.responder import DEFAULT_RECORDED_DIR

RESPONDER_CHOICES = ("auto", "replay", "openai")
PROMPT_SOURCES = ("local", "langfuse")
DEFAULT_PROMPT_LABELS = ("production",)


class RunConfigError(ValueError):
    """The run cannot start as configured; the message says what to change."""


@dataclass
class RunConfig:
    prompt_versions: list[str] | None = None  # None: every version in prompts_dir
    families: list[str] | None = None  # None: every family
    scenario_ids: list[str] | None = None
    persona_ids: list[str] | None = None  # None: every persona (when the family is selected)
    max_turns: int | None = None  # None: each persona's own max_turns
    repeats: int = 1  # --repeat: plays of each (version, scenario), each with its own sampling seed
    responder: str = "auto"
    # The companion under test as a target (evaluators.inputs.targets): a file, `openai`,
    # `http:URL` or `python:module:function`. None: the responder above, or each version's own.
    target: str | None = None
    model: str | None = None
    concurrency: int = 8
    timeout_s: float = 60.0
    max_attempts: int = 5
    use_cache: bool = True
    cache_dir: Path | None = None
    output_dir: Path = PROJECT_ROOT / "runs"
    run_id: str | None = None
    resume: Path | None = None
    prompts_dir: Path = DEFAULT_PROMPTS_DIR
    scenarios_dir: Path = DEFAULT_SCENARIOS_DIR
    recorded_dir: Path = DEFAULT_RECORDED_DIR
    prices: dict[str, Price] = field(default_factory=dict)
    retry_base_delay_s: float = 0.5
    judge: JudgeConfig | None = None  # None: heuristics only
    # With the replay responder and no judge: the safety judge stage serves the hand-written sample
    # verdicts (evaluators.run.sample_judge); False (--no-sample-judge) keeps the bare heuristics.
    sample_judge: bool = True
    prompt_source: str = "local"  # "langfuse": fetch the prompts from Langfuse prompt management
    prompt_labels: list[str] | None = None  # Langfuse labels to fetch; None: production
    langfuse_prompt_names: list[str] | None = None  # None: the names of the prompts in prompts_dir
    langfuse: bool | None = None  # push to Langfuse; None: when its keys are set
    given: frozenset[str] = frozenset()  # fields set explicitly on the command line (checked on resume)


# What --resume restores from the manifest, by RunConfig field, and the flag that sets it: given
# again on resume, such a flag must agree with the run, or the resume is refused naming it.
RESUMED_INPUTS: dict[str, str] = {
    "prompt_versions": "--prompt", "families": "--family", "scenario_ids": "--scenario",
    "persona_ids": "--persona", "max_turns": "--turns", "repeats": "--repeat", "responder": "--responder",
    "target": "--target", "model": "--model",
    "prompts_dir": "--prompts-dir",
    "scenarios_dir": "--scenarios-dir", "recorded_dir": "--recorded-dir", "run_id": "--run-id",
    "prompt_source": "--prompt-source", "prompt_labels": "--label", "langfuse_prompt_names": "--langfuse-prompt",
    "judge": "--judge", "judge_model": "--judge-model", "judge_samples": "--judge-samples",
    "judge_sampling": "--judge-sampling", "judge_sample_rate": "--judge-sample-rate",
}
