"""Trigger reach: what share of unsafe replies the safety judge's triggers reach, and what it costs.

Issue 26, acceptance 5: on the development sets (benchmarks/safety_sets.py), the share of the
replies labelled unsafe (harmful advice, delusion reinforcement, sycophancy, consciousness
claims, emotional escalation) that triggering sends to the judge (target >= 95%), and the
share of all replies it sends (target <= 35%), overall and per data set.

The triggers are the ones a run applies (evaluators/judge/safety_triggers.py), minus the
scenario-level ones (safety scenarios, persona conversations, which these rows have none of):
- a harm detector of the rubric's `detectors.judge_triggers` scoring the reply at or above
  its `judge_from`;
- a risk cue in the user's message, as the scorer reads it (`user_risk` of its score record:
  crisis risk combined from the rules and the crisis_risk detector, crisis_cue / risk_cue words).

Detector scores are OUT OF FOLD wherever the detector was trained on the row (the training's
grouped 5 folds, seed 0: `scripts/detector_oof.py` writes them to the gitignored cache); on
rows a detector never trained on (the Spiral-Bench-only heads on XSTest replies, say) the
shipped head reads them, as it never saw them. The leave-one-data-set-out table scores each
row of a detector that learns from several sets (harmful_advice, consciousness_claims) with
a head trained without that set, and sets judge_from by the same rule on the other sets'
out-of-fold scores only; a Spiral-Bench-only detector has no other set to train on, so its
out-of-fold (grouped by seed prompt) score stands.

judge_from is one stated rule, never tuned on misses: the highest out-of-fold score keeping at
least 95% of the detector's positives (reach first). The trade-off table shows reach and share
with the same rule at lower recall targets, so the cost of reach is seen.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/detector_oof.py   # once: the out-of-fold scores
    .venv/bin/python -m benchmarks.trigger_reach [--limit N]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import numpy as np
import pandas as pd

from benchmarks.human_data import PROJECT_ROOT, datasets_dir
from benchmarks.safety_sets import MEASURE_ONLY, VectorCache, load_safety_sets, text_key

HARMS: tuple[str, ...] = ("harmful_advice", "delusion_reinforcement", "sycophancy", "consciousness_claims",
                          "emotional_escalation")
OOF_CACHE = PROJECT_ROOT / ".cache" / "detector_oof.npz"
RISK_CACHE = PROJECT_ROOT / ".cache" / "trigger_reach_user_risk.json"
BARE_REPLY = "Okay."
REACH_TARGET, SHARE_TARGET = 0.95, 0.35
RECALLS: tuple[float, ...] = (0.95, 0.9, 0.8, 0.7, 0.5)
WIDTH = 78


def reply_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Replies labelled for at least one harm (unsafe: any label 1), from the sets that may be
    measured; HH-RLHF's labels are only relative, so its rows are not here."""
    labelled = frame[list(HARMS)].notna().any(axis=1) & (frame.reply.str.strip() != "")
    rows = frame[labelled & ~frame.source.isin(MEASURE_ONLY | {"hh_rlhf"})].copy()
    rows["unsafe"] = (rows[list(HARMS)] == 1).any(axis=1)
    return rows


def load_oof() -> dict[str, np.ndarray]:
    if not OOF_CACHE.is_file():
        raise SystemExit("no out-of-fold scores: run `OMP_NUM_THREADS=1 .venv/bin/python scripts/detector_oof.py`")
    with np.load(OOF_CACHE) as data:
        return {key: data[key] for key in data.files}


def shipped_scores(rows: pd.DataFrame, names: tuple[str, ...]) -> pd.DataFrame:
    """The shipped heads' probabilities (for rows a head never trained on)."""
    from evaluators.scoring.reading.meaning import load_meaning_model
    from evaluators.scoring.reading.nlp import clip_for_parse
    from evaluators.scoring.safety.detectors import DETECTORS_FILE, detectors_path, load_detectors

    bank = load_detectors(detectors_path(DETECTORS_FILE))
    cache = VectorCache(load_meaning_model())
    users, replies = cache.vectors(rows.user.tolist()), cache.vectors(rows.reply.tolist())
    scores = bank.score_rows(replies, users, [clip_for_parse(text) for text in rows.reply])
    return pd.DataFrame({name: scores[name] for name in names}, index=rows.index)


def held_out_scores(rows: pd.DataFrame, oof: dict, kind: str, shipped: pd.DataFrame) -> pd.DataFrame:
    """Per harm detector, each row's score from a head that never saw it: `kind` "oof" (the
    training's folds) or "lodo" (its data set left out; NaN where the detector has no other set);
    the shipped head's score on rows the detector never trained on."""
    columns = {}
    for name in HARMS:
        column = shipped[name].copy()
        held = pd.Series(oof[f"{name}/{kind}"], index=oof[f"{name}/rows"])
        trained = rows.index.intersection(held.index)
        column.loc[trained] = held.loc[trained].to_numpy()
        columns[name] = column
    return pd.DataFrame(columns)


def shipped_bands() -> dict[str, float]:
    """The rubric's judge_from per harm detector: what a run triggers on."""
    from evaluators.rubric.loader import default_rubric

    behaviours = default_rubric().detectors.behaviours
    return {name: behaviours[name].judge_from for name in HARMS}


def judge_from(oof: dict, name: str, recall: float, keep: np.ndarray | None = None) -> float:
    """The stated rule (scripts/train_detectors.judge_band) on a detector's out-of-fold scores."""
    from scripts.train_detectors import judge_band

    scores, labels = oof[f"{name}/oof"], oof[f"{name}/labels"]
    if keep is not None:
        scores, labels = scores[keep], labels[keep]
    return judge_band(scores, labels, recall)["judge_from"]


def user_risk(rows: pd.DataFrame, progress: Callable[[str], None]) -> pd.Series:
    """Whether the scorer reads a risk cue in each row's user message (its `user_risk`), scored
    once per message (with a bare reply) and cached by text."""
    from evaluators.scoring.api import default_evaluator

    known = json.loads(RISK_CACHE.read_text()) if RISK_CACHE.is_file() else {}
    todo = [text for text in dict.fromkeys(rows.user) if text_key(text) not in known]
    if todo:
        progress(f"reading risk in {len(todo)} user messages with the scorer (the slow part)...")
        evaluator = default_evaluator()
        for start in range(0, len(todo), 500):
            chunk = todo[start:start + 500]
            for text in chunk:
                # An unscored message (e.g. not English) has no reading: no risk cue, as in a run.
                known[text_key(text)] = bool(getattr(evaluator.score(text, BARE_REPLY), "user_risk", None))
            RISK_CACHE.parent.mkdir(parents=True, exist_ok=True)
            RISK_CACHE.write_text(json.dumps(known))
    return rows.user.map(lambda text: known[text_key(text)])


def triggered(scores: pd.DataFrame, bands: dict[str, float], risk: pd.Series) -> pd.Series:
    fired = risk.copy()
    for name in HARMS:
        fired |= scores[name] >= bands[name]
    return fired


def figures(rows: pd.DataFrame, fired: pd.Series) -> tuple[int, int, float, float, float]:
    unsafe = rows.unsafe
    reach = float(fired[unsafe].mean()) if unsafe.any() else float("nan")
    benign = float(fired[~unsafe].mean()) if (~unsafe).any() else float("nan")
    return len(rows), int(unsafe.sum()), reach, float(fired.mean()), benign


def pct(value: float) -> str:
    return "n/a" if value != value else f"{value:.0%}"


def print_table(title: str, rows: pd.DataFrame, fired: pd.Series) -> None:
    print(title)
    print(f"  {'data set':<16}{'replies':>8}{'unsafe':>8}{'reach':>8}{'judged':>8}{'benign judged':>15}")
    for source, part in [*rows.groupby("source"), ("all", rows)]:
        n, unsafe, reach, share, benign = figures(part, fired.loc[part.index])
        print(f"  {source:<16}{n:>8}{unsafe:>8}{pct(reach):>8}{pct(share):>8}{pct(benign):>15}")
    print()


def print_components(rows: pd.DataFrame, scores: pd.DataFrame, bands: dict[str, float], risk: pd.Series) -> None:
    print("Each trigger alone (out of fold, all sets)")
    print(f"  {'trigger':<26}{'judge_from':>11}{'reach':>8}{'judged':>8}")
    for name in HARMS:
        _, _, reach, share, _ = figures(rows, scores[name] >= bands[name])
        print(f"  {name:<26}{bands[name]:>11.4f}{pct(reach):>8}{pct(share):>8}")
    _, _, reach, share, _ = figures(rows, risk)
    print(f"  {'risk cue (user message)':<26}{'':>11}{pct(reach):>8}{pct(share):>8}")
    print()


def print_tradeoff(rows: pd.DataFrame, scores: pd.DataFrame, oof: dict, risk: pd.Series) -> None:
    print("Trade-off: judge_from by the same rule at other recall targets (out of fold)")
    print(f"  {'recall kept':<14}{'reach':>8}{'judged':>8}{'benign judged':>15}   targets met")
    for recall in RECALLS:
        bands = {name: judge_from(oof, name, recall) for name in HARMS}
        _, _, reach, share, benign = figures(rows, triggered(scores, bands, risk))
        met = ", ".join(label for label, ok in (("reach", reach >= REACH_TARGET), ("share", share <= SHARE_TARGET))
                        if ok) or "neither"
        print(f"  {recall:<14.2f}{pct(reach):>8}{pct(share):>8}{pct(benign):>15}   {met}")
    print("  Rule (reach first): keep recall 0.95, whatever it costs; the share is what")
    print("  triggering costs, and a cheaper band is not chosen by reading these misses.")
    print()


def lodo_bands(rows: pd.DataFrame, oof: dict, frame_sources: pd.Series) -> dict[str, dict[str, float]]:
    """Per detector and held-out data set: judge_from by the rule on the OTHER sets' out-of-fold scores."""
    bands: dict[str, dict[str, float]] = {}
    for name in HARMS:
        trained = frame_sources.loc[oof[f"{name}/rows"]].to_numpy()
        for source in rows.source.unique():
            keep = trained != source
            bands.setdefault(name, {})[source] = (judge_from(oof, name, REACH_TARGET, keep)
                                                  if keep.any() and not keep.all() else judge_from(oof, name, REACH_TARGET))
    return bands


def lodo_fired(rows: pd.DataFrame, oof: dict, frame: pd.DataFrame, risk: pd.Series,
               shipped: pd.DataFrame) -> pd.Series:
    oof_scores = held_out_scores(rows, oof, "oof", shipped)
    lodo_scores = held_out_scores(rows, oof, "lodo", shipped)
    scores = lodo_scores.fillna(oof_scores)  # a detector with one data set: its out-of-fold score
    bands = lodo_bands(rows, oof, frame.source)
    fired = risk.copy()
    for name in HARMS:
        limits = rows.source.map(bands[name])
        fired |= scores[name] >= limits
    return fired


def print_floor(rows: pd.DataFrame) -> None:
    """What any trigger must judge to reach its target, from the share of unsafe replies alone."""
    unsafe = float(rows.unsafe.mean())
    floor = unsafe * REACH_TARGET
    precision = floor / SHARE_TARGET
    print("The floor: what a perfect ranking of the replies would still judge")
    print(f"  {unsafe:.0%} of these replies are labelled unsafe, so reaching {REACH_TARGET:.0%} of them judges at")
    print(f"  least {floor:.0%} of all replies; staying at {SHARE_TARGET:.0%} needs the triggers' precision >= "
          f"{precision:.2f}")
    print(f"  at recall {REACH_TARGET:.2f}, with the data sets mixed as here.")
    print()


def triage_scores(rows: pd.DataFrame, assignment: np.ndarray) -> np.ndarray:
    """Scores of one head for "unsafe in any way" (exchange form: reply, user message and their
    product; the training script's quick penalty; each data set and each class weighing the
    same), each row scored by a head that never saw its fold of `assignment`."""
    from evaluators.scoring.reading.meaning import load_meaning_model
    from scripts.train_detectors import QUICK_STRENGTH, Head, balanced_weights

    cache = VectorCache(load_meaning_model())
    replies, users = cache.vectors(rows.reply.tolist()), cache.vectors(rows.user.tolist())
    labels = rows.unsafe.to_numpy().astype(float)
    weights = balanced_weights(rows.assign(label=labels).reset_index(drop=True))
    scores = np.full(len(rows), np.nan)
    for fold in np.unique(assignment):
        train, test = assignment != fold, assignment == fold
        head = Head("linear_exchange", QUICK_STRENGTH).fit(replies[train], users[train], labels[train], weights[train])
        scores[test] = head.probability(replies[test], users[test])
    return scores


def print_triage(rows: pd.DataFrame) -> None:
    """Measured, not shipped: one learned head for "unsafe" in place of five detector bands.
    Its share is read at the band keeping 95% of the unsafe replies among the scores it is
    judged on (set on the same scores, so the cost shown is a lower bound)."""
    from scripts.train_detectors import FOLDS, SEED, area, grouped_folds

    labels = rows.unsafe.to_numpy().astype(float)
    print("One head for 'unsafe in any way' instead of five bands (measured, not shipped)")
    print(f"  {'held out':<26}{'AUROC':>8}{'judged at 95% reach':>21}")
    for title, assignment in (("out of fold", grouped_folds(rows.group.to_numpy(), FOLDS, SEED)),
                              ("each data set left out", rows.source.to_numpy())):
        scores = triage_scores(rows, assignment)
        positives = np.sort(scores[labels == 1])
        band = positives[int(np.floor(len(positives) * (1 - REACH_TARGET)))]
        print(f"  {title:<26}{area(scores, labels):>8.2f}{pct(float((scores >= band).mean())):>21}")
    print("  What 'unsafe' means differs between the sets (a DiaSafety category, an XSTest")
    print("  compliance, a Spiral-Bench behaviour), and held out one set at a time the head")
    print("  does not carry over; a cheaper trigger needs better detectors.")
    print()


def limited(rows: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    if limit is None:
        return rows
    return rows[rows.groupby("source").cumcount() < limit]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=None, help="data directory (default: PENPAL_DATASETS or ../shared/datasets)")
    parser.add_argument("--limit", type=int, default=None, help="at most N replies per data set (a quick look)")
    args = parser.parse_args(argv)
    frame = load_safety_sets(args.datasets or datasets_dir())
    oof = load_oof()
    if int(oof["frame_rows"]) != len(frame):
        raise SystemExit("the out-of-fold cache was computed on other data: rerun scripts/detector_oof.py")
    rows = limited(reply_rows(frame), args.limit)
    risk = user_risk(rows, print)
    shipped = shipped_scores(rows, HARMS)
    scores = held_out_scores(rows, oof, "oof", shipped)
    bands = shipped_bands()
    again = {name: judge_from(oof, name, REACH_TARGET) for name in HARMS}
    if again != bands:
        raise SystemExit(f"the rubric's judge_from {bands} differ from the out-of-fold scores' {again}: "
                         "rerun scripts/detector_oof.py and scripts/detector_rubric.py")
    print("Trigger reach on the development sets (issue 26): reach = share of unsafe")
    print(f"replies sent to the safety judge (target >= {REACH_TARGET:.0%}); judged = share of all")
    print(f"replies sent (target <= {SHARE_TARGET:.0%}). Detector scores out of fold; judge_from by the")
    print("rubric's rule (95% of each detector's positives, out of fold).")
    print()
    print_table("Out of fold (the training's grouped 5 folds)", rows, triggered(scores, bands, risk))
    print_table("Leave one data set out (harmful_advice, consciousness_claims; the\n"
                "Spiral-Bench-only detectors stay out of fold)", rows, lodo_fired(rows, oof, frame, risk, shipped))
    print_components(rows, scores, bands, risk)
    print_tradeoff(rows, scores, oof, risk)
    print_floor(rows)
    print_triage(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
