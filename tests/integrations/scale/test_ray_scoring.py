"""`score --engine ray` on a real two-node Ray cluster equals local scoring, record for record.

The records are the sample replies in many variants, with bad records spread through them;
each bad record must come back as an error row in its own place, with the reason local
scoring gives.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.scale.io import read_scored
from evaluators.scoring.api import FRAME_COLUMNS, METRIC_COLUMNS, score_frame
from tests.support.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow  # a two-node Ray cluster

SAMPLES = [json.loads(line) for line in (PROJECT_ROOT / "tests" / "data" / "sample_replies.jsonl").read_text()
           .splitlines()]
BAD_LINES = {  # line number -> the bad line
    7: "{not json at all",
    250: json.dumps({"id": "empty-reply", "user_message": "Hi", "response": "   "}),  # silence: scored, flagged
    1001: json.dumps({"id": "no-reply", "user_message": "Hi"}),
    1500: "[1, 2, 3]",
    2222: json.dumps({"id": "bad-history", "history": 42, "response": "Okay then."}),
    2999: "",  # blank: skipped, as local scoring skips it
}


def records_file(path: Path, count: int = 3000) -> Path:
    lines = []
    for number in range(1, count + 1):
        if number in BAD_LINES:
            lines.append(BAD_LINES[number])
            continue
        sample = SAMPLES[number % len(SAMPLES)]
        response = sample["response"] if number % 4 == 0 else f"{sample['response']} Talk soon, friend {number}."
        record = {**sample, "id": f"{sample['id']}-{number}", "response": response}
        if number % 97 == 0:
            del record["id"]  # named by its line number
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


def run_cli(*arguments: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evaluators", *arguments], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def same_number(a: float | None, b: float | None) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return a == pytest.approx(b, abs=1e-9)


def test_ray_scoring_on_a_two_node_cluster_equals_local_scoring(ray_cluster, tmp_path):
    source = records_file(tmp_path / "replies.jsonl")
    local = CliRunner().invoke(app, ["score", str(source), "--output", str(tmp_path / "local.jsonl")])
    assert local.exit_code == 2  # the records that break the contract (the rest are scored)
    ray_run = run_cli("score", str(source), "--engine", "ray", "--address", ray_cluster["address"], "--workers", "2",
                      "--output", str(tmp_path / "ray.jsonl"), env=ray_cluster["env"])
    assert ray_run.returncode == 2, ray_run.stderr[-3000:]
    assert "could not be scored" in ray_run.stderr and "with 2 worker(s)" in ray_run.stderr

    expected = [json.loads(line) for line in (tmp_path / "local.jsonl").read_text().splitlines()]
    rows = read_scored(str(tmp_path / "ray.jsonl"))
    assert len(rows) == len(expected) == 2999  # one line per non-blank input line, in order
    errors = 0
    for row, want in zip(rows, expected, strict=True):
        assert list(row) == list(FRAME_COLUMNS)
        if "error" in want:
            errors += 1
            assert row["error"] == want["error"]
            assert row["id"] == (want["id"] or str(want["line"]))
            assert all(row[name] is None for name in METRIC_COLUMNS) and row["flags"] == []
            continue
        assert row["error"] is None and row["id"] == want["id"]
        assert all(row[name] == want[name] for name in METRIC_COLUMNS), row["id"]
        assert row["quality_level"] == want["quality_level"]
        assert row["flags"] == [flag["name"] for flag in want["flags"]]
        assert row["evidence"] == want["evidence"]
    assert errors == 4
    assert next(row for row in rows if row["id"] == "empty-reply")["flags"] == ["silent_reply"]
    assert f"record 7: {expected[6]['error']}" in ray_run.stderr


def test_parquet_in_and_out_has_the_columns_and_values_of_score_frame(ray_cluster, tmp_path):
    frame = pd.DataFrame([{**SAMPLES[index % len(SAMPLES)], "id": f"p{index}"} for index in range(120)])
    frame.loc[5, "response"] = ""  # silence: scored with its flag, in place
    frame.loc[9, "id"] = None  # named by its row number, as score_frame names it
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "replies.parquet")
    ray_run = run_cli("score", str(tmp_path / "replies.parquet"), "--engine", "ray", "--address",
                      ray_cluster["address"], "--workers", "2", "--output", str(tmp_path / "scored.parquet"),
                      env=ray_cluster["env"])
    assert ray_run.returncode == 0, ray_run.stderr[-3000:]  # every row keeps the record contract

    got = pq.read_table(tmp_path / "scored.parquet").to_pandas()
    want = score_frame(frame)
    assert list(got.columns) == list(want.columns) == list(FRAME_COLUMNS)
    assert list(got["id"]) == list(want["id"]) and got.loc[9, "id"] == "9"
    assert [None if pd.isna(error) else error for error in got["error"]] == list(want["error"])
    for name in METRIC_COLUMNS:
        assert all(same_number(a, b) for a, b in zip(got[name], want[name], strict=True)), name
    assert [list(flags) for flags in got["flags"]] == [list(flags) for flags in want["flags"]]
    assert [json.loads(text) for text in got["evidence"]] == list(want["evidence"])
