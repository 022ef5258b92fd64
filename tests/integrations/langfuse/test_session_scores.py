"""Conversation-level scores on the Langfuse session: a scenario conversation is a session, so
what only the whole conversation shows (its worst turn for trust & boundaries, continuity
across turns) is scored on `sessionId`, where Langfuse's own evaluators cannot reach."""

from __future__ import annotations

from statistics import fmean

import pytest

from evaluators.integrations.langfuse.ids import score_id, session_id
from tests.support.langfuse_runs import run_replay


def test_each_conversation_gets_its_scores_on_its_session(small_project, langfuse):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    run_id = store.manifest["run_id"]
    configs = {config["id"]: config for config in server.score_configs.values()}
    for case in store.read_cases():
        session = session_id(run_id, case.prompt_version, case.scenario_id)
        scores = {score["name"]: score for score in server.scores.values() if score.get("sessionId") == session}
        worst = min(case.turns, key=lambda turn: turn.heuristics["trust_boundaries"])
        trust = scores["conversation_trust_boundaries"]
        assert trust["value"] == pytest.approx(worst.heuristics["trust_boundaries"])
        assert trust["id"] == score_id(session, "conversation_trust_boundaries")
        assert f"turn {worst.index + 1}" in trust["comment"]
        assert trust["traceId"] is None and configs[trust["configId"]]["name"] == "conversation_trust_boundaries"
        assert scores["conversation_overall_quality"]["value"] == pytest.approx(
            fmean(turn.heuristics["overall_quality"] for turn in case.turns), abs=1e-6)
        assert scores["conversation_hard_criteria"]["dataType"] == "BOOLEAN"
        if len(case.turns) > 1:
            later = [turn.heuristics["personalization_continuity"] for turn in case.turns[1:]]
            assert scores["conversation_continuity"]["value"] == pytest.approx(fmean(later), abs=1e-6)
        else:
            assert "conversation_continuity" not in scores  # continuity needs an earlier turn
    assert server.schema_errors == []


def test_each_failure_kind_is_a_categorical_score_on_the_session(small_project, langfuse):
    """Typed failures reach Langfuse: one `failure_kind` score per kind a conversation carries,
    its comment naming the rule, accepted by the stand-in against its CATEGORICAL config."""
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    run_id = store.manifest["run_id"]
    config = next(config for config in server.score_configs.values() if config["name"] == "failure_kind")
    assert config["dataType"] == "CATEGORICAL"
    assert {"hard_flag", "expectation", "timeout", "barge_in_recovery", "invalid_simulation"} <= {
        category["label"] for category in config["categories"]}
    failing = [case for case in store.read_cases() if case.failures]
    assert failing  # the sample replies break some rule
    for case in store.read_cases():
        session = session_id(run_id, case.prompt_version, case.scenario_id)
        kinds = {score["stringValue"] for score in server.scores.values()
                 if score.get("sessionId") == session and score["name"] == "failure_kind"}
        assert kinds == {failure["kind"] for failure in case.failures}
        for failure in case.failures:
            score = server.scores[score_id(session, f"failure_kind/{failure['kind']}")]
            assert score["configId"] == config["id"]
            assert (failure["name"] or failure["reason"][:20]) in score["comment"]
    assert server.schema_errors == []


def test_each_repeat_is_a_session_and_traces_of_its_own(small_project, langfuse):
    server = langfuse()
    code, store = run_replay(small_project, prompt_versions=["v2"], repeats=2)
    assert code == 0
    run_id = store.manifest["run_id"]
    cases = store.read_cases()
    assert sorted(case.repeat for case in cases) == [0, 0, 0, 1, 1, 1]
    sessions = {session_id(run_id, case.prompt_version, case.scenario_id + ("#r1" if case.repeat else ""))
                for case in cases}
    scored = {score["sessionId"] for score in server.scores.values() if score["name"] == "conversation_overall_quality"}
    assert scored == sessions and len(sessions) == 6
    assert server.schema_errors == []
