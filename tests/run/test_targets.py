"""The companion as a target: an `http` backend with its own memory (tests/servers/companion_http.py)
and `python` callables (tests/support/companions.py), through the same runner as `openai`:
retries, failures recorded with the run going on, resume, cache, latency and the store."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.inputs.targets import TargetError, load_target_file, resolve_target
from evaluators.pipeline import run_evaluation
from evaluators.run.config import RunConfigError
from evaluators.scoring.api import default_evaluator
from evaluators.store.run_store import RunStore
from tests.servers.companion_http import CompanionHttpServer
from tests.support.paths import PROJECT_ROOT
from tests.support.runs import config

pytestmark = pytest.mark.usefixtures("no_api_configured")
TOKEN = "tok-DO-NOT-LEAK-7171"
CONTINUITY = PROJECT_ROOT / "scenarios"


@pytest.fixture
def companion_server():
    started: list[CompanionHttpServer] = []

    def start(**options) -> CompanionHttpServer:
        server = CompanionHttpServer(**options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def http_target(directory, url: str, **extra) -> str:
    lines = [
        "kind: http", f"url: {url}",
        "request: {session: '{{conversation_id}}', turn: '{{turn}}', text: '{{message}}'}",
        "reply_path: data.reply",
        "headers: {Authorization: 'Bearer ${COMPANION_TOKEN}'}",
        *(f"{key}: {value}" for key, value in extra.items()),
    ]
    path = directory / "companion.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def recall_outcomes(cases, *, earlier_sessions: bool = True) -> list[bool]:
    """Whether each `recalls_any` check passed. `earlier_sessions=False` leaves out the return-user
    scenarios (cont-return-*), whose earlier session the backend never had."""
    return [outcome.passed for case in cases for turn in case.turns for outcome in turn.expectations
            if outcome.label.startswith("recalls_any")
            and (earlier_sessions or not case.scenario_id.startswith("cont-return-"))]


def continuity_config(project, **overrides):
    return config(project, scenarios_dir=CONTINUITY, families=["continuity"], prompt_versions=["v1"],
                  concurrency=4, **overrides)


# --- acceptance 1: the continuity scenarios test the backend's own memory ---------------------------
@pytest.mark.parametrize("memory", [True, False])
def test_the_continuity_scenarios_test_an_http_backends_own_memory(small_project, companion_server, monkeypatch,
                                                                   memory):
    monkeypatch.setenv("COMPANION_TOKEN", TOKEN)
    server = companion_server(memory=memory)
    target = http_target(small_project["root"], server.url)
    report = run_evaluation(continuity_config(small_project, target=target), default_evaluator())
    cases = report.store.read_cases()
    assert len(cases) == 10 and all(case.status == "ok" and case.responder == "http" for case in cases)
    recalls = recall_outcomes(cases, earlier_sessions=False)
    assert len(recalls) >= 15
    # Only the new message is sent: recall can come from nowhere but the backend's memory.
    assert all(recalls) if memory else not any(recalls)
    if not memory:
        assert not any(recall_outcomes(cases))
    # One session per conversation, carrying the run id, told each turn in order.
    run_id = report.store.manifest["run_id"]
    assert len(server.turns) == 10 and all(session.startswith(f"{run_id}/v1/cont-") for session in server.turns)
    assert all(turns == list(range(len(turns))) for turns in server.turns.values())
    assert {call["authorization"] for call in server.calls} == {f"Bearer {TOKEN}"}
    turn = cases[0].turns[0]
    assert turn.latency_s is not None and turn.latency_s > 0 and turn.time_to_first_token_s == turn.latency_s
    manifest = report.store.manifest["config"]
    assert manifest["responder"] == "http" and manifest["targets"]["v1"]["headers"] == {
        "Authorization": "Bearer ${COMPANION_TOKEN}"}
    # The header's value is a secret: nowhere in the run directory.
    for path in report.store.directory.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_a_python_target_with_memory_passes_recall_and_a_forgetful_one_fails_it(small_project):
    remembering = run_evaluation(continuity_config(small_project, target="python:tests.support.companions:remembering",
                                                   run_id="remembering"), default_evaluator())
    cases = remembering.store.read_cases()
    assert all(case.status == "ok" and case.responder == "python" for case in cases)
    assert all(recall_outcomes(cases))

    target = small_project["root"] / "forgetful.yaml"
    target.write_text("kind: python\ncallable: tests.support.companions:Forgetful.reply\ninit: {greeting: Hey}\n")
    forgetful = run_evaluation(continuity_config(small_project, target=str(target), run_id="forgetful"),
                               default_evaluator())
    cases = forgetful.store.read_cases()
    assert all(case.status == "ok" for case in cases)
    assert all(turn.reply.startswith("Hey! ") for case in cases for turn in case.turns)  # init reached the class
    assert not any(recall_outcomes(cases))


# --- failures, retries and resume behave as with openai ---------------------------------------------
def test_an_http_500_is_retried_and_an_endpoint_that_keeps_failing_is_recorded_while_the_rest_complete(
        small_project, companion_server, monkeypatch):
    monkeypatch.setenv("COMPANION_TOKEN", TOKEN)
    broken = {"on": True}

    def faults(number: int, body: dict) -> int | None:
        if number == 1:
            return 500
        if broken["on"] and body["session"].endswith("/basic-joke"):
            return 503
        return None

    server = companion_server(faults=faults)
    target = http_target(small_project["root"], server.url)
    report = run_evaluation(config(small_project, target=target, max_attempts=3, concurrency=1, run_id="flaky"),
                            default_evaluator())
    by_id = {case.case_id: case for case in report.store.read_cases()}
    assert len(by_id) == 6
    failed = [case for case in by_id.values() if case.status == "failed"]
    assert sorted(case.case_id for case in failed) == ["v1/basic-joke", "v2/basic-joke"]
    assert all("HTTP 503" in case.error and "gave up after 3 attempts" in case.error for case in failed)
    assert all(case.status == "ok" for case in by_id.values() if case not in failed)
    first = next(case for case in by_id.values() if any(turn.attempts == 2 for turn in case.turns))
    assert first.status == "ok"  # the 500 on the very first call was retried
    assert sum(turn.attempts == 2 for case in by_id.values() for turn in case.turns) == 1

    # The backend recovers: resume plays the failed cases only, in the same conversations.
    broken["on"] = False
    calls_before = len(server.calls)
    resumed = run_evaluation(config(small_project, resume=report.store.directory, max_attempts=3),
                             default_evaluator())
    assert all(case.status == "ok" for case in resumed.store.read_cases())
    assert len(server.calls) - calls_before == 2  # one turn each for the two joke cases
    assert {call["body"]["session"] for call in server.calls[calls_before:]} == {"flaky/v1/basic-joke",
                                                                                 "flaky/v2/basic-joke"}


def test_a_backend_slower_than_the_timeout_is_retried_then_recorded_as_a_timeout(small_project, companion_server,
                                                                                 monkeypatch):
    monkeypatch.setenv("COMPANION_TOKEN", TOKEN)
    server = companion_server(latency_s=1.0)
    target = http_target(small_project["root"], server.url)
    report = run_evaluation(config(small_project, target=target, timeout_s=0.2, max_attempts=2, prompt_versions=["v1"],
                                   scenario_ids=["basic-hello"]), default_evaluator())
    [case] = report.store.read_cases()
    assert case.status == "failed"
    assert case.error == "turn 1: timeout: no answer within the per-call timeout (gave up after 2 attempts)"
    assert server.arrivals == 2


def test_a_raising_python_target_is_retried_then_recorded_with_its_reason(small_project):
    target = small_project["root"] / "flaky.yaml"
    target.write_text("kind: python\ncallable: tests.support.companions:Flaky.reply\n"
                      "init: {broken_scenario: cont-sister}\n")
    report = run_evaluation(config(small_project, target=str(target), max_attempts=2), default_evaluator())
    cases = {case.case_id: case for case in report.store.read_cases()}
    assert cases["v1/basic-hello"].status == "ok" and cases["v1/basic-hello"].turns[0].attempts == 2
    sister = cases["v1/cont-sister"]
    assert sister.status == "failed"
    assert "the python target raised RuntimeError: the companion backend is down" in sister.error
    assert "gave up after 2 attempts" in sister.error


def test_the_cache_key_holds_the_target_and_a_backend_with_memory_is_never_skipped(small_project, companion_server,
                                                                                   monkeypatch):
    # A python target without memory: a second run is served from the cache.
    spec = "python:tests.support.companions:remembering"
    run_evaluation(config(small_project, target=spec, run_id="one"), default_evaluator())
    again = run_evaluation(config(small_project, target=spec, run_id="two"), default_evaluator())
    assert all(turn.cached for case in again.store.read_cases() for turn in case.turns)
    # Another target, same messages: not the first one's replies.
    other = run_evaluation(config(small_project, target="python:tests.support.companions:Forgetful.reply",
                                  run_id="three"), default_evaluator())
    assert not any(turn.cached for case in other.store.read_cases() for turn in case.turns)
    # A backend that keeps its own memory hears every turn of a new run (its conversation is new).
    monkeypatch.setenv("COMPANION_TOKEN", TOKEN)
    server = companion_server()
    target = http_target(small_project["root"], server.url)
    run_evaluation(config(small_project, target=target, run_id="four"), default_evaluator())
    calls = len(server.calls)
    run_evaluation(config(small_project, target=target, run_id="five"), default_evaluator())
    assert len(server.calls) == 2 * calls == 20


# --- per prompt version --------------------------------------------------------------------------------
def test_a_prompt_version_names_its_own_target_in_its_front_matter(small_project):
    v2 = small_project["prompts"] / "v2.md"
    v2.write_text(v2.read_text().replace("description:", "target: python:tests.support.companions:remembering\n"
                                                         "description:"))
    report = run_evaluation(config(small_project, responder="replay"), default_evaluator())
    kinds = {case.case_id: case.responder for case in report.store.read_cases()}
    assert {kind for case, kind in kinds.items() if case.startswith("v1/")} == {"replay"}
    assert {kind for case, kind in kinds.items() if case.startswith("v2/")} == {"python"}
    assert report.store.manifest["config"]["targets"] == {
        "v2": {"kind": "python", "callable": "tests.support.companions:remembering", "init": {}, "memory": False}}


# --- validation ---------------------------------------------------------------------------------------
def test_a_target_file_is_validated_naming_the_file_and_every_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("kind: http\nurl: ftp://x\nreply_pth: data.reply\nrequest: {text: '{{mesage}}'}\n"
                    "headers: {X-Key: '${not a name}'}\n")
    with pytest.raises(TargetError) as raised:
        load_target_file(path)
    problems = raised.value.problems
    assert all(problem.startswith(str(path.name)) or "bad.yaml" in problem for problem in problems)
    text = "\n".join(problems)
    assert "url:" in text and "reply_pth: unknown key; did you mean 'reply_path'?" in text
    assert "request: unknown placeholder {{mesage}}; did you mean 'message'?" in text
    assert "headers: X-Key: ${not a name} is not an environment variable name" in text
    assert len(problems) == 4  # every problem in one pass

    path.write_text("kind: htp\nurl: http://127.0.0.1/\n")
    with pytest.raises(TargetError, match=r"bad.yaml: kind: 'htp' is not a target kind; did you mean 'http'\?"):
        load_target_file(path)
    with pytest.raises(TargetError, match=r"--target: callable: .* is not 'package.module:function'"):
        resolve_target("python:no_colon_here", base=tmp_path, where="--target")
    assert resolve_target("http:http://127.0.0.1:8/chat", base=tmp_path, where="--target")[0].url == \
        "http://127.0.0.1:8/chat"


def test_a_target_that_cannot_start_stops_the_run_naming_what_to_fix(small_project, monkeypatch):
    monkeypatch.delenv("COMPANION_TOKEN", raising=False)
    target = http_target(small_project["root"], "http://127.0.0.1:9/chat")
    with pytest.raises(RunConfigError, match=r"companion.yaml: headers.Authorization: environment variable "
                                             r"COMPANION_TOKEN is not set"):
        run_evaluation(config(small_project, target=target), default_evaluator())
    with pytest.raises(RunConfigError, match=r"--target: callable: cannot import 'tests.support.nowhere'"):
        run_evaluation(config(small_project, target="python:tests.support.nowhere:reply"), default_evaluator())
    for name in ("v1", "v2"):
        prompt = small_project["prompts"] / f"{name}.md"
        prompt.write_text(prompt.read_text().replace("description:", f"target: missing-{name}.yaml\ndescription:"))
    with pytest.raises(RunConfigError) as raised:
        run_evaluation(config(small_project), default_evaluator())
    assert "prompt v1: target: 'missing-v1.yaml'" in str(raised.value)
    assert "prompt v2: target: 'missing-v2.yaml'" in str(raised.value)  # both versions in one pass


def test_run_takes_a_target_on_the_command_line_and_resume_keeps_it(small_project, companion_server, monkeypatch):
    monkeypatch.setenv("COMPANION_TOKEN", TOKEN)
    server = companion_server(faults=lambda number, body: 503 if body["session"].endswith("/cont-sister") else None)
    target = http_target(small_project["root"], server.url)
    common = ["--prompts-dir", str(small_project["prompts"]), "--scenarios-dir", str(small_project["scenarios"]),
              "--output", str(small_project["runs"]), "--cache-dir", str(small_project["cache"]),
              "--max-attempts", "1"]
    monkeypatch.chdir(small_project["root"])
    result = CliRunner().invoke(app, ["run", "--target", "companion.yaml", "--run-id", "cli", *common])
    assert result.exit_code == 1, result.output
    store = RunStore.open(small_project["runs"] / "cli")
    assert {case.status for case in store.read_cases()} == {"ok", "failed"}
    assert store.manifest["config"]["target"] == target  # absolute here: the test's directory is outside the project
    server.faults = lambda number, body: None
    monkeypatch.chdir(small_project["runs"])  # resumed from elsewhere, the run still finds its target
    resumed = CliRunner().invoke(app, ["run", "--resume", str(store.directory), *common[4:]])
    assert resumed.exit_code == 0, resumed.output
    assert all(case.status == "ok" and case.responder == "http" for case in RunStore.open(store.directory).read_cases())


def test_resume_refuses_a_changed_target_and_a_target_with_another_responder(small_project):
    target = small_project["root"] / "forgetful.yaml"
    target.write_text("kind: python\ncallable: tests.support.companions:Forgetful.reply\ninit: {greeting: Hey}\n")
    report = run_evaluation(config(small_project, target=str(target), run_id="changing"), default_evaluator())
    target.write_text("kind: python\ncallable: tests.support.companions:Forgetful.reply\ninit: {greeting: Yo}\n")
    with pytest.raises(RunConfigError, match="the targets changed since the run started"):
        run_evaluation(config(small_project, resume=report.store.directory), default_evaluator())
    with pytest.raises(RunConfigError, match="--target and --responder replay both say who answers"):
        run_evaluation(config(small_project, target=str(target), responder="replay"), default_evaluator())


def test_prompts_validate_checks_the_target_files_the_versions_name(small_project):
    prompts = small_project["prompts"]
    (prompts / "backend.yaml").write_text("kind: http\nurl: http://127.0.0.1:9/chat\nreply_pth: data.reply\n")
    for name, target in (("v1", "backend.yaml"), ("v2", "nowhere.yaml")):
        prompt = prompts / f"{name}.md"
        prompt.write_text(prompt.read_text().replace("description:", f"target: {target}\ndescription:"))
    result = CliRunner().invoke(app, ["prompts", "validate", str(prompts)])
    assert result.exit_code == 1
    errors = " ".join(result.stderr.split())
    assert "backend.yaml: reply_pth: unknown key; did you mean 'reply_path'?" in errors
    assert "prompt v2: target: 'nowhere.yaml' is neither a target file" in errors


def test_an_openai_target_file_is_todays_responder_with_its_own_endpoint_and_key_variable(small_project, openai_server,
                                                                                         monkeypatch):
    server = openai_server()
    monkeypatch.setenv("STAGING_OPENAI_KEY", TOKEN)
    target = small_project["root"] / "staging.yaml"
    target.write_text(f"kind: openai\nbase_url: {server.base_url}\napi_key_env: STAGING_OPENAI_KEY\n")
    report = run_evaluation(config(small_project, target=str(target), prompt_versions=["v1"]), default_evaluator())
    cases = report.store.read_cases()
    assert all(case.status == "ok" and case.responder == "openai" for case in cases)
    assert len(server.calls) == 5 and all(call.messages[0]["role"] == "system" for call in server.calls)
    assert cases[0].turns[0].time_to_first_token_s is not None  # streamed and timed as always
    assert report.store.manifest["config"]["targets"]["v1"] == {
        "kind": "openai", "base_url": server.base_url, "api_key_env": "STAGING_OPENAI_KEY"}
    for path in report.store.directory.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
