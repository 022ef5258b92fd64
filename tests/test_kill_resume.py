"""Kill a run midway (SIGKILL, no cleanup) and resume it: finished cases are never called again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from evaluators.store import RunStore

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = PROJECT_ROOT / "scripts" / "evaluate_prompts.py"


def start_run(project: dict[str, Path], server_url: str, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_BASE_URL": server_url, "OPENAI_API_KEY": "test-key",
           "PENPAL_EVAL_CACHE": str(project["root"] / "penpal-cache")}
    command = [sys.executable, str(SCRIPT), "--prompts-dir", str(project["prompts"]),
               "--scenarios-dir", str(project["scenarios"]), "--no-cache", "--concurrency", "1", *extra]
    return subprocess.Popen(command, cwd=project["root"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_killed_run_resumes_without_calling_finished_cases_again(small_project, openai_server):
    server = openai_server(latency_s=0.4)
    run_dir = small_project["runs"] / "killed"
    process = start_run(small_project, server.base_url, "--output", str(small_project["runs"]),
                        "--run-id", "killed")
    cases_file = run_dir / "cases.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if cases_file.exists() and len(cases_file.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be killed: " + process.stderr.read()
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    finished = RunStore.open(run_dir).finished_ids()
    assert 2 <= len(finished) < 6
    calls_before = len(server.calls)

    resumed = start_run(small_project, server.base_url, "--resume", str(run_dir))
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert f"{len(finished)} already finished" in stderr

    cases = {case.case_id: case for case in RunStore.open(run_dir).read_cases()}
    assert len(cases) == 6 and all(case.status == "ok" for case in cases.values())
    # Every call of the resumed process belongs to a case that had not finished.
    for call in server.calls[calls_before:]:
        version = call.messages[0]["content"].split("(")[1].split(")")[0]
        first_user = next(m["content"] for m in call.messages if m["role"] == "user")
        owner = next(cid for cid, case in cases.items()
                     if case.prompt_version == version and case.turns[0].user == first_user)
        assert owner not in finished, f"finished case {owner} was called again"
    # And no conversation prefix of a finished case was ever sent twice.
    sent = Counter(call.key for call in server.calls)
    for cid in finished:
        case = cases[cid]
        keys = [call.key for call in server.calls
                if call.messages[0]["content"].split("(")[1].split(")")[0] == case.prompt_version
                and next(m["content"] for m in call.messages if m["role"] == "user") == case.turns[0].user]
        assert all(sent[key] == 1 for key in keys) and len(keys) == len(case.turns)
    assert "v1" in stdout and "v2" in stdout  # the per-version table
