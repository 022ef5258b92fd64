"""What of a run has reached Langfuse: runs/<id>/langfuse.json, beside the run store.

The run store stays the record; this file only remembers which traces, scores and review
items Langfuse confirmed, each with a fingerprint of what was sent. `penpal-eval push` then
sends what is missing or changed (a resumed case, a new rubric), and nothing twice. It is
rewritten atomically, so a killed push leaves the previous state, never a torn file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from evaluators.locations import write_text_atomic

LEDGER = "langfuse.json"
FORMAT = 1


class LedgerError(ValueError):
    """The ledger file exists but cannot be read; the message names it."""


@dataclass
class DeliveryLedger:
    path: Path
    endpoint: str | None = None
    traces: dict[str, str] = field(default_factory=dict)  # trace id -> fingerprint of what was delivered
    scores: dict[str, str] = field(default_factory=dict)  # score id -> fingerprint
    review_items: dict[str, str] = field(default_factory=dict)  # trace id -> annotation queue id
    pushes: list[dict] = field(default_factory=list)  # one summary per push, newest last

    @classmethod
    def load(cls, run_dir: Path) -> DeliveryLedger:
        path = Path(run_dir) / LEDGER
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError(f"expected format {FORMAT}")
            return cls(path, data.get("endpoint"), dict(data.get("traces", {})), dict(data.get("scores", {})),
                       dict(data.get("review_items", {})), list(data.get("pushes", [])))
        except (OSError, ValueError, TypeError) as error:
            raise LedgerError(f"{path}: unreadable delivery record ({error}); move it aside to push everything "
                              "again") from None

    def save(self) -> None:
        write_text_atomic(self.path, json.dumps({
            "format": FORMAT, "endpoint": self.endpoint, "traces": self.traces, "scores": self.scores,
            "review_items": self.review_items, "pushes": self.pushes[-20:],
        }, indent=1, sort_keys=True) + "\n")
