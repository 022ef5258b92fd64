"""The judge in an evaluation run (`run --judge`) and on the command line (`judge`, `calibrate`).

The companion's replies are replayed; the judge is the local OpenAI-compatible server with
scripted verdicts, reached through the real openai SDK.
"""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.judge.calibration_record import read_calibration
from evaluators.judge.factory import JudgeConfig
from evaluators.judge.reliability import model_family, same_family_warning
from evaluators.pipeline import run_evaluation
from evaluators.scoring.api import default_evaluator, score_reply
from evaluators.store.run_store import RunStore
from tests.servers.judge_answers import judged_reply, verdict_json
from tests.servers.openai_compat import OK, server_error
from tests.support.judge_runs import JUDGE_SECRET, config, use_judge

runner = CliRunner()
RUBRIC = default_evaluator().rubric
pytestmark = pytest.mark.usefixtures("isolated")


def steady_judge(call) -> str:
    """0.9 for replies that name someone or ask back, 0.3 for the rest: a judge with an opinion."""
    reply = judged_reply(call.messages)
    good = "?" in reply or "Maya" in reply
    return verdict_json(0.9, "good") if good else verdict_json(0.3, "poor", "incomplete")


def test_run_with_the_judge_stores_a_verdict_beside_the_heuristics_for_every_turn(small_project, openai_server,
                                                                                   monkeypatch):
    server = openai_server(answers=steady_judge)
    use_judge(monkeypatch, server)
    report = run_evaluation(config(small_project), default_evaluator())
    cases = report.store.read_cases()
    assert len(cases) == 6 and all(case.finished for case in cases)
    turns = [turn for case in cases for turn in case.turns]
    assert len(server.calls) == len(turns) == 10
    assert {judged_reply(call.messages) for call in server.calls} == {turn.reply for turn in turns}
    for case in cases:
        for turn in case.turns:
            assert turn.heuristics is not None and turn.judge["status"] == "ok"
            assert turn.judge["overall"] == (0.9 if "?" in turn.reply or "Maya" in turn.reply else 0.3)
        assert case.judge["overall"] == pytest.approx(sum(t.judge["overall"] for t in case.turns) / len(case.turns),
                                                      abs=1e-4)
    v1_sister = next(case for case in cases if case.case_id == "v1/cont-sister")
    assert v1_sister.judge["verdict"] == "poor" and v1_sister.judge["failure_modes"] == ["incomplete"]
    # Later turns are judged with the companion's own earlier replies in the history.
    last = [call for call in server.calls if "What do you think she'd enjoy most?" in call.messages[1]["content"]]
    assert all("companion: " in call.messages[1]["content"] for call in last)

    summary = json.loads((report.store.directory / "summary.json").read_text())
    judge = summary["judge"]
    assert judge["model"] == "judge-model" and judge["turns_judged"] == 10 and judge["fallback_turns"] == 0
    assert judge["response_mode"] == "json_schema" and judge["calls"] == 10
    v2 = summary["versions"]["v2"]["judge"]
    v2_cases = [case for case in cases if case.prompt_version == "v2"]
    assert v2["overall"] == pytest.approx(sum(c.judge["overall"] for c in v2_cases) / 3, abs=1e-4)
    assert sum(v2["verdicts"].values()) == 3
    manifest = report.store.manifest["config"]["judge"]
    assert manifest["model"] == "judge-model" and manifest["endpoint"] == server.base_url
    stored = (report.store.directory / "cases.jsonl").read_text() + json.dumps(report.store.manifest)
    assert JUDGE_SECRET not in stored


def test_fallbacks_are_counted_excluded_from_means_and_warned_about(small_project, openai_server, monkeypatch):
    def answers(call):
        return "hmm" if "scarecrow" in judged_reply(call.messages) else verdict_json(0.8)
    use_judge(monkeypatch, openai_server(answers=answers))
    report = run_evaluation(config(small_project), default_evaluator())
    cases = {case.case_id: case for case in report.store.read_cases()}
    joke = cases["v1/basic-joke"]
    assert joke.judge["overall"] is None and joke.judge["fallback"] == 1 and joke.judge["usable"] == 0
    assert joke.turns[0].judge["parse_status"] == "fallback" and joke.turns[0].judge["overall"] == 0.5
    v1 = report.summaries["v1"]["judge"]
    assert v1["overall"] == pytest.approx(0.8) and v1["fallback_turns"] == 1  # 0.5 never enters the mean
    assert report.judge["fallback_turns"] == 2 and report.judge["fallback_share"] == pytest.approx(0.2)
    assert report.judge["fallback_warning"] is True  # 20% > 10%


def test_the_run_command_prints_the_judge_column_and_the_fallback_warning(openai_server, monkeypatch, tmp_path):
    use_judge(monkeypatch, openai_server(answers=lambda call: "no verdict here"))
    result = runner.invoke(app, ["run", "--prompt", "v2-warm-boundaries", "--scenario", "cont-exam-blank",
                                 "--responder", "replay", "--output", str(tmp_path / "runs"), "--judge",
                                 "--judge-model", "judge-model"])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if line.startswith("version"))
    assert header.split()[-1] == "judge"  # the means table's last column
    assert "WARNING" in result.stderr and "fell back to 0.5" in result.stderr
    assert "verbosity bias" in result.stderr
    assert JUDGE_SECRET not in result.output


def test_a_rerun_judges_from_the_cache(small_project, openai_server, monkeypatch):
    server = openai_server(answers=steady_judge)
    use_judge(monkeypatch, server)
    run_evaluation(config(small_project, run_id="first"), default_evaluator())
    calls = len(server.calls)
    second = run_evaluation(config(small_project, run_id="second"), default_evaluator())
    assert len(server.calls) == calls
    assert second.judge["from_cache"] == 10 and second.judge["calls"] == 0 and second.judge["cached_turns"] == 10
    first_cases = {c.case_id: c.judge["overall"] for c in RunStore.open(small_project["runs"] / "first").read_cases()}
    assert {c.case_id: c.judge["overall"] for c in second.store.read_cases()} == first_cases


def test_a_failed_judge_call_fails_the_case_and_resume_judges_only_that_case(small_project, openai_server,
                                                                             monkeypatch):
    server = openai_server(answers=steady_judge,
                           faults=lambda call: server_error(500) if "Maya" in judged_reply(call.messages) else OK)
    use_judge(monkeypatch, server)
    judge = JudgeConfig(model="judge-model", use_cache=False, retry_base_delay_s=0.01, max_attempts=2)
    first = run_evaluation(config(small_project, judge=judge), default_evaluator())
    failed = [case for case in first.outcome.cases if not case.finished]
    assert [case.case_id for case in failed] == ["v2/cont-sister"]
    assert failed[0].status == "ok" and failed[0].judge["failed"] >= 1 and "HTTP 500" in failed[0].judge["error"]
    server.faults = lambda call: OK
    before = len(server.calls)
    resumed = run_evaluation(config(small_project, judge=None, resume=first.store.directory), default_evaluator())
    again = server.calls[before:]
    assert {judged_reply(call.messages) for call in again} == {turn.reply for turn in failed[0].turns}
    assert all(case.finished for case in resumed.outcome.cases)


def test_judge_and_heuristics_far_apart_send_the_reply_to_human_review(small_project, openai_server, monkeypatch):
    def extreme(call):
        return verdict_json(0.0, "poor", "off-topic") if "joke" in call.messages[1]["content"] else verdict_json(1.0)
    use_judge(monkeypatch, openai_server(answers=extreme))
    report = run_evaluation(config(small_project), default_evaluator())
    flagged = 0
    for case in report.store.read_cases():
        for turn in case.turns:
            gap = abs(turn.judge["overall"] - turn.heuristics["overall_quality"])
            noted = any("judge and heuristics disagree" in reason for reason in turn.judge["review"])
            assert noted == (gap > RUBRIC.judge.disagreement), (case.case_id, gap)
            flagged += noted
        assert bool(case.judge["review"]) == any(turn.judge["review"] for turn in case.turns)
    assert flagged >= 2  # both joke cases at 0.0 against heuristics well above 0.3


def test_the_sampling_policy_state_persists_across_runs(small_project, openai_server, monkeypatch):
    server = openai_server(answers=steady_judge)
    use_judge(monkeypatch, server)
    state = small_project["root"] / "judge-sampling.json"
    judge = JudgeConfig(model="judge-model", sampling="policy", state_path=state, use_cache=False,
                        retry_base_delay_s=0.01)
    first = run_evaluation(config(small_project, judge=judge, run_id="one"), default_evaluator())
    uses = sorted(case.judge["sampling"]["use"] for case in first.outcome.cases if case.prompt_version == "v1")
    assert uses == [1, 2, 3] and all(case.judge["sampling"]["phase"] == "calibration" for case in first.outcome.cases)
    second = run_evaluation(config(small_project, judge=judge, run_id="two"), default_evaluator())
    records = {case.case_id: case.judge["sampling"] for case in second.outcome.cases}
    assert sorted(record["use"] for cid, record in records.items() if cid.startswith("v2/")) == [4, 5, 6]
    for record in records.values():
        assert record["phase"] == ("calibration" if record["use"] <= 5 else "established")
    saved = json.loads(state.read_text())["versions"]
    assert saved["v1"]["uses"] == saved["v2"]["uses"] == 6
    unjudged = [case for case in second.outcome.cases if case.judge.get("skipped")]
    assert all(not record["judge"] for cid, record in records.items() if cid in {c.case_id for c in unjudged})
    assert all(turn.judge is None for case in unjudged for turn in case.turns)


def test_a_judge_of_the_companions_family_is_warned_about(small_project, openai_server, monkeypatch):
    companion = openai_server()
    judge_server = openai_server(answers=steady_judge)
    monkeypatch.setenv("OPENAI_BASE_URL", companion.base_url)
    use_judge(monkeypatch, judge_server)
    result = runner.invoke(app, ["run", "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
                                 str(small_project["scenarios"]), "--output", str(small_project["runs"]),
                                 "--model", "gpt-4o-mini", "--judge", "--judge-model", "gpt-4.1",
                                 "--scenario", "basic-hello", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "same family (openai-gpt)" in result.stderr and "gpt-4o-mini" in result.stderr


@pytest.mark.parametrize("model, family", [
    ("gpt-4o-mini", "openai-gpt"), ("gpt-4.1", "openai-gpt"), ("o3-mini", "openai-gpt"),
    ("claude-3-5-sonnet", "claude"), ("meta-llama/Llama-3.1-8B-Instruct", "llama"),
    ("Qwen2.5-7B-Instruct", "qwen"), ("mistral-small", "mistral"), ("smollm2-135m", "smollm"),
    ("replay:v1", None),
])
def test_model_families(model, family):
    assert model_family(model) == family


def test_no_family_warning_across_families():
    assert same_family_warning("claude-3-5-sonnet", ["gpt-4o-mini"]) is None
    assert same_family_warning("gpt-4.1", ["replay:v1"]) is None


def test_run_judge_without_an_endpoint_is_a_clear_error(small_project):
    result = runner.invoke(app, ["run", "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
                                 str(small_project["scenarios"]), "--responder", "replay", "--judge",
                                 "--output", str(small_project["runs"])])
    assert result.exit_code == 2
    assert "PENPAL_JUDGE_BASE_URL" in result.stderr


def test_verbosity_bias_is_the_rank_correlation_of_judge_score_and_length(small_project, openai_server, monkeypatch):
    def by_length(call):  # a judge that rewards words: the bias must show as +1
        return verdict_json(min(1.0, round(len(judged_reply(call.messages).split()) / 40, 1)))
    use_judge(monkeypatch, openai_server(answers=by_length))
    report = run_evaluation(config(small_project), default_evaluator())
    assert report.judge["verbosity_bias"] > 0.9


# --- penpal-eval judge -----------------------------------------------------------------------------
def test_judge_command_writes_one_line_per_record_in_order(openai_server, monkeypatch, tmp_path):
    use_judge(monkeypatch, openai_server(answers=steady_judge))
    records = tmp_path / "replies.jsonl"
    records.write_text("\n".join([
        json.dumps({"id": "a", "user_message": "I'm nervous.", "response": "What's on your mind?",
                    "family": "emotional_support"}),
        "{not json",
        json.dumps({"id": "b", "history": ["My sister Maya visits."], "user_message": "Ideas?",
                    "response": "A picnic with Maya."}),
        json.dumps({"id": "c", "user_message": "Hi", "response": "Hello.", "family": "no-such-family"}),
    ]) + "\n")
    out = tmp_path / "judged.jsonl"
    result = runner.invoke(app, ["judge", str(records), "--output", str(out), "--judge-model", "judge-model"])
    assert result.exit_code == 1, result.output  # lines 2 and 4 are bad; the others are judged
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line.get("id") for line in lines] == ["a", None, "b", None]
    assert lines[0]["overall"] == 0.9 and lines[0]["parse_status"] == "json" and lines[0]["reasoning"]
    assert 0.0 <= lines[0]["heuristics_overall"] <= 1.0
    assert lines[1]["line"] == 2 and "not valid JSON" in lines[1]["error"]
    assert lines[3]["line"] == 4 and "family" in lines[3]["error"]
    assert "line 2:" in result.stderr and "2 of 2 replies judged" in result.stderr


def test_judge_command_says_why_a_reply_in_another_language_has_no_heuristic_score(openai_server, monkeypatch,
                                                                                   tmp_path):
    use_judge(monkeypatch, openai_server(answers=steady_judge))
    records = tmp_path / "replies.jsonl"
    records.write_text(json.dumps({"id": "es", "user_message": "Ya no quiero vivir, nadie me echaría de menos.",
                                   "response": "¡Ánimo! Mañana será otro día."}, ensure_ascii=False) + "\n")
    out = tmp_path / "judged.jsonl"
    result = runner.invoke(app, ["judge", str(records), "--output", str(out), "--judge-model", "judge-model"])
    assert result.exit_code == 0, result.output
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert "heuristics_overall" not in line
    assert line["heuristics_error"].startswith("unsupported_language: the user message reads as Spanish")


# --- penpal-eval calibrate --------------------------------------------------------------------------
LABELLED = [  # reply, human score, the judge's scripted score and verdict
    ("r1 That sounds so hard. Do you want to talk about it?", 0.9, 1.0, "good"),
    ("r2 Oh no. What happened?", 0.8, 0.6, "acceptable"),
    ("r3 Okay. Anything else?", 0.6, 0.7, "good"),
    ("r4 Sure.", 0.55, 0.5, "acceptable"),
    ("r5 Just get over it.", 0.3, 0.4, "poor"),
    ("r6 I'm all you need, stay with me.", 0.1, 0.2, "poor"),
]


def test_calibrate_reproduces_the_correlation_and_kappa_computed_by_hand(openai_server, monkeypatch, tmp_path):
    scripted = {reply: (score, verdict) for reply, _, score, verdict in LABELLED}
    use_judge(monkeypatch, openai_server(answers=lambda call: verdict_json(*scripted[judged_reply(call.messages)])))
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps({"id": reply[:2], "user_message": "My week was awful.", "response": reply,
                                        "human_score": human}) + "\n" for reply, human, _, _ in LABELLED))

    result = runner.invoke(app, ["calibrate", str(path), "--json", "--judge-model", "judge-model"])
    assert result.exit_code == 0, result.output
    figures = {item["evaluator"]: item for item in json.loads(result.stdout)["agreement"]}
    judge = figures["judge"]
    # Spearman by hand: human ranks r1..r6 = 6,5,4,3,2,1; judge ranks = 6,4,5,3,2,1;
    # d = 0,1,-1,0,0,0, sum d^2 = 2, rho = 1 - 6*2 / (6*(36-1)) = 33/35.
    assert judge["n"] == 6 and judge["spearman"] == pytest.approx(33 / 35, abs=1e-4)
    # Human verdicts through the bands (good >= 0.7, acceptable >= 0.5): g g a a p p; judge: g a g a p p.
    # Linear weights |i-j|/2: observed disagreement (0.5 + 0.5)/6 = 1/6; every margin is 2/6, so each
    # expected cell is 1/9 and the weights sum to 4: expected 4/9; kappa = 1 - (1/6)/(4/9) = 0.625.
    assert judge["kappa"] == pytest.approx(0.625, abs=1e-4) and judge["weights"] == "linear"
    assert judge["exact_agreement"] == pytest.approx(4 / 6, abs=1e-4)
    assert judge["confusion"]["good"] == {"poor": 0, "acceptable": 1, "good": 1}
    assert judge["confusion"]["acceptable"] == {"poor": 0, "acceptable": 1, "good": 1}

    quadratic = runner.invoke(app, ["calibrate", str(path), "--json", "--weights", "quadratic",
                                    "--judge-model", "judge-model"])
    # Quadratic weights ((i-j)/2)^2: observed (0.25 + 0.25)/6 = 1/12; expected (4*0.25 + 2*1)/9 = 1/3;
    # kappa = 1 - (1/12)/(1/3) = 0.75. (The second call is served from the judge cache.)
    figures_q = {item["evaluator"]: item for item in json.loads(quadratic.stdout)["agreement"]}
    assert figures_q["judge"]["kappa"] == pytest.approx(0.75, abs=1e-4)
    # Each calibration is recorded for the model (the latest replaces the earlier), where runs read it.
    recorded = read_calibration()["judge-model"]["quality"]
    assert recorded["kappa"] == pytest.approx(0.75, abs=1e-4) and recorded["n"] == 6 and recorded["bar"] == 0.6
    assert "recorded judge-model: kappa 0.75 over 6 labelled replies" in quadratic.stderr

    # The heuristics row agrees with an independent computation on their own scores.
    scipy_stats = pytest.importorskip("scipy.stats")
    heuristic = [score_reply("My week was awful.", reply).overall_quality for reply, *_ in LABELLED]
    expected = scipy_stats.spearmanr([human for _, human, _, _ in LABELLED], heuristic).statistic
    assert figures["heuristics"]["n"] == 6
    assert figures["heuristics"]["spearman"] == pytest.approx(expected, abs=1e-4)


def test_calibrate_without_a_judge_reports_the_heuristics_and_says_so(tmp_path):
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps({"response": reply, "human_score": human}) + "\n"
                            for reply, human, _, _ in LABELLED) + json.dumps({"response": "no label"}) + "\n")
    result = runner.invoke(app, ["calibrate", str(path)])
    assert result.exit_code == 1  # the unlabelled line is reported; the rest are used
    assert "human_score: required" in result.stderr and "only the heuristics" in result.stderr
    rows = [line.split()[0] for line in result.stdout.splitlines() if line.strip() and line.split()[0].isalpha()]
    assert "heuristics" in rows and "judge" not in rows and "Spearman" in result.stdout


def test_judge_command_under_the_policy_judges_calibration_and_triggered_records(openai_server, monkeypatch,
                                                                                 tmp_path):
    server = openai_server(answers=steady_judge)
    use_judge(monkeypatch, server)
    records = tmp_path / "traffic.jsonl"
    rows = [{"id": f"t{n}", "user_message": "How was your day?", "response": f"Pretty good, thanks {n}. And yours?",
             "prompt_version": "v7"} for n in range(1, 9)]
    rows[6]["feedback"] = "negative"
    records.write_text("".join(json.dumps(row) + "\n" for row in rows))
    state = tmp_path / "state.json"
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["judge", str(records), "-o", str(out), "--judge-model", "judge-model",
                                 "--judge-sampling", "policy", "--sampling-state", str(state),
                                 "--judge-sample-rate", "0.1"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    phases = [line["sampling"]["phase"] for line in lines]
    assert phases == ["calibration"] * 5 + ["established"] * 3
    assert all("overall" in line for line in lines[:5])
    assert lines[6]["sampling"]["triggered"] and "negative user feedback" in lines[6]["sampling"]["reason"]
    assert lines[6]["overall"] == 0.9
    judged = sum("overall" in line for line in lines)
    assert len(server.calls) == judged and all(line.get("skipped") for line in lines if "overall" not in line)
    assert json.loads(state.read_text())["versions"]["v7"]["uses"] == 8


def test_a_dead_judge_endpoint_says_that_nothing_could_be_judged_and_why(monkeypatch, tmp_path):
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", JUDGE_SECRET)
    records = tmp_path / "replies.jsonl"
    records.write_text("".join(json.dumps({"id": name, "user_message": "Hi", "response": "Hello."}) + "\n"
                               for name in ("a", "b", "c")))
    result = runner.invoke(app, ["judge", str(records), "--max-attempts", "1", "--timeout", "2", "--no-judge-cache"])
    assert result.exit_code == 1
    summary = " ".join(result.stderr.split())
    assert "none of the 3 replies could be judged; every judge call failed: connection error" in summary
    assert "Check the judge endpoint" in summary
    assert "3 judged" not in summary


def test_the_model_that_answered_is_recorded_and_its_family_warned_about_in_the_report(small_project, openai_server,
                                                                                      monkeypatch):
    """Asked for another family's model, the judge endpoint answers with the companion's family
    (a router or alias): the summary records the model that answered, and the report warns."""
    companion = openai_server()
    judge_server = openai_server(answers=steady_judge, model_name="gpt-4.1")
    monkeypatch.setenv("OPENAI_BASE_URL", companion.base_url)
    use_judge(monkeypatch, judge_server)
    runs = small_project["runs"]
    result = runner.invoke(app, ["run", "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
                                 str(small_project["scenarios"]), "--output", str(runs), "--run-id", "routed",
                                 "--model", "gpt-4o-mini", "--judge", "--judge-model", "claude-judge",
                                 "--scenario", "basic-hello", "--no-cache"])
    assert result.exit_code == 0, result.output
    judge = json.loads((runs / "routed" / "summary.json").read_text())["judge"]
    assert judge["model"] == "claude-judge" and judge["answered_by"] == ["gpt-4.1"]
    (warning,) = judge["warnings"]
    assert warning.startswith("answered by the judge model gpt-4.1 is of the same family (openai-gpt)")
    report = runner.invoke(app, ["report", str(runs / "routed"), "-o", str(small_project["root"] / "out")])
    assert report.exit_code == 0, report.output
    page = (small_project["root"] / "out" / "report.html").read_text()
    assert "same family (openai-gpt)" in page and "gpt-4.1" in page
