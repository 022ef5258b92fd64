"""The plumbing: auth, health, bodies against the OpenAPI spec, the two error shapes, faults
that never change state, a stopped and restarted server, and the plan's rate limits."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import httpx
import pytest
from langfuse.api.unstable.errors.errors.too_many_requests_error import TooManyRequestsError

from tests.servers.langfuse import (
    DROP,
    OK,
    SERVER_VERSION,
    RateLimit,
    RecordedRequest,
    hang,
    rate_limited,
    server_error,
)
from tests.support.langfuse_http import OTLP, SCORES, get, post

WIDGETS = "/api/public/unstable/dashboard-widgets"


def _only(path: str, fault_for_attempt: Callable[[int], object]) -> Callable[[RecordedRequest], object]:
    return lambda request: fault_for_attempt(request.attempt) if request.path == path else OK


def test_auth_health_and_projects(client):
    langfuse, server = client()
    assert langfuse.auth_check() is True
    assert langfuse.api.health.health().status == "OK"
    assert langfuse.api.projects.get().data[0].id == server.project_id
    wrong = httpx.get(server.base_url + "/api/public/projects", auth=(server.public_key, "sk-wrong"))
    assert wrong.status_code == 401 and "Invalid credentials" in wrong.json()["message"]
    anonymous = httpx.get(server.base_url + "/api/public/v2/prompts/companion")
    assert anonymous.status_code == 401 and anonymous.json() == {"message": "No authorization header"}
    assert get(server, "/api/public/health").json() == {"status": "OK", "version": SERVER_VERSION}
    assert get(server, "/api/public/no-such-thing").status_code == 404
    assert httpx.delete(server.base_url + SCORES, headers=server.auth_header()).status_code == 405


def test_malformed_bodies_are_refused_and_recorded(langfuse_server):
    server = langfuse_server()
    if not server.validates_bodies:
        pytest.skip("Langfuse's OpenAPI spec is not available here")
    config = post(server, "/api/public/score-configs", {"name": "empathy"})
    assert config.status_code == 400 and config.json()["message"] == "Invalid request data"
    scores = post(server, SCORES, [{"name": "ok", "value": 0.5, "traceId": "t"},
                                   {"name": "broken", "value": True, "traceId": "t"}])
    assert scores.status_code == 207 and scores.json()["accepted"] == 1
    errors = server.schema_errors
    assert errors[0].startswith("POST /api/public/score-configs:") and "dataType" in errors[0]
    assert any("scores[1]" in error for error in errors)
    assert server.score_configs == {} and [s["name"] for s in server.scores.values()] == ["ok"]


def test_bodies_are_not_validated_without_the_spec(langfuse_server, tmp_path):
    server = langfuse_server(openapi_spec=tmp_path / "missing.yml")
    assert server.validates_bodies is False
    assert post(server, "/api/public/score-configs", {"name": "empathy", "dataType": "NUMERIC"}).status_code == 200


def test_errors_take_the_shape_of_their_route(langfuse_server):
    """withMiddlewares: {message, error} on stable routes; the structured contract with `code`
    on the unstable ones, which SDK 5's unstable client parses into its typed errors."""
    server = langfuse_server(faults=lambda request: server_error(500) if request.method == "GET" else OK)
    assert get(server, "/api/public/score-configs").json() == {"message": "injected HTTP 500",
                                                               "error": "InjectedError"}
    assert get(server, WIDGETS).json() == {"message": "injected HTTP 500", "code": "internal_error"}


def test_the_sdk_retries_a_429_on_the_dashboards_api_as_it_would_against_langfuse(client, langfuse_server):
    server = langfuse_server(faults=_only(WIDGETS, lambda attempt: rate_limited("0") if attempt == 1 else OK))
    langfuse, _ = client(server)
    assert langfuse.api.unstable.dashboard_widgets.list().data == []
    assert [r.status for r in server.requests_to(WIDGETS)] == [429, 200]
    server.faults = lambda request: rate_limited("7")
    with pytest.raises(TooManyRequestsError) as limited:  # without the SDK's retries: a typed ApiError
        langfuse.api.unstable.dashboard_widgets.list(request_options={"max_retries": 0})
    assert limited.value.status_code == 429 and limited.value.headers["retry-after"] == "7"
    assert limited.value.body.code == "rate_limited"


def test_server_errors_leave_state_unchanged_until_the_server_recovers(client, langfuse_server):
    server = langfuse_server(faults=lambda request: server_error() if request.method == "POST" else OK)
    langfuse, _ = client(server, timeout=2)
    trace_id = langfuse.create_trace_id()
    langfuse.create_score(name="overall_quality", value=0.5, trace_id=trace_id, score_id="lost")
    with langfuse.start_as_current_observation(name="lost-span"):
        pass
    langfuse.flush()  # never raises: the SDK retries, then drops the data
    attempts = server.requests_to(SCORES, "POST")
    assert len(attempts) == 3 and {r.status for r in attempts} == {500}  # the SDK tries three times
    assert server.scores == {} and server.spans == [] and server.observations == {} and server.traces == {}
    server.faults = lambda request: OK
    langfuse.create_score(name="overall_quality", value=0.6, trace_id=trace_id, score_id="kept")
    langfuse.flush()
    assert set(server.scores) == {"kept"}


def test_rate_limit_is_retried_and_stored_once(client, langfuse_server):
    server = langfuse_server(faults=_only(OTLP, lambda attempt: rate_limited("0") if attempt == 1 else OK))
    langfuse, _ = client(server, timeout=5)
    with langfuse.start_as_current_observation(name="retried") as span:
        pass
    langfuse.flush()
    assert [r.status for r in server.requests_to(OTLP)] == [429, 200]
    assert [s.name for s in server.spans] == ["retried"] and list(server.observations) == [span.id]


def test_hang_and_drop_are_retried_without_double_counting(client, langfuse_server):
    faults = {SCORES: hang(3), OTLP: DROP}
    server = langfuse_server(faults=lambda r: faults.get(r.path, OK) if r.attempt == 1 else OK)
    langfuse, _ = client(server, timeout=1)
    langfuse.create_score(name="overall_quality", value=0.5, trace_id=langfuse.create_trace_id(), score_id="once")
    with langfuse.start_as_current_observation(name="after-drop"):
        pass
    started = time.monotonic()
    langfuse.flush()
    assert time.monotonic() - started < 10
    assert [(r.status, r.fault) for r in server.requests_to(SCORES, "POST")] == [(None, "hang"), (202, "ok")]
    assert server.score_deliveries == {"once": 1}
    assert [(r.status, r.fault) for r in server.requests_to(OTLP)] == [(None, "drop"), (200, "ok")]


def test_a_stopped_server_refuses_connections_and_comes_back_with_its_state(client, langfuse_server):
    server = langfuse_server()
    langfuse, _ = client(server, timeout=1)
    langfuse.create_score(name="before", value=1.0, session_id="s", score_id="before")
    langfuse.flush()
    address, port = server.base_url, int(server.base_url.rsplit(":", 1)[1])
    server.stop()
    server.stop()  # safe twice
    with pytest.raises(httpx.ConnectError):
        get(server, "/api/public/health")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    server.start()
    assert server.base_url == address and set(server.scores) == {"before"}
    langfuse.create_score(name="after", value=1.0, session_id="s", score_id="after")
    langfuse.flush()  # the SDK's pooled connection was closed by stop(); it reconnects
    assert set(server.scores) == {"before", "after"}


def test_the_rate_limiter_counts_per_resource_and_answers_like_langfuse(langfuse_server):
    """RateLimitService: a point is consumed, then fewer than one left is a 429, so a limit of 3
    lets 2 requests through per window; text on stable routes, `rate_limited` on unstable ones."""
    server = langfuse_server(rate_limit=[RateLimit(points=3, window_s=1.0)])
    statuses = [get(server, "/api/public/score-configs").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    limited = get(server, "/api/public/score-configs")
    assert limited.text == "429 - rate limit exceeded"
    assert 1 <= int(limited.headers["Retry-After"]) <= 1 and limited.headers["X-RateLimit-Limit"] == "3"
    assert limited.headers["X-RateLimit-Remaining"] == "0" and "GMT" in limited.headers["X-RateLimit-Reset"]
    structured = get(server, WIDGETS).json()
    assert structured["code"] == "rate_limited" and structured["details"]["limit"] == 3
    assert get(server, "/api/public/dataset-items").status_code == 200  # another bucket: not limited
    assert get(server, "/api/public/health").status_code == 200
    time.sleep(1.05)
    assert get(server, "/api/public/score-configs").status_code == 200  # a new window
