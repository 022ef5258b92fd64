"""Production replies scored as a run scores its own: the heuristics on every reply, the LLM
judge on the replies its sampling policy picks, each verdict kept with its disagreement.

Where the replies come from and where their scores go is the caller's (the Langfuse monitor
reads them from traces and writes the scores back); here is only the scoring, so a sink never
decides what is scored, nor how.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from evaluators.judge.client import LLMJudge
from evaluators.judge.reliability import with_disagreement
from evaluators.judge.result import HistoryItem, JudgeInput, JudgeResult
from evaluators.judge.sampling import SamplingState
from evaluators.judge.stage import sampling_triggers
from evaluators.rubric.loader import Rubric
from evaluators.scoring.contracts import HeuristicResult, ReplyCase, Unscored
from evaluators.scoring.heuristics import HeuristicEvaluator


@dataclass(frozen=True)
class ProductionReply:
    """One companion reply from production, as read from its generation observation."""

    observation_id: str
    trace_id: str
    started: datetime
    user_message: str
    history: tuple[HistoryItem, ...]
    reply: str
    model: str
    prompt_version: str  # what the sampling policy counts uses of
    environment: str | None


@dataclass
class ProductionScores:
    """One pass's scores: the replies scored (in order) with their heuristics, the judge's
    verdicts by observation id, and what was left unscored or unjudged, counted."""

    replies: list[ProductionReply] = field(default_factory=list)
    heuristics: list[HeuristicResult] = field(default_factory=list)  # one per reply, in order
    judgements: dict[str, JudgeResult] = field(default_factory=dict)
    unscored: dict[str, int] = field(default_factory=dict)  # reason -> replies the heuristics left unscored
    judged: int = 0
    not_judged_by_policy: int = 0
    judge_failed: int = 0


def score_production(replies: Sequence[ProductionReply], evaluator: HeuristicEvaluator, *,
                     judge: LLMJudge | None, sampling: SamplingState | None, feedback: Mapping[str, str],
                     score_cases: Callable[[list[ReplyCase]], Iterable[HeuristicResult | Unscored]] | None = None,
                     ) -> ProductionScores:
    """Score every reply, then judge the ones the sampling policy picks (every one without a
    policy). `feedback` maps a trace id to the user's negative feedback, a sampling trigger.

    `score_cases` scores elsewhere (on Ray: evaluators.integrations.scale); by default the
    evaluator scores here. The judge, when given, is closed before this returns.
    """
    scores = ProductionScores()
    if not replies:
        if judge is not None:
            asyncio.run(judge.aclose())
        return scores
    cases = [ReplyCase(id=reply.observation_id, history=[item.text for item in reply.history if item.role == "user"],
                       user_message=reply.user_message, response=reply.reply) for reply in replies]
    outcomes = list((score_cases or evaluator.score_cases)(cases))
    # A reply in a language the heuristics do not read gets no scores (and no marker, so a
    # rubric that reads it later can score it); it is counted with the unreadable ones.
    for outcome in outcomes:
        if isinstance(outcome, Unscored):
            reason = f"not scored: {', '.join(dict.fromkeys(n.name for n in outcome.notices)) or outcome.error}"
            scores.unscored[reason] = scores.unscored.get(reason, 0) + 1
    scores.replies = [reply for reply, outcome in zip(replies, outcomes, strict=True)
                      if not isinstance(outcome, Unscored)]
    scores.heuristics = [outcome for outcome in outcomes if not isinstance(outcome, Unscored)]
    if not scores.replies:
        if judge is not None:
            asyncio.run(judge.aclose())
        return scores
    if judge is not None:
        _judge_sampled(judge, sampling, evaluator.rubric, feedback, scores)
    return scores


async def _judge_all(judge: LLMJudge, inputs: Sequence[JudgeInput]) -> list[JudgeResult]:
    """Judge concurrently (the judge bounds its own concurrency), then close its client in the same loop."""
    try:
        return list(await asyncio.gather(*(judge.judge(item) for item in inputs)))
    finally:
        await judge.aclose()


def _judge_sampled(judge: LLMJudge, sampling: SamplingState | None, rubric: Rubric, feedback: Mapping[str, str],
                   scores: ProductionScores) -> None:
    """Judge the scored replies the sampling policy picks (every reply without a policy)."""
    chosen: list[tuple[ProductionReply, float]] = []
    for reply, result in zip(scores.replies, scores.heuristics, strict=True):
        if sampling is not None:
            triggers = sampling_triggers([flag.name for flag in result.flags], result.values(),
                                         rubric.judge.sampling.trigger_metric_below, feedback.get(reply.trace_id))
            if not sampling.decide(reply.prompt_version, reply.observation_id, triggers=triggers).judge:
                scores.not_judged_by_policy += 1
                continue
        chosen.append((reply, result.overall_quality))
    inputs = [JudgeInput(id=reply.observation_id, history=reply.history, user_message=reply.user_message,
                         reply=reply.reply) for reply, _ in chosen]
    results = asyncio.run(_judge_all(judge, inputs))
    for (reply, overall), result in zip(chosen, results, strict=True):
        result = with_disagreement(result, overall, rubric.judge.disagreement)
        if result.status == "failed":
            scores.judge_failed += 1
        else:
            scores.judged += 1
        if sampling is not None:
            sampling.record_verdict(reply.prompt_version, result.verdict if result.usable else None)
        scores.judgements[reply.observation_id] = result
