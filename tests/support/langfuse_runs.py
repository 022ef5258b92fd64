"""Runs for the Langfuse tests: the small project replayed through the CLI's run function, the
way `penpal-eval run` pushes to Langfuse, and the Langfuse secret that must never leak.
"""

from __future__ import annotations

from pathlib import Path

import typer

from evaluators.cli.run import run_with_config
from evaluators.run.config import RunConfig
from evaluators.store.run_store import RunStore

LANGFUSE_SECRET = "sk-lf-DO-NOT-LEAK-7731"


def replay_config(project: dict[str, Path], **overrides) -> RunConfig:
    """The small project's run by replay; `overrides` set any field."""
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
