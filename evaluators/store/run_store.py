"""The run store: runs/<run-id>/ holds everything a run produced, and is the record.

- manifest.json   configuration, git commit, and hashes of the rubric, prompts and scenarios
- inputs.json     the prompt versions and scenarios themselves, so the run can be pushed to
                  Langfuse, reported and compared without the working tree it came from
- cases.jsonl     one line per finished case, appended (and flushed) as each case finishes
- summary.json    per-version aggregates, written when the run ends
- pairwise.json   head-to-head comparisons by the pairwise judge (`run --pairwise`, `pairwise`)
- cases.csv / cases.parquet, turns.csv / turns.parquet   flat exports for pandas users

A run killed at any point leaves a valid store: at worst a torn last line, which is ignored
on reading, and that case is simply run again when the run resumes. Any other line that is not
a case is skipped as well, and named on stderr.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import subprocess
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from evaluators.core.jsonl import json_reason
from evaluators.core.locations import PROJECT_ROOT, write_text_atomic
from evaluators.core.text_safety import spreadsheet_safe, valid_tree
from evaluators.inputs.contracts import PromptVersion, Scenario
from evaluators.store.frames import cases_frame, turns_frame
from evaluators.store.records import CaseResult

MANIFEST = "manifest.json"
CASES = "cases.jsonl"
SUMMARY = "summary.json"
INPUTS = "inputs.json"
PAIRWISE = "pairwise.json"


# A run id names a directory inside --output: the pattern of prompt version names (a letter or
# digit, then letters, digits, ".", "_", "-"), so no id can climb out ("../x") or go elsewhere ("/x").
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


# Lines already named on stderr, so a command that reads the store several times names each once.
_NAMED_LINES: set[tuple[str, int]] = set()
# A record starts with its case id (CaseResult's first field), so even a torn line names its case.
_LEADING_CASE_ID = re.compile(r'^\{"case_id":"((?:[^"\\]|\\.)*)"')


def unreadable_reason(line: str, error: ValueError) -> str:
    """Why a line of cases.jsonl is not a case, in words."""
    try:
        json.loads(line)
    except json.JSONDecodeError as decode_error:
        return json_reason(decode_error)
    except RecursionError:
        return "not valid JSON: nested too deeply"
    first = error.errors()[0] if isinstance(error, ValidationError) and error.errors() else None
    if first is None:
        return f"not a case record: {error}"
    where = ".".join(str(part) for part in first["loc"]) or "the record"
    return f"not a case record: {where}: {first['msg']}"


def _leading_case_id(line: str) -> str | None:
    match = _LEADING_CASE_ID.match(line)
    if match is None:
        return None
    try:
        return json.loads(f'"{match.group(1)}"')
    except json.JSONDecodeError:
        return match.group(1)


def _name_unreadable(path: Path, unreadable: list[tuple[int, str, ValueError]], last_line: dict[str, int]) -> None:
    """Name each unusable line whose case is not recorded again after it: that record is lost
    (an older one, if any, stands in). A line of a case recorded again later (a torn line from
    a killed run, then the case run again on resume) is passed over quietly: nothing was lost."""
    for number, line, error in unreadable:
        case_id = _leading_case_id(line)
        if (case_id is not None and last_line.get(case_id, 0) > number) or (str(path), number) in _NAMED_LINES:
            continue
        _NAMED_LINES.add((str(path), number))
        if case_id is not None and case_id in last_line:
            outcome = f"case {case_id} keeps its record of line {last_line[case_id]}"
        else:
            which = f"case {case_id}" if case_id else "its case"
            outcome = f"{which} counts as not run, and `penpal-eval run --resume` runs it again"
        logging.getLogger(__name__).warning("%s line %d is skipped (%s): %s", path, number,
                                            unreadable_reason(line, error), outcome)


def run_id_problem(run_id: str) -> str | None:
    """Why `run_id` cannot name a run directory, or None."""
    if RUN_ID_PATTERN.fullmatch(run_id):
        return None
    return (f"--run-id {run_id!r}: a run id is a plain name, like a version name: a letter or digit, then "
            "letters, digits, '.', '_' or '-' (no '/', no leading '.'), so the run stays inside --output")


class StoreError(ValueError):
    """The run directory is missing, not a run, or does not match the requested run."""


class RunInputs(BaseModel):
    """What a run was made from: the prompt versions and the scenarios, as loaded."""

    prompts: list[PromptVersion]
    scenarios: list[Scenario]


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def git_state(root: Path = PROJECT_ROOT) -> dict:
    """The commit the run was made from and whether the tree had changes (None outside git)."""
    def git(*args: str) -> str | None:
        try:
            result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return result.stdout.strip() if result.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain") if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


class RunStore:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    # --- lifecycle ----------------------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, manifest: dict) -> RunStore:
        directory = Path(directory)
        if (directory / MANIFEST).exists():
            raise StoreError(f"{directory} already holds a run; resume it with --resume {directory}")
        directory.mkdir(parents=True, exist_ok=True)
        store = cls(directory)
        store._write_json(MANIFEST, manifest)
        (directory / CASES).touch()
        return store

    @classmethod
    def open(cls, directory: Path) -> RunStore:
        directory = Path(directory)
        if not (directory / MANIFEST).is_file():
            raise StoreError(f"{directory}: not a run directory (no {MANIFEST})")
        return cls(directory)

    @property
    def manifest(self) -> dict:
        try:
            return json.loads((self.directory / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise StoreError(f"{self.directory / MANIFEST}: unreadable manifest: {error}") from None

    def update_manifest(self, **fields: object) -> None:
        self._write_json(MANIFEST, {**self.manifest, **fields})

    # --- cases ----------------------------------------------------------------------------------
    def append(self, case: CaseResult) -> None:
        """Add one finished case; flushed at once so a killed run keeps it.

        Text is made valid where it enters (text_safety); should a character UTF-8 cannot hold
        slip past that, the case is still kept, with the character replaced, rather than lost.
        """
        try:
            text = case.model_dump_json()
        except PydanticSerializationError:
            text = json.dumps(valid_tree(case.model_dump(mode="json"))[0], ensure_ascii=False)
        line = (text + "\n").encode("utf-8")
        with (self.directory / CASES).open("ab+") as stream:
            if stream.seek(0, os.SEEK_END) > 0:
                stream.seek(-1, os.SEEK_END)
                if stream.read(1) != b"\n":
                    line = b"\n" + line  # a torn line from a killed run: never glue onto it
            stream.write(line)
            stream.flush()

    def read_cases(self) -> list[CaseResult]:
        """The latest record of each case, in first-seen order.

        A line that is not a case (cut short by a kill, edited by hand, written by another
        version) is skipped: a case with no usable record counts as not run, and resuming runs
        it again. Unless its case is recorded again after it, the line is named once on stderr
        with its reason, so a damaged store never drops a record without a word.
        """
        latest: dict[str, CaseResult] = {}
        last_line: dict[str, int] = {}
        unreadable: list[tuple[int, str, ValueError]] = []
        path = self.directory / CASES
        if not path.exists():
            return []
        with path.open(encoding="utf-8", errors="replace") as stream:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    case = CaseResult.model_validate_json(line)
                except ValueError as error:
                    unreadable.append((number, line.rstrip("\r\n"), error))
                    continue
                latest[case.case_id] = case
                last_line[case.case_id] = number
        if unreadable:
            _name_unreadable(path, unreadable, last_line)
        return list(latest.values())

    def finished_ids(self) -> set[str]:
        """Cases that need nothing more: scored, and judged when the judge was asked for."""
        return {case.case_id for case in self.read_cases() if case.finished}

    # --- inputs -------------------------------------------------------------------------------------
    def write_inputs(self, inputs: RunInputs) -> None:
        write_text_atomic(self.directory / INPUTS, inputs.model_dump_json(indent=1) + "\n")

    def read_inputs(self) -> RunInputs | None:
        """The run's inputs; None for a run made before they were kept. A damaged file is an error."""
        path = self.directory / INPUTS
        if not path.exists():
            return None
        try:
            return RunInputs.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise StoreError(f"{path}: unreadable run inputs: {error}") from None

    # --- summary and exports ----------------------------------------------------------------------
    def write_summary(self, summary: dict) -> None:
        self._write_json(SUMMARY, summary)

    def read_summary(self) -> dict | None:
        try:
            return json.loads((self.directory / SUMMARY).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    # --- head-to-head comparisons -----------------------------------------------------------------
    def write_pairwise(self, record: dict) -> None:
        """Keep one candidate-against-baseline record (`candidate`, `baseline`, `comparisons`, ...),
        replacing an earlier record of the same pair and keeping the others."""
        pairs = [item for item in self.read_pairwise()
                 if (item.get("candidate"), item.get("baseline")) != (record["candidate"], record["baseline"])]
        self._write_json(PAIRWISE, {"pairs": [*pairs, record]})

    def read_pairwise(self) -> list[dict]:
        """The stored head-to-head records; none when the run has no pairwise results. A damaged
        file is an error, because decisions read it."""
        path = self.directory / PAIRWISE
        if not path.exists():
            return []
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise StoreError(f"{path}: unreadable pairwise results: {error}") from None
        pairs = data.get("pairs") if isinstance(data, dict) else None
        if not isinstance(pairs, list) or not all(isinstance(item, dict) for item in pairs):
            raise StoreError(f"{path}: unreadable pairwise results: no list of pairs")
        return pairs

    def export(self, cases: Iterable[CaseResult]) -> list[Path]:
        """Write cases and turns as CSV and Parquet; returns the files written."""
        cases = list(cases)
        written = []
        for name, frame in (("cases", cases_frame(cases)), ("turns", turns_frame(cases))):
            csv_path, parquet_path = self.directory / f"{name}.csv", self.directory / f"{name}.parquet"
            spreadsheet_frame(frame).to_csv(csv_path, index=False)
            _parquet_safe(frame).to_parquet(parquet_path, index=False)
            written += [csv_path, parquet_path]
        return written

    def _write_json(self, name: str, data: dict) -> None:
        write_text_atomic(self.directory / name, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def spreadsheet_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame for a CSV file: a text cell a spreadsheet would run as a formula (a reply that
    starts with "=HYPERLINK(", "+", "-", "@") is written with a leading apostrophe, so opening
    turns.csv never runs what a model wrote. Parquet keeps the text as it is."""
    return frame.map(spreadsheet_safe)


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet needs one type per column: nested values (lists, dicts) go in as JSON text."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].map(lambda value: isinstance(value, list | dict)).any():
            frame[column] = frame[column].map(lambda value: json.dumps(value, ensure_ascii=False))
    return frame
