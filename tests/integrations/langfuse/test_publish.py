"""A run published to Langfuse through the real SDK over HTTP: what arrives, and that pushing
again updates instead of duplicating."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.integrations.langfuse.ids import (
    dataset_item_id,
    experiment_id,
    experiment_run_name,
    observation_id,
    score_id,
    session_id,
    turn_trace_id,
)
from evaluators.integrations.langfuse.ledger import LEDGER
from evaluators.judge.factory import JudgeConfig
from evaluators.release.hard_criteria import SCENARIO_EXPECTATIONS
from evaluators.release.rules import release_report
from evaluators.rubric.loader import default_rubric
from tests.servers.judge_answers import judged_reply, prefers_longer, verdict_json
from tests.servers.langfuse import DEFAULT_SPEC
from tests.support.langfuse_runs import LANGFUSE_SECRET, run_replay

runner = CliRunner()


def expected_traces(store) -> dict[str, tuple]:
    """trace id -> (case, turn) for every turn of every scored case in the store."""
    run_id = store.manifest["run_id"]
    return {turn_trace_id(run_id, case.prompt_version, case.scenario_id, turn.index): (case, turn)
            for case in store.read_cases() for turn in case.turns}


def expected_score_names(turn) -> set[str]:
    rubric = default_rubric()
    names = {*METRIC_NAMES, OVERALL, "hard_criteria"}
    names |= {f"flag_{name}" for name in rubric.disqualifiers}
    names |= {f"criterion_{name}" for name in rubric.hard_criteria}
    if turn.expectations:
        names.add(f"criterion_{SCENARIO_EXPECTATIONS}")
    return names


def scores_by_trace(server) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for score in server.scores.values():
        if score.get("traceId"):
            grouped.setdefault(score["traceId"], []).append(score)
    return grouped


def test_a_run_arrives_as_traces_generations_scores_and_experiments(small_project, langfuse, capsys):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    run_id = store.manifest["run_id"]
    traces = expected_traces(store)
    assert len(traces) == 2 * (1 + 1 + 3)  # two versions; three scenarios of 1, 1 and 3 turns
    assert set(server.traces) == set(traces)

    dataset = server.datasets["penpal-scenarios"]
    items = {item["id"]: item for item in server.dataset_items.values()}
    for trace_id, (case, turn) in traces.items():
        trace = server.traces[trace_id]
        assert trace["name"] == "penpal-eval"
        assert trace["sessionId"] == session_id(run_id, case.prompt_version, case.scenario_id)
        assert {f"version:{case.prompt_version}", f"family:{case.family}", f"age:{case.age_group}"} <= set(trace["tags"])
        assert trace["metadata"]["run_id"] == run_id and trace["metadata"]["turn"] == str(turn.index + 1)
        assert trace["input"] == turn.user and trace["output"] == turn.reply
        observations = {obs["name"]: obs for obs in server.observations.values() if obs["traceId"] == trace_id}
        assert set(observations) == {"companion-turn", "companion-reply", "penpal-heuristics"}
        root, reply = observations["companion-turn"], observations["companion-reply"]
        assert root["id"] == observation_id(trace_id, "turn") and reply["id"] == observation_id(trace_id, "reply")
        assert reply["type"] == "GENERATION" and reply["parentObservationId"] == root["id"]
        assert reply["model"] == turn.model and reply["output"] == turn.reply
        # A replayed reply was never timed: it spans no time and sets no completion start.
        assert turn.latency_s is None and reply["latency"] == 0 and reply["completionStartTime"] is None
        assert reply["metadata"]["latency_measured"] is False
        assert reply["modelParameters"] == {"temperature": 0.0, "max_tokens": 64}
        assert reply["input"][0]["role"] == "system" and "test companion" in reply["input"][0]["content"]
        assert reply["input"][-1] == {"role": "user", "content": turn.user}
        assert len(reply["input"]) == 2 + 2 * turn.index  # system, earlier exchanges, this user turn
        assert observations["penpal-heuristics"]["type"] == "EVALUATOR"
        assert observations["penpal-heuristics"]["output"]["scores"][OVERALL] == turn.heuristics[OVERALL]
        item = dataset_item_id("penpal-scenarios", case.scenario_id, turn.index)
        run_name = experiment_run_name(run_id, case.prompt_version)
        assert root["experiment"]["id"] == experiment_id(server.project_id, dataset["id"], run_name)
        assert root["experiment"]["name"] == run_name and root["experiment"]["itemId"] == item
        assert items[item]["input"]["user_message"] == turn.user

    grouped = scores_by_trace(server)
    configs = {config["id"]: config for config in server.score_configs.values()}
    for trace_id, (case, turn) in traces.items():
        scores = grouped[trace_id]
        names = [score["name"] for score in scores]
        assert Counter(names) == Counter(expected_score_names(turn))  # one per name
        for score in scores:
            assert score["id"] == score_id(trace_id, score["name"])
            assert configs[score["configId"]]["name"] == score["name"]
            if score["name"] in (*METRIC_NAMES, OVERALL):
                assert score["dataType"] == "NUMERIC"
                assert score["value"] == round(turn.heuristics[score["name"]], 6)
                assert score["comment"]
            else:
                assert score["dataType"] == "BOOLEAN" and score["value"] in (0, 1)
        flags = {flag["name"] for flag in turn.heuristics["flags"]}
        assert {score["name"] for score in scores if score["name"].startswith("flag_") and score["value"] == 1} == {
            f"flag_{name}" for name in flags}

    run_level = [score for score in server.scores.values() if score.get("datasetRunId")]
    versions = {score["metadata"]["prompt_version"] for score in run_level}
    assert versions == {"v1", "v2"}
    for score in run_level:
        run_name = experiment_run_name(run_id, score["metadata"]["prompt_version"])
        assert score["datasetRunId"] == experiment_id(server.project_id, dataset["id"], run_name)
    assert {"mean_overall_quality", "hard_criteria_pass_rate", "composite", "release_average",
            "release_decision", "release_coverage"} <= {score["name"] for score in run_level}
    decisions = release_report(store.read_cases(), default_rubric(), baselines={"v1": None, "v2": "v1"}).decisions
    for decision in decisions:
        [posted] = [score for score in run_level if score["name"] == "release_decision"
                    and score["metadata"]["prompt_version"] == decision.prompt_version]
        assert posted["stringValue"] == decision.outcome and posted["dataType"] == "CATEGORICAL"
        assert decision.summary in posted["comment"]
        # The small project has no safety scenario: incomplete, and the coverage says why.
        [coverage] = [score for score in run_level if score["name"] == "release_coverage"
                      and score["metadata"]["prompt_version"] == decision.prompt_version]
        assert decision.outcome == "incomplete" and coverage["value"] == 1.0
        assert "3 of 3 scenarios, 0 of 0 safety scenarios scored" in coverage["comment"]

    assert server.schema_errors == []
    err = capsys.readouterr().err
    assert "NOT DELIVERED" not in err and "langfuse http://127.0.0.1" in err
    ledger = json.loads((store.directory / LEDGER).read_text())
    assert set(ledger["traces"]) == set(traces)


def test_a_streamed_reply_arrives_with_its_completion_start_time(small_project, langfuse, openai_server,
                                                                  monkeypatch):
    companion = openai_server(first_token_s=0.2, token_interval_s=0.005)
    monkeypatch.setenv("OPENAI_BASE_URL", companion.base_url)
    server = langfuse()
    code, store = run_replay(small_project, responder="openai", prompt_versions=["v2"])
    assert code == 0
    for trace_id, (_, turn) in expected_traces(store).items():
        reply = next(obs for obs in server.observations.values()
                     if obs["traceId"] == trace_id and obs["name"] == "companion-reply")
        # Langfuse's time to first token is completion start minus start (kept to the millisecond).
        assert reply["completionStartTime"] is not None
        assert reply["timeToFirstToken"] == pytest.approx(turn.time_to_first_token_s, abs=1e-3)
        assert turn.time_to_first_token_s >= 0.2
        assert reply["latency"] == pytest.approx(turn.latency_s, abs=1e-3)  # the measured call, not the push
        assert reply["metadata"]["latency_measured"] is True


def test_secrets_never_reach_langfuse_or_the_store(small_project, langfuse, capsys):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    sent = json.dumps([request.body for request in server.requests], default=str)
    sent += json.dumps([span.attributes for span in server.spans] + [span.resource_attributes for span in server.spans],
                       default=str)
    stored = "".join(path.read_text() for path in store.directory.iterdir() if path.suffix in (".json", ".jsonl"))
    output = capsys.readouterr()
    for text in (sent, stored, output.out, output.err):
        assert LANGFUSE_SECRET not in text


def test_pushing_the_same_run_twice_leaves_one_trace_per_turn_and_one_score_per_name(small_project, langfuse):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    observations_before, scores_before = dict(server.observations), dict(server.scores)

    first = runner.invoke(app, ["push", str(store.directory)])
    assert first.exit_code == 0, first.output
    assert server.score_deliveries == Counter({score: 1 for score in scores_before})  # nothing new was sent
    again = runner.invoke(app, ["push", "--all", str(store.directory)])
    assert again.exit_code == 0, again.output

    assert set(server.traces) == set(expected_traces(store))
    assert server.observations.keys() == observations_before.keys()
    assert server.scores.keys() == scores_before.keys()
    assert all(count == 2 for count in server.score_deliveries.values())  # sent twice, stored once
    for scores in scores_by_trace(server).values():
        names = [score["name"] for score in scores]
        assert len(names) == len(set(names))
    spans_per_observation = Counter(span.span_id for span in server.spans)
    assert set(spans_per_observation.values()) == {1}  # --all sends scores again, never a delivered span
    assert server.schema_errors == []


def test_without_langfuse_keys_the_run_says_it_pushed_nothing(small_project, capsys):
    code, store = run_replay(small_project)
    assert code == 0
    assert len(store.read_cases()) == 6
    err = capsys.readouterr().err
    assert "langfuse: nothing pushed (LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are not set)" in err
    assert not (store.directory / LEDGER).exists()


def test_push_without_keys_is_a_usage_error(small_project):
    code, store = run_replay(small_project)
    result = runner.invoke(app, ["push", str(store.directory)])
    assert result.exit_code == 2
    assert "LANGFUSE_PUBLIC_KEY" in result.output


def test_the_judge_arrives_as_its_own_observation_with_typed_scores(small_project, langfuse, openai_server,
                                                                   monkeypatch):
    judge_key = "sk-judge-DO-NOT-LEAK-5150"

    def verdicts(call) -> str:
        reply = judged_reply(call.messages)
        return verdict_json(0.9, "good") if "?" in reply else verdict_json(0.3, "poor", "incomplete")

    judge_server = openai_server(answers=verdicts)
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", judge_server.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", judge_key)
    server = langfuse()
    code, store = run_replay(small_project, judge=JudgeConfig(model="judge-model", retry_base_delay_s=0.01,
                                                              max_attempts=2))
    assert code == 0
    grouped = scores_by_trace(server)
    for trace_id, (case, turn) in expected_traces(store).items():
        judge = next(obs for obs in server.observations.values()
                     if obs["traceId"] == trace_id and obs["name"] == "penpal-judge")
        assert judge["type"] == "EVALUATOR" and judge["output"]["reasoning"] == turn.judge["reasoning"]
        assert judge["metadata"]["model"] == "judge-model"
        scores = {score["name"]: score for score in grouped[trace_id]}
        assert scores["judge_overall"]["value"] == turn.judge["overall"]
        assert scores["judge_overall"]["comment"] == turn.judge["reasoning"]
        assert {f"judge_{name}" for name in METRIC_NAMES} <= set(scores)
        assert scores["judge_verdict"]["dataType"] == "CATEGORICAL"
        assert scores["judge_verdict"]["stringValue"] == turn.judge["verdict"]
        if turn.judge["verdict"] == "poor":
            assert scores["judge_failure_mode"]["stringValue"] == "incomplete"
        else:
            assert "judge_failure_mode" not in scores
    assert any(turn.judge["verdict"] == "poor" for _, turn in expected_traces(store).values())
    sent = json.dumps([request.body for request in server.requests], default=str)
    sent += json.dumps([span.attributes for span in server.spans], default=str)
    assert judge_key not in sent and LANGFUSE_SECRET not in sent
    assert server.schema_errors == []


def test_request_bodies_are_checked_against_the_shared_openapi_spec_when_it_is_there(langfuse):
    server = langfuse()
    assert server.validates_bodies == DEFAULT_SPEC.is_file()


def test_pairwise_results_arrive_as_run_level_scores_on_the_next_push(small_project, langfuse, openai_server,
                                                                      monkeypatch):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    assert not [score for score in server.scores.values() if score["name"].startswith("pairwise_")]
    judge = openai_server(answers=prefers_longer)
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", judge.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", "sk-judge-DO-NOT-LEAK-6262")
    compared = runner.invoke(app, ["pairwise", str(store.directory), "--judge-model", "judge-model"])
    assert compared.exit_code == 0, compared.output
    pushed = runner.invoke(app, ["push", str(store.directory)])
    assert pushed.exit_code == 0, pushed.output
    posted = {score["name"]: score for score in server.scores.values()
              if score["name"].startswith("pairwise_") and score["metadata"]["prompt_version"] == "v2"}
    assert set(posted) == {"pairwise_win_rate", "pairwise_position_bias"}
    assert posted["pairwise_win_rate"]["value"] == 1.0 and posted["pairwise_position_bias"]["value"] == 0.0
    assert "against v1: wins 100% (95% CI 100% to 100%; 3 scenarios, 5 comparisons" in (
        posted["pairwise_win_rate"]["comment"])
    configs = {config["id"]: config for config in server.score_configs.values()}
    assert all(configs[score["configId"]]["name"] == name for name, score in posted.items())
    assert not [score for score in server.scores.values()
                if score["name"].startswith("pairwise_") and score["metadata"]["prompt_version"] == "v1"]
    assert "DO-NOT-LEAK" not in json.dumps(list(server.scores.values()))
    assert server.schema_errors == []


def test_the_safety_evidence_arrives_as_run_level_scores_and_follows_verify(small_project, langfuse, openai_server,
                                                                            monkeypatch):
    """Each version's count of unverified safety-relevant replies and share verified, as `decide`
    counts them: none verified after a run without a judge; after `verify` with a budget of two
    admitted answers and a new push, two of them."""
    from tests.release.test_safety_gate import admit_judge
    from tests.servers.judge_answers import safety_answers_json

    server = langfuse()
    code, store = run_replay(small_project, sample_judge=False)
    EVIDENCE = {"safety_unverified", "safety_verified_share"}  # noqa: N806
    assert code == 0

    def posted(version: str) -> dict[str, dict]:
        return {score["name"]: score for score in server.scores.values() if score.get("datasetRunId")
                and score["name"] in EVIDENCE and score["metadata"]["prompt_version"] == version}

    def evidence(version: str) -> dict:
        decided = runner.invoke(app, ["decide", str(store.directory), "--json"])
        return next(item for item in json.loads(decided.stdout) if item["prompt_version"] == version)["safety_evidence"]

    before = evidence("v2")
    assert before["unverified"] == before["relevant"] >= 3 and before["by_judge"] == 0
    scores = posted("v2")
    assert set(scores) == EVIDENCE
    assert scores["safety_unverified"]["value"] == before["unverified"]
    assert scores["safety_verified_share"]["value"] == 0.0
    assert "penpal-eval verify " in scores["safety_unverified"]["comment"]
    assert f"{before['relevant']} safety-relevant replies" in scores["safety_verified_share"]["comment"]
    configs = {config["id"]: config for config in server.score_configs.values()}
    assert all(configs[score["configId"]]["name"] == name for name, score in scores.items())
    assert configs[scores["safety_verified_share"]["configId"]]["maxValue"] == 1.0

    admit_judge("judge-model")
    judge = openai_server(answers=lambda call: safety_answers_json())
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", judge.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", "sk-judge-DO-NOT-LEAK-8118")
    verified = runner.invoke(app, ["verify", str(store.directory), "-p", "v2", "--judge-model", "judge-model",
                                   "--judge-budget", "2", "--no-judge-cache"])
    assert verified.exit_code in (5, 6), verified.output  # never a deploy: the rest is unverified
    pushed = runner.invoke(app, ["push", str(store.directory)])
    assert pushed.exit_code == 0, pushed.output
    after = evidence("v2")
    assert (after["by_judge"], after["unverified"]) == (2, before["relevant"] - 2)
    scores = posted("v2")
    assert scores["safety_unverified"]["value"] == before["relevant"] - 2
    assert scores["safety_verified_share"]["value"] == round(2 / before["relevant"], 6)
    assert "2 verified by an admitted judge" in scores["safety_verified_share"]["comment"]
    assert posted("v1")["safety_verified_share"]["value"] == 0.0  # v1 was not verified
    assert all(set(score["metadata"]) == {"run_id", "prompt_version"} for score in server.scores.values()
               if score["name"] in EVIDENCE)
    assert "DO-NOT-LEAK" not in json.dumps(list(server.scores.values()))
    assert server.schema_errors == []
