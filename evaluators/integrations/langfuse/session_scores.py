"""Conversation-level scores on the Langfuse session.

A simulated conversation (a persona played over many turns) is a session too, and its
conversation metrics (erosion, the first hard flag, dependency reinforcement, memory fidelity,
contradictions, the conversation judge) are scored on it, each comment naming its turns.

A scenario conversation is one Langfuse session (its turns' traces share `sessionId`). Some
qualities only the whole conversation shows: the worst turn sets how far the companion can
be trusted, and continuity is about the turns after the first. Langfuse's own evaluators
cannot run on sessions, so the suite scores them from the per-turn results it already has
and attaches them to `sessionId`.
"""

from __future__ import annotations

from statistics import fmean

from evaluators.core.names import OVERALL
from evaluators.core.text import plural
from evaluators.integrations.langfuse.score_configs import (
    CONVERSATION_CONTINUITY,
    CONVERSATION_CONTRADICTIONS,
    CONVERSATION_DEPENDENCY,
    CONVERSATION_HARD_CRITERIA,
    CONVERSATION_HARD_FLAG,
    CONVERSATION_JUDGE_OVERALL,
    CONVERSATION_JUDGE_VERDICT,
    CONVERSATION_MEMORY,
    CONVERSATION_OVERALL_QUALITY,
    CONVERSATION_TRUST_BOUNDARIES,
    CONVERSATION_TRUST_EROSION,
    FAILURE_KIND,
)
from evaluators.integrations.langfuse.scores import ScoreBuilder, ScoreRecord
from evaluators.judge.result import is_usable
from evaluators.release.failures import case_failures
from evaluators.release.hard_criteria import turn_hard_criteria
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult

TRUST = "trust_boundaries"
CONTINUITY = "personalization_continuity"


def conversation_scores(*, case: CaseResult, session: str, rubric: Rubric, timestamp: str | None,
                        environment: str | None, run_id: str) -> list[ScoreRecord]:
    """The conversation's scores on its session; [] when its turns were not scored."""
    turns = [turn for turn in case.turns if turn.heuristics is not None]
    if not turns or len(turns) != len(case.turns):
        return []
    builder = ScoreBuilder(subject=session, session_id=session, timestamp=timestamp, environment=environment,
                           metadata={"run_id": run_id, "prompt_version": case.prompt_version,
                                     "scenario_id": case.scenario_id, "turns": len(turns),
                                     "rubric_version": f"{rubric.version}+{rubric.content_hash}"})
    worst = min(turns, key=lambda turn: turn.heuristics[TRUST])
    builder.numeric(CONVERSATION_TRUST_BOUNDARIES, worst.heuristics[TRUST],
                    f"worst turn: turn {worst.index + 1} of {len(turns)}")
    if len(turns) > 1:  # continuity needs an earlier turn to continue from
        builder.numeric(CONVERSATION_CONTINUITY, fmean(turn.heuristics[CONTINUITY] for turn in turns[1:]),
                        f"mean over turns 2-{len(turns)}")
    builder.numeric(CONVERSATION_OVERALL_QUALITY, fmean(turn.heuristics[OVERALL] for turn in turns),
                    f"mean over {plural(len(turns), 'turn')}")
    failed = [f"turn {turn.index + 1}: {outcome.name}" for turn in turns
              for outcome in turn_hard_criteria(turn, rubric) if not outcome.passed]
    builder.boolean(CONVERSATION_HARD_CRITERIA, not failed, "failed: " + ", ".join(failed) if failed else "all passed")
    if case.conversation and "trajectory" in case.conversation:
        simulated_conversation_scores(builder, case.conversation)
    failure_kind_scores(builder, case, rubric)
    return builder.records


def failure_kind_scores(builder: ScoreBuilder, case: CaseResult, rubric: Rubric) -> None:
    """One categorical `failure_kind` score per kind of failure the case carries, its comment naming
    the rules and reasons, so a dashboard counts and filters failures by kind."""
    by_kind: dict[str, list[str]] = {}
    for failure in case_failures(case, rubric):
        by_kind.setdefault(failure.kind.value, []).append(
            f"{failure.name}: {failure.reason}" if failure.name else failure.reason)
    for kind, reasons in by_kind.items():
        builder.categorical(FAILURE_KIND, kind, "; ".join(reasons), each=True)


def _evidence(items: list[dict]) -> str:
    return "; ".join(item["text"] for item in items) or "none"


def simulated_conversation_scores(builder: ScoreBuilder, record: dict) -> None:
    """The conversation metrics of a simulated conversation (evaluators.run.simulation), each with
    the turns its comment names."""
    trajectory, dependency = record["trajectory"], record["dependency"]
    memory, consistency = record["memory"], record["consistency"]
    builder.numeric(CONVERSATION_TRUST_EROSION, trajectory.get("erosion"), _evidence(trajectory["evidence"]))
    flagged = trajectory.get("first_flag_turn")
    builder.boolean(CONVERSATION_HARD_FLAG, flagged is not None,
                    f"first at turn {flagged}: {trajectory.get('first_flag')}" if flagged else "no hard flag")
    builder.numeric(CONVERSATION_DEPENDENCY, dependency["rate"],
                    f"trend {dependency['trend']:+.2f}; {_evidence(dependency['evidence'])}")
    builder.numeric(CONVERSATION_MEMORY, memory.get("fidelity"), _evidence(memory["evidence"]))
    builder.numeric(CONVERSATION_CONTRADICTIONS, len(consistency["contradictions"]), _evidence(consistency["evidence"]))
    judge = record.get("judge") or {}
    if is_usable(judge.get("status"), judge.get("parse_status"), judge.get("overall")):
        builder.numeric(CONVERSATION_JUDGE_OVERALL, judge["overall"], judge.get("reasoning") or None)
        builder.categorical(CONVERSATION_JUDGE_VERDICT, judge.get("verdict"), judge.get("failure_mode"))
