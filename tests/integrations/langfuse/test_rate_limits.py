"""Langfuse Cloud's rate limits: a 429 with Retry-After is waited out on every API the suite
uses, never counts as Langfuse being down, and a first `langfuse setup` (some 55 public-API
calls) gets through a plan of 30 calls per window without a skipped call."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.score_configs import score_definitions
from evaluators.rubric.loader import default_rubric
from tests.servers.langfuse import OK, RateLimit, rate_limited
from tests.support.langfuse_runs import run_replay

pytestmark = pytest.mark.slow  # rate-limit windows waited out for real
runner = CliRunner()
CONFIGS = "/api/public/score-configs"
ITEMS = "/api/public/dataset-items"
WIDGETS = "/api/public/unstable/dashboard-widgets"
OTLP = "/api/public/otel/v1/traces"


def once(path: str, retry_after: str):
    """A 429 with Retry-After on the first POST to `path`, nothing else."""
    seen = {"count": 0}

    def plan(request):
        if request.method == "POST" and request.path == path:
            seen["count"] += 1
            if seen["count"] == 1:
                return rate_limited(retry_after)
        return OK

    return plan


@pytest.mark.parametrize("path", [CONFIGS, ITEMS, WIDGETS])
def test_a_429_with_retry_after_is_waited_out_and_stored_once(small_project, langfuse, path):
    server = langfuse()
    server.faults = once(path, "1")
    command = (["langfuse", "dashboards"] if path == WIDGETS
               else ["langfuse", "setup", "--scenarios-dir", str(small_project["scenarios"])])
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.output
    posts = server.requests_to(path, "POST")
    assert posts[0].status == 429 and posts[1].status in (200, 202)
    assert posts[0].body == posts[1].body  # the same request, sent again
    if path == CONFIGS:
        assert len(server.score_configs) == len(score_definitions(default_rubric()))
    elif path == ITEMS:
        assert len(server.dataset_items) == 5
    else:
        assert len(server.dashboard_widgets) == len({p.body["name"] for p in posts})


def test_a_rate_limited_span_export_is_sent_again_after_the_wait(small_project, langfuse, capsys):
    """OpenTelemetry's exporter gives up when Retry-After exceeds its timeout; the suite waits."""
    server = langfuse(timeout_s=1.0)
    server.faults = once(OTLP, "2")
    code, store = run_replay(small_project)
    assert code == 0
    assert "NOT DELIVERED" not in capsys.readouterr().err
    statuses = [request.status for request in server.requests_to(OTLP)]
    assert statuses[0] == 429 and 200 in statuses
    assert len(server.observation_events) == len(server.observations) == 30  # every span once


def test_first_setup_within_30_calls_a_window_skips_nothing(small_project, langfuse):
    server = langfuse(rate_limit=[RateLimit(points=30, window_s=2.0, resource="public-api")])
    result = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", str(small_project["scenarios"])])
    assert result.exit_code == 0, result.output
    assert "skipped" not in result.output and "unreachable" not in result.output
    assert any(request.status == 429 for request in server.requests)  # the limit was met ...
    assert len(server.score_configs) == len(score_definitions(default_rubric()))  # ... and waited out
    assert len(server.dataset_items) == 5


def test_a_run_against_a_rate_limited_server_delivers_everything(small_project, langfuse, capsys):
    server = langfuse(rate_limit=[RateLimit(points=30, window_s=2.0, resource="public-api")])
    code, store = run_replay(small_project)
    assert code == 0
    err = capsys.readouterr().err
    assert "NOT DELIVERED" not in err and "problem" not in err
    assert any(request.status == 429 for request in server.requests)


def test_a_minute_long_retry_after_is_honoured_and_never_marks_langfuse_unreachable(langfuse_server):
    """Cloud's windows are 60 s: the wait asked for is taken in full (up to 65 s), and a call
    still limited after its waits fails alone; the next call is not skipped as if Langfuse
    were down. (The sleeps are recorded, not slept.)"""
    from langfuse import Langfuse
    from opentelemetry.sdk.trace import TracerProvider

    from evaluators.integrations.langfuse.rest import RATE_LIMIT_WAITS, LangfuseCallFailed, LangfuseRest

    server = langfuse_server(faults=lambda request: rate_limited("60") if request.path == CONFIGS else OK)
    client = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
    waits: list[float] = []
    rest = LangfuseRest(client.api, timeout_s=2, sleep=waits.append)
    with pytest.raises(LangfuseCallFailed) as failed:
        rest.call(rest.api.score_configs.get, what="list score configs")
    assert failed.value.status == 429 and "still rate limited" in str(failed.value)
    assert len(server.requests_to(CONFIGS)) == RATE_LIMIT_WAITS + 1
    assert waits and all(59 <= wait <= 65 for wait in waits)
    assert rest.unreachable is None
    assert rest.call(rest.api.projects.get, what="get project").data  # not skipped
    client.shutdown()


def test_waiting_for_rate_limits_is_bounded_per_push(langfuse_server):
    """Past ten minutes of waiting in one push, a limited call fails at once (still not as
    'unreachable'): a run never waits on a rate limit without end."""
    from langfuse import Langfuse
    from opentelemetry.sdk.trace import TracerProvider

    from evaluators.integrations.langfuse.rest import RATE_LIMIT_BUDGET_S, LangfuseCallFailed, LangfuseRest

    server = langfuse_server(faults=lambda request: rate_limited("60") if request.path == CONFIGS else OK)
    client = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
    clock = {"now": 0.0}

    def sleep(seconds: float) -> None:
        clock["now"] += seconds

    rest = LangfuseRest(client.api, timeout_s=2, sleep=sleep, clock=lambda: clock["now"])  # sleeps move the clock
    for _ in range(3):
        with pytest.raises(LangfuseCallFailed):
            rest.call(rest.api.score_configs.get, what="list score configs")
    assert RATE_LIMIT_BUDGET_S <= rest.gate.waited_s < RATE_LIMIT_BUDGET_S + 7 * 65
    requests = len(server.requests_to(CONFIGS))
    with pytest.raises(LangfuseCallFailed, match="already waited"):
        rest.call(rest.api.score_configs.get, what="list score configs")
    assert len(server.requests_to(CONFIGS)) == requests + 1 and rest.unreachable is None
    client.shutdown()
