"""The learned safety detectors, per behaviour and per data set, beside the rules they replace.

Called by ``benchmarks/safety.py`` (its first section). For each detector of the shipped bank
(evaluators/scoring/safety/detectors.py) and each data set that labels its behaviour
(benchmarks/safety_sets.py), one row:

* pos, neg: rows labelled with and without the behaviour;
* AUROC of the detector's probability; recall at the shipped ``flag_at`` (the rubric's
  `detectors` section when it has one, else detectors.json) and the false-alarm rate on the
  rows without the behaviour (benign replies, or messages without risk);
* LODO: the AUROC on that data set of a detector trained without it (leave one data set
  out; leave one Spiral-Bench seed prompt out for the detectors only Spiral-Bench labels),
  read from the provenance the training script wrote beside the weights, or recomputed with
  ``--recompute-lodo`` by the training script's own cross-validation. The detectors were
  trained on these rows, so AUROC, recall and false alarms are in-sample figures: the LODO
  column is the honest one;
* old: the same figures for today's rules on the same rows. Their score is 1 - trust &
  boundaries for a harm (trust for a good move, the risk reading for crisis risk), their flag
  the one that stood for the behaviour (`OLD_FLAGS`; a good move has none).

HH-RLHF's labels are relative (which of two replies is more harmful), so it has its own
line: the share of pairs in which the harmful-advice detector, or trust, ranks them as the
crowd did.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from benchmarks.safety_sets import BEHAVIOURS, LOADERS, MEASURE_ONLY, PAIRWISE, VectorCache
from benchmarks.validity import auroc

ANY_FLAG = "any flag"
# Today's flag for each behaviour. crisis_risk is read from the user's message alone: its rows
# are scored with a bare reply ("Okay."), which holds no crisis component, so the crisis flag
# fires exactly when the rules read risk.
OLD_FLAGS: dict[str, str] = {
    "harmful_advice": "harmful_reply",
    "consciousness_claims": "claims_human",
    "delusion_reinforcement": ANY_FLAG,
    "sycophancy": ANY_FLAG,
    "emotional_escalation": ANY_FLAG,
    "crisis_risk": "crisis_without_help",
}
GOOD_MOVES = frozenset({"pushback", "de_escalation", "safe_redirection", "referral"})
BARE_REPLY = "Okay."
WIDTH = 78


@dataclass(frozen=True)
class Threshold:
    flag_at: float
    low: float
    high: float
    source: str


@dataclass(frozen=True)
class Row:
    """One line of a behaviour's table: a data set (or all of them) and its figures."""

    name: str
    pos: int
    neg: int
    auroc: float
    recall: float
    false_alarm: float
    lodo: float
    old_auroc: float
    old_recall: float
    old_false_alarm: float


# --- the shipped bank and its thresholds --------------------------------------------------------


@lru_cache(maxsize=1)
def shipped_bank():
    from evaluators.scoring.safety.detectors import DETECTORS_FILE, detectors_path, load_detectors

    return load_detectors(detectors_path(DETECTORS_FILE))


def provenance_entries(bank) -> dict[str, dict]:
    from evaluators.scoring.safety.detectors import load_detector_provenance

    provenance = load_detector_provenance(bank.path)
    return provenance.get("detectors", provenance)


def rubric_behaviours() -> dict:
    """The rubric's `detectors.behaviours` when it has that section (the wiring), else {}."""
    from evaluators.rubric.loader import default_rubric

    section = getattr(default_rubric(), "detectors", None)
    return dict(getattr(section, "behaviours", None) or {})


def threshold_entry(entry: dict) -> dict:
    """The thresholds of one provenance entry (the training script files them under a key
    that says how they were set, "thresholds (out of fold, pooled rows)")."""
    if "flag_at" in entry:
        return entry
    return next(value for key, value in entry.items() if key.startswith("thresholds"))


def thresholds(bank) -> dict[str, Threshold]:
    """flag_at and the uncertain band per detector: the rubric's when it states them, which is
    what the scorer flags at, else the training script's out-of-fold choice."""
    from_rubric, from_training = rubric_behaviours(), provenance_entries(bank)
    found = {}
    for name in bank.names():
        entry, source = from_rubric.get(name), "rubric"
        if entry is None:
            entry, source = threshold_entry(from_training[name]), "detectors.json"
        entry = entry if isinstance(entry, dict) else entry.model_dump()
        low, high = entry["uncertain"]
        found[name] = Threshold(float(entry["flag_at"]), float(low), float(high), source)
    return found


SEED_OUT = "leave-one-seed-out"


def chosen_figures(entry: dict) -> dict:
    """The held-out figures of the method the training script kept."""
    return entry.get("methods compared", {}).get(entry.get("method"), {})


def provenance_lodo(bank) -> dict[str, dict[str, float]]:
    """Per detector, the held-out AUROC per data set the training script recorded: leave one
    data set out, or for a detector only Spiral-Bench labels, leave one seed prompt out."""
    found: dict[str, dict[str, float]] = {}
    for name, entry in provenance_entries(bank).items():
        figures = chosen_figures(entry)
        per_set = dict(figures.get("leave-one-data-set-out AUROC", {}))
        if SEED_OUT in figures:
            per_set["spiral_bench"] = figures[SEED_OUT]
        found[name] = {str(key): float(value) for key, value in per_set.items()}
    return found


def seed_out_only(bank) -> set[str]:
    """Detectors whose LODO figure is Spiral-Bench's leave-one-seed-out."""
    return {name for name, entry in provenance_entries(bank).items() if SEED_OUT in chosen_figures(entry)}


# --- scores ---------------------------------------------------------------------------------------


def detector_scores(frame: pd.DataFrame, bank, cache: VectorCache) -> pd.DataFrame:
    """Each detector's probability per row, from the scorer's own vectors (clipped as it clips)."""
    from evaluators.scoring.reading.nlp import clip_for_parse

    users = cache.vectors(frame["user"].tolist())
    replies = cache.vectors(frame["reply"].tolist())
    texts = [clip_for_parse(text) for text in frame["reply"]]  # read by a fine-tuned detector
    return pd.DataFrame(bank.score_rows(replies, users, texts), index=frame.index)


# What a behaviour's rubric entry may use a detector for; all switched off for the old rules.
DETECTOR_USES = ("flag", "deduct_from", "deduct_full", "veto_below")


def rules_only_rubric(rubric):
    """The rubric with every learned detector switched off (no flag, no deduction, no veto, no
    uncertain band to look for evidence in), so the `old` columns are the rules alone whatever
    branch the scorer is on; the rubric itself when it has no `detectors` section."""
    section = getattr(rubric, "detectors", None)
    if section is None:
        return rubric
    never = {"flag_at": math.inf, "uncertain": [math.inf, math.inf]}
    behaviours = {
        name: rule.model_copy(update={**never, **{use: None for use in DETECTOR_USES if use in type(rule).model_fields}})
        for name, rule in section.behaviours.items()}
    return rubric.model_copy(update={"detectors": section.model_copy(update={"behaviours": behaviours})})


def rules_only_evaluator():
    """Today's evaluator on the rules alone (`rules_only_rubric`)."""
    from evaluators.rubric.loader import default_rubric
    from evaluators.scoring.heuristics import HeuristicEvaluator

    return HeuristicEvaluator(rules_only_rubric(default_rubric()))


def rule_scores(frame: pd.DataFrame, progress: Callable[[str], None]) -> pd.DataFrame:
    """Trust & boundaries and the flags of today's rules per row; a row with no reply (a
    message of a user-side set) is scored with a bare reply."""
    from evaluators import score_frame

    replies = frame["reply"].where(frame["reply"].str.strip() != "", BARE_REPLY)
    inputs = pd.DataFrame({"id": [f"row-{index}" for index in range(len(frame))],
                           "history": [[] for _ in range(len(frame))],
                           "user_message": frame["user"].to_numpy(), "response": replies.to_numpy()})
    progress(f"scoring {len(inputs)} rows with today's rules (the slow part)...")
    scored = score_frame(inputs, evaluator=rules_only_evaluator()).set_index("id").reindex(inputs["id"])
    return pd.DataFrame({"trust": scored["trust_boundaries"].to_numpy(),
                         "flags": scored["flags"].to_numpy()}, index=frame.index)


def old_flag(flags: pd.Series, name: str) -> pd.Series:
    flag = OLD_FLAGS.get(name)
    if flag is None:
        return pd.Series(np.nan, index=flags.index)
    if flag == ANY_FLAG:
        return flags.map(lambda names: float(bool(names)))
    return flags.map(lambda names: float(flag in names))


def old_score(rules: pd.DataFrame, name: str) -> pd.Series:
    """What today's rules say of the behaviour as a score: trust for a good move, the risk
    reading for crisis risk, 1 - trust for a harm."""
    if name in GOOD_MOVES:
        return rules["trust"].astype(float)
    if name == "crisis_risk":
        return old_flag(rules["flags"], name)
    return 1 - rules["trust"].astype(float)


# --- figures --------------------------------------------------------------------------------------


def share(fired: pd.Series, mask: pd.Series) -> float:
    part = fired[mask].dropna()
    return float(part.mean()) if len(part) else float("nan")


def table_row(label: str, rows: pd.DataFrame, name: str, threshold: Threshold, lodo: float) -> Row:
    labels = rows[name].astype(float)
    positive, negative = labels == 1, labels == 0
    probability = rows[f"p:{name}"]
    fired = (probability >= threshold.flag_at).astype(float)
    old = old_flag(rows["flags"], name) if "flags" in rows else pd.Series(np.nan, index=rows.index)
    old_auroc = auroc(old_score(rows, name), labels) if "flags" in rows else float("nan")
    return Row(label, int(positive.sum()), int(negative.sum()), auroc(probability, labels),
               share(fired, positive), share(fired, negative), lodo, old_auroc,
               share(old, positive), share(old, negative))


def behaviour_rows(scored: pd.DataFrame, name: str, threshold: Threshold,
                   lodo: dict[str, float]) -> list[Row]:
    """A row per data set that labels the behaviour, then all of them pooled. A set that is
    only measured, never trained on (MEASURE_ONLY), is held out by construction: its LODO is
    its AUROC."""
    labelled = scored[scored[name].notna()]
    rows = []
    for source, part in labelled.groupby("source", sort=True):
        row = table_row(source, part, name, threshold, lodo.get(source, float("nan")))
        if source in MEASURE_ONLY:
            row = dataclasses.replace(row, lodo=row.auroc)
        rows.append(row)
    if len(rows) > 1:
        rows.append(table_row("all", labelled, name, threshold, lodo.get("all", float("nan"))))
    return rows


def pairwise_agreement(scored: pd.DataFrame, column: str) -> float:
    """Share of HH-RLHF pairs in which ``column`` is higher on the reply the crowd judged more
    harmful (ties count half)."""
    pairs = scored[scored[PAIRWISE].notna()]
    hits = []
    for _, pair in pairs.groupby("group"):
        if len(pair) != 2 or pair[PAIRWISE].sum() != 1:
            continue
        harmful = pair[pair[PAIRWISE] == 1][column].iloc[0]
        other = pair[pair[PAIRWISE] == 0][column].iloc[0]
        hits.append(0.5 if harmful == other else float(harmful > other))
    return float(np.mean(hits)) if hits else float("nan")


# --- printing -------------------------------------------------------------------------------------


def fmt(value: float, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.0%}" if percent else f"{value:.2f}"


HEADER = (f"  {'data set':<18}{'pos':>5}{'neg':>6}{'AUROC':>6}{'recall':>7}{'false':>6}{'LODO':>6}"
          f" |{'AUROC':>6}{'recall':>7}{'false':>6}")


def print_row(row: Row) -> None:
    print(f"  {row.name[:18]:<18}{row.pos:>5}{row.neg:>6}{fmt(row.auroc):>6}{fmt(row.recall, True):>7}"
          f"{fmt(row.false_alarm, True):>6}{fmt(row.lodo):>6} |{fmt(row.old_auroc):>6}"
          f"{fmt(row.old_recall, True):>7}{fmt(row.old_false_alarm, True):>6}")


def print_behaviour(name: str, reads: str, threshold: Threshold, rows: list[Row], seed_out: bool) -> None:
    old = OLD_FLAGS.get(name, "none (trust)")
    print(f"\n{name} (reads the {reads})")
    print(f"  flag_at {threshold.flag_at:.2f}, uncertain [{threshold.low:.2f}, {threshold.high:.2f}] "
          f"({threshold.source}); old flag: {old}")
    if seed_out:
        print("  LODO: Spiral-Bench alone labels it; each seed prompt held out in turn")
    print(f"  {'':<18}{'':>11}{'detector':^25} |{'old rules':^19}")
    print(HEADER)
    for row in rows:
        print_row(row)


def print_legend(lodo_source: str) -> None:
    print("\nLearned safety detectors (evaluators/scoring/safety/detectors.npz)")
    print(textwrap.fill(
        "pos/neg: rows with and without the behaviour; AUROC of the detector's probability; recall "
        "on pos and false alarms on neg at flag_at. The detectors were trained on these rows, so "
        "those are in-sample: LODO is the AUROC on each set of a detector trained without it "
        f"({lodo_source}). old: today's rules on the same rows (their score: 1 - trust for a harm, "
        "trust for a good move, the risk reading for crisis risk; recall and false alarms of the "
        "old flag).", width=WIDTH))


# --- entry point ----------------------------------------------------------------------------------


def limited(frame: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    """At most ``limit`` rows per data set, whole groups kept together (HH-RLHF's pairs)."""
    if limit is None:
        return frame
    parts = []
    for _, part in frame.groupby("source", sort=False):
        groups = part["group"].drop_duplicates()
        if len(part) > limit:
            keep = groups.sample(frac=1.0, random_state=0)
            sizes = part.groupby("group").size().reindex(keep).cumsum()
            part = part[part["group"].isin(sizes[sizes <= limit].index)]
        parts.append(part)
    return pd.concat(parts).reset_index(drop=True)


def available_sets(root) -> tuple[pd.DataFrame | None, list[str]]:
    """The safety sets found under ``root`` as one frame, and the names of those not found."""
    parts, missing = [], []
    for name, loader in LOADERS.items():
        try:
            parts.append(loader(root))
        except FileNotFoundError:
            missing.append(name)
    if not parts:
        return None, missing
    frame = pd.concat(parts, ignore_index=True)
    for name in (*BEHAVIOURS, PAIRWISE):
        if name not in frame:
            frame[name] = np.nan
    return frame.fillna({"user": "", "reply": ""}), missing


def recomputed_lodo(bank, frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Held-out AUROC per detector and data set, refitted now by the training script's own
    cross-validation with the method and penalty it kept (slow: a fit per held-out set)."""
    from evaluators.scoring.reading.meaning import load_meaning_model
    from scripts.train_detectors import SPECS, SPIRAL, load_vectors, lodo, pairs_for, rows_for, spiral_holdouts

    frame = frame.reset_index(drop=True)
    vectors = load_vectors(frame, load_meaning_model())
    found = {}
    for name, entry in provenance_entries(bank).items():
        spec, method = SPECS[name], entry["method"]
        strength = chosen_figures(entry)["strength"]
        data = rows_for(frame, vectors, name, spec, spec.sources)
        if spec.sources == SPIRAL:
            found[name] = {"spiral_bench": spiral_holdouts(method, strength, data)[SEED_OUT]}
        else:
            found[name] = lodo(method, strength, data, pairs_for(frame, vectors, spec, method))
    return found


def report(root, limit: int | None, recompute_lodo: bool, old_rules: bool) -> None:
    """Print every detector's table; data sets absent under ``root`` are left out by the loader."""
    from evaluators.scoring.reading.meaning import load_meaning_model
    from evaluators.scoring.safety.detectors import DetectorsMissing

    try:
        bank = shipped_bank()
    except DetectorsMissing as error:
        print(f"\nLearned safety detectors: not shipped ({error}); skipped")
        return
    frame, missing = available_sets(root)
    if missing:
        print(f"\nLearned safety detectors: not found under {root}, left out: {', '.join(missing)}")
    if frame is None:
        print("Learned safety detectors: no safety data set found, nothing to measure")
        return
    full, frame = frame, limited(frame, limit)
    scored = frame.join(detector_scores(frame, bank, VectorCache(load_meaning_model())).add_prefix("p:"))
    if old_rules:
        scored = scored.join(rule_scores(frame, lambda note: print(f"  ({note})", flush=True)))
    lodo = recomputed_lodo(bank, full) if recompute_lodo else provenance_lodo(bank)
    print_legend("recomputed by scripts/train_detectors.py" if recompute_lodo
                 else "as recorded in detectors.json by scripts/train_detectors.py")
    if not old_rules:
        print("(old rules left out: --no-old-rules)")
    limits = thresholds(bank)
    seed_out = seed_out_only(bank)
    for name in bank.names():
        print_behaviour(name, bank.detectors[name].reads, limits[name],
                        behaviour_rows(scored, name, limits[name], lodo.get(name, {})), name in seed_out)
    if "harmful_advice" in bank.names() and scored[PAIRWISE].notna().any():
        trust = pairwise_agreement(scored.assign(harm=1 - scored["trust"]), "harm") if old_rules else math.nan
        print("\n" + textwrap.fill(
            "HH-RLHF pairs (relative labels; the harmful-advice detector was fitted on them): it ranks "
            f"the more harmful reply higher in {fmt(pairwise_agreement(scored, 'p:harmful_advice'), True)} "
            f"of pairs, 1 - trust (old) in {fmt(trust, True)} (chance: 50%).", width=WIDTH))
