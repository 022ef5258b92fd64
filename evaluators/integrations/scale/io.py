"""Reading scoring inputs and writing scored rows: JSON lines or Parquet, local paths or URIs.

The driver reads the input once, as raw rows (fallback id, line number, the record's raw
JSON): cheap work, and it keeps every record's place and line number, which a distributed
reader cannot know. Parsing and scoring, the costly part, run on the workers. Object-store
URIs (s3://, gs://, ...) go through pyarrow's file systems where the user's setup has them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.integrations.scale.scorer import INPUT_COLUMNS
from evaluators.scoring.api import FRAME_COLUMNS, without_missing

OUTPUT_SCHEMA = pa.schema([
    ("id", pa.string()),
    *((name, pa.float64()) for name in (*METRIC_NAMES, OVERALL)),
    ("quality_level", pa.string()),
    ("flags", pa.list_(pa.string())),
    ("evidence", pa.string()),  # JSON text: its shape differs per metric
    ("notices", pa.list_(pa.string())),
    ("error", pa.string()),
])


def is_parquet(location: str) -> bool:
    return location.lower().rstrip("/").endswith((".parquet", ".pq"))


def _filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    if "://" in location:
        return pafs.FileSystem.from_uri(location)
    return pafs.LocalFileSystem(), str(Path(location).expanduser().resolve())


def read_raw_rows(location: str) -> pa.Table:
    """The input as raw rows, in order; Parquet rows are named by row number (0 first), as in `score_frame`."""
    filesystem, path = _filesystem(location)
    if is_parquet(location):
        table = pq.read_table(path, filesystem=filesystem)
        raws = [json.dumps(without_missing(row), ensure_ascii=False, default=str).encode("utf-8")
                for row in table.to_pylist()]
        return pa.table({"fallback_id": [str(index) for index in range(len(raws))],
                         "line": [0] * len(raws), "raw": pa.array(raws, pa.binary())})
    with filesystem.open_input_stream(path) as stream:
        content = stream.read()
    lines = content.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    numbers = list(range(1, len(lines) + 1))
    return pa.table({"fallback_id": [str(number) for number in numbers], "line": numbers,
                     "raw": pa.array([line + b"\n" for line in lines], pa.binary())}).select(list(INPUT_COLUMNS))


def blocks(table: pa.Table, rows_per_block: int) -> list[pa.Table]:
    """The table cut into blocks, so an actor pool can work on several at once."""
    return [table.slice(start, rows_per_block) for start in range(0, max(table.num_rows, 1), rows_per_block)]


def json_record(row: dict) -> dict:
    """A scored row as a JSON object: NaN as null, evidence as an object again."""
    record = {}
    for name in FRAME_COLUMNS:
        value = row.get(name)
        if isinstance(value, float) and math.isnan(value):
            value = None
        elif name == "evidence" and isinstance(value, str):
            value = json.loads(value)
        elif name in ("flags", "notices"):
            value = list(value) if value is not None else []
        record[name] = value
    return record


@contextmanager
def scored_writer(location: str | None, stdout) -> Iterator:
    """A function taking scored DataFrames, writing Parquet or JSON lines (stdout when no location)."""
    if location is not None and is_parquet(location):
        filesystem, path = _filesystem(location)
        with pq.ParquetWriter(path, OUTPUT_SCHEMA, filesystem=filesystem) as writer:
            yield lambda frame: writer.write_table(pa.Table.from_pandas(
                frame[list(FRAME_COLUMNS)], schema=OUTPUT_SCHEMA, preserve_index=False))
        return
    if location is None:
        yield lambda frame: _write_json_lines(frame, stdout)
        return
    filesystem, path = _filesystem(location)
    with filesystem.open_output_stream(path) as raw:
        writer = _TextSink(raw)
        yield lambda frame: _write_json_lines(frame, writer)


class _TextSink:
    def __init__(self, raw) -> None:
        self.raw = raw

    def write(self, text: str) -> None:
        self.raw.write(text.encode("utf-8"))


def _write_json_lines(frame: pd.DataFrame, out) -> None:
    for row in frame.to_dict(orient="records"):
        out.write(json.dumps(json_record(row), ensure_ascii=False) + "\n")


def read_scored(location: str) -> list[dict]:
    """Scored rows back as JSON objects, from either format (for comparisons and tests)."""
    if is_parquet(location):
        return [json_record(row) for row in pq.read_table(location).to_pylist()]
    return [json.loads(line) for line in Path(location).read_text(encoding="utf-8").splitlines() if line.strip()]
