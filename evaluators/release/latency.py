"""Latency and speaking time per prompt version: the evidence the voice budget is checked on.

A voice companion is heard, not read. Its user waits for the first word (time to first
token, measured on the streamed call), then listens to the whole reply (speaking time,
estimated from its words at the rubric's speaking rate). Both are summarised as p50 and p95
over a version's scored turns: the budget is about the slow tail a user meets now and then,
which a mean hides.

Which turns count:
- speaking time: every reply of a scored case, replayed or live; it depends on the words only.
- timings: replies a live call produced, including those served again from the response
  cache. The cache keeps the measurement of the call that produced that very reply, so a
  re-run from the cache decides as the first run did, instead of losing its evidence. The
  figures say how many timed turns came from the cache.
- replayed replies were never timed: their timings are None, never 0, and a version with
  no timed turn has no latency figures at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from evaluators.release.contracts import Percentiles, VersionLatency
from evaluators.rubric.loader import VoiceRules
from evaluators.scoring.reading.readability import spoken_word_count
from evaluators.store.records import CaseResult, TurnResult

NOT_MEASURED = "no latency measured (replayed replies)"


def percentile(values: Sequence[float], share: float) -> float:
    """The `share` quantile by linear interpolation between the closest ranks (numpy's default)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def spread(values: Iterable[float | None]) -> Percentiles | None:
    """p50 and p95 of the present values; None when none is present."""
    present = [value for value in values if value is not None and not math.isnan(value)]
    if not present:
        return None
    return Percentiles(p50=round(percentile(present, 0.5), 4), p95=round(percentile(present, 0.95), 4),
                       count=len(present))


def speaking_seconds(reply: str, voice: VoiceRules) -> float:
    """How long the reply takes to say aloud, at the rubric's relaxed speaking rate."""
    return voice.speaking_seconds(spoken_word_count(reply))


def _timed(case: CaseResult, turn: TurnResult) -> bool:
    return case.responder != "replay" and turn.time_to_first_token_s is not None


def version_latency(cases: Sequence[CaseResult], voice: VoiceRules) -> VersionLatency:
    """The latency and speaking-time figures of one version's scored cases."""
    turns = [(case, turn) for case in cases if case.status == "ok" for turn in case.turns]
    timed = [turn for case, turn in turns if _timed(case, turn)]
    return VersionLatency(
        turns=len(turns),
        timed_turns=len(timed),
        cached_turns=sum(turn.cached for turn in timed),
        replayed_turns=sum(case.responder == "replay" for case, _ in turns),
        time_to_first_token_s=spread(turn.time_to_first_token_s for turn in timed),
        total_s=spread(turn.latency_s for turn in timed),
        tokens_per_s=spread(turn.tokens_per_s for turn in timed),
        speaking_s=spread(speaking_seconds(turn.reply, voice) for _, turn in turns),
    )
