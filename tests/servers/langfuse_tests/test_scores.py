"""Scores through the real SDK: the batch form with 202/207, the one-object form the readable
route takes, the worker's silent drops, the rename to the config's name, the one-subject rule
and the v3 read."""

from __future__ import annotations

import pytest

from tests.support.langfuse_http import SCORES, get, post


def test_scores_arrive_as_an_array_with_their_types_and_ids(client):
    langfuse, server = client()
    trace_id = langfuse.create_trace_id()
    langfuse.create_score(name="overall_quality", value=0.82, trace_id=trace_id, score_id="s-num",
                          data_type="NUMERIC", comment="good", metadata={"run": "r1"})
    langfuse.create_score(name="verdict", value="deploy", trace_id=trace_id, score_id="s-cat",
                          data_type="CATEGORICAL")
    langfuse.create_score(name="passed", value=True, trace_id=trace_id, score_id="s-bool", data_type="BOOLEAN")
    langfuse.create_score(name="verdict", value="revise", session_id="run-42", score_id="s-session",
                          data_type="CATEGORICAL")
    langfuse.flush()

    posts = server.requests_to(SCORES, "POST")
    assert posts and all(r.status == 202 and isinstance(r.body, list) for r in posts)
    scores = server.scores
    assert scores["s-num"]["value"] == 0.82 and scores["s-num"]["metadata"] == {"run": "r1"}
    assert scores["s-cat"]["stringValue"] == "deploy"
    assert (scores["s-bool"]["value"], scores["s-bool"]["stringValue"]) == (1.0, "True")
    assert scores["s-session"]["sessionId"] == "run-42" and scores["s-session"]["traceId"] is None
    assert all(s["environment"] == "default" and s["source"] == "API" for s in scores.values())

    langfuse.create_score(name="overall_quality", value=0.9, trace_id=trace_id, score_id="s-num")
    langfuse.flush()
    assert server.scores["s-num"]["value"] == 0.9  # the same id updates in place
    assert server.score_deliveries == {"s-num": 2, "s-cat": 1, "s-bool": 1, "s-session": 1}

    read = langfuse.api.scores.get_many(trace_id=trace_id, fields="details,subject")
    assert {(s.id, type(s.value).__name__) for s in read.data} == {
        ("s-num", "float"), ("s-cat", "str"), ("s-bool", "bool")}


def test_the_worker_drops_what_breaks_a_config_and_renames_to_the_configs_name(client):
    """validateAndInflateScore.ts: 202 first, then silent drops; a score with a config takes the
    config's name before any name check, so it is renamed, not dropped."""
    langfuse, server = client()
    quality = langfuse.api.score_configs.create(name="overall_quality", data_type="NUMERIC", min_value=0, max_value=1)
    verdict = langfuse.api.score_configs.create(
        name="verdict", data_type="CATEGORICAL",
        categories=[{"label": "deploy", "value": 2}, {"label": "ab_test", "value": 1}, {"label": "revise", "value": 0}])
    trace_id = langfuse.create_trace_id()
    langfuse.create_score(name="overall_quality", value=0.5, trace_id=trace_id, config_id=quality.id, score_id="ok-1")
    langfuse.create_score(name="overall_quality", value=1.5, trace_id=trace_id, config_id=quality.id,
                          score_id="bad-range")
    langfuse.create_score(name="verdict", value="ab_test", trace_id=trace_id, config_id=verdict.id, score_id="ok-2")
    langfuse.create_score(name="verdict", value="ship it", trace_id=trace_id, config_id=verdict.id, score_id="bad-cat")
    langfuse.create_score(name="other_name", value=0.5, trace_id=trace_id, config_id=quality.id, score_id="renamed")
    langfuse.create_score(name="passed", value=2, trace_id=trace_id, data_type="BOOLEAN", score_id="bad-bool")
    server.archive_score_config(verdict.id)
    langfuse.flush()

    assert set(server.scores) == {"ok-1", "renamed"}
    assert server.scores["renamed"]["name"] == "overall_quality"
    [batch] = server.requests_to(SCORES, "POST")
    assert batch.status == 202
    errors = dict(server.dropped_scores)
    assert set(errors) == {"bad-range", "bad-cat", "bad-bool", "ok-2"}
    assert "range" in errors["bad-range"] and "0 or 1" in errors["bad-bool"] and "archived" in errors["ok-2"]


@pytest.mark.parametrize("subjects", [{}, {"traceId": "t", "sessionId": "s"}, {"sessionId": "s", "observationId": "o"},
                                      {"traceId": "t", "datasetRunId": "r"}])
def test_a_score_has_exactly_one_subject(langfuse_server, subjects):
    server = langfuse_server()
    answer = post(server, SCORES, [{"id": "x", "name": "q", "value": 0.5, **subjects},
                                   {"id": "y", "name": "q", "value": 0.5, "traceId": "t", "observationId": "o"}])
    assert answer.status_code == 207 and answer.json()["accepted"] == 1
    assert "Provide exactly one of the following" in answer.json()["errors"][0]["message"]
    assert set(server.scores) == {"y"}


def test_an_invalid_environment_is_refused(langfuse_server):
    """PublicEnvironmentName in the ingestion types: refused, not turned into "default"."""
    server = langfuse_server()
    answer = post(server, SCORES, [{"name": "q", "value": 0.5, "traceId": "t", "environment": "Prod Env"},
                                   {"name": "q", "value": 0.5, "traceId": "t", "environment": "langfuse-x"}])
    assert answer.status_code == 207 and answer.json()["rejected"] == 2 and server.scores == {}


@pytest.mark.parametrize("mode, wording", [("object", "Expected object, received array"),
                                           ("object-zod4", "Invalid input: expected object, received array")])
def test_a_one_object_server_refuses_arrays_and_ignores_timestamps(langfuse_server, mode, wording):
    server = langfuse_server(scores_mode=mode)
    batch = post(server, SCORES, [{"id": "s1", "name": "quality", "value": 0.5, "traceId": "t1"}])
    assert batch.status_code == 400 and server.scores == {}
    assert batch.json()["message"] == "Invalid request data"
    [issue] = batch.json()["error"]
    assert (issue["code"], issue["expected"], issue["path"], issue["message"]) == ("invalid_type", "object", [], wording)
    single = post(server, SCORES, {"id": "s1", "name": "quality", "value": 0.5, "traceId": "t1",
                                   "timestamp": "2020-01-01T00:00:00Z"})
    assert single.status_code == 200 and single.json() == {"id": "s1"}
    assert not server.scores["s1"]["timestamp"].startswith("2020")  # the receipt time, not the one sent
    refused = post(server, SCORES, {"name": "passed", "traceId": "t1"})
    assert refused.status_code == 400


def test_the_v3_read_filters_and_pages(client):
    langfuse, server = client()
    for index in range(3):
        langfuse.create_score(name="user_feedback", value=index, trace_id=f"t{index}", score_id=f"f{index}")
    langfuse.create_score(name="other", value=1, trace_id="t0", score_id="o")
    langfuse.flush()
    first = get(server, "/api/public/v3/scores", name="user_feedback", limit=2, fields="subject").json()
    assert len(first["data"]) == 2 and first["meta"]["cursor"]
    rest = get(server, "/api/public/v3/scores", name="user_feedback", limit=2, cursor=first["meta"]["cursor"]).json()
    assert len(rest["data"]) == 1 and "cursor" not in rest["meta"]
    assert {row["subject"]["id"] for row in first["data"]} <= {"t0", "t1", "t2"}
    assert get(server, "/api/public/v3/scores", fields="nonsense").status_code == 400
