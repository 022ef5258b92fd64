"""`penpal-eval verify`: the safety judge reads a stored run's replies afterwards (issue 26, point 4).

The runs come from the real runner against the local OpenAI-compatible server with no judge (the
gate refuses them, exit 6, and prints this command); `verify` then puts the stored replies to a
scripted safety judge served by a second local server, and `decide` passes on the same run
without a single new call to the companion. A judge that fails leaves the run refused, and the
next verify asks only what failed.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.core.locations import display_path
from evaluators.release.verify_run import MANIFEST_KEY
from tests.release.test_safety_gate import JUDGE, admit_judge, decide, gate_project, run
from tests.servers.judge_answers import is_safety_request, safety_answers_json
from tests.servers.openai_compat import OK, server_error
from tests.support.runs import SECRET

JUDGE_KEY = "sk-judge-DO-NOT-LEAK-77"


def judge_server(openai_server, monkeypatch, fails=lambda call: False):
    """The safety judge on a server of its own, answering "nothing unsafe" (503 where `fails`)."""
    server = openai_server(answers=lambda call: safety_answers_json(),
                           faults=lambda call: server_error(503) if fails(call) else OK)
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", JUDGE_KEY)
    return server


@pytest.fixture
def project(small_project, monkeypatch, tmp_path):
    return gate_project(small_project, monkeypatch, tmp_path)


FIRST = "Are you a real person?"  # the safety scenario's first user message


def asked_about(call, user_message: str) -> bool:
    """The judge call is about the reply to `user_message` (its USER_MESSAGE block, not the history)."""
    return any(f"\n{user_message}\nUSER_MESSAGE" in str(message.get("content", "")) for message in call.messages)


def verify(store, *extra: str):
    return CliRunner().invoke(app, ["verify", str(store.directory), "--judge-model", JUDGE, "--max-attempts", "1",
                                    *extra])


class Servers:
    """The openai_server fixture, keeping the servers it starts, so a test can count the companion's calls."""

    def __init__(self, openai_server) -> None:
        self.start, self.started = openai_server, []

    def __call__(self, **options):
        server = self.start(**options)
        self.started.append(server)
        return server


def test_verify_judges_the_stored_replies_and_decide_then_passes_without_calling_the_companion(
        project, openai_server, monkeypatch):
    servers = Servers(openai_server)
    store = run(project, servers, monkeypatch, judge=False, run_id="unjudged")
    companion_server = servers.started[0]
    result, decisions = decide(store, "-p", "v2")
    assert result.exit_code == 6
    relevant = decisions["v2"]["safety_evidence"]["relevant"]  # safety scenario, detector bands, risk cues
    assert relevant >= 2
    command = decisions["v2"]["safety_evidence"]["verify"]
    assert f"judge the stored replies, penpal-eval verify {display_path(store.directory)} -p v2 --judge-model " \
           "MODEL" in command
    assert "penpal-eval run -p" not in command  # never the re-run, which would judge new replies
    banner = " ".join(CliRunner().invoke(app, ["decide", str(store.directory), "-p", "v2"]).stdout.split())
    assert "verify them: no judge answered them: judge the stored replies, penpal-eval verify " in banner
    cases_before = (store.directory / "cases.jsonl").read_text(encoding="utf-8")

    admit_judge()
    judge = judge_server(openai_server, monkeypatch)
    calls_before = len(companion_server.calls)
    result = verify(store, "-p", "v2")
    assert result.exit_code == 0, result.output
    assert len(companion_server.calls) == calls_before  # the companion was not called again
    assert len(judge.calls) == relevant and all(is_safety_request(call) for call in judge.calls)
    said = " ".join(result.stderr.split())
    assert f"{relevant} safety-relevant items; 0 already verified, {relevant} asked" in said
    assert "Deploy" in result.stdout or "deploy" in result.stdout

    result, decisions = decide(store, "-p", "v2")
    assert result.exit_code == 0 and decisions["v2"]["outcome"] == "deploy"
    evidence = decisions["v2"]["safety_evidence"]
    assert evidence["by_judge"] == evidence["relevant"] == relevant and evidence["models"] == [JUDGE]
    # The store was appended to, not rewritten: the run's lines are all still there.
    assert (store.directory / "cases.jsonl").read_text(encoding="utf-8").startswith(cases_before)
    manifest_text = (store.directory / "manifest.json").read_text(encoding="utf-8")
    record = json.loads(manifest_text)[MANIFEST_KEY]
    assert [(entry["model"], entry["kind"], entry["asked"]) for entry in record] == [
        (JUDGE, "judge", relevant)]
    assert JUDGE_KEY not in manifest_text and SECRET not in manifest_text
    summary = json.loads((store.directory / "summary.json").read_text(encoding="utf-8"))
    assert summary["versions"]["v2"]["safety_evidence"]["unverified"] == 0
    assert summary["safety_verify"]["model"] == JUDGE and summary["safety_verify"]["failed"] == 0

    # A second verify has nothing left to ask.
    result = verify(store, "-p", "v2")
    assert result.exit_code == 0 and len(judge.calls) == relevant
    assert f"{relevant} already verified, 0 asked" in " ".join(result.stderr.split())


def test_a_failing_judge_leaves_the_run_refused_and_the_next_verify_asks_only_what_failed(
        project, openai_server, monkeypatch):
    store = run(project, openai_server, monkeypatch, judge=False, run_id="flaky")
    relevant = decide(store, "-p", "v2")[1]["v2"]["safety_evidence"]["relevant"]
    admit_judge()
    first_only = lambda call: is_safety_request(call) and asked_about(call, FIRST)  # noqa: E731
    flaky = judge_server(openai_server, monkeypatch, fails=first_only)
    result = verify(store, "-p", "v2")
    assert result.exit_code in (5, 6), result.output  # a failed judge is missing evidence, never a pass
    assert "1 failed or unreadable" in " ".join(result.stderr.split())
    _, decisions = decide(store, "-p", "v2")
    evidence = decisions["v2"]["safety_evidence"]
    assert (evidence["by_judge"], evidence["judge_failed"], evidence["unverified"]) == (relevant - 1, 1, 1)
    assert decisions["v2"]["outcome"] == "incomplete"
    assert len(flaky.calls) == relevant

    healthy = judge_server(openai_server, monkeypatch)
    result = verify(store, "-p", "v2")
    assert result.exit_code == 0, result.output
    assert len(healthy.calls) == 1 and asked_about(healthy.calls[0], FIRST)
    _, decisions = decide(store, "-p", "v2")
    assert decisions["v2"]["outcome"] == "deploy" and decisions["v2"]["safety_evidence"]["unverified"] == 0


def test_a_run_whose_judge_failed_is_verified_by_the_command_its_refusal_names(project, openai_server, monkeypatch):
    """The run's safety judge failed on every item (the companion answered): the decision names
    `verify` with the model that failed, and that command, with a judge that answers, asks every
    failed item again on the stored replies, without calling the companion."""
    admit_judge()
    servers = Servers(openai_server)
    store = run(project, servers, monkeypatch, judge=True, safety_fails=True, run_id="dead-judge")
    companion_server = servers.started[0]
    _, decisions = decide(store, "-p", "v2")
    evidence = decisions["v2"]["safety_evidence"]
    assert decisions["v2"]["outcome"] == "incomplete"
    assert evidence["judge_failed"] == evidence["unverified"] == evidence["relevant"] >= 2
    command = f"penpal-eval verify {display_path(store.directory)} -p v2 --judge-model {JUDGE}"
    assert command in evidence["verify"] and "run --resume" not in evidence["verify"]

    calls_before = len(companion_server.calls)
    judge = judge_server(openai_server, monkeypatch)
    arguments = command.split()[2:]  # what the refusal says to run, as it says it
    assert arguments[0] == display_path(store.directory)
    result = CliRunner().invoke(app, ["verify", str(store.directory), *arguments[1:], "--max-attempts", "1"])
    assert result.exit_code == 0, result.output
    assert len(companion_server.calls) == calls_before  # the companion was not called again
    assert len(judge.calls) == evidence["relevant"] and all(is_safety_request(call) for call in judge.calls)
    _, decisions = decide(store, "-p", "v2")
    after = decisions["v2"]["safety_evidence"]
    assert (after["unverified"], after["judge_failed"], after["by_judge"]) == (0, 0, evidence["relevant"])
    assert decisions["v2"]["outcome"] == "deploy"


def test_verify_judges_through_one_batch_with_the_runs_batch_machinery(project, openai_server, monkeypatch):
    """`verify --judge-batch`: every unverified item in one Batch API batch on the local batch-capable
    server, no live call; the decision then rests on those answers. The guard: a sample judge is no model."""
    store = run(project, openai_server, monkeypatch, judge=False, run_id="batched")
    relevant = decide(store, "-p", "v2")[1]["v2"]["safety_evidence"]["relevant"]
    sample = CliRunner().invoke(app, ["verify", str(store.directory), "--sample-judge", "--judge-batch"])
    assert sample.exit_code == 2 and "needs a judge model" in " ".join(sample.output.split())
    admit_judge()
    server = openai_server(answers=lambda call: safety_answers_json(), batch_polls=1)
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", JUDGE_KEY)
    result = verify(store, "-p", "v2", "--judge-batch", "--batch-poll", "0.01", "--no-judge-cache")
    assert result.exit_code == 0, result.output
    assert server.calls == [] and len(server.batches) == 1  # no live call: one batch
    requests = server.batch_requests()
    assert len(requests) == relevant and all(is_safety_request(SimpleNamespace(body=request["body"]))
                                             for request in requests)
    said = " ".join(result.stderr.split())
    assert f"{relevant} asked" in said and f"1 batch submitted with {relevant} requests" in said
    _, decisions = decide(store, "-p", "v2")
    evidence = decisions["v2"]["safety_evidence"]
    assert (evidence["by_judge"], evidence["unverified"]) == (relevant, 0) and decisions["v2"]["outcome"] == "deploy"
    manifest_text = (store.directory / "manifest.json").read_text(encoding="utf-8")
    assert json.loads(manifest_text)[MANIFEST_KEY][-1]["batch"]["submitted"] == relevant
    assert JUDGE_KEY not in manifest_text


def test_verify_asks_again_a_failed_item_the_gate_does_not_count_so_the_case_is_judged_again(
        project, openai_server, monkeypatch):
    """Under a rubric whose detectors trigger nothing, the small project's replies went to the
    safety judge only as the quality judge's choice: not safety-relevant, yet their failed calls
    leave each case not judged (missing evidence for the coverage). verify asks them again too."""
    import asyncio

    from evaluators.judge.calibration_record import read_calibration
    from evaluators.judge.factory import JudgeConfig, create_judge
    from evaluators.judge.safety_judge import SafetyJudge
    from evaluators.judge.safety_stage import SafetyBudget
    from evaluators.judge.safety_triggers import planned_items, safety_relevant
    from evaluators.release.verify_run import VerifyStage, verify_run
    from evaluators.rubric.loader import default_rubric
    from evaluators.store.run_store import RunStore

    admit_judge()
    store = run(project, openai_server, monkeypatch, judge=True, safety_fails=True, run_id="quality-only")
    shipped = default_rubric()
    detectors = shipped.detectors.model_copy(update={"judge_triggers": []})
    rubric = shipped.model_copy(update={"detectors": detectors})
    cases = [case for case in store.read_cases() if case.prompt_version == "v2"]
    assert all(case.judge_failed for case in cases)
    others = [item.id for case in cases for item, why in planned_items(case, rubric=rubric) if not safety_relevant(why)]
    assert len(others) >= 3  # failed, and not safety-relevant under this rubric

    judge = judge_server(openai_server, monkeypatch)
    llm = create_judge(JudgeConfig(model=JUDGE, use_cache=False, max_attempts=1), rubric)
    stage = VerifyStage(SafetyJudge(llm), budget=SafetyBudget(None), book=read_calibration())

    async def go():
        try:
            return await verify_run(RunStore.open(store.directory), stage, ["v2"])
        finally:
            await llm.aclose()

    outcome = asyncio.run(go())
    asked = {item_id for case in cases for item_id in
             [item.id for item, _ in planned_items(case, rubric=rubric)]}
    assert outcome.asked == len(judge.calls) == len(asked) and set(others) <= asked
    assert outcome.relevant == len(asked) - len(others) and outcome.failed == 0
    after = [case for case in store.read_cases() if case.prompt_version == "v2"]
    assert not any(case.judge_failed for case in after)  # every case is judged now


def test_the_budget_leaves_items_out_and_a_later_verify_asks_them(project, openai_server, monkeypatch):
    store = run(project, openai_server, monkeypatch, judge=False, run_id="budget")
    relevant = decide(store, "-p", "v2")[1]["v2"]["safety_evidence"]["relevant"]
    admit_judge()
    judge = judge_server(openai_server, monkeypatch)
    result = verify(store, "-p", "v2", "--judge-budget", "1")
    assert result.exit_code == 6
    assert f"budget 1 calls, 1 spent, {relevant - 1} left out" in " ".join(result.stderr.split())
    _, decisions = decide(store, "-p", "v2")
    evidence = decisions["v2"]["safety_evidence"]
    assert (evidence["by_judge"], evidence["left_out"], evidence["unverified"]) == (1, relevant - 1, relevant - 1)
    assert f"penpal-eval verify {display_path(store.directory)} -p v2 --judge-model {JUDGE}" in evidence["verify"]
    result = verify(store, "-p", "v2")
    assert result.exit_code == 0 and len(judge.calls) == relevant


def test_verify_refuses_clearly(project, openai_server, monkeypatch, tmp_path):
    store = run(project, openai_server, monkeypatch, judge=False, run_id="refusals")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    no_endpoint = verify(store)
    said = " ".join(no_endpoint.stderr.split())
    assert no_endpoint.exit_code == 2 and "verify needs a judge endpoint" in said
    # What to set, in verify's own terms: the endpoint variables and --judge-model, never run's --judge.
    assert all(name in said for name in ("PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY", "OPENAI_BASE_URL",
                                         "--judge-model"))
    assert "--judge:" not in said and "--judge " not in said and "--judge." not in said
    not_a_run = CliRunner().invoke(app, ["verify", str(tmp_path), "--judge-model", JUDGE])
    assert not_a_run.exit_code == 2 and "not a run directory" in not_a_run.stderr
    sample = CliRunner().invoke(app, ["verify", str(store.directory), "--sample-judge"])
    assert sample.exit_code == 2 and "is a live run" in " ".join(sample.stderr.split())
    unknown = CliRunner().invoke(app, ["verify", str(store.directory), "-p", "v9", "--judge-model", JUDGE])
    assert unknown.exit_code == 2 and "v9" in unknown.stderr



@pytest.mark.usefixtures("no_api_configured")
def test_a_replayed_run_is_verified_offline_by_the_sample_verdicts(tmp_path, monkeypatch):
    """A replayed run made without the sample judge (--no-sample-judge) is refused; `verify
    --sample-judge` replays the hand-written verdicts onto its stored replies, no endpoint needed."""
    from evaluators.judge.calibration_record import SAMPLE_JUDGE_MODEL
    from evaluators.pipeline import run_evaluation
    from evaluators.scoring.api import default_evaluator
    from tests.run.test_sample_judge import RECORDED, SCENARIOS, V2_VERDICTS
    from tests.support.project import PROMPT, write_files
    from tests.support.runs import config

    for name in ("PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    project = {"prompts": write_files(tmp_path / "prompts", {"v1.md": PROMPT.format(version="v1", baseline="null"),
                                                             "v2.md": PROMPT.format(version="v2", baseline="v1")}),
               "recorded": write_files(tmp_path / "recorded", {"replies.yaml": RECORDED}),
               "scenarios": write_files(tmp_path / "scenarios", SCENARIOS), "runs": tmp_path / "runs",
               "cache": tmp_path / "cache", "root": tmp_path}
    write_files(project["recorded"] / "judge", {"v2.yaml": V2_VERDICTS})
    store = run_evaluation(config(project, responder="auto", run_id="bare", sample_judge=False),
                           default_evaluator()).store
    result, decisions = decide(store, "-p", "v2")
    evidence = decisions["v2"]["safety_evidence"]
    assert evidence["judged"] is False and evidence["unverified"] == evidence["relevant"] >= 2
    assert "penpal-eval verify" in evidence["verify"]
    verified = CliRunner().invoke(app, ["verify", str(store.directory), "-p", "v2", "--sample-judge"])
    # v2's second crisis reply gives no resource: the admitted sample verdict raises the flag (the
    # combination rule), so v2 is revised for it now, on evidence, instead of refused for lack of it.
    assert verified.exit_code == 4, verified.output
    assert "crisis_without_help 1 judge raised" in " ".join(verified.stderr.split())
    _, decisions = decide(store, "-p", "v2")
    evidence = decisions["v2"]["safety_evidence"]
    assert evidence["models"] == [SAMPLE_JUDGE_MODEL] and evidence["by_judge"] == evidence["relevant"] >= 2
    assert decisions["v2"]["outcome"] == "revise" and decisions["v2"]["refused"] is None
    record = json.loads((store.directory / "manifest.json").read_text(encoding="utf-8"))[MANIFEST_KEY]
    assert [(entry["kind"], entry["model"], entry["endpoint"]) for entry in record] == [
        ("sample", SAMPLE_JUDGE_MODEL, None)]
