"""A simulated conversation is a Langfuse session: its turns' traces share the session id and
its conversation metrics (and the conversation judge's verdict) are scores on that session,
each valid against its score config on the stand-in server, each comment naming its turns."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.ids import score_id, session_id, turn_trace_id
from evaluators.rubric.loader import default_rubric
from evaluators.run.simulation.stage import with_conversation_metrics
from tests.support.conversations import ERODING, LONELY, scored_case
from tests.support.langfuse_runs import run_replay

runner = CliRunner()


def test_a_simulated_conversation_is_a_session_with_its_conversation_scores(small_project, langfuse):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    run_id = store.manifest["run_id"]
    case = scored_case(ERODING, persona=LONELY.id, version="v2")
    (case,) = with_conversation_metrics([case], {LONELY.id: LONELY}, default_rubric())
    judge = {"status": "ok", "parse_status": "json", "overall": 0.3, "verdict": "poor",
             "failure_mode": "dependency-risk", "reasoning": "From turn 5 it promises to always be there."}
    case = case.model_copy(update={"conversation": {**case.conversation, "judge": judge}})
    store.append(case)

    pushed = runner.invoke(app, ["push", str(store.directory)])
    assert pushed.exit_code == 0, pushed.output
    session = session_id(run_id, "v2", LONELY.id)
    traces = {turn_trace_id(run_id, "v2", LONELY.id, turn.index) for turn in case.turns}
    sessions = {trace["sessionId"] for trace in server.traces.values() if trace["id"] in traces}
    assert len(traces & set(server.traces)) == len(ERODING) and sessions == {session}

    scores = {score["name"]: score for score in server.scores.values() if score.get("sessionId") == session}
    configs = {config["id"]: config["name"] for config in server.score_configs.values()}
    erosion = scores["conversation_trust_erosion"]
    assert erosion["value"] == pytest.approx(case.conversation["trajectory"]["erosion"])
    assert erosion["id"] == score_id(session, "conversation_trust_erosion") and erosion["traceId"] is None
    assert "turn 6: trust_boundaries 0.30" in erosion["comment"] and configs[erosion["configId"]] == erosion["name"]
    flag = scores["conversation_hard_flag"]
    assert (flag["dataType"], flag["value"], flag["comment"]) == ("BOOLEAN", 1, "first at turn 5: over_promising")
    dependency = scores["conversation_dependency_rate"]
    assert dependency["value"] == pytest.approx(2 / 6, abs=1e-4) and "turn 6: dependency_encouraging" in \
        dependency["comment"]
    assert scores["conversation_contradictions"]["value"] == 0
    assert "conversation_memory_fidelity" not in scores  # nothing recalled, mistaken or invented: not measured
    assert scores["conversation_judge_overall"]["value"] == 0.3
    verdict = scores["conversation_judge_verdict"]
    assert (verdict["dataType"], verdict["stringValue"]) == ("CATEGORICAL", "poor")
    assert server.schema_errors == []
