"""How far the project's metrics agree with people, beside the rubric's literal baseline.

Run from the project root: ``python benchmarks/validity.py [--datasets PATH] [--limit N]
[--json PATH]``. For each human-rated data set it prints the Spearman correlation of each
metric with the human rating that means the same thing (DiaSafety: AUROC of low trust for
unsafe replies), then the mean over the counted pairs against the targets. Beside each
table it says where the rubric's hard flags disagree with the people (information only: the
rubric wins there; the headline figures keep the flags' caps). It is a benchmark that
prints figures, not a test, so it always exits 0; without the data it says so in one line
and stops.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata, spearmanr

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.human_data import (  # noqa: E402
    datasets_dir,
    load_diasafety,
    load_epitome,
    load_fed,
    load_grade,
    load_usr,
)
from benchmarks.rubric_baseline import METRICS, OVERALL, score_frame_baseline  # noqa: E402

Scorer = Callable[[pd.DataFrame], pd.DataFrame]
METRIC_COLUMNS: tuple[str, ...] = (*METRICS, OVERALL)
INPUT_COLUMNS = ["id", "history", "user_message", "response"]
TARGET_MEAN = 0.35
TARGET_MIN_PAIR = 0.10
TARGET_AUROC = 0.75


@dataclass(frozen=True)
class Pair:
    """A project metric and the human rating that measures the same thing."""

    metric: str
    human: str
    counted: bool = True


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    loader: Callable[[Path], pd.DataFrame | None]
    pairs: tuple[Pair, ...]
    rating: str  # the headline human rating, used for the length check (higher = better)


SPECS: tuple[DatasetSpec, ...] = (
    DatasetSpec("FED turns", load_fed, (
        Pair(OVERALL, "Overall"),
        Pair("conversational_quality", "Engaging"),
        Pair("helpfulness", "Relevant"),
    ), rating="Overall"),
    DatasetSpec("USR PersonaChat", load_usr, (
        Pair(OVERALL, "Overall"),
        Pair("conversational_quality", "Engaging"),
        Pair("personalization_continuity", "Maintains Context"),
    ), rating="Overall"),
    DatasetSpec("GRADE ConvAI2", load_grade, (
        Pair("helpfulness", "Coherence"),
    ), rating="Coherence"),
    DatasetSpec("EPITOME", load_epitome, (
        Pair("emotional_intelligence", "empathy"),
        Pair("emotional_intelligence", "emotional_reactions", counted=False),
        Pair("emotional_intelligence", "interpretations", counted=False),
        Pair("emotional_intelligence", "explorations", counted=False),
    ), rating="empathy"),
)
DIASAFETY = DatasetSpec("DiaSafety val", load_diasafety, (), rating="safe")


@dataclass
class Row:
    """One printed figure for both scorers; ``None`` when a scorer could not produce it."""

    label: str
    kind: str  # "spearman" or "auroc"
    counted: bool
    n: int
    project: float | None = None
    baseline: float | None = None
    note: str = ""


@dataclass
class DatasetResult:
    name: str
    n: int
    median_words: float
    share_10_30_words: float
    length_rating: str
    length_rho: float
    rows: list[Row] = field(default_factory=list)
    unscored: int = 0
    project_error: str = ""
    disagreement: Disagreement | None = None


@dataclass
class FlagRow:
    """Where one hard flag fired, and how people rated those replies against the rest."""

    flag: str
    fired: int
    share: float  # of the scored replies
    human: str
    mean_flagged: float
    mean_unflagged: float  # replies this flag did not fire on


@dataclass
class UncappedRow:
    """A pair's Spearman over the replies no hard flag capped: information, never counted."""

    label: str
    n: int
    rho: float


@dataclass
class Disagreement:
    """Where the rubric's hard flags and a data set's human ratings part ways.

    A fired flag caps overall quality at the rubric's `flagged_overall_cap`; a data set whose
    replies come from bots playing a human persona rates some flagged replies well. The rubric
    wins, so the headline figures keep the caps; this only says where and by how much.
    """

    scored: int
    flags: list[FlagRow] = field(default_factory=list)
    uncapped: list[UncappedRow] = field(default_factory=list)


# --- statistics ---------------------------------------------------------------------------------


def spearman(x: pd.Series, y: pd.Series) -> tuple[float, str]:
    """Spearman rho over complete pairs; a constant side carries no ranking, so rho is 0."""
    mask = x.notna() & y.notna()
    x, y = x[mask].astype(float), y[mask].astype(float)
    if len(x) < 3:
        return float("nan"), "too few"
    if x.nunique() < 2 or y.nunique() < 2:
        return 0.0, "constant"
    return float(spearmanr(x, y).statistic), ""


def auroc(scores: pd.Series, labels: pd.Series) -> float:
    """Probability that a random positive outscores a random negative (ties count half).

    Mann–Whitney rank formula with average ranks, which is what makes ties count half.
    """
    mask = scores.notna() & labels.notna()
    values = scores[mask].to_numpy(dtype=float)
    positive = labels[mask].to_numpy(dtype=int) == 1
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(values)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def word_counts(frame: pd.DataFrame) -> pd.Series:
    """Words as the rubric counts them: ``len(response.split())``."""
    return frame["response"].map(lambda text: len(str(text).split()))


# --- scoring ------------------------------------------------------------------------------------


def load_project_scorer() -> tuple[Scorer | None, str]:
    """The project's ``score_frame``, or None and the reason it cannot be imported."""
    try:
        from evaluators import score_frame
    except Exception as error:  # the package is under construction; any failure means "absent"
        return None, f"{type(error).__name__}: {error}"
    return score_frame, ""


def metric_scores(scorer: Scorer, frame: pd.DataFrame) -> pd.DataFrame:
    """The scorer's seven metric columns for ``frame``, keyed by id, with its ``flags`` if any.

    The flags come from the same scoring pass, so the disagreement block scores nothing twice.
    """
    scores = scorer(frame[INPUT_COLUMNS].copy())
    columns = ["id", *METRIC_COLUMNS, *(["flags"] if "flags" in scores.columns else [])]
    return scores[columns].set_index("id")


def score_both(frame: pd.DataFrame, project: Scorer | None) -> tuple[pd.DataFrame, pd.DataFrame | None, str]:
    """Baseline and project scores aligned to ``frame``'s ids; a failing project is reported."""
    ids = frame["id"]
    baseline = metric_scores(score_frame_baseline, frame).reindex(ids)
    if project is None:
        return baseline, None, ""
    try:
        return baseline, metric_scores(project, frame).reindex(ids), ""
    except Exception as error:  # report and carry on with the baseline
        return baseline, None, f"{type(error).__name__}: {error}"


def figure(scores: pd.DataFrame | None, compute: Callable[[pd.DataFrame], float]) -> float | None:
    return None if scores is None else compute(scores)


def flag_disagreement(scores: pd.DataFrame, human: pd.DataFrame, humans: list[str],
                      pairs: tuple[Pair, ...]) -> Disagreement:
    """Per fired hard flag: its count and share, and the mean of each human rating in ``humans``
    on the replies it fired on against the others; per pair, Spearman over the uncapped replies.

    ``scores`` and ``human`` are keyed by the same ids; ``scores`` has the metric columns and
    ``flags`` (names) from one scoring pass. Unscored replies (no overall quality) are left out.
    """
    scored = scores[scores[OVERALL].notna()]
    flags = scored["flags"].map(lambda names: set(names) if isinstance(names, (list, tuple, set)) else set())
    ratings = human.loc[scored.index]
    result = Disagreement(scored=len(scored))
    for flag in sorted(set().union(*flags)):
        fired = flags.map(lambda names, flag=flag: flag in names)
        for name in humans:
            rating = ratings[name].astype(float)
            result.flags.append(FlagRow(flag, int(fired.sum()), float(fired.mean()), name,
                                        float(rating[fired].mean()), float(rating[~fired].mean())))
    uncapped = flags.map(len) == 0
    for pair in pairs:
        rho, _ = spearman(scored.loc[uncapped, pair.metric], ratings.loc[uncapped, pair.human])
        result.uncapped.append(UncappedRow(f"{pair.metric} ~ {pair.human}", int(uncapped.sum()), rho))
    return result


def disagreement_for(scored: pd.DataFrame | None, human: pd.DataFrame, humans: list[str],
                     pairs: tuple[Pair, ...]) -> Disagreement | None:
    """The block for a data set, or None when the project scorer gave no flags to compare."""
    if scored is None or "flags" not in scored.columns:
        return None
    return flag_disagreement(scored, human, humans, pairs)


# --- per data set ---------------------------------------------------------------------------


def limited(frame: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    """A fixed random subset (seed 0) so quick runs still mix every source in the file."""
    if limit is None or limit >= len(frame):
        return frame.reset_index(drop=True)
    return frame.sample(n=limit, random_state=0).sort_index().reset_index(drop=True)


def length_figures(frame: pd.DataFrame, rating: pd.Series, rating_name: str) -> dict:
    words = word_counts(frame)
    rho, _ = spearman(words, rating.reset_index(drop=True))
    return {
        "median_words": float(words.median()),
        "share_10_30_words": float(((words >= 10) & (words <= 30)).mean()),
        "length_rating": rating_name,
        "length_rho": rho,
    }


def evaluate_rated(spec: DatasetSpec, frame: pd.DataFrame, project: Scorer | None) -> DatasetResult:
    """Spearman of each paired metric with its human rating, for both scorers."""
    baseline, scored, error = score_both(frame, project)
    result = DatasetResult(spec.name, len(frame), **length_figures(frame, frame[spec.rating], spec.rating),
                           project_error=error)
    result.unscored = 0 if scored is None else int(scored[OVERALL].isna().sum())
    human = frame.set_index("id")
    for pair in spec.pairs:
        rho_base, note = spearman(baseline[pair.metric], human[pair.human])
        rho_proj = figure(scored, lambda s: spearman(s[pair.metric], human[pair.human])[0])
        result.rows.append(Row(f"{pair.metric} ~ {pair.human}", "spearman", pair.counted, len(frame),
                               rho_proj, rho_base, f"baseline {note}" if note else ""))
    counted = tuple(pair for pair in spec.pairs if pair.counted)
    humans = list(dict.fromkeys(pair.human for pair in counted))
    result.disagreement = disagreement_for(scored, human, humans, counted)
    return result


def evaluate_safety(frame: pd.DataFrame, project: Scorer | None, name: str = DIASAFETY.name,
                    counted: bool = True) -> DatasetResult:
    """AUROC of (1 - trust_boundaries) for Unsafe, overall and per category."""
    frame = frame.assign(safe=1 - frame["unsafe"])
    baseline, scored, error = score_both(frame, project)
    result = DatasetResult(name, len(frame), **length_figures(frame, frame["safe"], "safe (1 - unsafe)"),
                           project_error=error)
    result.unscored = 0 if scored is None else int(scored[OVERALL].isna().sum())
    labels = frame.set_index("id")["unsafe"]

    def add_row(label: str, ids: pd.Index, counted: bool) -> None:
        def risk_auroc(scores: pd.DataFrame) -> float:
            return auroc(1 - scores.loc[ids, "trust_boundaries"], labels.loc[ids])

        result.rows.append(Row(label, "auroc", counted, len(ids), figure(scored, risk_auroc),
                               risk_auroc(baseline)))

    add_row("1 - trust_boundaries -> Unsafe", labels.index, counted=counted)
    for category, group in frame.groupby("category"):
        add_row(f"  {category}", pd.Index(group["id"]), counted=False)
    result.disagreement = disagreement_for(scored, frame.set_index("id"), ["safe"], ())
    return result


# --- summary ----------------------------------------------------------------------------------


def summarise(results: list[DatasetResult]) -> dict:
    """Mean and minimum over the counted Spearman pairs, and the counted AUROC, per scorer.

    A pair with no defined correlation counts as 0: it told us nothing about the people.
    """
    pairs = [(f"{result.name}: {row.label}", row) for result in results for row in result.rows
             if row.counted and row.kind == "spearman"]
    aurocs = [row for result in results for row in result.rows if row.counted and row.kind == "auroc"]
    summary: dict = {"counted_pairs": len(pairs)}
    for side in ("project", "baseline"):
        values = [(getattr(row, side), label) for label, row in pairs]
        if not values or any(value is None for value, _ in values):
            summary[side] = None
            continue
        values = [(0.0 if math.isnan(value) else value, label) for value, label in values]
        mean_rho = float(np.mean([value for value, _ in values]))
        lowest, lowest_label = min(values, key=lambda item: item[0])
        auc = getattr(aurocs[0], side) if aurocs else None
        summary[side] = {
            "mean_spearman": mean_rho,
            "min_pair": lowest,
            "min_pair_label": lowest_label,
            "auroc": auc,
            "pass_mean": mean_rho >= TARGET_MEAN,
            "pass_min_pair": lowest >= TARGET_MIN_PAIR,
            "pass_auroc": auc is not None and not math.isnan(auc) and auc >= TARGET_AUROC,
        }
    return summary


def per_dataset(results: list[DatasetResult]) -> list[dict]:
    """Per data set: the mean and lowest of its counted Spearman pairs, for both scorers.

    Nothing in the rubric is fitted to these ratings (its thresholds come from the rubric's
    stated reasons and from mismatched pairs, which need no rating), so each data set's
    figure is what it would be if that set were left out of any fitting: the
    leave-one-data-set-out figure. A few settings were chosen among a handful of variants
    with every set in view (the rubric's `meaning.reasons` say which), so the figures are
    slightly optimistic. Read side by side, they show which signals carry over.
    """
    rows = []
    for result in results:
        counted = [row for row in result.rows if row.counted and row.kind == "spearman"]
        if not counted:
            continue
        entry: dict = {"name": result.name, "pairs": len(counted)}
        for side in ("project", "baseline"):
            values = [getattr(row, side) for row in counted]
            if any(value is None for value in values):
                entry[side] = None
                continue
            values = [0.0 if math.isnan(value) else value for value in values]
            entry[side] = {"mean": float(np.mean(values)), "min": float(min(values))}
        rows.append(entry)
    return rows


def mean_over_datasets(rows: list[dict], side: str) -> float | None:
    """Each data set counted once, however many pairs it has."""
    values = [row[side]["mean"] for row in rows if row[side] is not None]
    return float(np.mean(values)) if values and len(values) == len(rows) else None


# --- printing -----------------------------------------------------------------------------------


def fmt(value: float | None) -> str:
    if value is None:
        return "—"
    return "n/a" if math.isnan(value) else f"{value:+.3f}"


def print_dataset(result: DatasetResult) -> None:
    print(f"\n{result.name}  (n={result.n})")
    if result.project_error:
        print(f"  project evaluator failed here, baseline only: {result.project_error}")
    if result.unscored:
        print(f"  project evaluator left {result.unscored} record(s) unscored (skipped pairwise)")
    width = max(len(row.label) for row in result.rows) + 2
    print(f"  {'pair':<{width}}{'stat':<10}{'n':>6}{'project':>10}{'baseline':>10}")
    for row in result.rows:
        tag = "" if row.counted else "  (info)"
        note = f"  [{row.note}]" if row.note else ""
        print(f"  {row.label:<{width}}{row.kind:<10}{row.n:>6}{fmt(row.project):>10}{fmt(row.baseline):>10}{tag}{note}")
    print_disagreement(result.disagreement)


def print_disagreement(block: Disagreement | None) -> None:
    """The flags against the people, under the data set's table; nothing when none fired."""
    if block is None or not block.flags:
        return
    print("  Hard flags vs human ratings (info only). A flag is the rubric's rule (an AI")
    print("  companion must not claim a human life); it wins where people reward a persona.")
    width = max(len(row.flag) for row in block.flags) + 2
    print(f"  {'flag':<{width}}{'fired':>6}{'share':>7}  {'human':<18}{'flagged':>8}{'others':>8}")
    previous = ""
    for row in block.flags:
        share = "<1%" if 0 < row.share < 0.01 else f"{row.share:.0%}"
        flag, fired, share = (row.flag, f"{row.fired}", share) if row.flag != previous else ("", "", "")
        previous = row.flag
        print(f"  {flag:<{width}}{fired:>6}{share:>7}  {row.human:<18}{row.mean_flagged:>8.2f}"
              f"{row.mean_unflagged:>8.2f}")
    if block.uncapped:
        print(f"  Spearman over the {block.uncapped[0].n} replies no hard flag capped (info, not counted):")
        label_width = max(len(row.label) for row in block.uncapped) + 2
        for row in block.uncapped:
            print(f"    {row.label:<{label_width}}{fmt(row.rho):>8}")


def mark(passed: bool | None) -> str:
    return "—" if passed is None else ("PASS" if passed else "MISS")


def print_summary(summary: dict) -> None:
    project, baseline = summary.get("project"), summary.get("baseline")

    def cell(side: dict | None, key: str) -> str:
        return fmt(None if side is None else side[key])

    def verdict(side: dict | None, key: str) -> str:
        return mark(None if side is None else side[key])

    print(f"\nSummary over the {summary['counted_pairs']} counted Spearman pairs")
    print(f"  {'figure':<22}{'project':>10}{'baseline':>10}   {'target':<10}{'project':>9}{'baseline':>10}")
    lines = (("mean Spearman", "mean_spearman", f">= {TARGET_MEAN:.2f}", "pass_mean"),
             ("min pair", "min_pair", f">= {TARGET_MIN_PAIR:.2f}", "pass_min_pair"),
             ("DiaSafety AUROC", "auroc", f">= {TARGET_AUROC:.2f}", "pass_auroc"))
    for label, key, target, pass_key in lines:
        print(f"  {label:<22}{cell(project, key):>10}{cell(baseline, key):>10}   {target:<10}"
              f"{verdict(project, pass_key):>9}{verdict(baseline, pass_key):>10}")
    for name, side in (("project", project), ("baseline", baseline)):
        if side is not None:
            print(f"  lowest {name} pair: {side['min_pair_label']} ({fmt(side['min_pair'])})")


def print_per_dataset(rows: list[dict]) -> None:
    """The leave-one-data-set-out table: one line per data set, whole at 80 columns."""
    if not rows:
        return
    print("\nPer data set, left out of any fitting (leave-one-data-set-out)")
    print("  No rubric weight or threshold is fitted to these ratings; a few settings were")
    print("  picked from a handful with every set in view (the rubric's reasons say which),")
    print("  so each figure is nearly out of sample: it shows which signals carry over.")
    width = max(len(row["name"]) for row in rows) + 2
    print(f"  {'data set':<{width}}{'pairs':>6}{'project':>10}{'lowest':>9}{'baseline':>10}")

    def cell(row: dict, side: str, key: str) -> str:
        return fmt(None if row[side] is None else row[side][key])

    for row in rows:
        print(f"  {row['name']:<{width}}{row['pairs']:>6}{cell(row, 'project', 'mean'):>10}"
              f"{cell(row, 'project', 'min'):>9}{cell(row, 'baseline', 'mean'):>10}")
    print(f"  {'mean of data sets':<{width}}{'':>6}{fmt(mean_over_datasets(rows, 'project')):>10}"
          f"{'':>9}{fmt(mean_over_datasets(rows, 'baseline')):>10}")


def print_length_note(results: list[DatasetResult]) -> None:
    print("\nReply length: the rubric against the data sets")
    print("  The rubric prefers short spoken replies of 10-30 words and docks replies over 50;")
    print("  several data sets reward longer written replies (EPITOME's are Reddit posts). Where")
    print("  the two disagree the rubric wins, so part of the human signal below is, by design,")
    print("  not chased. Spearman > 0 means people rated longer replies higher.")
    width = max(len(result.name) for result in results) + 2
    print(f"  {'data set':<{width}}{'median words':>13}{'in 10-30':>10}{'rho(words, rating)':>20}  rating")
    for result in results:
        print(f"  {result.name:<{width}}{result.median_words:>13.0f}{result.share_10_30_words:>10.0%}"
              f"{fmt(result.length_rho):>20}  {result.length_rating}")


def without_nan(value: object) -> object:
    """NaN becomes null, so the file is strict JSON that any reader accepts."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: without_nan(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_nan(item) for item in value]
    return value


# --- entry point -------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=None,
                        help="human-rated data directory (default: PENPAL_DATASETS or ../shared/datasets)")
    parser.add_argument("--limit", type=int, default=None, help="score at most N records per data set")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    parser.add_argument("--unseen", type=int, default=0, metavar="N",
                        help="also report AUROC on N records of DiaSafety's train split, which the "
                             "signals were not tuned on (informational, not counted)")
    return parser.parse_args(argv)


def run(root: Path, limit: int | None, project: Scorer | None, unseen: int = 0) -> list[DatasetResult]:
    results = []
    for spec in SPECS:
        frame = spec.loader(root)
        if frame is None:
            print(f"\n{spec.name}: not found under {root}, skipped")
            continue
        results.append(evaluate_rated(spec, limited(frame, limit), project))
        print_dataset(results[-1])
    safety = DIASAFETY.loader(root)
    if safety is None:
        print(f"\n{DIASAFETY.name}: not found under {root}, skipped")
    else:
        results.append(evaluate_safety(limited(safety, limit), project))
        print_dataset(results[-1])
    train = load_diasafety(root, split="train") if unseen else None
    if train is not None:
        # A check against tuning to the validation split: same task, records never looked at.
        sample = train.sample(n=min(unseen, len(train)), random_state=0)
        results.append(evaluate_safety(sample, project, name="DiaSafety train (unseen, info)", counted=False))
        print_dataset(results[-1])
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = args.datasets or datasets_dir()
    if not root.is_dir():
        print(f"validity: skipped, no human-rated data at {root} (set --datasets or PENPAL_DATASETS)")
        return 0
    project, reason = load_project_scorer()
    if project is None:
        print(f"Project evaluator unavailable ({reason}); showing the rubric baseline only.")
    print(f"Human-rated data: {root}" + (f"  (limit {args.limit} per data set)" if args.limit else ""))
    results = run(root, args.limit, project, args.unseen)
    if not results:
        print("validity: no data set found, nothing to report")
        return 0
    summary = summarise(results)
    summary["per_dataset"] = per_dataset(results)
    print_summary(summary)
    print_per_dataset(summary["per_dataset"])
    print_length_note(results)
    if args.json:
        payload = {"datasets": [asdict(result) for result in results], "summary": summary}
        args.json.write_text(json.dumps(without_nan(payload), indent=2), encoding="utf-8")
        print(f"\nFigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
