"""The evaluation run end to end: responder -> scoring -> run store, with failures and resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.core.names import SCORE_COLUMNS
from evaluators.pipeline import run_evaluation
from evaluators.run.config import RunConfig, RunConfigError
from evaluators.scoring.api import default_evaluator
from evaluators.store.run_store import RunStore
from tests.servers.openai_compat import MALFORMED_JSON, OK, hang, rate_limited, server_error
from tests.support.runs import SECRET, config, conversation, use_server, version_of

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("no_api_configured")


# --- replay ------------------------------------------------------------------------------------------
def test_replay_run_stores_every_case_with_scores_summary_and_exports(small_project):
    report = run_evaluation(config(small_project, responder="replay"), default_evaluator())
    store = report.store
    cases = store.read_cases()
    assert sorted(case.case_id for case in cases) == sorted(
        f"{v}/{s}" for v in ("v1", "v2") for s in ("basic-hello", "basic-joke", "cont-sister"))
    assert all(case.status == "ok" and case.responder == "replay" for case in cases)
    sister = next(case for case in cases if case.case_id == "v2/cont-sister")
    assert [turn.index for turn in sister.turns] == [0, 1, 2]
    assert sister.turns[2].expectations[0].passed  # recalls Maya
    assert set(sister.scores) == set(SCORE_COLUMNS)
    # The case score is the mean over its turns.
    assert sister.scores["overall_quality"] == pytest.approx(
        sum(turn.heuristics["overall_quality"] for turn in sister.turns) / 3, abs=1e-4)
    lines = (store.directory / "cases.jsonl").read_text().splitlines()
    assert len(lines) == 6

    manifest = store.manifest
    assert manifest["config"]["responder"] == "replay" and manifest["sample_data"] is True
    assert set(manifest["hashes"]["prompts"]) == {"v1", "v2"}
    assert manifest["hashes"]["rubric"] == default_evaluator().rubric.content_hash
    assert "commit" in manifest["git"]

    summary = json.loads((store.directory / "summary.json").read_text())
    assert summary["versions"]["v2"]["scored"] == 3 and summary["versions"]["v2"]["failed"] == 0
    v2_mean = summary["versions"]["v2"]["means"]["overall_quality"]
    expected = sum(c.scores["overall_quality"] for c in cases if c.prompt_version == "v2") / 3
    assert v2_mean == pytest.approx(expected, abs=1e-4)

    for name, rows in (("cases", 6), ("turns", 10)):
        csv = pd.read_csv(store.directory / f"{name}.csv")
        parquet = pd.read_parquet(store.directory / f"{name}.parquet")
        assert len(csv) == len(parquet) == rows
    frame = pd.read_parquet(store.directory / "cases.parquet")
    assert frame.set_index("case_id").loc["v2/cont-sister", "overall_quality"] == pytest.approx(
        sister.scores["overall_quality"])


def test_auto_replays_with_a_notice_when_no_api_is_configured(small_project):
    result = runner.invoke(app, ["run", "--prompts-dir", str(small_project["prompts"]),
                                 "--scenarios-dir", str(small_project["scenarios"]),
                                 "--output", str(small_project["runs"])])
    # The shipped recordings do not cover the test prompts, so every case fails with the reason.
    assert "notice: No OPENAI_API_KEY or OPENAI_BASE_URL is set" in " ".join(result.stderr.split())
    assert result.exit_code == 1
    assert "no recorded replies for prompt version 'v1'" in result.stderr


def test_openai_responder_without_configuration_is_a_clear_error(small_project):
    result = runner.invoke(app, ["run", "--responder", "openai", "--prompts-dir", str(small_project["prompts"]),
                                 "--scenarios-dir", str(small_project["scenarios"])])
    assert result.exit_code == 2
    assert "needs OPENAI_API_KEY" in result.stderr


# --- live API through the local server ---------------------------------------------------------------
def test_multi_turn_conversations_are_played_in_order_with_the_history(small_project, openai_server, monkeypatch):
    server = openai_server()
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", prompt_versions=["v2"]), default_evaluator())
    sister = next(case for case in report.outcome.cases if case.scenario_id == "cont-sister")
    third_call = next(c for c in server.calls if c.messages[-1]["content"] == "What do you think she'd enjoy most?")
    roles = [m["role"] for m in third_call.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert third_call.messages[2]["content"] == sister.turns[0].reply
    assert third_call.messages[4]["content"] == sister.turns[1].reply
    assert "What you know about the user: name: Priya; age group: 18-30." in third_call.messages[0]["content"]
    assert sister.turns[2].reply.startswith("Reply 3")


def test_faulty_server_every_case_scored_or_failed_with_its_reason(small_project, openai_server, monkeypatch):
    def plan(call):
        version, first = conversation(call)
        if version == "v2" and first == "Can you tell me a joke?":
            return server_error(500)  # never recovers
        if version == "v1" and first == "Hello, how are you today?":
            return [rate_limited("0"), OK][min(call.attempt, 2) - 1]
        if call.messages[-1]["content"] == "We're going hiking on Saturday.":
            return [MALFORMED_JSON, hang(3), OK][min(call.attempt, 3) - 1]
        return OK

    server = openai_server(plan)
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", max_attempts=3, timeout_s=0.5),
                            default_evaluator())
    cases = {case.case_id: case for case in report.outcome.cases}
    assert len(cases) == 6
    failed = {cid for cid, case in cases.items() if case.status == "failed"}
    assert failed == {"v2/basic-joke"}
    assert cases["v2/basic-joke"].error.startswith("turn 1: HTTP 500")
    assert "gave up after 3 attempts" in cases["v2/basic-joke"].error
    assert cases["v2/basic-joke"].scores == {}
    assert cases["v1/basic-hello"].turns[0].attempts == 2
    assert all(case.scores for cid, case in cases.items() if cid not in failed)
    assert report.summaries["v2"]["failed"] == 1 and report.summaries["v2"]["scored"] == 2
    assert report.summaries["v2"]["means"]["overall_quality"] is not None  # failed cases do not enter means


def test_resume_retries_failed_cases_and_never_recalls_finished_ones(small_project, openai_server, monkeypatch):
    broken = {"on": True}

    def plan(call):
        if broken["on"] and conversation(call) == ("v1", "My sister Maya is visiting this weekend.") \
                and call.messages[-1]["content"] == "We're going hiking on Saturday.":
            return server_error(503)
        return OK

    server = openai_server(plan)
    use_server(monkeypatch, server)
    first = run_evaluation(config(small_project, responder="openai", max_attempts=2, use_cache=False),
                           default_evaluator())
    assert [c.case_id for c in first.outcome.cases if c.status == "failed"] == ["v1/cont-sister"]
    calls_before = len(server.calls)

    broken["on"] = False
    resumed = run_evaluation(config(small_project, responder="openai", use_cache=False,
                                    resume=first.store.directory), default_evaluator())
    new_calls = server.calls[calls_before:]
    assert {conversation(call) for call in new_calls} == {("v1", "My sister Maya is visiting this weekend.")}
    assert len(new_calls) == 3  # the failed conversation is played again, nothing else
    assert resumed.outcome.ran == 1 and resumed.outcome.skipped == 5
    assert all(case.status == "ok" for case in resumed.outcome.cases)
    assert len(resumed.store.read_cases()) == 6


def test_a_second_run_is_served_from_the_cache(small_project, openai_server, monkeypatch):
    server = openai_server()
    use_server(monkeypatch, server)
    run_evaluation(config(small_project, responder="openai"), default_evaluator())
    calls = len(server.calls)
    again = run_evaluation(config(small_project, responder="openai"), default_evaluator())
    assert len(server.calls) == calls == 10
    assert again.summaries["v1"]["api_calls"] == 0 and again.summaries["v1"]["cached_calls"] == 5
    assert again.summaries["v1"]["prompt_tokens"] == 0


def test_tokens_and_cost_are_counted_per_version(small_project, openai_server, monkeypatch):
    server = openai_server()
    use_server(monkeypatch, server)
    from evaluators.inputs.pricing import Price
    report = run_evaluation(config(small_project, responder="openai", use_cache=False,
                                   prices={"test-model": Price(1.0, 2.0)}), default_evaluator())
    for version in ("v1", "v2"):
        calls = [c for c in server.calls if version_of(c) == version]
        summary = report.summaries[version]
        assert summary["api_calls"] == len(calls) == 5
        expected_prompt = sum(sum(len(str(m["content"])) for m in c.messages) // 4 for c in calls)
        assert summary["prompt_tokens"] == expected_prompt
        assert summary["cost_usd"] == pytest.approx(
            (summary["prompt_tokens"] * 1.0 + summary["completion_tokens"] * 2.0) / 1e6)


def test_secrets_never_reach_the_store_or_the_terminal(small_project, openai_server, monkeypatch):
    server = openai_server(lambda call: server_error(400) if call.attempt == 1 and "joke" in
                           call.messages[-1]["content"] else OK)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url.replace("http://", f"http://user:{SECRET}@"))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = runner.invoke(app, ["run", "--prompts-dir", str(small_project["prompts"]),
                                 "--scenarios-dir", str(small_project["scenarios"]),
                                 "--output", str(small_project["runs"]), "--cache-dir", str(small_project["cache"])])
    assert result.exit_code == 1, result.output  # the 400 is not retried: that case failed
    assert SECRET not in result.stdout + result.stderr
    for path in small_project["runs"].rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_resume_refuses_when_the_prompts_changed(small_project):
    first = run_evaluation(config(small_project, responder="replay"), default_evaluator())
    prompt = small_project["prompts"] / "v2.md"
    prompt.write_text(prompt.read_text() + "\nBe brief.\n")
    with pytest.raises(RunConfigError, match="prompt version v2 changed"):
        run_evaluation(config(small_project, responder="replay", resume=first.store.directory), default_evaluator())


def test_a_torn_last_line_is_ignored_and_that_case_runs_again(small_project):
    first = run_evaluation(config(small_project, responder="replay"), default_evaluator())
    path = first.store.directory / "cases.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    store = RunStore.open(first.store.directory)
    assert len(store.read_cases()) == 5
    resumed = run_evaluation(config(small_project, responder="replay", resume=first.store.directory),
                             default_evaluator())
    assert resumed.outcome.ran == 1 and len(resumed.outcome.cases) == 6


def test_a_reply_in_another_language_is_scored_as_the_wrong_language_and_the_case_completes(small_project):
    """A Spanish reply to an English user failed the turn: flagged and capped, never averaged as English."""
    recorded = small_project["recorded"] / "mixed.yaml"
    spanish = "¡Ánimo! Mañana será otro día, ya verás que todo se arregla."
    recorded.write_text(recorded.read_text(encoding="utf-8").replace(
        "\"Have a great hike!\"", json.dumps(spanish, ensure_ascii=False)), encoding="utf-8")
    store = run_evaluation(config(small_project, responder="replay"), default_evaluator()).store
    cases = {case.case_id: case for case in store.read_cases()}
    sister = cases["v1/cont-sister"]
    assert sister.status == "ok" and sister.flags == ["wrong_language"]
    flag = sister.turns[1].heuristics["flags"][0]
    assert flag["name"] == "wrong_language" and flag["text"].startswith("the reply reads as Spanish")
    assert sister.turns[1].reply == spanish and sister.turns[1].heuristics["overall_quality"] <= 0.1
    assert sister.scores["overall_quality"] <= default_evaluator().rubric.flagged_overall_cap  # the case is capped
    assert all(case.status == "ok" for case in cases.values())


def test_a_user_turn_in_another_language_fails_its_case_with_the_reason_and_no_scores(small_project):
    """The user's words cannot be read: no English verdict passed off as a score, the case fails with why."""
    scenarios = small_project["scenarios"] / "continuity.yaml"
    scenarios.write_text(scenarios.read_text(encoding="utf-8").replace(
        "We're going hiking on Saturday.", "Vamos a hacer senderismo el sábado por la montaña."), encoding="utf-8")
    store = run_evaluation(config(small_project, responder="replay"), default_evaluator()).store
    cases = {case.case_id: case for case in store.read_cases()}
    sister = cases["v1/cont-sister"]
    assert sister.status == "failed" and sister.scores == {}
    assert sister.error.startswith("turn 2 not scored: unsupported_language: the user message reads as Spanish")
    assert sister.turns[1].heuristics is None and sister.turns[0].heuristics is not None
    summary = json.loads((store.directory / "summary.json").read_text())
    assert summary["versions"]["v1"]["scored"] == 2 and summary["versions"]["v1"]["failed"] == 1


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_the_printed_run_store_path_works_when_pasted_from_the_current_directory(small_project, capsys, monkeypatch,
                                                                               where):
    from evaluators.cli.run import run_with_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    here = small_project["root"] if where == "inside" else small_project["root"] / "elsewhere"
    here.mkdir(exist_ok=True)
    monkeypatch.chdir(here)
    config = RunConfig(prompts_dir=small_project["prompts"], scenarios_dir=small_project["scenarios"],
                       recorded_dir=small_project["recorded"], output_dir=small_project["runs"], run_id="pasted",
                       responder="replay", use_cache=False)
    assert run_with_config(config) == 0
    err = " ".join(capsys.readouterr().err.split())
    printed = Path(re.search(r"run store: (\S+) \(", err).group(1))
    assert (here / printed / "manifest.json").is_file()  # works from here as printed
    assert printed == (Path("runs/pasted") if where == "inside" else small_project["runs"].resolve() / "pasted")


def test_a_project_path_is_printed_whole_from_another_directory(tmp_path, monkeypatch):
    from evaluators.core.locations import PROJECT_ROOT, display_path

    monkeypatch.chdir(tmp_path)
    run_dir = PROJECT_ROOT / "runs" / "20261122-101500-ab12"
    assert display_path(run_dir) == str(run_dir)  # not "runs/…", which fails from here
    monkeypatch.chdir(PROJECT_ROOT)
    assert display_path(run_dir) == "runs/20261122-101500-ab12"


def test_resume_names_every_flag_that_disagrees_with_the_run_and_accepts_ones_that_agree(small_project,
                                                                                         monkeypatch):
    from evaluators.cli.run import run_with_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = RunConfig(prompts_dir=small_project["prompts"], scenarios_dir=small_project["scenarios"],
                       recorded_dir=small_project["recorded"], output_dir=small_project["runs"], run_id="kept",
                       responder="replay", use_cache=False, families=["basic", "continuity"])
    assert run_with_config(config) == 0
    run_dir = str(small_project["runs"] / "kept")
    other = small_project["root"] / "other-scenarios"
    other.mkdir()
    refused = CliRunner().invoke(app, ["run", "--resume", run_dir, "-f", "basic", "--scenarios-dir", str(other),
                                       "--responder", "openai"])
    message = " ".join(refused.output.split())
    assert refused.exit_code == 2, refused.output
    assert "--family basic (the run has basic, continuity)" in message
    assert "--scenarios-dir" in message and "--responder openai (the run has replay)" in message
    agreed = CliRunner().invoke(app, ["run", "--resume", run_dir, "--prompts-dir", str(small_project["prompts"]),
                                      "-f", "continuity", "-f", "basic", "-p", "v1", "-p", "v2"])
    assert agreed.exit_code == 0, agreed.output
    assert "0 run now, 6 already finished" in " ".join(agreed.output.split())


# --- what the run says when something is off ---------------------------------------------------------
def test_an_unknown_scenario_id_lists_the_known_ones_and_the_one_meant(small_project):
    result = runner.invoke(app, ["run", "-s", "nope", "-s", "basic-helo", "--prompts-dir", str(small_project["prompts"]),
                                 "--scenarios-dir", str(small_project["scenarios"]),
                                 "--output", str(small_project["runs"])])
    assert result.exit_code == 2
    text = " ".join(result.stderr.split())
    assert "unknown scenario id(s): nope, basic-helo (did you mean 'basic-hello'?)" in text
    assert "known: basic-hello, basic-joke, cont-sister" in text


def test_timeouts_behind_a_local_server_hint_at_the_timeout_or_one_call_at_a_time(small_project, openai_server,
                                                                                  monkeypatch):
    server = openai_server(lambda call: hang(1.0) if "joke" in call.messages[-1]["content"] else OK)
    use_server(monkeypatch, server)
    arguments = ["run", "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
                 str(small_project["scenarios"]), "--output", str(small_project["runs"]), "--no-cache",
                 "--timeout", "0.3", "--max-attempts", "1", "--no-langfuse"]
    result = runner.invoke(app, [*arguments, "-c", "4"])
    assert result.exit_code == 1
    text = " ".join(result.stderr.split())
    assert "hint: calls timed out against a server on this machine (127.0.0.1) at -c 4" in text
    assert "raise --timeout, or run with -c 1" in text
    alone = runner.invoke(app, [*arguments, "-c", "1"])
    assert alone.exit_code == 1 and "hint:" not in alone.stderr  # one at a time: no queue to blame


def test_unreported_token_usage_is_unknown_not_zero(small_project, openai_server, monkeypatch):
    from evaluators.inputs.pricing import Price
    from evaluators.report.run_tables import versions_table

    server = openai_server(stream_usage=False)
    use_server(monkeypatch, server)
    report = run_evaluation(config(small_project, responder="openai", use_cache=False,
                                   prices={"test-model": Price(1.0, 2.0)}), default_evaluator())
    summary = report.summaries["v1"]
    assert summary["usage_unknown_calls"] == summary["api_calls"] == 5 and summary["cost_usd"] is None
    from rich.console import Console
    console = Console(width=120, record=True, force_terminal=False)
    console.print(versions_table(report.summaries, default_evaluator().rubric))
    row = next(line for line in console.export_text().splitlines() if line.startswith("v1 ") and "unknown" in line)
    assert row.split()[-2:] == ["unknown", "unknown"] and "$0.0000" not in console.export_text()


def test_versions_come_in_one_order_whichever_case_finished_first():
    from evaluators.release.rules import release_report
    from evaluators.release.summaries import version_summaries
    from tests.support.release_factory import version_cases

    cases = version_cases("v10-late", [0.8] * 4) + version_cases("v2-warm", [0.8] * 4) + version_cases("v1", [0.8] * 4)
    orders = []
    for shuffled in (cases, cases[::-1], cases[4:] + cases[:4]):
        report = release_report(shuffled, default_evaluator().rubric)
        orders.append(([d.prompt_version for d in report.decisions], list(version_summaries(shuffled))))
    assert all(order == (["v1", "v2-warm", "v10-late"],) * 2 for order in orders)
