"""Human review: turns a person should look at go to a Langfuse annotation queue; so do the
safety judge's disagreements with the rules, to their own queue (`safety_queue_objects`).

A turn is sent for review when the judge and the heuristics disagree by more than the
rubric's threshold, when the judge's verdict could not be read (fallback) or was unstable,
or when a hard flag fired. Langfuse lets one trace sit in a queue twice, so the queue's
items are read once and a trace already there is not added again.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.integrations.langfuse.ids import session_id, turn_trace_id
from evaluators.integrations.langfuse.rest import LangfuseRest
from evaluators.store.records import CaseResult, TurnResult, play_id

SAFETY_QUEUE_DESCRIPTION = ("Replies where the safety judge and the rules or detectors disagree on a hard flag "
                            "(penpal-eval case records: safety_judge.disagreements); settle each flag.")


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


REVIEW_QUEUE_DESCRIPTION = ("Replies penpal-eval flagged for human review (judge-heuristics disagreement, "
                            "unreadable verdicts, hard flags).")


def create_queue(rest: LangfuseRest, name: str, score_config_ids: Sequence[str],
                 description: str = REVIEW_QUEUE_DESCRIPTION) -> str:
    """A new queue; Langfuse needs at least one score config for it (annotation-queues.ts)."""
    if not score_config_ids:
        raise ValueError(f"annotation queue {name}: Langfuse needs at least one score config id")
    created = rest.call(rest.api.annotation_queues.create_queue, name=name, score_config_ids=list(score_config_ids),
                        description=description, what=f"create annotation queue {name}")
    return created.id


def queued_trace_ids(rest: LangfuseRest, queue_id: str) -> set[str]:
    items = rest.pages(rest.api.annotation_queues.list_queue_items, what="list annotation queue items",
                       queue_id=queue_id)
    return {item.object_id for item in items}


def queued_objects(rest: LangfuseRest, queue_id: str) -> set[str]:
    """The queue's items as "OBJECT_TYPE:object id" (a trace and a session may share no id, but say which)."""
    items = rest.pages(rest.api.annotation_queues.list_queue_items, what="list annotation queue items",
                       queue_id=queue_id)
    return {f"{getattr(item.object_type, 'value', item.object_type)}:{item.object_id}" for item in items}


def add_to_queue(rest: LangfuseRest, queue_id: str, object_id: str, object_type: str = "TRACE") -> None:
    rest.call(rest.api.annotation_queues.create_queue_item, queue_id=queue_id, object_id=object_id,
              object_type=object_type, what=f"add {object_type.lower()} {object_id} to annotation queue")


def safety_queue_objects(case: CaseResult, run_id: str) -> list[str]:
    """What a case's safety disagreements put in the queue, as "OBJECT_TYPE:object id", once each:
    the reply's trace, or the conversation's session for a conversation-level one."""
    objects: list[str] = []
    for entry in (case.safety_judge or {}).get("disagreements") or []:
        turn = entry.get("turn")
        if isinstance(turn, int):
            key = f"TRACE:{turn_trace_id(run_id, case.prompt_version, play_id(case), turn - 1)}"
        else:
            key = f"SESSION:{session_id(run_id, case.prompt_version, play_id(case))}"
        if key not in objects:
            objects.append(key)
    return objects
