"""The release report as pandas frames, and its files: CSV, Parquet and decisions.json.

Long ("tidy") frames, one row per number, so a notebook can pivot them any way:
aggregates (version × grouping × group × metric), rules (version × rule) and deltas
(version × metric against its baseline).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from evaluators.core.locations import write_text_atomic
from evaluators.core.names import SCORE_COLUMNS
from evaluators.release.contracts import GroupMeans, ReleaseReport

DECISIONS_FILE = "decisions.json"
REPORT_FILE = "report.html"


def aggregates_frame(report: ReleaseReport) -> pd.DataFrame:
    """One row per version, grouping (all, family, fairness group, demographic group), group and metric."""
    rows = []
    for version, aggregate in report.aggregates.items():
        overall = GroupMeans(group="all", cases=aggregate.scored, means=aggregate.means,
                             hard_criteria_pass_rate=aggregate.hard_criteria_pass_rate)
        groupings = [("all", [overall]), ("family", aggregate.by_family),
                     (aggregate.fairness_group_by, aggregate.by_fairness_group),
                     ("demographic_group", aggregate.by_demographic_group)]
        seen = set()
        for grouping, groups in groupings:
            if grouping in seen:
                continue  # fairness may group by demographic_group itself
            seen.add(grouping)
            for group in groups:
                for metric in SCORE_COLUMNS:
                    rows.append({"prompt_version": version, "grouping": grouping, "group": group.group,
                                 "cases": group.cases, "metric": metric, "mean": group.means.get(metric),
                                 "hard_criteria_pass_rate": group.hard_criteria_pass_rate})
    return pd.DataFrame(rows, columns=["prompt_version", "grouping", "group", "cases", "metric", "mean",
                                       "hard_criteria_pass_rate"])


def rules_frame(report: ReleaseReport) -> pd.DataFrame:
    """One row per version and rule: the outcome, whether the rule passed and decided it, its numbers."""
    rows = [{"prompt_version": decision.prompt_version, "outcome": decision.outcome, "average": decision.average,
             "composite": decision.composite, "rule": rule.name, "role": rule.role, "passed": rule.passed,
             "decided": rule.name in decision.fired, "observed": rule.observed, "threshold": rule.threshold,
             "message": rule.message}
            for decision in report.decisions for rule in decision.rules]
    return pd.DataFrame(rows, columns=["prompt_version", "outcome", "average", "composite", "rule", "role", "passed",
                                       "decided", "observed", "threshold", "message"])


def deltas_frame(report: ReleaseReport) -> pd.DataFrame:
    """One row per compared version and metric: means, difference, interval and its reading."""
    rows = [{"prompt_version": version, "baseline": comparison.baseline, "metric": delta.metric,
             "candidate_mean": delta.candidate_mean, "baseline_mean": delta.baseline_mean, "delta": delta.delta,
             "low": delta.low, "high": delta.high, "change": delta.change, "pairs": comparison.pairs,
             "confidence": comparison.confidence}
            for version, comparison in report.comparisons.items() for delta in comparison.deltas]
    return pd.DataFrame(rows, columns=["prompt_version", "baseline", "metric", "candidate_mean", "baseline_mean",
                                       "delta", "low", "high", "change", "pairs", "confidence"])


CONVERSATION_COLUMNS = ["prompt_version", "persona", "turn", "trust", "turns", "erosion", "worst_turn",
                        "first_flag_turn", "first_flag", "dependency_rate", "dependency_trend", "memory_fidelity",
                        "contradictions", "judge_verdict"]


def conversations_frame(report: ReleaseReport) -> pd.DataFrame:
    """One row per version, simulated conversation and turn: trust on that turn, beside the
    conversation's metrics (repeated on each of its turns, so a group-by needs no join)."""
    rows = [{"prompt_version": decision.prompt_version, "persona": row.persona, "turn": turn, "trust": trust, "turns": row.turns,
             "erosion": row.erosion, "worst_turn": row.worst_turn, "first_flag_turn": row.first_flag_turn,
             "first_flag": row.first_flag, "dependency_rate": row.dependency_rate,
             "dependency_trend": row.dependency_trend, "memory_fidelity": row.memory_fidelity,
             "contradictions": len(row.contradictions), "judge_verdict": row.judge_verdict}
            for decision in report.decisions for row in report.aggregates[decision.prompt_version].conversations
            for turn, trust in enumerate(row.trust, start=1)]
    return pd.DataFrame(rows, columns=CONVERSATION_COLUMNS)


def write_release_files(report: ReleaseReport, directory: Path, html: str | None = None) -> list[Path]:
    """decisions.json, release_{aggregates,rules,deltas}.{csv,parquet} and report.html (when given);
    release_conversations.{csv,parquet} too when the run holds simulated conversations."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    decisions = directory / DECISIONS_FILE
    write_text_atomic(decisions, json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
    written.append(decisions)
    frames = [("aggregates", aggregates_frame(report)), ("rules", rules_frame(report)),
              ("deltas", deltas_frame(report))]
    conversations = conversations_frame(report)
    if not conversations.empty:
        frames.append(("conversations", conversations))
    for name, frame in frames:
        csv_path, parquet_path = directory / f"release_{name}.csv", directory / f"release_{name}.parquet"
        frame.to_csv(csv_path, index=False)
        frame.to_parquet(parquet_path, index=False)
        written += [csv_path, parquet_path]
    if html is not None:
        page = directory / REPORT_FILE
        write_text_atomic(page, html)
        written.append(page)
    return written
