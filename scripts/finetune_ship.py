"""Fit the fine-tuned reply model on all rows for harmful_advice and consciousness_claims, measure
it held out against the SHIPPED linear heads, and ship it where the rule says so (issue 25, point 3).

Run from the project root with the ``train`` extra, one fit per process, two at a time:
``OMP_NUM_THREADS=1 .venv/bin/python scripts/finetune_ship.py --fit N`` (N = 0..5), then
``.venv/bin/python scripts/finetune_ship.py`` to apply the rule and write the files.

Why it exists beside `scripts/finetune_detectors.py`: that script compared the two methods fitted
on the same subsampled rows (400 per set); it found gains held out on these two detectors only.
This one asks the shipping question: does the fine-tuned model, trained on all rows (each set
capped at `CAP` with the seed), beat the heads that actually ship, held out? Every held-out row
is scored (not a sample), so each row the detectors learn from gets a held-out score, as the
shipped heads' do, and the trigger-reach benchmark can read them. The rule
(`scripts/finetune_rule.py`) was committed before the first fit. The shipped linear heads'
held-out scores are ``scripts/detector_oof.py``'s (``.cache/detector_oof.npz``): ``/lodo`` for
the leave-one-data-set-out rows, ``/oof`` (grouped by seed prompt) for the Spiral-Bench rows.

Fits: one per data set of the two detectors held out (leave one data set out); the four that
keep Spiral-Bench also hold out one group of 3 of its 12 seed prompts (grouped_folds, seed 0,
4 groups), so every Spiral-Bench row is scored once by a model that never saw its seed prompt;
then the final fit on all rows, which is what ships. The model reads the reply exactly as the run
time does: ``clip_for_parse(reply)``, the meaning model's tokenizer file, `MAX_LENGTH` word pieces.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.human_data import datasets_dir  # noqa: E402
from benchmarks.safety_sets import load_safety_sets, text_key  # noqa: E402
from evaluators.scoring.reading.nlp import clip_for_parse  # noqa: E402
from scripts.finetune_detectors import (  # noqa: E402
    BATCH,
    CHECKPOINTS,
    ENCODER_RATE,
    EPOCHS,
    HEAD_RATE,
    MAX_LENGTH,
    SHIP_HEADS,
    Split,
    by_source,
    capped,
    labelled,
    train_model,
)
from scripts.finetune_export import encode, export_int8, onnx_scores, run_time_tokenizer  # noqa: E402
from scripts.train_detectors import SEED, grouped_folds  # noqa: E402

CAP = 1000                # training rows per data set (seeded sample); every held-out row is scored
HELD_OUT = ("diasafety", "safetext", "xstest", "ruarobot", "spiral_bench")
SEED_GROUPS = 4           # Spiral-Bench's 12 seed prompts in 4 groups of 3
FINAL = len(HELD_OUT)     # the index of the final fit
SHIP_CHECKPOINTS = CHECKPOINTS / "ship"
FINAL_MODEL = SHIP_CHECKPOINTS / "finetuned_reply.onnx"


def splits(frame: pd.DataFrame) -> list[Split]:
    """The five held-out fits and the final one, their rows drawn with the seed."""
    pool = labelled(frame, SHIP_HEADS)
    spiral = (frame.source == "spiral_bench").to_numpy()
    seeds = frame.group.to_numpy()
    group_of = dict(zip(seeds[spiral], grouped_folds(seeds[spiral], SEED_GROUPS, SEED), strict=True))
    out = []
    for index, source in enumerate(HELD_OUT):
        held_seeds: tuple[str, ...] = ()
        label = f"reply: without {source}"
        if source != "spiral_bench":
            held_seeds = tuple(sorted(seed for seed, group in group_of.items() if group == index))
            label += f", Spiral-Bench seed group {index + 1} of {SEED_GROUPS}"
        held = frame.source.eq(source).to_numpy() | (spiral & np.isin(seeds, held_seeds))
        out.append(Split(label, "reply", held_sources=(source,), held_seeds=held_seeds,
                         train_rows=capped(frame, pool & ~held, CAP, 100 * index),
                         eval_rows=np.flatnonzero(pool & held)))
    out.append(Split("reply: all rows (ships)", "reply", train_rows=capped(frame, pool, CAP, 100 * FINAL)))
    return out


def texts(frame: pd.DataFrame, rows: np.ndarray) -> list[str]:
    """The replies as the run time reads them."""
    return [clip_for_parse(text) for text in frame["reply"].to_numpy()[rows].tolist()]


def float_scores(model, tokenizer, replies: list[str]) -> np.ndarray:
    """[rows, heads] probabilities of the float model, batched by similar length."""
    import torch

    order = np.argsort([len(text) for text in replies], kind="stable")
    out = np.zeros((len(replies), len(SHIP_HEADS)))
    with torch.no_grad():
        for start in range(0, len(order), 32):
            chosen = order[start:start + 32]
            ids, mask = encode(tokenizer, [replies[i] for i in chosen])
            out[chosen] = torch.sigmoid(model(torch.from_numpy(ids), torch.from_numpy(mask))).numpy()
    return out


def fit(frame: pd.DataFrame, split: Split, final: bool) -> dict:
    """Train one model; its held-out rows' scores, float and int8, and the fit's record. The
    final fit's int8 export is kept at `FINAL_MODEL`."""
    import torch

    torch.set_num_threads(1)
    tokenizer = run_time_tokenizer(MAX_LENGTH)

    def as_tensors(batch: list[str]):
        ids, mask = encode(tokenizer, batch)
        return torch.from_numpy(ids), torch.from_numpy(mask)

    start = time.monotonic()
    model, steps, trained = train_model(frame, split, SHIP_HEADS, texts(frame, split.train_rows), as_tensors)
    held = texts(frame, split.eval_rows)
    tuned = float_scores(model, tokenizer, held)
    with tempfile.TemporaryDirectory() as scratch:
        path = FINAL_MODEL if final else Path(scratch) / "model.onnx"
        export_int8(model, path)
        int8 = onnx_scores(path, held, MAX_LENGTH) if held else np.zeros((0, len(SHIP_HEADS)))
    rows = split.eval_rows.tolist()
    record = {"split": split.label, "train rows": by_source(frame, split.train_rows),
              "held-out rows scored": by_source(frame, split.eval_rows), "steps": steps,
              "seconds training": round(trained, 1), "seconds total": round(time.monotonic() - start, 1)}
    if split.held_seeds:
        record["held-out seed prompts"] = list(split.held_seeds)
    return {"record": record,
            "fine-tuned": {name: dict(zip(rows, tuned[:, column].tolist(), strict=True))
                           for column, name in enumerate(SHIP_HEADS)},
            "int8": {name: dict(zip(rows, int8[:, column].astype(float).tolist(), strict=True))
                     for column, name in enumerate(SHIP_HEADS)}}


def checkpoint_path(split: Split) -> Path:
    key = text_key(json.dumps([split.label, split.train_rows.tolist(), split.eval_rows.tolist(), list(SHIP_HEADS),
                               EPOCHS, MAX_LENGTH, BATCH, ENCODER_RATE, HEAD_RATE, SEED, "run-time tokenizer"]))
    return SHIP_CHECKPOINTS / f"{key}.json"


def checkpointed(frame: pd.DataFrame, index: int) -> dict:
    """`fit` of split `index`, or its stored result (the final fit also needs its ONNX file)."""
    split = splits(frame)[index]
    path = checkpoint_path(split)
    if path.is_file() and (index != FINAL or FINAL_MODEL.is_file()):
        stored = json.loads(path.read_text(encoding="utf-8"))
    else:
        stored = fit(frame, split, index == FINAL)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(stored), encoding="utf-8")
    for kind in ("fine-tuned", "int8"):
        stored[kind] = {name: {int(row): value for row, value in scores.items()}
                        for name, scores in stored[kind].items()}
    return stored


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", type=int, choices=range(FINAL + 1), help="run (or load) this fit only")
    args = parser.parse_args(argv)
    frame = load_safety_sets(datasets_dir())
    if args.fit is not None:
        print(json.dumps(checkpointed(frame, args.fit)["record"]), flush=True)
        return 0
    raise SystemExit("assembly not written yet")


if __name__ == "__main__":
    sys.exit(main())
