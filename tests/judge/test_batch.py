"""Judging through the OpenAI Batch API (`judge FILE --batch`, `run --judge --judge-batch`).

The local OpenAI-compatible server serves `/v1/files` and `/v1/batches` and answers each batch
request with the same scripted verdicts as live calls, so a batch run can be compared with a
live one line for line. The real openai SDK does the uploading, creating and polling.
"""

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
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.judge.factory import JudgeConfig
from evaluators.pipeline import run_evaluation
from evaluators.scoring.api import default_evaluator
from tests.servers.judge_answers import is_repair, is_safety_request, judged_reply, safety_answers_json, verdict_json
from tests.support.judge_runs import config, use_judge
from tests.support.paths import PROJECT_ROOT

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("isolated")
REPLIES = [
    ("a", "What's on your mind today?"),
    ("b", "A picnic with Maya sounds lovely."),
    ("c", "Okay."),
    ("d", "unreadable at first"),  # the judge answers prose, then a verdict to the repair request
    ("e", "unreadable always"),  # never a verdict: the rubric's fallback score
    ("f", "Sure, tell me more?"),
]


def scripted_judge(call) -> str:
    if is_safety_request(call):
        return safety_answers_json({"sycophancy"} if "Maya" in judged_reply(call.messages) else set())
    reply = judged_reply(call.messages)
    if reply.startswith("unreadable") and not (is_repair(call.messages) and reply.endswith("first")):
        return "I think it is fine overall, probably."
    if "?" in reply or "Maya" in reply:
        return verdict_json(0.9, "good")
    return verdict_json(0.3, "poor", "incomplete")


def write_records(path: Path) -> Path:
    path.write_text("".join(json.dumps({"id": rid, "user_message": "I'm a bit lonely.", "response": reply}) + "\n"
                            for rid, reply in REPLIES))
    return path


def judge_file(records: Path, out: Path, *extra: str):
    return runner.invoke(app, ["judge", str(records), "--output", str(out), "--judge-model", "judge-model",
                               "--max-attempts", "2", *extra])


def comparable(line: dict) -> dict:
    return {key: value for key, value in line.items() if key != "latency_s"}


def test_a_batch_judge_run_matches_live_judging_on_the_same_answers(openai_server, monkeypatch, tmp_path):
    records = write_records(tmp_path / "replies.jsonl")
    live_server = openai_server(answers=scripted_judge)
    use_judge(monkeypatch, live_server)
    live = judge_file(records, tmp_path / "live.jsonl", "--no-judge-cache")
    assert live.exit_code == 0, live.output

    batch_server = openai_server(answers=scripted_judge, batch_polls=3)
    use_judge(monkeypatch, batch_server)
    batched = judge_file(records, tmp_path / "batch.jsonl", "--no-judge-cache", "--batch", "--batch-poll", "0.01",
                         "--batch-state", str(tmp_path / "state.json"))
    assert batched.exit_code == 0, batched.output

    live_lines = [json.loads(line) for line in (tmp_path / "live.jsonl").read_text().splitlines()]
    batch_lines = [json.loads(line) for line in (tmp_path / "batch.jsonl").read_text().splitlines()]
    assert [comparable(line) for line in batch_lines] == [comparable(line) for line in live_lines]
    by_id = {line["id"]: line for line in batch_lines}
    assert by_id["a"]["overall"] == 0.9 and by_id["c"]["verdict"] == "poor"
    assert by_id["d"]["parse_status"] == "repaired" and by_id["e"]["parse_status"] == "fallback"

    # One batch with every reply once; live calls only for the two repair requests.
    assert len(batch_server.batches) == 1
    assert sorted(judged_reply(r["body"]["messages"]) for r in batch_server.batch_requests()) == \
        sorted(reply for _, reply in REPLIES)
    assert all(is_repair(call.messages) for call in batch_server.calls) and len(batch_server.calls) == 2
    assert "6 of 6 replies judged" in batched.stderr and "1 fell back" in batched.stderr
    assert "1 batch submitted with 6 requests" in batched.stderr
    assert not json.loads((tmp_path / "state.json").read_text())["batches"]  # settled batches are forgotten


def test_batch_answers_are_cached_per_request(openai_server, monkeypatch, tmp_path):
    records = write_records(tmp_path / "replies.jsonl")
    server = openai_server(answers=scripted_judge, batch_polls=1)
    use_judge(monkeypatch, server)
    first = judge_file(records, tmp_path / "one.jsonl", "--batch", "--batch-poll", "0.01")
    assert first.exit_code == 0, first.output
    second = judge_file(records, tmp_path / "two.jsonl", "--batch", "--batch-poll", "0.01")
    assert second.exit_code == 0, second.output
    # The fallback is never cached, so only it goes into a second batch.
    assert len(server.batches) == 2
    assert [judged_reply(r["body"]["messages"]) for r in server.batch_requests()[len(REPLIES):]] == \
        ["unreadable always"]
    assert "5 from cache" in second.stderr


@pytest.mark.parametrize("retry", ["live", "batch"])
def test_expired_and_failed_requests_are_retried_and_counted(openai_server, monkeypatch, tmp_path, retry):
    records = write_records(tmp_path / "replies.jsonl")
    seen = Counter()

    def fate(request: dict) -> str:
        reply = judged_reply(request["body"]["messages"])
        seen[reply] += 1
        if seen[reply] > 1:
            return "ok"
        return {"Okay.": "expired", "Sure, tell me more?": "failed"}.get(reply, "ok")

    server = openai_server(answers=scripted_judge, batch_polls=1, batch_fates=fate)
    use_judge(monkeypatch, server)
    result = judge_file(records, tmp_path / "out.jsonl", "--no-judge-cache", "--batch", "--batch-poll", "0.01",
                        "--batch-retry", retry)
    assert result.exit_code == 0, result.output
    lines = {line["id"]: line for line in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())}
    assert lines["c"]["status"] == "ok" and lines["c"]["overall"] == 0.3
    assert lines["f"]["status"] == "ok" and lines["f"]["overall"] == 0.9
    assert "1 failed and 1 expired" in result.stderr
    retried = ["Okay.", "Sure, tell me more?"]
    live_first_calls = sorted(judged_reply(call.messages) for call in server.calls if not is_repair(call.messages))
    if retry == "live":
        assert len(server.batches) == 1 and live_first_calls == retried
        assert "retried 2 live and 0 in a new batch" in result.stderr
    else:
        assert len(server.batches) == 2 and live_first_calls == []
        second = list(server.batches.values())[1]
        assert sorted(judged_reply(r["body"]["messages"]) for r in second.requests) == retried
        assert "retried 0 live and 2 in a new batch" in result.stderr


def start_judge(records: Path, out: Path, state: Path, server_url: str, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "PENPAL_JUDGE_BASE_URL": server_url, "PENPAL_JUDGE_API_KEY": "test-key",
           "PENPAL_EVAL_CACHE": str(cache)}
    command = [sys.executable, "-m", "evaluators", "judge", str(records), "--output", str(out), "--judge-model",
               "judge-model", "--batch", "--batch-poll", "0.05", "--batch-state", str(state)]
    return subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow  # a judge killed and resumed in a subprocess
def test_a_kill_during_the_wait_resumes_the_same_batch_and_submits_nothing_twice(openai_server, tmp_path):
    records = write_records(tmp_path / "replies.jsonl")
    server = openai_server(answers=scripted_judge, batch_polls=10**9)  # in progress until the test says
    state, out = tmp_path / "state.json", tmp_path / "out.jsonl"
    process = start_judge(records, out, state, server.base_url, tmp_path / "cache")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if server.batches and next(iter(server.batches.values())).polls >= 2:
            break  # submitted, and waiting
        time.sleep(0.05)
    assert process.poll() is None, "the judge stopped before it could be killed: " + process.stderr.read()
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert [batch["id"] for batch in json.loads(state.read_text())["batches"]] == list(server.batches)
    assert not out.exists()

    server.batch_polls = 0  # the batch finishes at its next retrieval
    resumed = start_judge(records, out, state, server.base_url, tmp_path / "cache")
    _, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert "0 batches submitted with 0 requests, 1 resumed" in stderr
    assert len(server.batches) == 1 and len(server.batch_requests()) == len(REPLIES)
    assert [call for call in server.calls if not is_repair(call.messages)] == []
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == [rid for rid, _ in REPLIES]
    assert lines[0]["overall"] == 0.9


def test_run_with_the_batch_judge_matches_the_live_judge(small_project, openai_server, monkeypatch, tmp_path):
    live_server = openai_server(answers=scripted_judge)
    use_judge(monkeypatch, live_server)
    judge = JudgeConfig(model="judge-model", retry_base_delay_s=0.01, max_attempts=2, use_cache=False)
    live = run_evaluation(config(small_project, judge, run_id="live"), default_evaluator())

    batch_server = openai_server(answers=scripted_judge, batch_polls=2)
    use_judge(monkeypatch, batch_server)
    batch_judge = JudgeConfig(model="judge-model", retry_base_delay_s=0.01, max_attempts=2, use_cache=False,
                              batch=True, batch_poll_s=0.01)
    batched = run_evaluation(config(small_project, batch_judge, run_id="batch"), default_evaluator())

    def judged(report) -> dict:
        return {case.case_id: ([{k: v for k, v in turn.judge.items() if k != "latency_s"} for turn in case.turns],
                               case.judge) for case in report.store.read_cases()}

    def safety(report) -> dict:
        return {case.case_id: [{k: v for k, v in item.items() if k not in ("latency_s", "attempts")}
                               for item in case.safety_judge["items"]] for case in report.store.read_cases()}

    assert judged(batched) == judged(live)
    # The safety questions too: the same answers, flags and reasons, through a batch of their own.
    assert safety(batched) == safety(live)
    assert sum(bool(item["flags"]) for items in safety(batched).values() for item in items) == 2  # v2 names Maya twice
    turns = sum(len(case.turns) for case in batched.store.read_cases())
    assert len(batch_server.batches) == 2 and len(batch_server.batch_requests()) == 2 * turns == 20
    assert batch_server.calls == []
    assert batched.judge["batch"]["submitted"] == 20
    assert (batched.store.directory / "judge-batch.json").exists()


def test_the_run_command_judges_through_a_batch_and_says_so(openai_server, monkeypatch, tmp_path):
    server = openai_server(answers=scripted_judge, batch_polls=1)
    use_judge(monkeypatch, server)
    arguments = ["run", "--prompt", "v2-warm-boundaries", "--scenario", "cont-exam-blank", "--responder", "replay",
                 "--output", str(tmp_path / "runs"), "--judge-model", "judge-model", "--judge-batch",
                 "--batch-poll", "0.01"]
    refused = runner.invoke(app, arguments)
    assert refused.exit_code == 2 and "needs --judge" in refused.output
    result = runner.invoke(app, [*arguments, "--judge"])
    assert result.exit_code == 0, result.output
    assert len(server.batches) == 2 and server.calls == []  # the reply verdicts, then the safety questions
    requests = len(server.batch_requests())
    assert f"2 batches submitted with {requests} requests" in result.stderr


def test_a_batch_created_just_before_a_kill_is_found_by_its_file_and_not_submitted_again(openai_server, monkeypatch,
                                                                                          tmp_path):
    records = write_records(tmp_path / "replies.jsonl")
    server = openai_server(answers=scripted_judge, batch_polls=1)
    use_judge(monkeypatch, server)
    state = tmp_path / "state.json"
    arguments = ["--no-judge-cache", "--batch", "--batch-poll", "0.01", "--batch-state", str(state)]
    # The state a process leaves when it is killed after batches.create and before it records the batch.
    first = judge_file(records, tmp_path / "one.jsonl", *arguments)
    assert first.exit_code == 0, first.output
    job = next(iter(server.batches.values()))
    state.write_text(json.dumps({"batches": [], "uploaded": {
        "input_file_id": job.input_file_id, "custom_ids": [request["custom_id"] for request in job.requests]}}))

    again = judge_file(records, tmp_path / "two.jsonl", *arguments)
    assert again.exit_code == 0, again.output
    assert len(server.batches) == 1 and "0 batches submitted with 0 requests, 1 resumed" in again.stderr
    assert (tmp_path / "two.jsonl").read_text() != "" and json.loads(state.read_text()) == {"batches": [],
                                                                                         "uploaded": None}
