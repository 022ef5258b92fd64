"""Runs with the LLM judge in the judge tests: the small project replayed, judged by the local
server, with a judge key that must never leak.
"""

from __future__ import annotations

from pathlib import Path

from evaluators.judge.factory import JudgeConfig
from evaluators.run.config import RunConfig

JUDGE_SECRET = "sk-judge-DO-NOT-LEAK-9191"


def use_judge(monkeypatch, server) -> None:
    """Point the judge at the local server, with a key that must never appear in any output."""
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", JUDGE_SECRET)


def config(project: dict[str, Path], judge: JudgeConfig | None = None, **overrides) -> RunConfig:
    """The small project replayed and judged (a default judge unless one is given: the quality judge
    alone, so the quality judge's tests count its calls; the safety judge's tests ask for it)."""
    values = dict(prompts_dir=project["prompts"], scenarios_dir=project["scenarios"], responder="replay",
                  recorded_dir=project["recorded"], output_dir=project["runs"], cache_dir=project["cache"],
                  retry_base_delay_s=0.01, timeout_s=5.0, max_attempts=2,
                  judge=judge or JudgeConfig(model="judge-model", retry_base_delay_s=0.01, max_attempts=2, safety=False))
    return RunConfig(**{**values, **overrides})
