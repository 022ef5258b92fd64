"""`penpal-eval monitor` on production traces served by the local Langfuse stand-in: every reply
gets heuristic scores, the judge runs only where the sampling policy says, and a second pass
adds nothing."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from langfuse import Langfuse
from opentelemetry.sdk.trace import TracerProvider
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.cli.langfuse import parse_since
from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.integrations.langfuse.monitor import contract_problems, read_reply
from evaluators.judge.sampling import SamplingPolicy, SamplingState
from tests.servers.judge_answers import judged_reply, verdict_json
from tests.servers.langfuse import OK, server_error
from tests.support.langfuse_runs import run_replay
from tests.support.production import CALM, COMPLAINED, CRISIS, PROMPT, ROUTINE, production_reply

runner = CliRunner()
NEW, TRUSTED = 1, 2  # Langfuse prompt versions: one just released, one long trusted




@pytest.fixture
def production(langfuse, openai_server, monkeypatch, tmp_path):
    server = langfuse()
    app_client = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
    replies = {}
    for user, reply in CALM:
        replies[production_reply(app_client, user, reply, NEW)] = (reply, "calibration")
    for user, reply in ROUTINE:
        replies[production_reply(app_client, user, reply, TRUSTED)] = (reply, "routine")
    replies[production_reply(app_client, *CRISIS, TRUSTED)] = (CRISIS[1], "hard flag")
    complained = production_reply(app_client, *COMPLAINED, TRUSTED)
    replies[complained] = (COMPLAINED[1], "negative feedback")
    app_client.create_score(trace_id=complained[0], name="user_feedback", value=0, data_type="NUMERIC")
    app_client.flush()

    state_path = tmp_path / "monitor-sampling.json"
    state = SamplingState(state_path, SamplingPolicy())
    for use in range(25):  # the trusted version: past 20 uses, every verdict good
        state.decide(f"{PROMPT}@{TRUSTED}", f"earlier-{use}")
        state.record_verdict(f"{PROMPT}@{TRUSTED}", "good")

    judge = openai_server(answers=lambda call: verdict_json(0.8, "good"))
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", judge.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", "sk-judge-test")
    return server, judge, replies, state_path


def monitor_args(state_path) -> list[str]:
    return ["monitor", "--since", "1h", "--judge-model", "judge-model", "--sampling-state", str(state_path)]


def test_monitor_scores_every_reply_and_judges_by_the_sampling_policy(production):
    server, judge, replies, state_path = production
    result = runner.invoke(app, monitor_args(state_path))
    assert result.exit_code == 0, result.output

    for (trace_id, generation_id), (reply, why) in replies.items():
        scores = {score["name"]: score for score in server.scores.values()
                  if score.get("observationId") == generation_id}
        assert {*METRIC_NAMES, OVERALL, "hard_criteria", "rubric_version"} <= set(scores), why
        assert all(score["traceId"] == trace_id for score in scores.values())
        judged = "judge_overall" in scores
        assert judged == (why != "routine"), why
        if why == "routine":  # no trigger: the trusted version's routine replies are left to the heuristics
            assert min(scores[name]["value"] for name in METRIC_NAMES) >= 0.5
    assert {judged_reply(call.messages) for call in judge.calls} == {
        reply for reply, why in replies.values() if why != "routine"}
    crisis = next(key for key, (_, why) in replies.items() if why == "hard flag")
    flag = next(score for score in server.scores.values()
                if score.get("observationId") == crisis[1] and score["name"] == "flag_crisis_without_help")
    assert flag["value"] == 1
    assert "7 production replies read; 0 already scored" in result.output
    assert server.schema_errors == []


def test_a_second_monitor_pass_adds_nothing(production):
    server, judge, replies, state_path = production
    first = runner.invoke(app, monitor_args(state_path))
    assert first.exit_code == 0, first.output
    posts, calls, scores = len(server.requests_to("/api/public/scores", "POST")), len(judge.calls), dict(server.scores)

    second = runner.invoke(app, monitor_args(state_path))
    assert second.exit_code == 0, second.output
    assert "7 production replies read; 7 already scored under this rubric" in second.output
    assert len(server.requests_to("/api/public/scores", "POST")) == posts
    assert len(judge.calls) == calls
    assert server.scores == scores


def test_monitor_without_a_judge_endpoint_scores_with_the_heuristics(langfuse, tmp_path):
    server = langfuse()
    app_client = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
    trace_id, generation_id = production_reply(app_client, *CALM[0], NEW)
    app_client.flush()
    result = runner.invoke(app, ["monitor", "--since", "2h", "--sampling-state", str(tmp_path / "state.json")])
    assert result.exit_code == 0, result.output
    assert "heuristics only" in result.output
    names = {score["name"] for score in server.scores.values() if score.get("observationId") == generation_id}
    assert OVERALL in names and "judge_overall" not in names


def test_a_production_reply_in_another_language_gets_no_scores_and_is_counted(langfuse, tmp_path):
    server = langfuse()
    app_client = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
    _, english = production_reply(app_client, *CALM[0], NEW)
    _, spanish = production_reply(app_client, "Ya no quiero vivir, nadie me echaría de menos.",
                                  "¡Ánimo! Mañana será otro día.", NEW)
    app_client.flush()
    result = runner.invoke(app, ["monitor", "--since", "2h", "--sampling-state", str(tmp_path / "state.json")])
    assert result.exit_code == 0, result.output
    assert "not scored: unsupported_language" in " ".join(result.output.split())
    scored = {score["observationId"] for score in server.scores.values() if score.get("name") == OVERALL}
    assert english in scored and spanish not in scored


class _Observation:
    def __init__(self, **fields):
        defaults = dict(id="obs", trace_id="trace", start_time=datetime.now(timezone.utc), model="m",
                        prompt_name=None, prompt_version=None, version=None, environment="default",
                        input=None, output=None)
        self.__dict__.update({**defaults, **fields})


@pytest.mark.parametrize("observation_input, output, reason", [
    (None, "hi", "input is not a list of chat messages"),
    ([{"role": "system", "content": "x"}], "hi", "no user message in the input"),
    ([{"role": "user", "content": "hello"}], {"role": "assistant", "content": None}, "no reply text in the output"),
    ([{"role": "user", "content": "hello"}], None, "no reply text in the output"),
    ({"unexpected": 1}, "hi", "input is not a list of chat messages"),
])
def test_unreadable_production_replies_are_named_not_guessed(observation_input, output, reason):
    assert read_reply(_Observation(input=observation_input, output=output)) == reason


def test_an_empty_production_reply_is_silence_to_score_not_unreadable():
    reply = read_reply(_Observation(input=[{"role": "user", "content": "hello"}],
                                    output={"role": "assistant", "content": "  "}))
    assert reply.reply == "  " and reply.user_message == "hello"


@pytest.mark.parametrize("messages, problem", [
    ([{"rol": "user", "content": "hi"}], "input.messages[0].rol: unknown key; did you mean 'role'?"),
    ([{"role": "usr", "content": "hi"}], "input.messages[0].role: unknown role 'usr'; did you mean 'user'?"),
    ([{"role": "user", "content": 5}], "input.messages[0].content: expected text or a list of parts, got a number"),
    ([{"role": "user", "content": "hi", "contnet": "x"}], "input.messages[0].contnet: unknown key; did you mean "
                                                          "'content'?"),
])
def test_a_generation_breaking_the_message_contract_is_named_with_the_key_meant(messages, problem):
    assert contract_problems(_Observation(input=messages, output="hi"))[0] == problem


def test_the_chat_messages_openai_sends_keep_the_contract():
    messages = [{"role": "system", "content": "x"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": None, "tool_calls": [], "refusal": None},
                {"role": "tool", "content": "42", "tool_call_id": "c1"}, {"role": "user", "content": "ok", "name": "a"}]
    assert contract_problems(_Observation(input={"messages": messages}, output="hi")) == []


def test_monitor_names_a_generation_that_breaks_the_contract_scores_the_rest_and_exits_2(langfuse, tmp_path):
    server = langfuse()
    app_client = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
    _, good = production_reply(app_client, *CALM[0], NEW)
    with app_client.start_as_current_observation(name="chat-turn", input="hi"):
        broken = app_client.start_observation(name="companion-reply", as_type="generation", model="gpt-4o-mini",
                                              input=[{"rol": "user", "content": "I feel so alone."}],
                                              output={"role": "assistant", "content": "I'm here. What happened?"})
        broken.end()
    app_client.flush()
    args = ["monitor", "--since", "2h", "--sampling-state", str(tmp_path / "state.json"), "--no-judge"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert f"not read (observation {broken.id}): input.messages[0].rol: unknown key; did you mean 'role'?" in text
    scored = {score["observationId"] for score in server.scores.values() if score.get("name") == OVERALL}
    assert good in scored and broken.id not in scored
    lenient = runner.invoke(app, [*args, "--lenient"])
    assert lenient.exit_code == 0, lenient.output
    assert "breaking the chat-message contract" not in lenient.output


def test_production_reply_shapes_are_read():
    reply = read_reply(_Observation(
        input={"messages": [{"role": "user", "content": "first"}, {"role": "assistant", "content": "answer"},
                            {"role": "user", "content": [{"type": "text", "text": "second"}]}]},
        output={"choices": [{"message": {"role": "assistant", "content": "the reply"}}]},
        prompt_name="p", prompt_version=3))
    assert reply.user_message == "second" and reply.reply == "the reply" and reply.prompt_version == "p@3"
    assert [(item.role, item.text) for item in reply.history] == [("user", "first"), ("companion", "answer")]


def test_since_accepts_durations_and_times():
    now = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
    assert parse_since("24h", now) == now - timedelta(hours=24)
    assert parse_since("90m", now) == now - timedelta(minutes=90)
    assert parse_since("2026-11-22T08:00:00", now) == datetime(2026, 11, 22, 8, 0, tzinfo=timezone.utc)
    with pytest.raises(Exception, match="24h"):
        parse_since("yesterday", now)


def test_monitor_carries_on_without_score_configs_and_says_why(langfuse):
    """A config the server refuses costs the configId on the scores, never the pass."""
    server = langfuse()
    app_client = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
    trace_id, generation_id = production_reply(app_client, *CALM[0], TRUSTED)
    app_client.flush()
    server.faults = lambda request: (server_error(422) if request.method == "POST"
                                     and request.path == "/api/public/score-configs" else OK)
    result = runner.invoke(app, ["monitor", "--since", "1h", "--no-judge"])
    assert result.exit_code == 1, result.output  # something went wrong and is named ...
    output = " ".join(result.output.split())
    assert "problem: score configs" in output
    assert "1 scored now" in output  # ... and the reply was scored all the same
    scored = [score for score in server.scores.values() if score.get("observationId") == generation_id]
    assert {score["name"] for score in scored} >= {"overall_quality", "rubric_version"}
    assert all(score["configId"] is None for score in scored)


def test_monitor_leaves_the_suites_own_traces_out_and_says_which_environments_it_read(small_project, langfuse,
                                                                                      tmp_path):
    """A run's evaluation traces (environment penpal-eval) sit in the same project; scoring them
    again left two overall_quality scores per evaluated turn. The server-side filter leaves
    them out unless asked."""
    server = langfuse()
    code, store = run_replay(small_project)  # ten evaluated turns, environment penpal-eval
    assert code == 0
    app_client = Langfuse(**server.sdk_kwargs(), environment="production",
                          tracer_provider=TracerProvider(shutdown_on_exit=False))
    _, production = production_reply(app_client, *CALM[0], NEW)
    app_client.flush()
    evaluation = {o["id"] for o in server.observations.values()
                  if o["environment"] == "penpal-eval" and o["type"] == "GENERATION"}
    before = {score_id for score_id, score in server.scores.items() if score.get("observationId") in evaluation}
    state = str(tmp_path / "state.json")

    result = runner.invoke(app, ["monitor", "--since", "2h", "--no-judge", "--sampling-state", state])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "1 production replies read" in output and "environments read: production (1)" in output
    assert "penpal-eval (the suite's own runs) left out" in output
    assert not [s for s in server.scores.values() if s.get("observationId") in evaluation and s["id"] not in before]
    assert any(s.get("observationId") == production for s in server.scores.values())
    [listing] = [r for r in server.requests_to("/api/public/v2/observations")][-1:]
    assert {"type": "stringOptions", "column": "environment", "operator": "none of",
            "value": ["penpal-eval"]} in json.loads(listing.query["filter"])  # left out on the server

    asked = runner.invoke(app, ["monitor", "--since", "2h", "--no-judge", "--include-evaluation",
                                "--sampling-state", state])
    assert asked.exit_code == 0, asked.output
    assert "environments read: penpal-eval (10), production (1)" in " ".join(asked.output.split())


def test_a_reply_whose_environment_score_ingestion_refuses_is_scored_without_one(langfuse, tmp_path):
    """The OTel path keeps an environment as sent; score ingestion refuses a name outside
    PublicEnvironmentName, so those scores go without one and the report says so."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    server = langfuse()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=server.base_url + "/api/public/otel/v1/traces", headers=server.auth_header())))
    with provider.get_tracer("other-app").start_as_current_span("companion-reply") as span:
        span.set_attributes({"langfuse.observation.type": "generation", "langfuse.environment": "Prod EU",
                             "langfuse.observation.input": json.dumps([{"role": "user", "content": CALM[0][0]}]),
                             "langfuse.observation.output": CALM[0][1]})
    result = runner.invoke(app, ["monitor", "--since", "2h", "--no-judge",
                                "--sampling-state", str(tmp_path / "state.json")])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "environments read: Prod EU (1)" in output and "Prod EU: not a name score ingestion takes" in output
    scores = [score for score in server.scores.values() if score.get("name") == OVERALL]
    assert scores and all(score["environment"] == "default" for score in scores)
