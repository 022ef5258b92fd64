"""Out-of-fold detector scores, recomputed with the training's rows, folds, seed and heads; the
judge band written into the provenance.

Why a script beside `scripts/train_detectors.py` rather than a retrain: the judge band's low
edge (`judge_from`, issue 26's triggered phase) needs only the out-of-fold scores the training
already computes, and the weights must not change. This reads the kept method and penalty of
each detector from ``detectors.json``, refits the five grouped folds exactly as training does
(`held_out`, `grouped_folds`, seed 0), checks the recomputed flag_at and uncertain band equal the
stored ones (else the folds are not the training's and it stops), and writes each detector's
`judge band (out of fold, pooled rows)` (`train_detectors.judge_band`) into ``detectors.json``.
``detectors.npz`` is never written.

It also keeps the scores for the trigger-reach benchmark (`benchmarks/trigger_reach.py`) in
the gitignored ``.cache/detector_oof.npz``: per detector, the out-of-fold score of each frame
row it reads, and, where it learns from more than one data set, the score from a head trained
with that row's data set left out (leave-one-data-set-out). For a detector the fine-tuned reply
model serves (``"method": "finetuned_onnx"``), those are its held-out scores, which
`scripts/finetune_ship.py` writes to ``.cache/finetuned_reply_scores.npz``; the linear head's are
kept beside them as ``/linear_*``.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/detector_oof.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.human_data import datasets_dir  # noqa: E402
from benchmarks.safety_sets import load_safety_sets  # noqa: E402
from evaluators.scoring.reading.meaning import load_meaning_model  # noqa: E402
from evaluators.scoring.safety.detectors import DETECTORS_FILE, detectors_path, provenance_path  # noqa: E402
from scripts.train_detectors import (  # noqa: E402
    FOLDS,
    SEED,
    SPECS,
    grouped_folds,
    held_out,
    judge_band,
    load_vectors,
    pairs_for,
    rows_for,
    thresholds,
)

OOF_CACHE = PROJECT_ROOT / ".cache" / "detector_oof.npz"
# Held-out scores of the detectors the fine-tuned reply model serves (scripts/finetune_ship.py).
FINETUNED_SCORES = PROJECT_ROOT / ".cache" / "finetuned_reply_scores.npz"
FINETUNED = "finetuned_onnx"
BAND = "judge band (out of fold, pooled rows)"
THRESHOLDS = "thresholds (out of fold, pooled rows)"


def oof_scores(frame, vectors, name: str, record: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Frame rows, labels, out-of-fold scores and leave-one-data-set-out scores (NaN where the
    detector learns from one data set) of one detector, with its kept head."""
    spec = SPECS[name]
    data = rows_for(frame, vectors, name, spec, spec.sources)
    method = record.get("linear method", record["method"])
    strength = record["methods compared"][method]["strength"]
    pairs = pairs_for(frame, vectors, spec, method)
    oof = held_out(method, strength, data, grouped_folds(data.groups, FOLDS, SEED), pairs)
    sources = data.frame.source.to_numpy()
    lodo = np.full(len(oof), np.nan)
    if len(np.unique(sources)) > 1:
        lodo = held_out(method, strength, data, sources, pairs)
    return data.frame["row"].to_numpy(), data.labels, oof, lodo


def finetuned_scores(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Frame rows, labels, held-out scores (each data set's rows left out; Spiral-Bench rows by
    seed prompt) and leave-one-data-set-out scores of a detector the fine-tuned model serves."""
    if not FINETUNED_SCORES.is_file():
        raise SystemExit(f"{name} is served by the fine-tuned model: run scripts/finetune_ship.py for its scores")
    with np.load(FINETUNED_SCORES) as data:
        return tuple(data[f"{name}/{key}"] for key in ("rows", "labels", "oof", "lodo"))  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=None)
    parser.add_argument("--check", action="store_true", help="exit 1 if detectors.json's judge bands differ")
    args = parser.parse_args(argv)
    path = provenance_path(detectors_path(DETECTORS_FILE))
    document = json.loads(path.read_text(encoding="utf-8"))
    frame = load_safety_sets(args.datasets or datasets_dir())
    vectors = load_vectors(frame, load_meaning_model(), windows=False)
    kept: dict[str, np.ndarray] = {}
    changed = False
    for name, record in document["detectors"].items():
        rows, labels, oof, lodo = oof_scores(frame, vectors, name, record)
        if record["method"] == FINETUNED:
            # The linear head's scores are kept (scripts/finetune_ship.py compares against them);
            # the served model's held-out scores take their place for the thresholds and the
            # trigger-reach benchmark.
            kept |= {f"{name}/linear_rows": rows, f"{name}/linear_oof": oof, f"{name}/linear_lodo": lodo}
            rows, labels, oof, lodo = finetuned_scores(name)
        again = thresholds(oof, labels)
        stored = record[THRESHOLDS]
        if (again["flag_at"], again["uncertain"]) != (stored["flag_at"], stored["uncertain"]):
            print(f"{name}: recomputed flag_at {again['flag_at']} / uncertain {again['uncertain']} differ from "
                  f"detectors.json ({stored['flag_at']} / {stored['uncertain']}): not the training's folds",
                  file=sys.stderr)
            return 1
        band = judge_band(oof, labels)
        changed |= record.get(BAND) != band
        record[BAND] = band
        kept |= {f"{name}/rows": rows, f"{name}/labels": labels, f"{name}/oof": oof, f"{name}/lodo": lodo}
        print(f"{name}: judge_from {band.get('judge_from')} (recall {band.get('recall_at_judge_from')}, "
              f"negatives {band.get('negatives_at_or_above')})", flush=True)
    OOF_CACHE.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OOF_CACHE, frame_rows=np.int64(len(frame)), **kept)
    if args.check:
        if changed:
            print("detectors.json's judge bands differ from the out-of-fold scores", file=sys.stderr)
            return 1
        return 0
    # Keep the provenance's key order: the band right after the thresholds it sits beside.
    for name, record in document["detectors"].items():
        band = record.pop(BAND)
        items = list(record.items())
        at = [key for key, _ in items].index(THRESHOLDS) + 1
        document["detectors"][name] = dict(items[:at] + [(BAND, band)] + items[at:])
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote the judge bands into {path.name}; detectors.npz untouched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
