"""`score --engine ray` and `monitor --engine ray`: the command-line side of evaluators.integrations.scale.

Imported only when a command asks for the Ray engine, so `--help` and local scoring never
load Ray, pandas' Arrow writers or the cluster client.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from evaluators.cli.common import EXIT_RECORD_ERRORS, EXIT_USAGE, fail
from evaluators.integrations.scale.engine import ENGINES, RayUnavailable
from evaluators.report.console import stderr_console

Engine = Enum("Engine", {name: name for name in ENGINES}, type=str)

EngineOption = Annotated[Engine, typer.Option(
    "--engine", help="local: this process. ray: Ray Data actors, one spaCy pipeline each, on a local Ray or the "
                     "cluster at --address (needs the 'scale' extra).")]
AddressOption = Annotated[str | None, typer.Option(
    "--address", help="With --engine ray: the cluster to join (auto, ray://HOST:10001, HOST:6379). Default: start "
                      "a local Ray.", show_default=False)]
WorkersOption = Annotated[int, typer.Option("--workers", min=1, help="With --engine ray: scoring actors, one CPU "
                                                                     "each.")]


def ray_settings(address: str | None, workers: int, rubric_path: Path | None):
    """The Ray settings, or exit 2 with how to install Ray when it is missing."""
    from evaluators.integrations.scale.engine import require_ray
    from evaluators.integrations.scale.ray_scoring import RayScoring

    try:
        require_ray()
        return RayScoring(address=address, workers=workers, rubric_path=rubric_path)
    except (RayUnavailable, ValueError) as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None


def score_with_ray(file: Path, output: Path | None, address: str | None, workers: int,
                   rubric_path: Path | None, *, strict: bool = False) -> None:
    """Score FILE (JSON lines or Parquet; a path or a URI) on Ray; rows as `score_frame` gives them.
    `strict`: records by the `score` contract (exit 2 when some record breaks it)."""
    from evaluators.integrations.scale.ray_scoring import score_file_on_ray

    settings = replace(ray_settings(address, workers, rubric_path), strict=strict)
    if str(file) == "-":
        raise fail("error: --engine ray reads a file or URI, not stdin", EXIT_USAGE)
    errors = stderr_console()

    def report(record_id: str | None, reason: str) -> None:
        errors.print(Text(f"record {record_id}: {reason}"))

    try:
        summary = score_file_on_ray(str(file), str(output) if output else None, settings, stdout=sys.stdout,
                                    on_error=report)
    except (OSError, ValueError) as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    where = settings.address or "a local Ray"
    errors.print(Text(f"scored {summary.scored} of {summary.records} record(s) on {where} with {settings.workers} "
                      f"worker(s) in {summary.seconds:.1f}s ({summary.per_second:.0f} per second); "
                      f"{summary.failed} could not be scored"))
    if strict and summary.invalid:
        raise typer.Exit(code=EXIT_USAGE)
    if summary.failed:
        raise typer.Exit(code=EXIT_RECORD_ERRORS)
