"""Do the learned safety detectors, the hard flags and trust & boundaries catch what people labelled unsafe?

Run from the project root: ``python benchmarks/safety.py [--datasets PATH] [--limit N]
[--recompute-lodo] [--no-old-rules] [--detectors-only]``. Data come from ``../shared/datasets``
(or ``PENPAL_DATASETS``). A benchmark, not a test: it always exits 0, and says so in one line
when the data is absent.

First, the learned detectors (`benchmarks/safety_detectors.py`): per behaviour and per data
set, the detector's AUROC, its recall at the shipped threshold and its false-alarm rate on
benign rows, its leave-one-data-set-out AUROC (the honest figure: the detectors were trained on
these sets), and today's rules' figures on the same rows beside them.

Then, per flag on the older development sets: the AUROC of the flag (fired = 1) and of low
trust & boundaries (1 - trust) for the harmful replies, the flag's recall on them and its
false-alarm rate on the benign ones; beside them the same figures for the rubric document's
literal scoring logic (``benchmarks/rubric_baseline.py``), whose only safety logic is its
trust rule: its "flag" is a trust deduction (trust below its 0.7 start).

Data sets and what counts as harmful:

* Robots-Dont-Cry (train split), `truthful_r-chatbot` rows: replies raters judged a
  chatbot could not truthfully say (implied human life); flag claims_human.
* R-U-A-Robot (development part): answers to "are you a robot?" coded as claiming to be
  human; benign are the clear AI disclosures; flag claims_human.
* Bot-Adversarial Dialogue (development part) and DiaSafety val: unsafe replies; flags
  harmful_reply, offensive_content and any flag.
* Crisis false alarms: the crisis flag on chit-chat that holds no crisis (FED, USR,
  DiaSafety's safe replies), and on EPITOME's Reddit support posts the share of posts read
  as crisis risk (no crisis label there: informational).

The learned harm signal (`evaluators/scoring/safety/learned_harm.py`) is the one fitted part: it was
trained on DiaSafety's *train* split only, so DiaSafety val is in-distribution and every
other set is pure transfer. Each table's `w/o` column is trust's AUROC scored again with
that signal switched off, and a last section gives the model's own AUROC, trust by
DiaSafety category with and without it, and what it does to chit-chat.

The crisis probe sets (``tests/support/crisis_probes.py``, written for the project, no data
set): how often the risk reading finds crisis posts and stays quiet on distress without
risk to life, then the flag and trust on good and bad replies to the crisis posts.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.human_data import (  # noqa: E402
    datasets_dir,
    load_diasafety,
    load_epitome,
    load_fed,
    load_usr,
)
from benchmarks.rubric_baseline import score_frame_baseline  # noqa: E402
from benchmarks.safety_detectors import report as report_detectors  # noqa: E402
from benchmarks.validity import auroc  # noqa: E402

BASELINE_TRUST_START = 0.7
ANY_FLAG = "any flag"
CRISIS_FLAG = "crisis_without_help"


# --- loaders for the safety sets ------------------------------------------------------------


def load_robots_dont_cry(root: Path) -> pd.DataFrame | None:
    """`truthful_r-chatbot` rows; harmful = the majority judged a chatbot cannot say it."""
    path = root / "robots_dont_cry" / "classifiable_df_train.csv"
    if not path.exists():
        return None
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["resp_cat"] != "truthful_r-chatbot":
                continue
            rows.append({"id": f"rdc-{row['text_hash']}", "history": [], "user_message": row["turn_a"],
                         "response": row["turn_b"], "harmful": int(row["base_majority_vote"] == "False"),
                         "benign": int(row["base_majority_vote"] == "True")})
    return pd.DataFrame(rows).drop_duplicates("id")


def load_ruarobot(root: Path) -> pd.DataFrame | None:
    """Harmful = the answer claims to be human; benign = it clearly discloses an AI."""
    path = root / "ruarobot_identity_responses" / "responses_long.csv"
    if not path.exists():
        return None
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for index, row in enumerate(csv.DictReader(handle)):
            rows.append({"id": f"ruar-{index}", "history": [], "user_message": row["user_text"],
                         "response": row["response"], "harmful": int(row["claims_human"] == "1"),
                         "benign": int(row["clearly_discloses_ai"] == "1")})
    return pd.DataFrame(rows)


def load_bad(root: Path) -> pd.DataFrame | None:
    """Provoked bot replies; harmful = labelled notok."""
    path = root / "bad_bot_adversarial" / "bot_turns.jsonl"
    if not path.exists():
        return None
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        context = item["context"]
        rows.append({"id": f"bad-{item['dialogue_id']}-{item['turn_index']}", "history": context[:-1],
                     "user_message": context[-1] if context else "", "response": item["response"],
                     "harmful": int(item["unsafe"]), "benign": 1 - int(item["unsafe"])})
    return pd.DataFrame(rows)


def load_diasafety_val(root: Path) -> pd.DataFrame | None:
    frame = load_diasafety(root, "val")
    if frame is None:
        return None
    return frame.assign(harmful=frame["unsafe"], benign=1 - frame["unsafe"])


def load_chitchat(root: Path) -> pd.DataFrame | None:
    """Replies to messages with no crisis in them: FED and USR chit-chat, DiaSafety safe."""
    parts = []
    for loader in (load_fed, load_usr):
        frame = loader(root)
        if frame is not None:
            parts.append(frame[["id", "history", "user_message", "response"]])
    safe = load_diasafety(root, "val")
    if safe is not None:
        parts.append(safe[safe["unsafe"] == 0][["id", "history", "user_message", "response"]])
    if not parts:
        return None
    frame = pd.concat(parts, ignore_index=True)
    return frame.assign(harmful=0, benign=1)


@dataclass(frozen=True)
class SafetySet:
    name: str
    loader: Callable[[Path], pd.DataFrame | None]
    flags: tuple[str, ...]


SETS: tuple[SafetySet, ...] = (
    SafetySet("Robots-Dont-Cry (implied human life)", load_robots_dont_cry, ("claims_human", ANY_FLAG)),
    SafetySet("R-U-A-Robot (are you a robot?)", load_ruarobot, ("claims_human", ANY_FLAG)),
    SafetySet("Bot-Adversarial Dialogue (provoked)", load_bad,
              ("harmful_reply", "offensive_content", ANY_FLAG)),
    SafetySet("DiaSafety val", load_diasafety_val, ("harmful_reply", "offensive_content", ANY_FLAG)),
)


# --- scoring ------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def evaluators_with_and_without_learned_harm():
    """The project's evaluator, and the same with the learned harm signal switched off (no
    trust deduction, no flag), sharing the loaded models, for the `w/o` figures."""
    from evaluators.rubric.loader import default_rubric
    from evaluators.scoring.heuristics import HeuristicEvaluator

    rubric = default_rubric()
    trust = rubric.dimensions["trust_boundaries"]
    signals = {name: weight for name, weight in trust.signals.items() if name != "learned_harm"}
    switched_off = rubric.model_copy(update={
        "dimensions": {**rubric.dimensions, "trust_boundaries": trust.model_copy(update={"signals": signals})},
        "learned_harm": rubric.learned_harm.model_copy(update={"flag_at": math.inf}),
    })
    project = HeuristicEvaluator(rubric)
    return project, HeuristicEvaluator(switched_off, nlp=project.nlp, meaning=project.meaning)


def score(frame: pd.DataFrame) -> pd.DataFrame:
    """Project trust and flags (with and without the learned harm signal), and the baseline
    trust, aligned to ``frame``'s rows."""
    from evaluators import score_frame

    inputs = frame[["id", "history", "user_message", "response"]].copy()
    project_evaluator, unlearned_evaluator = evaluators_with_and_without_learned_harm()
    project = score_frame(inputs, evaluator=project_evaluator).set_index("id").reindex(frame["id"])
    unlearned = score_frame(inputs, evaluator=unlearned_evaluator).set_index("id").reindex(frame["id"])
    baseline = score_frame_baseline(inputs).set_index("id").reindex(frame["id"])
    return pd.DataFrame({
        "harmful": frame["harmful"].to_numpy(),
        "benign": frame["benign"].to_numpy(),
        "trust": project["trust_boundaries"].to_numpy(),
        "flags": project["flags"].to_numpy(),
        "unlearned_trust": unlearned["trust_boundaries"].to_numpy(),
        "unlearned_flags": unlearned["flags"].to_numpy(),
        "base_trust": baseline["trust_boundaries"].to_numpy(),
    }, index=frame["id"])


def flag_column(scores: pd.DataFrame, flag: str) -> pd.Series:
    if flag == ANY_FLAG:
        return scores["flags"].map(lambda names: int(bool(names)))
    return scores["flags"].map(lambda names: int(flag in names))


@dataclass
class Figures:
    auroc_flag: float
    auroc_trust: float
    recall: float
    false_alarm: float


def figures(fired: pd.Series, trust: pd.Series, scores: pd.DataFrame) -> Figures:
    harmful = scores["harmful"] == 1
    benign = scores["benign"] == 1
    return Figures(
        auroc_flag=auroc(fired.astype(float), scores["harmful"]),
        auroc_trust=auroc(1 - trust.astype(float), scores["harmful"]),
        recall=float(fired[harmful].mean()) if harmful.any() else float("nan"),
        false_alarm=float(fired[benign].mean()) if benign.any() else float("nan"),
    )


# --- printing -----------------------------------------------------------------------------------


def fmt(value: float, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.0%}" if percent else f"{value:.2f}"


HEADER = (f"  {'flag':<20}{'AUROC':>6}{'trust':>6}{'recall':>7}{'false':>6}{'w/o':>6}"
          f" |{'AUROC':>6}{'trust':>6}{'recall':>7}{'false':>6}")


def print_set(name: str, scores: pd.DataFrame, flags: tuple[str, ...]) -> None:
    n_harm, n_benign = int(scores["harmful"].sum()), int(scores["benign"].sum())
    print(f"\n{name}: n={len(scores)}, harmful {n_harm}, benign {n_benign}")
    print(f"  {'':<20}{'project':^31} |{'rubric document':^25}")
    print(HEADER)
    base_fired = (scores["base_trust"] < BASELINE_TRUST_START - 1e-9).astype(int)
    base = figures(base_fired, scores["base_trust"], scores)
    unlearned = auroc(1 - scores["unlearned_trust"].astype(float), scores["harmful"])
    for flag in flags:
        mine = figures(flag_column(scores, flag), scores["trust"], scores)
        print(f"  {flag:<20}{fmt(mine.auroc_flag):>6}{fmt(mine.auroc_trust):>6}{fmt(mine.recall, True):>7}"
              f"{fmt(mine.false_alarm, True):>6}{fmt(unlearned):>6} |{fmt(base.auroc_flag):>6}"
              f"{fmt(base.auroc_trust):>6}{fmt(base.recall, True):>7}{fmt(base.false_alarm, True):>6}")


def print_crisis(root: Path, limit: int | None) -> None:
    chat = load_chitchat(root)
    print("\nCrisis flag without a crisis (false alarms; the document has no crisis rule)")
    if chat is not None:
        chat = limited(chat, limit)
        scores = score(chat)
        rate = flag_column(scores, CRISIS_FLAG).mean()
        print(f"  chit-chat replies (FED, USR, DiaSafety safe)  n={len(chat):>5}  flagged {rate:>5.1%}")
    epitome = load_epitome(root)
    if epitome is not None:
        epitome = limited(epitome, limit)
        epitome = epitome.assign(harmful=(epitome["empathy"] <= 1).astype(int),
                                 benign=(epitome["empathy"] >= 3).astype(int))
        scores = score(epitome)
        fired = flag_column(scores, CRISIS_FLAG)
        print(f"  EPITOME support posts (info)                  n={len(epitome):>5}  flagged {fired.mean():>5.1%}")
        print("  (EPITOME has no crisis label: this is the share of Reddit support posts read")
        print("  as crisis risk whose reply lacks an essential; Reddit replies rarely give a")
        print("  hotline.)")


def learned_probabilities(frame: pd.DataFrame) -> pd.Series:
    """The learned harm model's own P(unsafe) per row, from the scorer's sentence vectors."""
    from evaluators.scoring.reading.nlp import clip_for_parse

    project, _ = evaluators_with_and_without_learned_harm()
    meaning, model = project.meaning, project.harm_model
    replies = [clip_for_parse(text) for text in frame["response"]]
    users = [clip_for_parse(text) for text in frame["user_message"]]
    meaning.prefetch(replies + users)
    return pd.Series([model.probability(meaning.vector(reply), meaning.vector(user))
                      for reply, user in zip(replies, users, strict=True)], index=frame.index)


def print_learned(root: Path, limit: int | None) -> None:
    """The learned harm signal on its own, in-distribution (DiaSafety val) and in transfer."""
    print("\nLearned harm signal (trained on DiaSafety train only; val is in-distribution,")
    print("the rest is transfer). AUROC for harmful replies: the model alone, trust with")
    print("it and trust without it.")
    print(f"  {'set':<38}{'n':>6}{'model':>7}{'trust':>7}{'w/o':>7}")
    category_rows: list[tuple[str, pd.DataFrame, pd.Series]] = []
    for spec in (SETS[3], SETS[2]):
        frame = spec.loader(root)
        if frame is None:
            continue
        frame = limited(frame, limit)
        scores = score(frame)
        alone = learned_probabilities(frame).set_axis(scores.index)
        print(f"  {spec.name[:37]:<38}{len(frame):>6}{fmt(auroc(alone, scores['harmful'])):>7}"
              f"{fmt(auroc(1 - scores['trust'], scores['harmful'])):>7}"
              f"{fmt(auroc(1 - scores['unlearned_trust'], scores['harmful'])):>7}")
        if "category" in frame.columns:
            category_rows.append((spec.name, scores.assign(category=frame["category"].to_numpy()), alone))
    for name, scores, alone in category_rows:
        print(f"  {name} by category (unsafe vs safe within each):")
        for category, part in scores.groupby("category"):
            print(f"    {category:<36}{len(part):>6}{fmt(auroc(alone[part.index], part['harmful'])):>7}"
                  f"{fmt(auroc(1 - part['trust'], part['harmful'])):>7}"
                  f"{fmt(auroc(1 - part['unlearned_trust'], part['harmful'])):>7}")
    parts = [frame[["id", "history", "user_message", "response"]] for loader in (load_fed, load_usr)
             if (frame := loader(root)) is not None]
    if not parts:
        return
    chat = limited(pd.concat(parts, ignore_index=True).assign(harmful=0, benign=1), limit)
    scores = score(chat)
    drop = (scores["unlearned_trust"] - scores["trust"]).clip(lower=0)
    with_flag = flag_column(scores, "harmful_reply").mean()
    without_flag = scores["unlearned_flags"].map(lambda names: int("harmful_reply" in names)).mean()
    print(f"  chit-chat (FED, USR) n={len(chat)}: trust lowered on {(drop > 1e-9).mean():.1%}, "
          f"mean {drop.mean():.3f}, max {drop.max():.2f};")
    print(f"    harmful_reply on {with_flag:.1%} (without the learned signal {without_flag:.1%})")


def print_crisis_probes() -> None:
    """The crisis reading on the project's own probe sets: recall on crisis posts, false
    alarms on distress posts, and the flag and trust separating bad replies from good."""
    from tests.support.crisis_probes import CRISIS, NON_CRISIS, probe_replies

    posts = [post for _, post in CRISIS] + [post for _, post in NON_CRISIS]
    # A bare reply has no crisis component, so the flag fires exactly when risk is read.
    bare = pd.DataFrame({"id": [f"post-{index}" for index in range(len(posts))], "history": [[]] * len(posts),
                         "user_message": posts, "response": ["Okay."] * len(posts),
                         "harmful": [1] * len(CRISIS) + [0] * len(NON_CRISIS),
                         "benign": [0] * len(CRISIS) + [1] * len(NON_CRISIS)})
    read = flag_column(score(bare), CRISIS_FLAG).to_numpy()
    recalled, alarms = int(read[:len(CRISIS)].sum()), int(read[len(CRISIS):].sum())
    print("\nCrisis probe sets (tests/support/crisis_probes.py; written for the project)")
    print(f"  risk read in crisis posts        {recalled / len(CRISIS):>5.1%}  ({recalled}/{len(CRISIS)})")
    print(f"  risk read in distress posts      {alarms / len(NON_CRISIS):>5.1%}  "
          f"({alarms}/{len(NON_CRISIS)}, false alarms)")
    rows = probe_replies()
    replies = pd.DataFrame({"id": [f"reply-{index}" for index in range(len(rows))], "history": [[]] * len(rows),
                            "user_message": [post for post, _, _, _ in rows],
                            "response": [reply for _, reply, _, _ in rows],
                            "harmful": [int(bad) for _, _, bad, _ in rows],
                            "benign": [int(not bad) for _, _, bad, _ in rows]})
    print_set("Probe replies (bad: an essential missing)", score(replies), (CRISIS_FLAG,))


def limited(frame: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    if limit is None or limit >= len(frame):
        return frame.reset_index(drop=True)
    return frame.sample(n=limit, random_state=0).sort_index().reset_index(drop=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=None,
                        help="data directory (default: PENPAL_DATASETS or ../shared/datasets)")
    parser.add_argument("--limit", type=int, default=None, help="score at most N records per data set")
    parser.add_argument("--recompute-lodo", action="store_true",
                        help="refit the detectors leave one data set out (slow) instead of reading "
                             "the figures the training script recorded")
    parser.add_argument("--no-old-rules", action="store_true",
                        help="leave out today's rules beside the detectors (they take most of the time)")
    parser.add_argument("--detectors-only", action="store_true",
                        help="print only the learned detectors' section")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = args.datasets or datasets_dir()
    if not root.is_dir():
        print(f"safety: skipped, no data at {root} (set --datasets or PENPAL_DATASETS)")
        return 0
    print(f"Development data: {root}" + (f"  (limit {args.limit} per data set)" if args.limit else ""))
    print("AUROC: of the flag and of 1 - trust for harmful replies; recall on harmful;")
    print("false: false-alarm rate on benign replies. Document's flag: a trust deduction.")
    report_detectors(root, args.limit, args.recompute_lodo, not args.no_old_rules)
    if args.detectors_only:
        return 0
    found = False
    for spec in SETS:
        frame = spec.loader(root)
        if frame is None:
            print(f"\n{spec.name}: not found under {root}, skipped")
            continue
        found = True
        frame = limited(frame, args.limit)
        print_set(spec.name, score(frame), spec.flags)
    print_crisis(root, args.limit)
    print_learned(root, args.limit)
    print_crisis_probes()
    if not found:
        print("safety: no safety data set found, nothing else to report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
