"""Kill a run midway (SIGKILL, no cleanup) and resume it: finished cases are never called again."""

from __future__ import annotations

import json
import os
import re
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
    # Complete now: only the safety gate may hold a shipping outcome back (no judge read the replies).
    assert all(item["outcome"] != "incomplete" or item["refused"] for item in decisions), decisions


# --- Langfuse delivery under kills -----------------------------------------------------------------------
def langfuse_env(project: dict[str, Path], server, **extra: str) -> dict[str, str]:
    return {**os.environ, "LANGFUSE_PUBLIC_KEY": server.public_key, "LANGFUSE_SECRET_KEY": server.secret_key,
            "LANGFUSE_BASE_URL": server.base_url, "PENPAL_LANGFUSE_TIMEOUT": "5", "PENPAL_LANGFUSE_FLUSH_TIMEOUT": "30",
            "PENPAL_EVAL_CACHE": str(project["root"] / "penpal-cache"), **extra}


def ingestion(request) -> bool:
    return request.method == "POST" and request.path.endswith(("/scores", "/otel/v1/traces"))


def push(project: dict[str, Path], server, run_dir: Path, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "evaluators", "push", str(run_dir)], cwd=project["root"],
                            env=langfuse_env(project, server, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_kill_9_during_push_then_push_again_resends_at_most_one_batch(small_project, langfuse_server):
    from evaluators.integrations.langfuse.ids import turn_trace_id
    from evaluators.pipeline import run_evaluation
    from evaluators.run.config import RunConfig
    from evaluators.scoring.api import default_evaluator
    from tests.servers.langfuse import OK, delay

    store = run_evaluation(RunConfig(prompts_dir=small_project["prompts"], scenarios_dir=small_project["scenarios"],
                                     recorded_dir=small_project["recorded"], output_dir=small_project["runs"],
                                     run_id="pushed", responder="replay", use_cache=False),
                           default_evaluator()).store
    server = langfuse_server(secret_key="sk-lf-kill-test")
    server.faults = lambda request: delay(0.3) if ingestion(request) else OK
    # Spans go in batches of 4 (LANGFUSE_FLUSH_AT), so the push is many batches long; kill it in the middle.
    first = push(small_project, server, store.directory, LANGFUSE_FLUSH_AT="4")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and first.poll() is None and len(server.received_batches) < 5:
        time.sleep(0.02)
    assert first.poll() is None, "the push ended before it could be killed: " + first.stderr.read()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    before = server.received_batches
    received = {item for _, ids in before for item in ids}
    assert len(before) >= 5 and received

    server.faults = lambda request: OK
    second = push(small_project, server, store.directory, LANGFUSE_FLUSH_AT="4")
    _, stderr = second.communicate(timeout=300)
    assert second.returncode == 0, stderr
    # Counted in items, not batches: the second push groups what is left into batches of its
    # own, so one undelivered batch's items may straddle two of its batches.
    resent = {item for _, ids in server.received_batches[len(before):] for item in ids} & received
    one_batch = max(len(ids) for _, ids in before)
    assert len(resent) <= one_batch, f"{len(resent)} items sent again (one batch holds {one_batch}): {sorted(resent)}"
    # And nothing is missing: every turn's trace and scores arrived.
    run_id = store.manifest["run_id"]
    traces = {turn_trace_id(run_id, case.prompt_version, case.scenario_id, turn.index)
              for case in store.read_cases() for turn in case.turns}
    assert set(server.traces) == traces
    assert {score["traceId"] for score in server.scores.values() if score.get("traceId")} == traces


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_run_stopped_by_a_signal_is_resumed_with_every_score_delivered(small_project, openai_server, langfuse_server,
                                                                        stop):
    """SIGTERM (a cancelled CI job) is an interruption like Ctrl-C; after SIGKILL nothing could be
    delivered at all. Either way the resumed run delivers every score of the run."""
    from evaluators.integrations.langfuse.ids import turn_trace_id

    server = openai_server(latency_s=0.4)
    langfuse = langfuse_server(secret_key=f"sk-lf-{stop.name.lower()}-test")
    run_dir = small_project["runs"] / "stopped"
    env = {**langfuse_env(small_project, langfuse), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key"}
    command = [sys.executable, str(SCRIPT), "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
               str(small_project["scenarios"]), "--no-cache", "--concurrency", "1", "--output",
               str(small_project["runs"]), "--run-id", "stopped"]
    process = subprocess.Popen(command, cwd=small_project["root"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    cases_file = run_dir / "cases.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if cases_file.exists() and len(cases_file.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be stopped: " + process.stderr.read()
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=120)
    finished = RunStore.open(run_dir).finished_ids()
    assert 2 <= len(finished) < 6
    if stop == signal.SIGTERM:
        assert process.returncode == 130, stderr  # an interruption, as with Ctrl-C
        said = " ".join(stderr.split())
        assert "interrupted: finished cases are kept" in said and "--resume" in said
        assert re.search(r"langfuse \S+: \d+ of \d+ spans? \(\d+ traces?\) and \d+ of \d+ scores? delivered", said)
        assert json.loads((run_dir / "langfuse.json").read_text())["scores"]
    else:
        assert process.returncode == -signal.SIGKILL
        assert not any(score.get("traceId") for score in langfuse.scores.values())  # no time to deliver any

    resumed = subprocess.run([sys.executable, str(SCRIPT), "--resume", str(run_dir)], cwd=small_project["root"],
                             env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    said = " ".join(resumed.stderr.split())
    delivered = re.search(r"and (\d+) of (\d+) scores? delivered", said)
    assert delivered and delivered.group(1) == delivered.group(2), said
    assert "NOT DELIVERED" not in said
    store = RunStore.open(run_dir)
    traces = {turn_trace_id("stopped", case.prompt_version, case.scenario_id, turn.index)
              for case in store.read_cases() for turn in case.turns}
    assert set(langfuse.traces) == traces
    assert {score["traceId"] for score in langfuse.scores.values() if score.get("traceId")} == traces
    # Nothing waits for a push.
    again = subprocess.run([sys.executable, "-m", "evaluators", "push", str(run_dir)], cwd=small_project["root"],
                           env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert re.search(r"0 of 0 spans \(0 traces\) and 0 of 0 scores delivered", " ".join(again.stderr.split()))
