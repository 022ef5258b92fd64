"""The rule that decides whether the fine-tuned reply model replaces a detector's linear head
(issue 25, point 3), as pure functions over held-out scores.

Why it is written down apart from the fits: it was fixed and committed before the first real fit
of `scripts/finetune_ship.py`, so no figure could shape it; and as pure arithmetic on arrays it is
tested without torch (tests/scripts/test_finetune_rule.py).

Per detector, on held-out rows scored by both methods:
(a) the fine-tuned model's mean leave-one-data-set-out AUROC over the detector's data sets beats
    the SHIPPED linear head's leave-one-data-set-out AUROC on the same rows by >= `WIN`;
(b) no data set loses more than `SET_LOSS`;
(c) on Spiral-Bench rows held out by seed prompt it loses no more than `SPIRAL_LOSS` against the
    shipped head's out-of-fold score on the same rows;
(d) the int8 export's held-out AUROC is within `INT8_GAP` of the float model's, both on the mean
    leave-one-data-set-out AUROC and on the Spiral-Bench seed-held-out AUROC.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WIN = 0.03
SET_LOSS = 0.02
SPIRAL_LOSS = 0.02
INT8_GAP = 0.01
SHIP_RULE = (
    f"per detector, on held-out rows scored by both: ship the fine-tuned head only if (a) its mean "
    f"leave-one-data-set-out AUROC over the detector's data sets beats the shipped linear head's "
    f"leave-one-data-set-out AUROC on the same rows by >= {WIN}, (b) no data set loses more than "
    f"{SET_LOSS}, (c) on Spiral-Bench rows held out by seed prompt it loses no more than {SPIRAL_LOSS} "
    f"against the shipped head's out-of-fold score there, and (d) the int8 export's held-out AUROC "
    f"(the mean leave-one-data-set-out one and the Spiral-Bench seed-held-out one) is within {INT8_GAP} "
    f"of the float model's")


@dataclass
class Block:
    """Held-out rows of one detector, aligned: label, data set, and the three scores."""

    labels: np.ndarray
    sources: np.ndarray
    tuned: np.ndarray     # the float fine-tuned model
    int8: np.ndarray      # its int8 export
    linear: np.ndarray    # the shipped linear head (its /lodo or /oof score)


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Rank AUROC with ties counted half (Mann-Whitney)."""
    scores, labels = np.asarray(scores, float), np.asarray(labels, float)
    positives, negatives = scores[labels == 1], scores[labels == 0]
    if not len(positives) or not len(negatives):
        return float("nan")
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):  # ties share their mean rank
        tied = scores == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    positive_ranks = ranks[labels == 1].sum()
    return float((positive_ranks - len(positives) * (len(positives) + 1) / 2) / (len(positives) * len(negatives)))


def figures(lodo: Block, seed: Block) -> dict:
    """Held-out AUROC per data set (leave-one-data-set-out) and on the Spiral-Bench seed-held-out
    rows, for the fine-tuned model, its int8 export and the shipped linear head."""
    per_set = {}
    for source in sorted(np.unique(lodo.sources).tolist()):
        keep = lodo.sources == source
        if len(np.unique(lodo.labels[keep])) < 2:
            continue
        per_set[source] = {"rows": int(keep.sum()), "positives": int(lodo.labels[keep].sum()),
                           **{method: round(auroc(getattr(lodo, key)[keep], lodo.labels[keep]), 4)
                              for method, key in (("fine-tuned", "tuned"), ("int8", "int8"), ("linear", "linear"))}}
    out: dict = {"per data set (leave one data set out)": per_set}
    for method in ("fine-tuned", "int8", "linear"):
        out[f"mean, {method}"] = round(float(np.mean([value[method] for value in per_set.values()])), 4) \
            if per_set else None
    if len(np.unique(seed.labels)) == 2:
        out["Spiral-Bench seed prompts held out"] = {
            "rows": len(seed.labels), "positives": int(seed.labels.sum()),
            "fine-tuned": round(auroc(seed.tuned, seed.labels), 4), "int8": round(auroc(seed.int8, seed.labels), 4),
            "linear (shipped, out of fold)": round(auroc(seed.linear, seed.labels), 4)}
    return out


def decide(figures_of: dict) -> dict:
    """`SHIP_RULE` applied to one detector's `figures`: each check, and the verdict."""
    per_set = figures_of["per data set (leave one data set out)"]
    spiral = figures_of.get("Spiral-Bench seed prompts held out")
    gain = figures_of["mean, fine-tuned"] - figures_of["mean, linear"]
    worst = min(value["fine-tuned"] - value["linear"] for value in per_set.values())
    checks = {"(a) mean LODO gain": round(gain, 4), "(a) passes": bool(gain >= WIN - 1e-9),
              "(b) worst data set": round(worst, 4), "(b) passes": bool(worst >= -SET_LOSS - 1e-9)}
    gaps = [abs(figures_of["mean, int8"] - figures_of["mean, fine-tuned"])]
    if spiral is not None:
        change = spiral["fine-tuned"] - spiral["linear (shipped, out of fold)"]
        checks |= {"(c) Spiral-Bench seed-held-out change": round(change, 4),
                   "(c) passes": bool(change >= -SPIRAL_LOSS - 1e-9)}
        gaps.append(abs(spiral["int8"] - spiral["fine-tuned"]))
    checks |= {"(d) largest int8 vs float gap": round(max(gaps), 4), "(d) passes": bool(max(gaps) <= INT8_GAP + 1e-9)}
    passes = [value for key, value in checks.items() if key.endswith("passes")]
    checks["verdict"] = "ship" if all(passes) else "keep linear"
    return checks
