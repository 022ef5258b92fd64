"""`penpal-eval pairwise` and `run --pairwise`: the head-to-head on the command line.

A small project (v2 against its baseline v1, three scenarios, five turns, recorded replies) is
run; the pairwise judge is the local OpenAI-compatible server, scripted to prefer the longer
reply (v2's, in every turn), whichever position it is in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.cli.run import run_with_config
from evaluators.judge.factory import JudgeConfig
from evaluators.run.config import RunConfig
from evaluators.store.run_store import PAIRWISE
from tests.servers.judge_answers import prefers_longer
from tests.support.terminal import run_in_pty

RUNNER = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def judged(openai_server, monkeypatch, tmp_path):
    """The judge's endpoint on a local server; a fresh cache; no companion API (replay)."""
    server = openai_server(answers=prefers_longer)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PENPAL_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PENPAL_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("PENPAL_JUDGE_API_KEY", "sk-test-judge-secret")
    return server


def small_run(project: dict[str, Path]) -> tuple[RunConfig, Path]:
    """The small project's run, replayed from its own recordings."""
    config = RunConfig(prompts_dir=project["prompts"], scenarios_dir=project["scenarios"],
                       recorded_dir=project["recorded"], output_dir=project["runs"], run_id="r1",
                       responder="replay", use_cache=False)
    return config, project["runs"] / "r1"


def test_run_pairwise_judges_v2_against_its_baseline_and_decide_quotes_it(small_project, judged, capsys):
    config, run_dir = small_run(small_project)
    assert run_with_config(config, pairwise=JudgeConfig(model="judge-model")) == 0
    captured = capsys.readouterr()
    out = flat(captured.out)
    assert "v2 against v1, pairwise judge" in out
    assert out.index("v2 against v1, pairwise judge") < out.index("Release decision per prompt version")
    assert "overall 3 5 0 0 100% [100%, 100%] better" in out  # 3 scenarios, 5 turns, every one won
    assert len(judged.calls) == 10  # five turns, each in both orders
    assert "pairwise: 5 comparisons in both orders, 10 API calls" in flat(captured.err)
    assert all(call.model == "judge-model" for call in judged.calls)
    stored = json.loads((run_dir / PAIRWISE).read_text())["pairs"]
    assert [(item["candidate"], item["baseline"], item["overall"]["wins"]) for item in stored] == [("v2", "v1", 5)]
    assert "sk-test-judge-secret" not in (run_dir / PAIRWISE).read_text()
    # decide reads the stored results; three scenarios are fewer than the rubric's min_pairs.
    result = RUNNER.invoke(app, ["decide", str(run_dir), "-p", "v2", "--json", "--partial"])
    (decision,) = json.loads(result.stdout)
    rule = next(rule for rule in decision["rules"] if rule["name"] == "beats_baseline")
    assert "Pairwise: only 3 scenarios compared (fewer than 5)" in rule["message"]
    assert "wins 100% (95% CI 100% to 100%; 3 scenarios, 5 comparisons" in rule["message"]


def test_the_pairwise_command_is_free_the_second_time_and_prints_json(small_project, judged):
    config, run_dir = small_run(small_project)
    assert run_with_config(config) == 0
    first = RUNNER.invoke(app, ["pairwise", str(run_dir), "--judge-model", "judge-model"])
    assert first.exit_code == 0, first.output
    assert len(judged.calls) == 10 and "10 API calls" in flat(first.stderr)
    again = RUNNER.invoke(app, ["pairwise", str(run_dir), "--a", "v2", "--b", "v1", "--judge-model", "judge-model",
                                "--json"])
    assert again.exit_code == 0, again.output
    assert len(judged.calls) == 10 and "0 API calls (5 comparisons from cache)" in flat(again.stderr)
    (figures,) = json.loads(again.stdout)
    assert (figures["candidate"], figures["baseline"], figures["overall"]["rate"]) == ("v2", "v1", 1.0)
    assert figures["by_family"]["continuity"]["comparisons"] == 3 and figures["position_bias_rate"] == 0.0
    # The other order of the pair: v1 loses every comparison.
    reverse = RUNNER.invoke(app, ["pairwise", str(run_dir), "--a", "v1", "--b", "v2", "--judge-model", "judge-model",
                                  "--json"])
    assert json.loads(reverse.stdout)[0]["overall"]["losses"] == 5
    assert len(judged.calls) == 10  # the same requests, swapped: still from the cache


@pytest.mark.parametrize(("arguments", "message"), [
    (["--a", "v2"], "--a and --b go together"),
    (["--a", "v9", "--b", "v1"], "not in this run: v9; the run has v1, v2"),
    (["--a", "v1", "--b", "v1"], "compare two different versions"),
])
def test_bad_pairs_are_refused_naming_the_problem(small_project, judged, arguments, message):
    config, run_dir = small_run(small_project)
    assert run_with_config(config) == 0
    result = RUNNER.invoke(app, ["pairwise", str(run_dir), *arguments])
    assert result.exit_code == 2 and message in flat(result.output)
    assert not judged.calls


def test_without_a_judge_endpoint_run_pairwise_stops_before_the_run(small_project, monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = RUNNER.invoke(app, ["run", "--prompts-dir", str(small_project["prompts"]), "--scenarios-dir",
                                 str(small_project["scenarios"]), "--output", str(tmp_path / "runs"), "--pairwise",
                                 "--no-langfuse"])
    assert result.exit_code == 2 and "the judge needs an endpoint" in flat(result.output)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_head_to_head_table_is_whole_in_a_terminal(small_project, judged, tmp_path, width):
    config, run_dir = small_run(small_project)
    assert run_with_config(config) == 0
    environ = {"PENPAL_JUDGE_BASE_URL": judged.base_url, "PENPAL_JUDGE_API_KEY": "sk-test",
               "PENPAL_EVAL_CACHE": str(tmp_path / "cache")}
    (screen,) = run_in_pty([(width, ["pairwise", str(run_dir), "--judge-model", "judge-model"])], cwd=tmp_path,
                           environ=environ)
    assert "…" not in screen
    rows = {line.split()[0]: line for line in screen.splitlines() if line.strip()[:1].isalpha()
            and line.split()[0] in ("basic", "continuity", "overall")}
    assert set(rows) == {"basic", "continuity", "overall"}
    for line in rows.values():
        assert cell_len(line) <= width
    assert rows["overall"].split() == ["overall", "3", "5", "0", "0", "100%", "[100%,", "100%]", "better"]
    assert rows["continuity"].split()[:3] == ["continuity", "1", "3"]
    assert "position bias 0% (0 of 5)" in flat(screen)
