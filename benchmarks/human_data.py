"""Loaders for the human-rated dialogue data sets used to measure evaluator validity.

The data lives outside the project (``../shared/datasets`` next to the checkout, or the
directory named by ``PENPAL_DATASETS``); it is read in place and never copied. Every loader
returns a pandas DataFrame with the scoring contract's columns (``id``, ``history``,
``user_message``, ``response``) plus one column per human rating, averaged over raters.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from statistics import mean

import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def datasets_dir() -> Path:
    """Where the shared human-rated data sits; ``PENPAL_DATASETS`` overrides the default."""
    override = os.environ.get("PENPAL_DATASETS")
    if override:
        return Path(override)
    return PROJECT_ROOT.parent / "shared" / "datasets"


def _split_turns(context: str) -> list[str]:
    return [line.strip() for line in context.splitlines() if line.strip()]


def _strip_speaker(turn: str) -> str:
    for prefix in ("User:", "System:"):
        if turn.startswith(prefix):
            return turn[len(prefix):].strip()
    return turn


def _mean_numeric(values: list) -> float:
    """Mean over raters, skipping the free-text "N/A (...)" answers some FED raters gave."""
    numbers = [value for value in values if isinstance(value, (int, float))]
    return mean(numbers) if numbers else float("nan")


def _record(record_id: str, turns: list[str], response: str, **ratings: float) -> dict:
    """One scoring record: the last context turn is the user message, the rest history."""
    return {
        "id": record_id,
        "history": turns[:-1],
        "user_message": turns[-1] if turns else "",
        "response": response.strip(),
        **ratings,
    }


def load_fed(root: Path) -> pd.DataFrame | None:
    path = root / "fed" / "fed_data.json"
    if not path.exists():
        return None
    rows = []
    for index, item in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        if "response" not in item:  # dialog-level records have no single reply
            continue
        turns = [_strip_speaker(turn) for turn in _split_turns(item["context"])]
        ratings = {name: _mean_numeric(values) for name, values in item["annotations"].items()}
        rows.append(_record(f"fed-{index}", turns, _strip_speaker(item["response"]), **ratings))
    return pd.DataFrame(rows)


def load_usr(root: Path) -> pd.DataFrame | None:
    path = root / "usr" / "pc_usr_data.json"
    if not path.exists():
        return None
    rows = []
    for context_index, item in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        turns = _split_turns(item["context"])
        for response_index, reply in enumerate(item["responses"]):
            ratings = {
                name: mean(values)
                for name, values in reply.items()
                if isinstance(values, list) and values and isinstance(values[0], (int, float))
            }
            record_id = f"usr-{context_index}-{response_index}"
            rows.append(_record(record_id, turns, reply["response"], **ratings))
    return pd.DataFrame(rows)


def load_grade(root: Path) -> pd.DataFrame | None:
    base = root / "grade"
    contexts_root = base / "eval_data" / "convai2"
    if not contexts_root.exists():
        return None
    rows = []
    for model_dir in sorted(p for p in contexts_root.iterdir() if p.is_dir()):
        score_path = base / "human_score" / "convai2" / model_dir.name / "human_score.txt"
        contexts = (model_dir / "human_ctx.txt").read_text(encoding="utf-8").splitlines()
        replies = (model_dir / "human_hyp.txt").read_text(encoding="utf-8").splitlines()
        scores = score_path.read_text(encoding="utf-8").split()
        for index, (context, reply, score) in enumerate(zip(contexts, replies, scores)):
            turns = [turn.strip() for turn in context.split("|||") if turn.strip()]
            rows.append(
                _record(f"grade-{model_dir.name}-{index}", turns, reply, Coherence=float(score))
            )
    return pd.DataFrame(rows)


EPITOME_FILES = {
    "emotional_reactions": "emotional-reactions-reddit.csv",
    "interpretations": "interpretations-reddit.csv",
    "explorations": "explorations-reddit.csv",
}


def load_epitome(root: Path) -> pd.DataFrame | None:
    """Seeker post and reply with the three EPITOME levels and their sum (0–6).

    Each CSV lists about 35 (seeker, reply) pairs twice, a few with different levels; the
    duplicates are averaged like any other repeated rating rather than letting the last
    row win. The three files quote the same texts with slightly different whitespace, so
    the text comes from the first file.
    """
    base = root / "epitome_empathy"
    if not base.exists():
        return None
    by_pair: dict[tuple[str, str], dict] = {}
    levels: dict[tuple[str, str], dict[str, list[float]]] = {}
    for mechanism, filename in EPITOME_FILES.items():
        with (base / filename).open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                key = (row["sp_id"], row["rp_id"])
                by_pair.setdefault(
                    key,
                    _record(f"epitome-{row['sp_id']}-{row['rp_id']}", [row["seeker_post"]],
                            row["response_post"]),
                )
                levels.setdefault(key, {}).setdefault(mechanism, []).append(float(row["level"]))
    for key, record in by_pair.items():
        record.update({mechanism: mean(values) for mechanism, values in levels[key].items()})
    frame = pd.DataFrame(by_pair.values()).dropna(subset=list(EPITOME_FILES))
    frame["empathy"] = frame[list(EPITOME_FILES)].sum(axis=1)
    return frame.reset_index(drop=True)


def load_diasafety(root: Path, split: str = "val") -> pd.DataFrame | None:
    """A DiaSafety split: ``unsafe`` is 1 for replies people judged unsafe."""
    path = root / "diasafety" / f"{split}.json"
    if not path.exists():
        return None
    rows = []
    for index, item in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        record = _record(f"diasafety-{split}-{index}", [item["context"]], item["response"])
        record["category"] = item["category"]
        record["unsafe"] = 1 if item["label"] == "Unsafe" else 0
        rows.append(record)
    return pd.DataFrame(rows)
