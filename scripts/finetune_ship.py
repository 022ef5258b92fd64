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
import shutil
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
from benchmarks.safety_sets import LICENCES, MEASURE_ONLY, load_safety_sets, text_key  # noqa: E402
from evaluators.scoring.reading.nlp import clip_for_parse  # noqa: E402
from evaluators.scoring.safety.detectors import DETECTORS_FILE, META_KEY, detectors_path, provenance_path  # noqa: E402
from scripts.finetune_detectors import (  # noqa: E402
    BATCH,
    CHECKPOINTS,
    ENCODER,
    ENCODER_RATE,
    EPOCHS,
    HEAD_RATE,
    MAX_LENGTH,
    MODEL_FILE,
    MODEL_JSON,
    SAFETY_DIR,
    SHIP_HEADS,
    TOKENIZER_NOTE,
    Split,
    by_source,
    capped,
    labelled,
    train_model,
)
from scripts.finetune_export import encode, export_int8, onnx_scores, run_time_tokenizer  # noqa: E402
from scripts.finetune_rule import SHIP_RULE, Block, decide, figures  # noqa: E402
from scripts.train_detectors import (  # noqa: E402
    SEED,
    SPECS,
    area,
    grouped_folds,
    judge_band,
    recommended_use,
    thresholds,
)

CAP = 1000                # training rows per data set (seeded sample); every held-out row is scored
HELD_OUT = ("diasafety", "safetext", "xstest", "ruarobot", "spiral_bench")
SEED_GROUPS = 4           # Spiral-Bench's 12 seed prompts in 4 groups of 3
FINAL = len(HELD_OUT)     # the index of the final fit
SHIP_CHECKPOINTS = CHECKPOINTS / "ship"
OOF_CACHE = PROJECT_ROOT / ".cache" / "detector_oof.npz"   # scripts/detector_oof.py writes it
FINAL_MODEL = SHIP_CHECKPOINTS / "finetuned_reply.onnx"
# The served detectors' held-out scores, read by scripts/detector_oof.py (gitignored, as its cache).
FINETUNED_SCORES = PROJECT_ROOT / ".cache" / "finetuned_reply_scores.npz"
METHOD = "finetuned_onnx"
MEASURED_FILE = "finetune_measured.json"
MEASURED_KEY = "shipping measurement: all rows, against the shipped heads (scripts/finetune_ship.py)"
THRESHOLDS = "thresholds (out of fold, pooled rows)"
BAND = "judge band (out of fold, pooled rows)"


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


def linear_held_out(oof: dict, name: str, kind: str) -> pd.Series:
    """The shipped linear head's held-out score per frame row (`kind` "lodo" or "oof"), as
    scripts/detector_oof.py wrote it (under `linear_*` once the fine-tuned model serves it)."""
    if f"{name}/linear_{kind}" in oof:
        return pd.Series(oof[f"{name}/linear_{kind}"], index=oof[f"{name}/linear_rows"])
    return pd.Series(oof[f"{name}/{kind}"], index=oof[f"{name}/rows"])


def blocks(frame: pd.DataFrame, fits: list[tuple[Split, dict]], oof: dict,
           name: str) -> tuple[Block, np.ndarray, Block, np.ndarray]:
    """One detector's held-out rows, aligned for the rule: each of its data sets from the fit
    that held it out (against the shipped head's /lodo score), and the Spiral-Bench rows from
    the fits that held their seed prompt out (against the shipped head's /oof score); each
    block with its frame rows."""
    labels = frame[name].to_numpy()
    sources = frame.source.to_numpy()
    lodo_parts: list[tuple[np.ndarray, dict]] = []
    seed_parts: list[tuple[np.ndarray, dict]] = []
    for split, result in fits:
        rows = split.eval_rows[~np.isnan(labels[split.eval_rows].astype(float))]
        held = split.held_sources[0]
        if held in SPECS[name].sources:
            lodo_parts.append((rows[sources[rows] == held], result))
        if split.held_seeds:
            seed_parts.append((rows[sources[rows] == "spiral_bench"], result))

    def block(parts: list[tuple[np.ndarray, dict]], kind: str) -> tuple[Block, np.ndarray]:
        rows = np.concatenate([part for part, _ in parts])
        linear = linear_held_out(oof, name, kind).reindex(rows).to_numpy()
        tuned = np.concatenate([[result["fine-tuned"][name][row] for row in part] for part, result in parts])
        int8 = np.concatenate([[result["int8"][name][row] for row in part] for part, result in parts])
        keep = ~np.isnan(linear)
        return Block(labels[rows][keep].astype(float), sources[rows][keep], tuned[keep], int8[keep], linear[keep]), \
            rows[keep]

    return *block(lodo_parts, "lodo"), *block(seed_parts, "oof")


def pooled(lodo: Block, lodo_rows: np.ndarray, seed: Block,
           seed_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each row once: the leave-one-data-set-out scores of the other sets, and the Spiral-Bench
    rows' seed-held-out scores (int8, what ships). Rows, labels, int8 scores, float scores."""
    other = lodo.sources != "spiral_bench"
    rows = np.concatenate([lodo_rows[other], seed_rows])
    return (rows, np.concatenate([lodo.labels[other], seed.labels]), np.concatenate([lodo.int8[other], seed.int8]),
            np.concatenate([lodo.tuned[other], seed.tuned]))


def measure(frame: pd.DataFrame) -> dict:
    """Every fit (from its checkpoint), the figures per detector, the rule's checks and verdict."""
    with np.load(OOF_CACHE) as data:
        oof = {key: data[key] for key in data.files}
    split_list = splits(frame)
    results = [checkpointed(frame, index) for index in range(FINAL + 1)]
    fits = list(zip(split_list[:FINAL], results[:FINAL], strict=True))
    out: dict = {"per detector": {}, "held-out scores": {}}
    for name in SHIP_HEADS:
        lodo, lodo_rows, seed, seed_rows = blocks(frame, fits, oof, name)
        found = figures(lodo, seed)
        rows, labels, int8, tuned = pooled(lodo, lodo_rows, seed, seed_rows)
        out["per detector"][name] = {"figures": found, "rule checks": decide(found)}
        out["held-out scores"][name] = {"rows": rows, "labels": labels, "int8": int8, "fine-tuned": tuned,
                                        "lodo rows": lodo_rows, "lodo int8": lodo.int8}
    out["fits"] = [result["record"] for result in results]
    return out


def never_trained_on(frame: pd.DataFrame) -> dict[str, float]:
    """The final model's int8 AUROC on the measurement-only rows (Robots-Dont-Cry, no licence:
    scored, never trained on), per detector that has them."""
    out = {}
    for column, name in enumerate(SHIP_HEADS):
        rows = np.flatnonzero(frame.source.isin(MEASURE_ONLY).to_numpy() & frame[name].notna().to_numpy())
        if len(rows):
            scores = onnx_scores(FINAL_MODEL, texts(frame, rows), MAX_LENGTH)[:, column]
            out[name] = area(scores, frame[name].to_numpy()[rows].astype(float))
    return out


def provenance(frame: pd.DataFrame, measured: dict) -> dict:
    """finetuned_reply.json: what the model is, how it was trained, the figures, the rule and
    the verdict per head."""
    final = splits(frame)[FINAL]
    checks = {name: value["rule checks"] for name, value in measured["per detector"].items()}
    found = {name: value["figures"] for name, value in measured["per detector"].items()}
    return {
        "heads": list(SHIP_HEADS), "max_length": MAX_LENGTH, "tokenizer": TOKENIZER_NOTE,
        "script": "scripts/finetune_ship.py (export: scripts/finetune_export.py; training loop: "
                  "scripts/finetune_detectors.py)",
        "seed": SEED, "encoder": ENCODER,
        "reads": "clip_for_parse(reply), the meaning model's tokenizer file, truncated to max_length word pieces",
        "data": {source: {"licence": LICENCES[source], "rows trained on": count}
                 for source, count in by_source(frame, final.train_rows).items()},
        "training": {"epochs": EPOCHS, "max length (word pieces)": MAX_LENGTH, "batch": BATCH,
                     "encoder learning rate": ENCODER_RATE, "head learning rate": HEAD_RATE,
                     "optimiser": "AdamW, weight decay 0.01, linear decay to 0; seeded length-bucketed batches",
                     "loss": "binary cross-entropy per head, masked where the head's label is missing; each data "
                             "set weighs the same, each class the same within a set (train_detectors' weighting)",
                     "rows per data set": f"at most {CAP}, drawn with the seed; the HH-RLHF pairs are not used",
                     "export": "torch.onnx (opset 17, float), then onnxruntime quantize_dynamic to int8 (QInt8)",
                     "held out": "leave one data set out (diasafety, safetext, xstest, ruarobot, spiral_bench); the "
                                 "four fits that keep Spiral-Bench also hold out one of 4 groups of 3 seed prompts "
                                 "(grouped_folds, seed 0)",
                     "fits": measured["fits"]},
        "linear heads compared": "the shipped ones: scripts/detector_oof.py's leave-one-data-set-out (/lodo) and "
                                 "grouped-by-seed out-of-fold (/oof) scores of the shipped method and penalty",
        "figures": found,
        "never trained on (int8, final model)": never_trained_on(frame),
        "rule": SHIP_RULE,
        "rule checks": checks,
        "verdict": {name: value["verdict"] for name, value in checks.items()},
        "int8 vs float": {name: {"mean leave-one-data-set-out AUROC": {"float": value["mean, fine-tuned"],
                                                                       "int8": value["mean, int8"]},
                                 "Spiral-Bench seed-held-out AUROC": {
                                     key: value["Spiral-Bench seed prompts held out"][source]
                                     for key, source in (("float", "fine-tuned"), ("int8", "int8"))}}
                          for name, value in found.items()},
    }


def table(document: dict) -> str:
    """The figures as Markdown (docs/detectors-finetune.md): per detector and data set, then the
    Spiral-Bench seed-held-out rows and the rule's checks."""
    lines = ["| detector | held out | rows (pos.) | fine-tuned | int8 | shipped linear | int8 - linear |",
             "|---|---|---|---|---|---|---|"]
    for name, found in document["figures"].items():
        for source, value in found["per data set (leave one data set out)"].items():
            lines.append(f"| {name} | {source} | {value['rows']} ({value['positives']}) | {value['fine-tuned']:.3f} | "
                         f"{value['int8']:.3f} | {value['linear']:.3f} | {value['int8'] - value['linear']:+.3f} |")
        lines.append(f"| {name} | **mean** | | {found['mean, fine-tuned']:.3f} | {found['mean, int8']:.3f} | "
                     f"{found['mean, linear']:.3f} | {found['mean, int8'] - found['mean, linear']:+.3f} |")
        spiral = found.get("Spiral-Bench seed prompts held out")
        if spiral:
            linear = spiral["linear (shipped, out of fold)"]
            lines.append(f"| {name} | Spiral-Bench seed prompts (vs shipped out of fold) | {spiral['rows']} "
                         f"({spiral['positives']}) | {spiral['fine-tuned']:.3f} | {spiral['int8']:.3f} | {linear:.3f} | "
                         f"{spiral['int8'] - linear:+.3f} |")
    lines += ["", "| detector | (a) mean gain | (b) worst set | (c) Spiral seed-held-out | (d) int8 gap | verdict |",
              "|---|---|---|---|---|---|"]
    for name, value in document["rule checks"].items():
        lines.append(f"| {name} | {value['(a) mean LODO gain']:+.3f} {'✓' if value['(a) passes'] else '✗'} | "
                     f"{value['(b) worst data set']:+.3f} {'✓' if value['(b) passes'] else '✗'} | "
                     f"{value.get('(c) Spiral-Bench seed-held-out change', float('nan')):+.3f} "
                     f"{'✓' if value.get('(c) passes', True) else '✗'} | "
                     f"{value['(d) largest int8 vs float gap']:.3f} {'✓' if value['(d) passes'] else '✗'} | "
                     f"{value['verdict']} |")
    return "\n".join(lines)


def served_record(record: dict, name: str, measured: dict, document: dict, frame: pd.DataFrame) -> dict:
    """The detector's detectors.json entry once the fine-tuned model serves it: method and model
    file, its held-out (int8) figures beside the linear methods', and thresholds and judge band
    by train_detectors' own rules on its held-out scores (leave one data set out; Spiral-Bench
    by seed prompt held out), pooled."""
    held = measured["held-out scores"][name]
    found = document["figures"][name]
    compared = {"leave-one-data-set-out AUROC": {source: value["int8"] for source, value in
                                                 found["per data set (leave one data set out)"].items()},
                f"leave-one-seed-group-out AUROC (Spiral-Bench, {SEED_GROUPS} groups of 3 seed prompts)":
                    found["Spiral-Bench seed prompts held out"]["int8"]}
    if name in document["never trained on (int8, final model)"]:
        compared["Robots-Dont-Cry AUROC (never trained on)"] = document["never trained on (int8, final model)"][name]
    final = splits(frame)[FINAL]
    trained = final.train_rows[frame[name].notna().to_numpy()[final.train_rows]
                               & frame.source.isin(SPECS[name].sources).to_numpy()[final.train_rows]]
    labels = frame[name].to_numpy()[trained].astype(float)
    sources = frame.source.to_numpy()[trained]
    out: dict = {}
    for key, value in record.items():
        if key == "method":
            out |= {"method": METHOD, "model": MODEL_FILE, "linear method": value}
        elif key == "labels":
            out[key] = value + "; the fine-tuned model does not use the HH-RLHF pairs" if "HH-RLHF" in value else value
        elif key == "data":
            out[key] = {source: {"licence": LICENCES[source], "rows": int((sources == source).sum()),
                                 "positives": int(labels[sources == source].sum())} for source in value}
        elif key == "methods compared":
            out[key] = {**value, METHOD: compared}
        elif key == THRESHOLDS:
            out[key] = thresholds(held["int8"], held["labels"])
            out["thresholds from"] = ("the int8 model's held-out scores, pooled: each data set's rows from the fit "
                                      "that held that set out, Spiral-Bench rows from the fit that held their seed "
                                      "prompt out")
        elif key == BAND:
            out[key] = judge_band(held["int8"], held["labels"])
        elif key == "measured elsewhere":
            out[key] = {f"the linear head ({record['method']}, no longer served): {what}": figure
                        for what, figure in value.items()}
        else:
            out[key] = value
    out["recommended use"] = recommended_use(out)
    return out


def ship(frame: pd.DataFrame, measured: dict, document: dict) -> list[str]:
    """Put the final model in the package for the detectors whose verdict is "ship": the int8
    file and its provenance beside detectors.json, their entries there (weights removed from
    detectors.npz), and their held-out scores where scripts/detector_oof.py reads them."""
    shipped = [name for name, verdict in document["verdict"].items() if verdict == "ship"]
    if not shipped:
        return shipped
    shutil.copyfile(FINAL_MODEL, SAFETY_DIR / MODEL_FILE)
    (SAFETY_DIR / MODEL_JSON).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    weights = detectors_path(DETECTORS_FILE)
    path = provenance_path(weights)
    provenance_doc = json.loads(path.read_text(encoding="utf-8"))
    for name in shipped:
        provenance_doc["detectors"][name] = served_record(provenance_doc["detectors"][name], name, measured, document,
                                                          frame)
    path.write_text(json.dumps(provenance_doc, indent=2) + "\n", encoding="utf-8")
    with np.load(weights) as data:
        arrays = {key: data[key] for key in data.files}
    meta = json.loads(str(arrays.pop(META_KEY)))
    for name in shipped:
        meta.pop(name, None)
        arrays = {key: value for key, value in arrays.items() if not key.startswith(f"{name}/")}
    arrays[META_KEY] = np.array(json.dumps(meta))
    np.savez_compressed(weights, **arrays)
    kept = {}
    for name in shipped:
        held = measured["held-out scores"][name]
        lodo = pd.Series(held["lodo int8"], index=held["lodo rows"])
        kept |= {f"{name}/rows": held["rows"], f"{name}/labels": held["labels"], f"{name}/oof": held["int8"],
                 f"{name}/lodo": lodo.reindex(held["rows"]).to_numpy()}
    FINETUNED_SCORES.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(FINETUNED_SCORES, **kept)
    return shipped


def write_measured(document: dict) -> None:
    """This measurement as a section of finetune_measured.json (beside the earlier one)."""
    path = SAFETY_DIR / MEASURED_FILE
    measured = json.loads(path.read_text(encoding="utf-8"))
    measured[MEASURED_KEY] = {key: document[key] for key in (
        "heads", "max_length", "tokenizer", "reads", "script", "seed", "encoder", "data", "training",
        "linear heads compared", "figures",
        "never trained on (int8, final model)", "rule", "rule checks", "verdict", "int8 vs float")}
    path.write_text(json.dumps(measured, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", type=int, choices=range(FINAL + 1), help="run (or load) this fit only")
    parser.add_argument("--table", action="store_true", help="print the written figures as Markdown")
    args = parser.parse_args(argv)
    frame = load_safety_sets(datasets_dir())
    if args.fit is not None:
        print(json.dumps(checkpointed(frame, args.fit)["record"]), flush=True)
        return 0
    if args.table:
        print(table(json.loads((SAFETY_DIR / MEASURED_FILE).read_text(encoding="utf-8"))[MEASURED_KEY]))
        return 0
    measured = measure(frame)
    document = provenance(frame, measured)
    write_measured(document)
    print(table(document))
    print("shipped:", ship(frame, measured, document) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
