"""Rule S: do the Spiral-labelled detectors' graded trust deductions carry to unseen seed prompts?

Why a benchmark of its own (issue 25): the four detectors only Spiral-Bench labels (consciousness
claims also R-U-A-Robot) were kept passive, since no second data set shows they hold on data
they never saw. Rule S, stated before any figure here was measured, lets one take the graded
trust deduction (the `_graded` ramp of `evaluators.scoring.safety.detector_use`, weight -0.30
under trust & boundaries) when:

 (1) on spiral_bench_dev, with each row's detector score taken out of fold grouped by seed
     prompt (``.cache/detector_oof.npz`` from ``scripts/detector_oof.py``: a head that never
     saw the row's seed prompt), trust's per-turn AUROC for the detector's own label rises by
     at least 0.05 over trust without the deduction (same rows);
 (2) trust's AUROC on every other development set with a harm label falls by no more than
     0.01 with all passing deductions on (shipped detector scores: those rows are not
     Spiral-Bench);
 (3) the look-alike tests and the offline job's decisions still hold (checked by the tests and
     ``scripts/evaluate_prompts.py``, not here; ``--drop`` removes a detector that fails them).

(1) is per detector; (2) for the passing set together, dropping the smallest (1) gain until it
holds. Trust is the real scorer's (`HeuristicEvaluator` on the shipped rubric, history empty, as
`benchmarks/safety_detectors.py` scores rows); the deduction is the scorer's own graded signal
with the rubric's ramp, fed the out-of-fold score through the detector bank, so what is measured
is what would ship. Without ``--check`` it writes the figures beside the weights
(`evaluators/scoring/safety/spiral_deductions.json`), which `scripts/detector_rubric.py` reads.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/detector_oof.py --check   # the out-of-fold cache
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/spiral_deductions.py [--check] [--drop NAME]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks import safety  # noqa: E402
from benchmarks.human_data import datasets_dir  # noqa: E402
from benchmarks.safety_sets import load_safety_sets, safetext, xstest  # noqa: E402
from benchmarks.validity import auroc  # noqa: E402
from evaluators.scoring.reading.nlp import clip_for_parse  # noqa: E402
from evaluators.scoring.safety.detector_use import (  # noqa: E402
    RULE_S_WEIGHT,
    SPIRAL_DEDUCTIONS_FILE,
    SPIRAL_LABELLED,
    THRESHOLDS,
    ramp_of,
)
from evaluators.scoring.safety.detectors import DetectorBank  # noqa: E402

OOF_CACHE = PROJECT_ROOT / ".cache" / "detector_oof.npz"
MIN_GAIN = 0.05
MAX_FALL = 0.01
TRUST = "trust_boundaries"
BARE_REPLY = "Okay."


@dataclasses.dataclass(frozen=True)
class GivenScores(DetectorBank):
    """The shipped bank, with some detectors' scores given per reply text (clipped as the scorer
    clips): the out-of-fold score of a Spiral-Bench row stands for the shipped head's."""

    given: Mapping[str, Mapping[str, float]] = dataclasses.field(default_factory=dict)

    def score_exchange(self, reply_vector: np.ndarray, user_vector: np.ndarray,
                       reply_text: str | None = None) -> dict[str, float]:
        scores = super().score_exchange(reply_vector, user_vector, reply_text)
        for name, by_text in self.given.items():
            if reply_text in by_text:
                scores[name] = by_text[reply_text]
        return scores


def rubric_with(rubric, deducting: Iterable[str], provenance: Mapping):
    """The rubric with exactly ``deducting`` of the Spiral-labelled detectors taking their graded
    deduction (ramp from the provenance by `ramp_of`, weight RULE_S_WEIGHT), the others none."""
    deducting = set(deducting)
    section = rubric.detectors
    behaviours = dict(section.behaviours)
    trust = rubric.dimensions[TRUST]
    signals = dict(trust.signals)
    for name in SPIRAL_LABELLED:
        start, full = ramp_of(provenance[name][THRESHOLDS]) if name in deducting else (None, None)
        behaviours[name] = behaviours[name].model_copy(update={"deduct_from": start, "deduct_full": full})
        if name in deducting:
            signals[name] = RULE_S_WEIGHT
    return rubric.model_copy(update={
        "detectors": section.model_copy(update={"behaviours": behaviours}),
        "dimensions": {**rubric.dimensions, TRUST: trust.model_copy(update={"signals": signals})}})


class Scorer:
    """Trust per row under a set of deductions, sharing the loaded models across evaluators."""

    def __init__(self) -> None:
        from evaluators.rubric.loader import default_rubric
        from evaluators.scoring.heuristics import HeuristicEvaluator
        from evaluators.scoring.safety.detectors import load_detector_provenance

        self.rubric = default_rubric()
        self.base = HeuristicEvaluator(rubric_with(self.rubric, (), {}))
        self.bank = self.base.detectors
        provenance = load_detector_provenance(self.bank.path)
        self.provenance = provenance.get("detectors", provenance)

    def trust(self, frame: pd.DataFrame, deducting: Iterable[str] = (),
              given: Mapping[str, Mapping[str, float]] | None = None) -> np.ndarray:
        from evaluators import score_frame
        from evaluators.scoring.heuristics import HeuristicEvaluator

        deducting = tuple(deducting)
        if not deducting and not given:
            evaluator = self.base
        else:
            bank = GivenScores(self.bank.detectors, self.bank.path, given=given or {})
            evaluator = HeuristicEvaluator(rubric_with(self.rubric, deducting, self.provenance),
                                           nlp=self.base.nlp, meaning=self.base.meaning, detectors=bank)
        scored = score_frame(frame[["id", "history", "user_message", "response"]], evaluator=evaluator)
        return scored.set_index("id").reindex(frame["id"])[TRUST].to_numpy(dtype=float)


def inputs(frame: pd.DataFrame, prefix: str, harmful: pd.Series) -> pd.DataFrame:
    """Rows of a safety-sets frame as scorer inputs (history empty; a bare reply where none)."""
    replies = frame["reply"].where(frame["reply"].str.strip() != "", BARE_REPLY)
    return pd.DataFrame({"id": [f"{prefix}-{index}" for index in range(len(frame))],
                         "history": [[] for _ in range(len(frame))], "user_message": frame["user"].to_numpy(),
                         "response": replies.to_numpy(), "harmful": harmful.to_numpy(dtype=float)})


def spiral_rows(root: Path) -> tuple[pd.DataFrame, dict[str, dict[str, float]], dict[str, np.ndarray]]:
    """Spiral-Bench's rows, each detector's out-of-fold score per reply text, and its labels."""
    if not OOF_CACHE.is_file():
        raise SystemExit("no .cache/detector_oof.npz: run scripts/detector_oof.py --check first")
    frame = load_safety_sets(root)
    spiral = frame[frame["source"] == "spiral_bench"]
    given, labels = {}, {}
    with np.load(OOF_CACHE) as cache:
        if int(cache["frame_rows"]) != len(frame):
            raise SystemExit("the out-of-fold cache is of another frame: run scripts/detector_oof.py again")
        for name in SPIRAL_LABELLED:
            rows, oof = cache[f"{name}/rows"], cache[f"{name}/oof"]
            by_row = dict(zip(rows.tolist(), oof.tolist(), strict=True))
            scores: dict[str, float] = {}
            for row, reply in zip(spiral.index, spiral["reply"], strict=True):
                text, score = clip_for_parse(reply), round(by_row[row], 4)
                if scores.setdefault(text, score) != score:
                    raise SystemExit(f"{name}: one reply text with two out-of-fold scores")
            given[name] = scores
            labels[name] = (spiral[name].to_numpy(dtype=float) > 0).astype(float)
    return inputs(spiral, "spiral", spiral["delusion_reinforcement"]), given, labels


def other_sets(root: Path) -> dict[str, pd.DataFrame]:
    """Every other development set that benchmarks/safety.py and safety_detectors.py report trust
    for with a harm label, as scorer inputs with `harmful`."""
    found: dict[str, pd.DataFrame] = {}
    for spec in safety.SETS:
        frame = spec.loader(root)
        if frame is not None:
            found[spec.name.split(" (")[0]] = frame.assign(harmful=frame["harmful"].astype(float))
    from tests.support.crisis_probes import probe_replies

    rows = probe_replies()
    found["Crisis probe replies"] = pd.DataFrame({
        "id": [f"probe-{index}" for index in range(len(rows))], "history": [[] for _ in rows],
        "user_message": [post for post, _, _, _ in rows], "response": [reply for _, reply, _, _ in rows],
        "harmful": [float(bad) for _, _, bad, _ in rows]})
    for name, loader in (("XSTest", xstest), ("SafeText", safetext)):
        frame = loader(root)
        frame = frame[frame["harmful_advice"].notna()].reset_index(drop=True)
        found[name] = inputs(frame, name.lower(), frame["harmful_advice"])
    return found


def area(trust: np.ndarray, labels: np.ndarray) -> float:
    """Trust's AUROC for the behaviour (low trust = the behaviour)."""
    return float(auroc(pd.Series(1 - trust), pd.Series(labels)))


def verify(scorer: Scorer, spiral: pd.DataFrame, rows: int = 24) -> str:
    """The deduction through GivenScores equals the scorer's own with the shipped score: on a
    few Spiral rows, giving each detector its shipped score changes no trust."""
    sample = spiral.head(rows)
    plain = scorer.trust(sample, SPIRAL_LABELLED)
    from benchmarks.safety_detectors import detector_scores
    from benchmarks.safety_sets import VectorCache

    frame = pd.DataFrame({"user": sample["user_message"], "reply": sample["response"]})
    shipped = detector_scores(frame, scorer.bank, VectorCache(scorer.base.meaning))
    given = {name: {clip_for_parse(text): round(float(score), 4)
                    for text, score in zip(sample["response"], shipped[name], strict=True)}
             for name in SPIRAL_LABELLED}
    again = scorer.trust(sample, SPIRAL_LABELLED, given)
    base = scorer.trust(sample, ())
    same = int(np.sum(np.abs(plain - again) < 1e-9))
    moved = int(np.sum(np.abs(plain - base) > 1e-9))
    return f"check: {same}/{rows} rows equal with shipped scores given ({moved} moved by the deductions)"


def measure(root: Path, drop: Iterable[str]) -> dict:
    """Every figure of Rule S and the detectors that pass it."""
    scorer = Scorer()
    spiral, given, labels = spiral_rows(root)
    print(verify(scorer, spiral), flush=True)
    without = scorer.trust(spiral)
    per_detector = {}
    for name in SPIRAL_LABELLED:
        with_ = scorer.trust(spiral, (name,), {name: given[name]})
        before, after = area(without, labels[name]), area(with_, labels[name])
        per_detector[name] = {"positives": int(labels[name].sum()), "rows": len(spiral),
                              "trust AUROC without": round(before, 4), "trust AUROC with (oof)": round(after, 4),
                              "gain": round(after - before, 4), "passes (1)": bool(after - before >= MIN_GAIN)}
        print(f"  {name}: {before:.3f} -> {after:.3f}", flush=True)
    dropped = [name for name in drop if name in per_detector]
    passing = sorted((name for name, figures in per_detector.items()
                      if figures["passes (1)"] and name not in dropped),
                     key=lambda name: -per_detector[name]["gain"])
    sets = other_sets(root)
    base = {name: scorer.trust(frame) for name, frame in sets.items()}
    rounds = []
    while True:
        figures = {}
        for name, frame in sets.items():
            with_ = scorer.trust(frame, passing) if passing else base[name]
            before, after = area(base[name], frame["harmful"].to_numpy()), area(with_, frame["harmful"].to_numpy())
            figures[name] = {"rows": len(frame), "harmful": int(frame["harmful"].sum()),
                             "trust AUROC without": round(before, 4), "trust AUROC with": round(after, 4),
                             "fall": round(before - after, 4), "passes (2)": bool(before - after <= MAX_FALL)}
        rounds.append({"deducting": list(passing), "sets": figures})
        if not passing or all(item["passes (2)"] for item in figures.values()):
            break
        passing = passing[:-1]  # the smallest (1) gain goes first
    return {"rule": "Rule S (stated 2026-11-27 before measuring; benchmarks/spiral_deductions.py)",
            "min gain (1)": MIN_GAIN, "max fall (2)": MAX_FALL, "weight": RULE_S_WEIGHT,
            "dropped for (3)": dropped, "spiral_bench (1)": per_detector, "other sets (2)": rounds,
            "deducting": list(passing)}


def print_figures(figures: dict) -> None:
    print("\nRule S (1): spiral_bench_dev, trust AUROC for the detector's own label,")
    print("without the deduction / with it fed the out-of-fold score (by seed prompt)")
    print(f"  {'detector':<24}{'pos':>5}{'rows':>6}{'without':>9}{'with':>7}{'gain':>7}  (1)")
    for name, item in figures["spiral_bench (1)"].items():
        print(f"  {name:<24}{item['positives']:>5}{item['rows']:>6}{item['trust AUROC without']:>9.3f}"
              f"{item['trust AUROC with (oof)']:>7.3f}{item['gain']:>+7.3f}  "
              f"{'pass' if item['passes (1)'] else 'fail'}")
    for round_ in figures["other sets (2)"]:
        on = ", ".join(round_["deducting"]) or "none"
        print(f"\nRule S (2): other sets, trust AUROC for harm, deducting: {on}")
        print(f"  {'set':<28}{'rows':>6}{'harm':>6}{'without':>9}{'with':>7}{'fall':>7}  (2)")
        for name, item in round_["sets"].items():
            print(f"  {name[:28]:<28}{item['rows']:>6}{item['harmful']:>6}{item['trust AUROC without']:>9.3f}"
                  f"{item['trust AUROC with']:>7.3f}{item['fall']:>+7.3f}  {'pass' if item['passes (2)'] else 'fail'}")
    if figures["dropped for (3)"]:
        print(f"\nDropped for (3) (look-alike tests or the offline job): {', '.join(figures['dropped for (3)'])}")
    print(f"\nVerdict: {', '.join(figures['deducting']) or 'none'} take the graded deduction")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=None)
    parser.add_argument("--drop", action="append", default=[], help="a detector that fails (3)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the written figures differ; write nothing")
    args = parser.parse_args(argv)
    root = args.datasets or datasets_dir()
    figures = measure(root, args.drop)
    print_figures(figures)
    text = json.dumps(figures, indent=2) + "\n"
    if args.check:
        if not SPIRAL_DEDUCTIONS_FILE.is_file() or SPIRAL_DEDUCTIONS_FILE.read_text(encoding="utf-8") != text:
            print(f"{SPIRAL_DEDUCTIONS_FILE.name} differs from these figures", file=sys.stderr)
            return 1
        return 0
    SPIRAL_DEDUCTIONS_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {SPIRAL_DEDUCTIONS_FILE.relative_to(PROJECT_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
