"""Shared pieces for the Langfuse tests: pointing the suite at the local Langfuse stand-in and
running the evaluation the way the CLI does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from evaluators.cli.run import run_with_config
from evaluators.evaluation import RunConfig
from evaluators.store import RunStore
from tests.servers.langfuse import LangfuseCompatServer

LANGFUSE_SECRET = "sk-lf-DO-NOT-LEAK-7731"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for name in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL", "LANGFUSE_HOST",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY",
                 "PENPAL_LANGFUSE_REVIEW_QUEUE", "PENPAL_LANGFUSE_DATASET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PENPAL_EVAL_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def langfuse(langfuse_server, monkeypatch) -> Callable[..., LangfuseCompatServer]:
    """langfuse(**server options) -> a started server that the suite's environment points at."""

    def start(timeout_s: float = 2.0, flush_timeout_s: float = 15.0, **options) -> LangfuseCompatServer:
        server = langfuse_server(secret_key=LANGFUSE_SECRET, **options)
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", server.public_key)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", server.secret_key)
        monkeypatch.setenv("LANGFUSE_BASE_URL", server.base_url)
        monkeypatch.setenv("PENPAL_LANGFUSE_TIMEOUT", str(timeout_s))
        monkeypatch.setenv("PENPAL_LANGFUSE_FLUSH_TIMEOUT", str(flush_timeout_s))
        return server

    return start


def replay_config(project: dict[str, Path], **overrides) -> RunConfig:
    values = dict(prompts_dir=project["prompts"], scenarios_dir=project["scenarios"], recorded_dir=project["recorded"],
                  output_dir=project["runs"], cache_dir=project["cache"], responder="replay")
    return RunConfig(**{**values, **overrides})


def run_replay(project: dict[str, Path], run_id: str = "test-run", **overrides) -> tuple[int, RunStore | None]:
    """Run the small project by replay through the CLI's run function; (exit code, store or None)."""
    try:
        code = run_with_config(replay_config(project, run_id=run_id, **overrides))
    except typer.Exit as exit_:
        code = exit_.exit_code
    directory = project["runs"] / run_id
    return code, RunStore.open(directory) if (directory / "manifest.json").exists() else None
