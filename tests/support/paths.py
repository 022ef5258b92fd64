"""Where the tests find the checkout: its root, and the sample replies the command-line tests read."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_REPLIES = PROJECT_ROOT / "tests" / "data" / "sample_replies.jsonl"
