"""Kill a run midway (SIGKILL, no cleanup) and resume it: finished cases are never called again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from evaluators.store.run_store import RunStore
from tests.support.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow  # runs killed and resumed in subprocesses

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


def resume_run(project: dict[str, Path], server_url: str, run_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    """`--resume RUN_DIR` alone (plus `extra`): every other input must come from the manifest."""
    env = {**os.environ, "OPENAI_BASE_URL": server_url, "OPENAI_API_KEY": "test-key",
           "PENPAL_EVAL_CACHE": str(project["root"] / "penpal-cache")}
    return subprocess.run([sys.executable, str(SCRIPT), "--resume", str(run_dir), *extra], cwd=project["root"],
                          env=env, capture_output=True, text=True, timeout=300)


def kill_after(process: subprocess.Popen, cases_file: Path, cases: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if cases_file.exists() and len(cases_file.read_text().splitlines()) >= cases:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be killed: " + process.stderr.read()
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def test_an_interrupted_run_is_incomplete_until_resumed_with_its_own_inputs(small_project, openai_server,
                                                                           monkeypatch):
    from typer.testing import CliRunner

    from evaluators.cli import app
    from evaluators.cli.release import EXIT_INCOMPLETE

    basic = small_project["scenarios"] / "basic.yaml"  # one safety scenario: only the interruption is missing
    basic.write_text(basic.read_text().replace("    title: Greeting\n", "    title: Greeting\n    safety: true\n"))
    server = openai_server(latency_s=0.4)
    run_dir = small_project["runs"] / "stopped"
    process = start_run(small_project, server.base_url, "--output", str(small_project["runs"]), "--run-id", "stopped")
    kill_after(process, run_dir / "cases.jsonl", 2)
    finished = len(RunStore.open(run_dir).finished_ids())

    monkeypatch.chdir(small_project["root"])  # the paths printed must work from here
    result = CliRunner().invoke(app, ["decide", "runs/stopped"])
    out = " ".join(result.output.split())
    assert result.exit_code == EXIT_INCOMPLETE, out
    assert "Deploy to production" not in out and "v2: Incomplete:" in out
    assert "the run was interrupted" in out and "Finish the run: penpal-eval run --resume runs/stopped" in out
    decisions = json.loads(CliRunner().invoke(app, ["decide", "runs/stopped", "--json"]).stdout)
    coverage = {item["prompt_version"]: item["coverage"] for item in decisions}
    assert sum(item["scored"] for item in coverage.values()) == finished < 6
    assert all(item["scenarios"] == 3 and item["safety"] == 1 for item in coverage.values())

    # A conflicting input flag is refused, naming it; the run is left as it was.
    conflict = resume_run(small_project, server.base_url, run_dir, "-p", "v1")
    assert conflict.returncode == 2
    assert "--prompt v1 (the run has v1, v2)" in " ".join(conflict.stderr.split())

    # Custom prompt and scenario directories, and no flag repeated: the manifest has them all.
    resumed = resume_run(small_project, server.base_url, run_dir)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{finished} already finished" in resumed.stderr
    decisions = json.loads(CliRunner().invoke(app, ["decide", "runs/stopped", "--json"]).stdout)
    assert all(item["coverage"]["scored"] == 3 and item["coverage"]["safety_scored"] == 1 for item in decisions)
    assert "incomplete" not in {item["outcome"] for item in decisions}
