"""The SDK's log lines as a report shows them: whole words, secrets masked, repeats counted."""

from __future__ import annotations

import logging
from collections import Counter

from evaluators.integrations.langfuse.connection import CapturedLogs


def emit(logs: CapturedLogs, message: str) -> None:
    logs.emit(logging.LogRecord("langfuse", logging.ERROR, __file__, 1, message, None, None))


def test_a_long_sdk_message_is_cut_at_a_word_and_says_so():
    logs = CapturedLogs(secrets=["sk-secret"])
    message = "Exception while exporting spans to the server with key sk-secret: " + "backoff retry " * 40
    for _ in range(3):
        emit(logs, message)
    (line,) = logs.since(Counter())
    text, count = line.rsplit(" (x", 1)
    assert count == "3)"
    kept = text.split(" [", 1)[0].removeprefix("langfuse: ")
    assert message.replace("sk-secret", "***").startswith(kept)
    assert kept.endswith(("backoff", "retry"))  # a whole word, never "b"
    assert text.endswith("more characters not shown]")
    assert "sk-secret" not in line


def test_a_short_message_is_kept_as_it_is():
    logs = CapturedLogs(secrets=[])
    emit(logs, "Failed to export span batch code: 503")
    assert logs.since(Counter()) == ["langfuse: Failed to export span batch code: 503"]
