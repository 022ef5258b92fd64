"""Scoring on Ray Data: raw rows cut into blocks, a fixed pool of scoring actors, rows back in order.

Each actor loads the spaCy pipeline and compiles the rubric's matchers once, then scores
batch after batch; `preserve_order` keeps the output in input order, so a record's result
(or its error) stays in its place.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pandas as pd
import pyarrow as pa

from evaluators.integrations.scale.engine import connect
from evaluators.integrations.scale.io import blocks, read_raw_rows, scored_writer
from evaluators.integrations.scale.scorer import CaseScorer, ReplyScorer
from evaluators.scoring.contracts import HeuristicResult, ReplyCase

ROWS_PER_BLOCK = 500  # small enough that every actor gets work, large enough to amortise scheduling
BATCH_SIZE = 250  # rows per call to an actor; local scoring also works in batches of 256


@dataclass(frozen=True)
class RayScoring:
    """Where and how wide to score."""

    address: str | None = None  # None: a local Ray on this machine; else "auto", "ray://...", "host:port"
    workers: int = 2  # scoring actors, one CPU each
    rubric_path: Path | None = None
    strict: bool = False  # read records by the `score` contract (evaluators.scoring.contracts.StrictReplyRecord)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("--workers must be at least 1")


@dataclass
class ScaleSummary:
    records: int = 0
    scored: int = 0
    failed: int = 0
    invalid: int = 0  # of the failed: not records by the contract (the others: left unscored for their text)
    seconds: float = 0.0

    @property
    def per_second(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


def _scored_frames(table: pa.Table, scorer: type, settings: RayScoring) -> Iterator[pd.DataFrame]:
    ray, started = connect(settings.address, settings.workers)
    try:
        dataset = ray.data.from_arrow(blocks(table, ROWS_PER_BLOCK))
        rubric = str(settings.rubric_path.resolve()) if settings.rubric_path else None
        # A fixed pool: each actor pays for loading spaCy once.
        scored = dataset.map_batches(scorer, fn_constructor_kwargs={"rubric_path": rubric, "strict": settings.strict}, batch_size=BATCH_SIZE,
                                     batch_format="pandas", num_cpus=1,
                                     compute=ray.data.ActorPoolStrategy(size=settings.workers))
        with warnings.catch_warnings():  # "fewer blocks than actors" on small inputs: true, and harmless
            warnings.filterwarnings("ignore", message="The minimum number of concurrent actors")
            for frame in scored.iter_batches(batch_format="pandas", batch_size=None):
                if len(frame):
                    yield frame
    finally:
        if started:
            ray.shutdown()


def score_file_on_ray(source: str, output: str | None, settings: RayScoring, *, stdout: TextIO,
                      on_error: Callable[[str | None, str], None] = lambda record_id, reason: None) -> ScaleSummary:
    """Score a JSON-lines or Parquet input to a Parquet or JSON-lines output (stdout when None)."""
    started = time.perf_counter()
    table = read_raw_rows(source)
    summary = ScaleSummary()
    with scored_writer(output, stdout) as write:
        for frame in _scored_frames(table, ReplyScorer, settings):
            write(frame)
            failed = frame[frame["error"].notna()]
            for record_id, reason in zip(failed["id"], failed["error"]):
                on_error(record_id, reason)
            summary.records += len(frame)
            summary.failed += len(failed)
            summary.invalid += sum(not len(notices) for notices in failed["notices"])
    summary.scored = summary.records - summary.failed
    summary.seconds = time.perf_counter() - started
    return summary


def score_cases_on_ray(cases: Sequence[ReplyCase], settings: RayScoring) -> list[HeuristicResult]:
    """Full heuristic results for valid cases, in order (the Langfuse monitor's scoring on Ray)."""
    if not cases:
        return []
    table = pa.table({"case": [case.model_dump_json() for case in cases]})
    return [HeuristicResult.model_validate_json(text)
            for frame in _scored_frames(table, CaseScorer, settings) for text in frame["result"]]
