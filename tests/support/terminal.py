"""Run the real command line in a pseudo-terminal of a chosen width, and read what a person sees.

One interpreter runs in the pty and drives `evaluators.cli.app` once per (width, command),
resizing its own terminal before each (TIOCSWINSZ): rich measures the terminal as it does
for a person, and the heavy modules load once for all the widths.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

_MARK = "@@penpal-pty@@"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")

_DRIVER = f"""
import fcntl, json, struct, sys, termios
from evaluators.cli import app
for index, (width, argv) in enumerate(json.loads(sys.argv[1])):
    fcntl.ioctl(sys.stdout.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    sys.stderr.flush()
    print("{_MARK}", index, flush=True)
    try:
        app(argv, prog_name="penpal-eval")
    except SystemExit:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
print("{_MARK}", "end", flush=True)
"""


def _environment() -> dict[str, str]:
    environ = {key: value for key, value in os.environ.items()
               if key not in {"COLUMNS", "LINES", "NO_COLOR", "TERM_PROGRAM"}
               and not key.startswith(("OPENAI_", "PENPAL_JUDGE_", "LANGFUSE_"))}
    return {**environ, "TERM": "xterm-256color"}


def run_in_pty(commands: Sequence[tuple[int, Sequence[str]]], cwd: Path, timeout_s: float = 600,
               environ: Mapping[str, str] | None = None) -> list[str]:
    """What each (width, argv) printed to the terminal, stdout and stderr together, without colour codes.

    `environ` adds variables (e.g. a judge endpoint on a local test server) to the clean environment.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 80, 0, 0))
    process = subprocess.Popen([sys.executable, "-c", _DRIVER, json.dumps([[w, list(a)] for w, a in commands])],
                               stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                               env={**_environment(), **(environ or {})}, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            elif process.poll() is not None:
                break
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        os.close(master)
    text = _ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "\n")
    parts = text.split(_MARK)
    assert parts[-1].strip() == "end", f"the driver did not finish:\n{text[-3000:]}"
    outputs = [part.split("\n", 1)[1] if "\n" in part else "" for part in parts[1:-1]]
    assert len(outputs) == len(commands), text[-3000:]
    return outputs
