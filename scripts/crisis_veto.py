"""Where the crisis_risk detector may veto the crisis rules: a figure computed out of fold.

Why: the rubric combines the crisis rules (kinds of risk, risk words, a harsh tone) with the
crisis_risk detector so that idioms ("this traffic is killing me") raise nothing; a veto set too
high would also silence real risk the rules read. The veto point is therefore the detector
score under which only a small share of the messages labelled at risk fall, out of fold: the
same rows, folds, seed, method and penalty as `scripts/train_detectors.py` (read from the
shipped provenance), each message scored by a head that never saw its fold.

    .venv/bin/python scripts/crisis_veto.py             # prints the figures as JSON

It prints the veto point (the `MISSED_AT_MOST` quantile of the at-risk messages' out-of-fold
scores), the share of messages labelled benign under it (what the veto clears), and the same
per data set. The rubric's `detectors.behaviours.crisis_risk.veto_below` cites it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.human_data import datasets_dir  # noqa: E402
from benchmarks.safety_sets import VectorCache, load_safety_sets  # noqa: E402
from evaluators.rubric.loader import default_rubric  # noqa: E402
from evaluators.scoring.reading.meaning import load_meaning_model  # noqa: E402
from evaluators.scoring.safety.detectors import detectors_path, load_detector_provenance  # noqa: E402

NAME = "crisis_risk"
MISSED_AT_MOST = 0.05  # the share of at-risk messages the veto may silence, out of fold


def _training_script():
    """scripts/train_detectors.py as a module: its rows, folds and heads, so the figure is
    computed exactly as the thresholds it ships with."""
    spec = importlib.util.spec_from_file_location("train_detectors", PROJECT_ROOT / "scripts" / "train_detectors.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_detectors"] = module
    spec.loader.exec_module(module)
    return module


def veto_figures() -> dict:
    train = _training_script()
    record = load_detector_provenance(detectors_path(default_rubric().detectors.model))["detectors"][NAME]
    method = record["method"]
    strength = record["methods compared"][method]["strength"]
    spec = train.SPECS[NAME]
    frame = load_safety_sets(datasets_dir())
    frame = frame[frame[NAME].notna() & frame.source.isin(spec.sources)].reset_index(drop=True)
    user = VectorCache(load_meaning_model()).vectors(frame.user.tolist())
    data = train.rows_for(frame, {"user": user, "reply": user}, NAME, spec, spec.sources)
    scores = train.held_out(method, strength, data, train.grouped_folds(data.groups, train.FOLDS, train.SEED))
    at_risk, benign = scores[data.labels == 1], scores[data.labels == 0]
    veto = float(np.quantile(at_risk, MISSED_AT_MOST))
    sources = data.frame.source.to_numpy()
    return {
        "detector": NAME, "method": method, "strength": strength,
        "missed_at_most": MISSED_AT_MOST,
        "veto_below": round(veto, 4),
        "at_risk_silenced": round(float((at_risk < veto).mean()), 4),
        "benign_cleared": round(float((benign < veto).mean()), 4),
        "by_source": {source: {"at_risk": int((data.labels[sources == source] == 1).sum()),
                               "at_risk_silenced": _share(scores, data.labels, sources, source, 1, veto),
                               "benign_cleared": _share(scores, data.labels, sources, source, 0, veto)}
                      for source in sorted(set(sources))},
    }


def _share(scores, labels, sources, source, label, veto) -> float | None:
    chosen = scores[(sources == source) & (labels == label)]
    return round(float((chosen < veto).mean()), 4) if len(chosen) else None


def main() -> int:
    print(json.dumps(veto_figures(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
