"""Train the learned harm signal on DiaSafety's train split and write it into the package.

Run from the project root: ``.venv/bin/python scripts/train_harm_model.py [--datasets PATH]``.
It reads ``diasafety/train.json`` in place from ``../shared/datasets`` (or ``PENPAL_DATASETS``),
embeds each reply and user message with the scorer's own sentence vectors
(`evaluators/scoring/reading/meaning.py`), and fits an L2-regularised logistic regression over
`evaluators.scoring.safety.learned_harm.harm_features` by Newton's method (`benchmarks/fitting.py`) (exact and deterministic:
no random initialisation, no sampling). The regularisation strength is chosen by k-fold
cross-validation *within the train split*; the val split is only measured, never used to
choose anything. It writes ``evaluators/scoring/safety/harm_model.npz`` (weights) and
``harm_model.json`` (provenance: data set, licence, split, date, figures).

Why only DiaSafety: its licence (Apache-2.0) allows shipping what is learned from it. The
other safety sets in the shared data state no licence and are for measurement only.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.fitting import fit_logistic, standardise  # noqa: E402
from benchmarks.human_data import datasets_dir  # noqa: E402
from benchmarks.validity import auroc  # noqa: E402
from evaluators.scoring.reading.meaning import DIMENSIONS, MODEL_NAME, MeaningModel, load_meaning_model  # noqa: E402
from evaluators.scoring.reading.nlp import clip_for_parse  # noqa: E402
from evaluators.scoring.safety.learned_harm import (  # noqa: E402
    FEATURE_PARTS,
    HarmModel,
    harm_features,
    provenance_path,
)

DEFAULT_OUT = PROJECT_ROOT / "evaluators" / "scoring" / "safety" / "harm_model.npz"
LICENCE = "Apache-2.0"
DATA_SET = "DiaSafety (Sun et al. 2022, 'On the Safety of Conversational Models')"
# Strengths of the L2 penalty tried by cross-validation (on standardised features, per record).
STRENGTHS: tuple[float, ...] = (0.01, 0.03, 0.1, 0.3, 1.0)
FOLDS = 5
SEED = 0
FLAG_THRESHOLDS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def load_split(root: Path, split: str, limit: int | None = None) -> tuple[list[str], list[str], np.ndarray]:
    """User messages, replies and labels (1 = unsafe) of a DiaSafety split, read in place."""
    path = root / "diasafety" / f"{split}.json"
    items = json.loads(path.read_text(encoding="utf-8"))[:limit]
    users = [item["context"] for item in items]
    replies = [item["response"] for item in items]
    labels = np.array([item["label"] == "Unsafe" for item in items], dtype=float)
    return users, replies, labels


def vectors(meaning: MeaningModel, texts: list[str]) -> np.ndarray:
    """The unit vectors the scorer reads for these texts (clipped as the scorer clips them)."""
    texts = [clip_for_parse(text) for text in texts]
    meaning.prefetch(texts)
    return np.stack([meaning.vector(text) if text.strip() else np.zeros(DIMENSIONS, dtype=np.float32)
                     for text in texts]).astype(np.float64)


def exchange_features(meaning: MeaningModel, users: list[str], replies: list[str]) -> np.ndarray:
    return harm_features(vectors(meaning, replies), vectors(meaning, users))


def area(scores: np.ndarray, labels: np.ndarray) -> float:
    return auroc(pd.Series(scores), pd.Series(labels))


def cross_validate(features: np.ndarray, labels: np.ndarray, folds: int,
                   seed: int) -> tuple[dict[float, float], dict[float, np.ndarray]]:
    """Mean held-out-fold AUROC per penalty strength, folds drawn once with a fixed seed, and
    each strength's out-of-fold probabilities (every record scored by a model that never saw it)."""
    assignment = np.random.default_rng(seed).permutation(len(labels)) % folds
    results: dict[float, float] = {}
    held_out: dict[float, np.ndarray] = {}
    for strength in STRENGTHS:
        areas = []
        logits = np.zeros(len(labels))
        for fold in range(folds):
            train, test = assignment != fold, assignment == fold
            mean, scale = standardise(features[train])
            weights, bias = fit_logistic((features[train] - mean) / scale, labels[train], strength)
            logits[test] = (features[test] - mean) / scale @ weights + bias
            areas.append(area(logits[test], labels[test]))
        results[strength] = float(np.mean(areas))
        held_out[strength] = 1.0 / (1.0 + np.exp(-logits))
    return results, held_out


def precision_at(probabilities: np.ndarray, labels: np.ndarray) -> dict[str, str]:
    """Out-of-fold precision and recall at the thresholds a hard flag might use: the figures
    the rubric's `learned_harm.flag_at` is chosen from (never from the val split)."""
    table = {}
    for threshold in FLAG_THRESHOLDS:
        fired = probabilities >= threshold
        precision = float(labels[fired].mean()) if fired.any() else float("nan")
        table[f"{threshold:.2f}"] = (f"fires on {fired.mean():.1%}, precision {precision:.1%}, "
                                     f"recall {fired[labels == 1].mean():.1%}")
    return table


def train(root: Path, out: Path, limit: int | None = None, folds: int = FOLDS, seed: int = SEED,
          meaning: MeaningModel | None = None) -> dict:
    """Fit on the train split, write the weights and provenance to `out`, return the provenance."""
    meaning = meaning or load_meaning_model()
    users, replies, labels = load_split(root, "train", limit)
    features = exchange_features(meaning, users, replies)
    by_strength, held_out = cross_validate(features, labels, folds, seed)
    # Ties go to the stronger penalty: the simpler model when the data cannot tell them apart.
    chosen = max(sorted(by_strength, reverse=True), key=lambda strength: by_strength[strength])
    mean, scale = standardise(features)
    weights, bias = fit_logistic((features - mean) / scale, labels, chosen)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, weights=weights, bias=np.float64(bias), mean=mean, scale=scale)
    model = HarmModel.from_arrays(weights, bias, mean, scale, out)
    figures = {
        "train records": int(len(labels)),
        "train unsafe share": round(float(labels.mean()), 4),
        f"cross-validated AUROC by L2 strength ({folds} folds, seed {seed})":
            {str(strength): round(value, 4) for strength, value in by_strength.items()},
        "chosen L2 strength": chosen,
        "out-of-fold flag thresholds (chosen strength)": precision_at(held_out[chosen], labels),
        "train AUROC (fitted data)": round(area(model.probabilities(
            features[:, :DIMENSIONS], features[:, DIMENSIONS:2 * DIMENSIONS]), labels), 4),
    }
    if limit is None and (root / "diasafety" / "val.json").is_file():
        val_users, val_replies, val_labels = load_split(root, "val")
        val = exchange_features(meaning, val_users, val_replies)
        figures["val AUROC (measured, never used to choose)"] = round(area(model.probabilities(
            val[:, :DIMENSIONS], val[:, DIMENSIONS:2 * DIMENSIONS]), val_labels), 4)
    provenance = {
        "model": "L2-regularised logistic regression (Newton's method), probability a reply is unsafe",
        "features": f"{' | '.join(FEATURE_PARTS)} of {MODEL_NAME} unit sentence vectors "
                    f"({DIMENSIONS} each), standardised",
        "data set": DATA_SET,
        "files": "diasafety/train.json (context = the user's message, response = the reply, label Safe/Unsafe)",
        "licence": LICENCE,
        "split": "train" if limit is None else f"train, first {limit} records",
        "date": datetime.now(timezone.utc).date().isoformat(),
        "script": "scripts/train_harm_model.py",
        "seed": seed,
        "figures": figures,
    }
    provenance_path(out).write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return provenance


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=None,
                        help="data directory (default: PENPAL_DATASETS or ../shared/datasets)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="weights file to write; the provenance goes beside it (.json)")
    parser.add_argument("--limit", type=int, default=None, help="train on the first N records only")
    parser.add_argument("--folds", type=int, default=FOLDS, help="cross-validation folds")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = args.datasets or datasets_dir()
    if not (root / "diasafety" / "train.json").is_file():
        print(f"train_harm_model: no DiaSafety train split at {root / 'diasafety' / 'train.json'} "
              "(set --datasets or PENPAL_DATASETS)", file=sys.stderr)
        return 2
    provenance = train(root, args.out, args.limit, args.folds)
    print(f"wrote {args.out} and {provenance_path(args.out).name}")
    for name, value in provenance["figures"].items():
        if isinstance(value, dict):
            print(f"  {name}:")
            for key, inner in value.items():
                print(f"    {key:>6}  {inner}")
        else:
            print(f"  {name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
