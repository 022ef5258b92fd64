"""Human review: turns a person should look at go to a Langfuse annotation queue.

A turn is sent for review when the judge and the heuristics disagree by more than the
rubric's threshold, when the judge's verdict could not be read (fallback) or was unstable,
or when a hard flag fired. Langfuse lets one trace sit in a queue twice, so the queue's
items are read once and a trace already there is not added again.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.integrations.langfuse.rest import LangfuseRest
from evaluators.store.records import TurnResult


def review_reasons(turn: TurnResult) -> list[str]:
    """Why this reply needs a human, or [] when it does not."""
    reasons = list((turn.judge or {}).get("review") or [])  # disagreement, fallback, unstable samples
    reasons += [f"hard flag: {flag.get('name')}" for flag in (turn.heuristics or {}).get("flags", [])]
    return reasons


def find_queue(rest: LangfuseRest, name_or_id: str) -> str | None:
    """The id of an existing queue with this id or name, or None."""
    for queue in rest.pages(rest.api.annotation_queues.list_queues, what="list annotation queues"):
        if name_or_id in (queue.id, queue.name):
            return queue.id
    return None


def create_queue(rest: LangfuseRest, name: str, score_config_ids: Sequence[str]) -> str:
    """A new queue; Langfuse needs at least one score config for it (annotation-queues.ts)."""
    if not score_config_ids:
        raise ValueError(f"annotation queue {name}: Langfuse needs at least one score config id")
    created = rest.call(rest.api.annotation_queues.create_queue, name=name, score_config_ids=list(score_config_ids),
                        description="Replies penpal-eval flagged for human review (judge-heuristics "
                                    "disagreement, unreadable verdicts, hard flags).",
                        what=f"create annotation queue {name}")
    return created.id


def queued_trace_ids(rest: LangfuseRest, queue_id: str) -> set[str]:
    items = rest.pages(rest.api.annotation_queues.list_queue_items, what="list annotation queue items",
                       queue_id=queue_id)
    return {item.object_id for item in items}


def add_to_queue(rest: LangfuseRest, queue_id: str, trace_id: str) -> None:
    rest.call(rest.api.annotation_queues.create_queue_item, queue_id=queue_id, object_id=trace_id,
              object_type="TRACE", what=f"add trace {trace_id} to annotation queue")
