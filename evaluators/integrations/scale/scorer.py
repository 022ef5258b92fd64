"""Rows in, `score_frame` rows out: the function each Ray worker runs on its batches.

A row is one input record as raw JSON bytes with its fallback id (its line number in a
JSON-lines file, its row number in Parquet). Parsing happens here, on the workers, with the
same reader and the same record checks as local scoring, so a bad line or record comes
back as an error row in its place with the reason local scoring gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from evaluators.core.jsonl import parse_json_line
from evaluators.rubric.loader import default_rubric, load_rubric
from evaluators.scoring.api import FRAME_COLUMNS, Unscored, outcome_row, rows_frame, score_records
from evaluators.scoring.contracts import HeuristicResult, ReplyCase
from evaluators.scoring.heuristics import HeuristicEvaluator

# What travels between the driver and the workers: fallback id, line number (0: not a line), raw JSON.
INPUT_COLUMNS = ("fallback_id", "line", "raw")


def score_raw_rows(rows: pd.DataFrame, evaluator: HeuristicEvaluator, strict: bool = False) -> pd.DataFrame:
    """Score a batch of raw rows; blank lines are dropped, every other row gives one output row.

    `evidence` is JSON text here, because its shape varies per metric and Arrow wants one
    schema per column; the writers turn it back into objects where the format allows.
    """
    parsed, records = [], []
    for fallback_id, line, raw in zip(rows["fallback_id"], rows["line"], rows["raw"], strict=True):
        item = parse_json_line(int(line), bytes(raw))
        if item is None:
            continue  # a blank line, skipped as local scoring skips it
        record = item.record
        if isinstance(record, dict) and record.get("id") is None:
            record = {**record, "id": fallback_id}
        parsed.append((fallback_id, item.error))
        records.append(record if item.error is None else None)
    out = []
    outcomes = score_records(records, evaluator=evaluator, strict=strict)
    for index, ((fallback_id, line_error), outcome) in enumerate(zip(parsed, outcomes, strict=True)):
        if line_error is not None:
            outcome = Unscored(fallback_id, line_error)
        elif isinstance(outcome, Unscored) and not isinstance(records[index], dict):
            outcome = Unscored(fallback_id, outcome.error)  # not a record at all: named by its place
        row = outcome_row(outcome)
        out.append({**row, "evidence": json.dumps(row["evidence"], ensure_ascii=False, sort_keys=True)})
    return rows_frame(out) if out else pd.DataFrame(columns=list(FRAME_COLUMNS))


class ReplyScorer:
    """The callable class Ray Data's actor pool runs: one loaded spaCy pipeline per worker."""

    def __init__(self, rubric_path: str | None = None, strict: bool = False) -> None:
        rubric = load_rubric(Path(rubric_path)) if rubric_path else default_rubric()
        self.evaluator = HeuristicEvaluator(rubric)
        self.strict = strict

    def __call__(self, rows: pd.DataFrame) -> pd.DataFrame:
        return score_raw_rows(rows, self.evaluator, self.strict)


class CaseScorer:
    """Scores reply cases (as JSON) to full heuristic results (as JSON): for callers that need
    the evidence and flags as objects, such as the Langfuse monitor."""

    def __init__(self, rubric_path: str | None = None, strict: bool = False) -> None:
        self.scorer = ReplyScorer(rubric_path)  # cases come validated: `strict` concerns raw records only

    def __call__(self, rows: pd.DataFrame) -> pd.DataFrame:
        cases = [ReplyCase.model_validate_json(text) for text in rows["case"]]
        results: list[HeuristicResult] = list(self.scorer.evaluator.score_cases(cases))
        return pd.DataFrame({"result": [result.model_dump_json() for result in results]})
