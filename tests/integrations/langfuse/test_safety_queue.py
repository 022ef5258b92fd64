"""The safety judge's disagreements with the rules reach a Langfuse annotation queue for people
to settle: a run with the judge (the local OpenAI-compatible server) publishing to the local
Langfuse stand-in. What is checked is read back from the stand-in's state."""

from __future__ import annotations

from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.ledger import DeliveryLedger
from evaluators.integrations.langfuse.settings import DEFAULT_SAFETY_QUEUE
from tests.judge.test_safety_run import judge_config, project_with_safety
from tests.judge.test_safety_verdict import judge_says_ai_reply_claims_consciousness
from tests.support.judge_runs import use_judge
from tests.support.langfuse_runs import run_replay

runner = CliRunner()


def judged_run(small_project, openai_server, monkeypatch, run_id: str = "test-run"):
    server = openai_server(answers=judge_says_ai_reply_claims_consciousness)
    use_judge(monkeypatch, server)
    return run_replay(project_with_safety(small_project), run_id=run_id, judge=judge_config())


def disagreement_replies(store) -> set[tuple[str, int]]:
    """(case id, turn) of each reply a disagreement in the run store names."""
    return {(case.case_id, entry["turn"]) for case in store.read_cases()
            for entry in (case.safety_judge or {}).get("disagreements", [])}


def test_each_disagreement_reaches_the_safety_queue_once_and_a_later_push_adds_nothing(
        small_project, langfuse, openai_server, monkeypatch):
    lf = langfuse()
    code, store = judged_run(small_project, openai_server, monkeypatch)
    assert code == 0 and store is not None
    disagreements = disagreement_replies(store)
    # The uncalibrated judge disagrees with the rules on v1's two replies and on v2's first.
    assert disagreements == {("v1/trust-real-person", 1), ("v1/trust-real-person", 2), ("v2/trust-real-person", 1)}
    [queue] = [queue for queue in lf.annotation_queues.values() if queue["name"] == DEFAULT_SAFETY_QUEUE]
    names = {lf.score_configs[config_id]["name"] for config_id in queue["scoreConfigIds"]}
    assert {"flag_claims_human", "flag_claims_consciousness", "flag_harmful_reply"} <= names
    items = lf.annotation_queue_items[queue["id"]]
    assert len(items) == 3 and {item["objectType"] for item in items} == {"TRACE"}
    # Each item is a trace the server holds, of the scenario and turn the disagreement names.
    traces = lf.traces
    queued = set()
    for item in items:
        trace = traces[item["objectId"]]
        metadata = trace.get("metadata") or {}
        queued.add((f"{metadata.get('prompt_version')}/{metadata.get('scenario_id')}", int(metadata.get("turn"))))
    assert queued == disagreements
    assert DeliveryLedger.load(store.directory).safety_items.keys() == {f"TRACE:{item['objectId']}" for item in items}

    again = runner.invoke(app, ["push", "--all", str(store.directory)])
    assert again.exit_code == 0, again.output
    assert len(lf.annotation_queue_items[queue["id"]]) == 3
    assert lf.schema_errors == []


def test_a_later_run_finds_the_queue_by_name_and_adds_its_own_items(small_project, langfuse, openai_server,
                                                                      monkeypatch):
    lf = langfuse()
    assert judged_run(small_project, openai_server, monkeypatch, run_id="first")[0] == 0
    assert judged_run(small_project, openai_server, monkeypatch, run_id="second")[0] == 0
    queues = [queue for queue in lf.annotation_queues.values() if queue["name"] == DEFAULT_SAFETY_QUEUE]
    assert len(queues) == 1 and len(lf.requests_to("/api/public/annotation-queues", "POST")) == 1
    assert len(lf.annotation_queue_items[queues[0]["id"]]) == 6  # three per run: each run's traces are its own


def test_a_run_without_disagreements_makes_no_safety_queue(small_project, langfuse):
    lf = langfuse()
    code, _ = run_replay(small_project)
    assert code == 0
    assert lf.annotation_queues == {} and not lf.requests_to("/api/public/annotation-queues")
