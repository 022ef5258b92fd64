"""Latency and speaking time per version (evaluators.release.latency), measured on real runs through the
`openai` SDK against the local server's paced streams."""

from __future__ import annotations

import pytest

from evaluators.pipeline import run_evaluation
from evaluators.release.aggregates import version_aggregates
from evaluators.release.latency import percentile, speaking_seconds, spread, version_latency
from evaluators.rubric.loader import default_rubric
from evaluators.scoring.api import default_evaluator
from tests.support.release_factory import make_case, scores
from tests.support.runs import config, use_server

pytestmark = pytest.mark.usefixtures("no_api_configured")
FIRST_TOKEN_S = 0.3  # long enough that scheduling noise under load stays well inside 50 ms


def test_percentiles_interpolate_between_ranks_as_numpy_does():
    values = [0.5, 0.1, 0.4, 0.2, 0.3]
    assert percentile(values, 0.5) == pytest.approx(0.3)
    # rank 0.95 x 4 = 3.8: 0.4 + 0.8 x (0.5 - 0.4)
    assert percentile(values, 0.95) == pytest.approx(0.48)
    assert spread([None, 2.0]).model_dump() == {"p50": 2.0, "p95": 2.0, "count": 1}
    assert spread([None, None]) is None


def test_speaking_time_is_the_words_at_the_rubrics_speaking_rate():
    voice = default_rubric().voice
    assert speaking_seconds("I'm here with you, and that's okay.", voice) == pytest.approx(7 / voice.speaking_rate_wps)


def test_replayed_replies_have_speaking_time_but_no_latency_not_zero():
    cases = [make_case("v", f"s{index}", scores(0.8), reply="word " * (10 * (index + 1))) for index in range(3)]
    latency = version_latency(cases, default_rubric().voice)
    assert latency.timed_turns == 0 and latency.replayed_turns == 3 and not latency.measured
    assert latency.time_to_first_token_s is None and latency.total_s is None and latency.tokens_per_s is None
    assert latency.speaking_s.p50 == pytest.approx(20 / default_rubric().voice.speaking_rate_wps)


def test_a_run_measures_time_to_first_token_within_50_ms_of_the_servers_delay(small_project, openai_server,
                                                                             monkeypatch):
    server = openai_server(first_token_s=FIRST_TOKEN_S, token_interval_s=0.01)
    use_server(monkeypatch, server)
    # Two conversations at a time: the server and the scoring share this process, and the test is
    # of the measurement, not of how busy the machine is.
    report = run_evaluation(config(small_project, responder="openai", timeout_s=10.0, concurrency=2),
                            default_evaluator())
    turns = [turn for case in report.outcome.cases for turn in case.turns]
    assert len(turns) == len(server.calls) == 10
    for turn in turns:  # the first word cannot come before the server sends it
        assert turn.time_to_first_token_s >= FIRST_TOKEN_S
        assert turn.latency_s >= turn.time_to_first_token_s
        assert turn.tokens_per_s is not None and turn.tokens_per_s <= 100  # one word per >= 10 ms
    measured = {version: aggregate.latency
                for version, aggregate in version_aggregates(report.outcome.cases, default_rubric()).items()}
    for version, latency in measured.items():
        assert latency.timed_turns == 5 and latency.cached_turns == 0
        assert 0 <= latency.time_to_first_token_s.p50 - FIRST_TOKEN_S <= 0.05, version
        assert latency.total_s.p50 >= latency.time_to_first_token_s.p50

    # Served again from the response cache, the replies keep the timings of the calls that made them.
    again = run_evaluation(config(small_project, responder="openai", timeout_s=10.0, concurrency=2),
                           default_evaluator())
    assert len(server.calls) == 10
    for version, aggregate in version_aggregates(again.outcome.cases, default_rubric()).items():
        cached = aggregate.latency
        assert cached.cached_turns == cached.timed_turns == 5
        assert cached.time_to_first_token_s == measured[version].time_to_first_token_s
