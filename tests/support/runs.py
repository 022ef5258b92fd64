"""Evaluation runs in the run tests: the small project's configuration (replayed unless a test
points the companion at the local server), and pointing it there with a key that must never leak.
"""

from __future__ import annotations

from pathlib import Path

from evaluators.run.config import RunConfig

SECRET = "sk-test-DO-NOT-LEAK-4242"


def config(project: dict[str, Path], **overrides) -> RunConfig:
    """The small project's run, with short timeouts and retry delays; `overrides` set any field."""
    values = dict(prompts_dir=project["prompts"], scenarios_dir=project["scenarios"],
                  recorded_dir=project["recorded"], output_dir=project["runs"], cache_dir=project["cache"],
                  retry_base_delay_s=0.01, timeout_s=2.0)
    return RunConfig(**{**values, **overrides})


def use_server(monkeypatch, server) -> None:
    """Point the companion at the local server, with a key that must never appear in any output."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def version_of(call) -> str:
    """The prompt version a recorded server call came from (its system prompt names it)."""
    return call.messages[0]["content"].split("(")[1].split(")")[0]


def conversation(call) -> tuple[str, str]:
    """(prompt version, first user message): which case a call belongs to."""
    first_user = next(m["content"] for m in call.messages if m["role"] == "user")
    return version_of(call), first_user
