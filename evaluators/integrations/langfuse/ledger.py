"""What of a run has reached Langfuse: runs/<id>/langfuse.json, beside the run store.

The run store stays the record; this file only remembers what Langfuse confirmed: each span
(observation) with its start time, each score with a fingerprint of what was sent, and the
review items. Langfuse keeps observations as append-only events, so a delivered span is
never sent again; scores upsert on their id and timestamp, so a changed score (a resumed
case, a config now known) is sent again. It is rewritten atomically after every batch Langfuse
takes (spans or scores), so a push or run killed at any moment leaves a whole file that holds
everything but the batch in flight: the next push re-sends at most that batch.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from evaluators.core.locations import write_text_atomic

LEDGER = "langfuse.json"
FORMAT = 1


class LedgerError(ValueError):
    """The ledger file exists but cannot be read; the message names it."""


@dataclass
class DeliveryLedger:
    path: Path
    endpoint: str | None = None
    traces: dict[str, str] = field(default_factory=dict)  # trace id -> "delivered" once all its spans are
    spans: dict[str, int] = field(default_factory=dict)  # span (observation) id -> start time in ns, delivered
    scores: dict[str, str] = field(default_factory=dict)  # score id -> fingerprint
    review_items: dict[str, str] = field(default_factory=dict)  # trace id -> annotation queue id
    pushes: list[dict] = field(default_factory=list)  # one summary per push, newest last
    # Safety disagreements queued for people to settle: "OBJECT_TYPE:object id" -> annotation queue id.
    safety_items: dict[str, str] = field(default_factory=dict)
    # Saves come from the span exporter's thread and the main thread; one at a time.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    @classmethod
    def load(cls, run_dir: Path) -> DeliveryLedger:
        path = Path(run_dir) / LEDGER
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError(f"expected format {FORMAT}")
            return cls(path, data.get("endpoint"), dict(data.get("traces", {})), dict(data.get("spans", {})),
                       dict(data.get("scores", {})), dict(data.get("review_items", {})), list(data.get("pushes", [])),
                       dict(data.get("safety_items", {})))
        except (OSError, ValueError, TypeError) as error:
            raise LedgerError(f"{path}: unreadable delivery record ({error}); move it aside to push everything "
                              "again") from None

    def save(self) -> None:
        with self.lock:
            text = json.dumps({
                "format": FORMAT, "endpoint": self.endpoint, "traces": self.traces, "spans": self.spans,
                "scores": self.scores,
                "review_items": self.review_items, "safety_items": self.safety_items, "pushes": self.pushes[-20:],
            }, indent=1, sort_keys=True) + "\n"
            write_text_atomic(self.path, text)
