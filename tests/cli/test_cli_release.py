"""`penpal-eval decide`, `compare` and `report` through typer's CliRunner, on run stores built
from exact case results."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.cli.common import EXIT_USAGE
from evaluators.cli.release import EXIT_AB_TEST, EXIT_DEPLOY, EXIT_INCOMPLETE, EXIT_REGRESSION, EXIT_REVISE
from evaluators.cli.run import run_with_config
from evaluators.inputs.personas import load_personas, persona_scenario
from evaluators.inputs.scenarios import load_scenarios
from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH
from evaluators.run.config import RunConfig
from evaluators.store.run_store import RunStore
from tests.support.release_factory import make_case, scores, version_cases, write_run

runner = CliRunner()
BASELINE = [0.52, 0.55, 0.58, 0.5, 0.6, 0.54, 0.57, 0.53, 0.56, 0.59, 0.51, 0.55]


def flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


@pytest.fixture
def three_versions(tmp_path: Path) -> Path:
    """v1 fails a safety scenario, v2 deploys, v3 is an A/B candidate against v1... built by the numbers."""
    cases = (version_cases("v1", BASELINE, failed_safety=1)
             + version_cases("v2", [0.85] * 12)
             + version_cases("v3", [round(value + 0.1, 6) for value in BASELINE]))
    return write_run(tmp_path / "run", cases, {"v1": None, "v2": "v1", "v3": "v1"})


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_decide_prints_each_decision_with_its_reasons_and_exits_on_the_worst(three_versions):
    result = invoke("decide", str(three_versions))
    assert result.exit_code == EXIT_REVISE, result.output
    out = flat(result.stdout)
    assert "v1: Needs revision" in out and "v2: Deploy to production" in out and "v3: A/B testing candidate" in out
    assert "safety_hard_criteria: 1 of 3 safety scenarios failed" in out
    assert "beats_baseline: Better than v1 beyond noise" in out


@pytest.mark.parametrize(("versions", "code"), [
    (["v2"], EXIT_DEPLOY), (["v3"], EXIT_AB_TEST), (["v2", "v3"], EXIT_AB_TEST), (["v1", "v2"], EXIT_REVISE),
])
def test_decide_exit_codes_gate_on_the_chosen_versions(three_versions, versions, code):
    args = [item for version in versions for item in ("-p", version)]
    result = invoke("decide", str(three_versions), *args)
    assert result.exit_code == code, result.output


def test_decide_json_is_the_decisions(three_versions):
    result = invoke("decide", str(three_versions), "--json")
    assert result.exit_code == EXIT_REVISE
    decisions = json.loads(result.stdout)
    assert [(item["prompt_version"], item["outcome"]) for item in decisions] == [
        ("v1", "revise"), ("v2", "deploy"), ("v3", "ab_test")]
    rules = {item["name"]: item for item in decisions[0]["rules"]}
    assert rules["safety_hard_criteria"]["observed"] == 1.0 and "safety_hard_criteria" in decisions[0]["fired"]


def test_baseline_override_changes_the_comparison(three_versions):
    result = invoke("decide", str(three_versions), "-p", "v3", "--baseline", "v2", "--json")
    decision = json.loads(result.stdout)[0]
    assert decision["baseline"] == "v2" and decision["outcome"] == "revise"
    assert result.exit_code == EXIT_REVISE


def test_a_threshold_from_another_rubric_file_changes_the_exit_code(three_versions, tmp_path):
    text = DEFAULT_RUBRIC_PATH.read_text(encoding="utf-8").replace("deploy_min_average: 0.7", "deploy_min_average: 0.9")
    stricter = tmp_path / "rubric.yaml"
    stricter.write_text(text, encoding="utf-8")
    assert invoke("decide", str(three_versions), "-p", "v2").exit_code == EXIT_DEPLOY
    result = invoke("decide", str(three_versions), "-p", "v2", "--rubric", str(stricter))
    # 0.85 no longer deploys; it is still better than its baseline v1 beyond noise.
    assert result.exit_code == EXIT_AB_TEST
    assert "below the deploy threshold 0.9" in flat(result.stdout)


def test_bad_inputs_exit_2_naming_the_problem(tmp_path, three_versions):
    missing = invoke("decide", str(tmp_path / "nope"))
    assert missing.exit_code == EXIT_USAGE and "nope: no such run directory" in flat(missing.output)

    not_a_run = tmp_path / "empty-dir"
    not_a_run.mkdir()
    result = invoke("decide", str(not_a_run))
    assert result.exit_code == EXIT_USAGE and "not a run directory" in flat(result.output)

    RunStore.create(tmp_path / "no-cases", {"run_id": "no-cases"})
    result = invoke("decide", str(tmp_path / "no-cases"))
    assert result.exit_code == EXIT_USAGE and "holds no cases" in flat(result.output)

    failed = write_run(tmp_path / "failed", [make_case("v1", "a", {}, status="failed")])
    result = invoke("decide", str(failed))
    assert result.exit_code == EXIT_USAGE and "no scored case for v1" in flat(result.output)

    result = invoke("decide", str(three_versions), "--baseline", "v9")
    assert result.exit_code == EXIT_USAGE and "--baseline v9: not in this run" in flat(result.output)

    result = invoke("decide", str(three_versions), "-p", "v9")
    assert result.exit_code == EXIT_USAGE and "not in this run: v9" in flat(result.output)

    result = invoke("decide", str(three_versions), "--ab-label", "canary")
    assert result.exit_code == EXIT_USAGE and "--ab-label goes with --apply" in flat(result.output)

    result = invoke("decide", str(three_versions), "--apply", "--ab-label", "two words")
    assert result.exit_code == EXIT_USAGE and "'two words' is not a Langfuse prompt label" in flat(result.output)


def test_report_writes_the_page_the_json_and_the_frames(three_versions, tmp_path):
    out = tmp_path / "out"
    result = invoke("report", str(three_versions), "--output", str(out), "--worst", "2")
    assert result.exit_code == 0, result.output
    assert "Release decision per prompt version" in result.stdout
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "A/B testing candidate" in page
    # Two per version, but only bad ones: v2's replies all score 0.85, so it lists none.
    assert page.count('class="worst-case"') == 4 and 'data-case="v2/' not in page
    decisions = json.loads((out / "decisions.json").read_text(encoding="utf-8"))
    assert [item["outcome"] for item in decisions["decisions"]] == ["revise", "deploy", "ab_test"]
    aggregates = pd.read_parquet(out / "release_aggregates.parquet")
    assert set(aggregates["grouping"]) == {"all", "family", "age_group", "demographic_group"}
    overall = aggregates.query("grouping == 'all' and metric == 'overall_quality'").set_index("prompt_version")["mean"]
    assert overall["v2"] == pytest.approx(0.85)
    rules = pd.read_csv(out / "release_rules.csv")
    assert rules.query("prompt_version == 'v3' and rule == 'beats_baseline'")["passed"].item()
    deltas = pd.read_parquet(out / "release_deltas.parquet")
    assert set(deltas["prompt_version"]) == {"v2", "v3"} and set(deltas["change"]) == {"improved"}


def test_report_defaults_to_the_run_directory(three_versions):
    assert invoke("report", str(three_versions)).exit_code == 0
    assert (three_versions / "report.html").is_file() and (three_versions / "decisions.json").is_file()


def test_compare_two_runs_of_the_same_versions(tmp_path):
    before = write_run(tmp_path / "a", version_cases("v2", BASELINE))
    same = write_run(tmp_path / "b", version_cases("v2", BASELINE))
    worse = write_run(tmp_path / "c", version_cases("v2", [round(value - 0.05, 6) for value in BASELINE]))

    result = invoke("compare", str(before), str(same))
    assert result.exit_code == 0, result.output
    assert "B b/v2 against A a/v2" in flat(result.stdout) and "+0.000" in result.stdout

    result = invoke("compare", str(before), str(worse))
    assert result.exit_code == EXIT_REGRESSION
    assert "regressed" in result.stdout and "-0.050" in result.stdout
    assert "significantly worse in B: c/v2 appropriateness -0.050;" in flat(result.output)
    assert "c/v2 overall_quality -0.050" in flat(result.output)


def test_compare_runs_of_one_version_each_and_refuses_unrelated_runs(tmp_path):
    one = write_run(tmp_path / "one", version_cases("v2", BASELINE))
    other = write_run(tmp_path / "other", version_cases("v3", [value + 0.1 for value in BASELINE]))
    result = invoke("compare", str(one), str(other))
    assert result.exit_code == 0 and "B other/v3 against A one/v2" in flat(result.stdout)

    two = write_run(tmp_path / "two", version_cases("v4", BASELINE) + version_cases("v5", BASELINE))
    result = invoke("compare", str(one), str(two))
    assert result.exit_code == EXIT_USAGE and "share no prompt version" in flat(result.output)

    result = invoke("compare", str(one), str(other), "-p", "v2")
    assert result.exit_code == EXIT_USAGE and "v2 (not in other)" in flat(result.output)


def test_run_ends_with_the_decisions(small_project, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = RunConfig(prompts_dir=small_project["prompts"], scenarios_dir=small_project["scenarios"],
                       recorded_dir=small_project["recorded"], output_dir=small_project["runs"], run_id="r1",
                       responder="replay", use_cache=False)
    assert run_with_config(config) == 0
    out = flat(capsys.readouterr().out)
    assert out.index("Penpal rubric means per prompt version") < out.index("Release decision per prompt version")
    # Three scenarios, none of them a safety scenario: nothing can ship on that evidence, and
    # that is the run's coverage, not a fault of the prompt.
    assert "v2: Incomplete: 3 of 3 scenarios, 0 of 0 safety scenarios scored" in out
    assert "the scenario set has no safety scenario" in out and "Needs revision" not in out
    manifest = RunStore.open(small_project["runs"] / "r1").manifest
    assert manifest["config"]["baselines"] == {"v1": None, "v2": "v1"}


def test_decisions_on_a_case_level_score_table(three_versions):
    # decide reads every case: a case appended again (resumed) replaces the earlier record.
    store = RunStore.open(three_versions)
    store.append(make_case("v2", "s01", scores(0.2)))
    decision = json.loads(invoke("decide", str(three_versions), "-p", "v2", "--json").stdout)[0]
    assert decision["average"] == pytest.approx((0.85 * 11 + 0.2) / 12)


@pytest.fixture(scope="module")
def filtered_run(tmp_path_factory) -> Path:
    """The shipped v1 and v2 over two families only (the issue's `-f emotional_support -f trust_building`)."""
    output = tmp_path_factory.mktemp("filtered")
    config = RunConfig(prompt_versions=["v1-minimal", "v2-warm-boundaries"],
                       families=["emotional_support", "trust_building"], responder="replay", use_cache=False,
                       output_dir=output, run_id="filtered")
    assert run_with_config(config) == 0
    return output / "filtered"


def test_a_filtered_run_is_incomplete_and_never_deploys(filtered_run):
    result = invoke("decide", str(filtered_run), "-p", "v2-warm-boundaries")
    out = flat(result.stdout)
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    assert "v2-warm-boundaries: Incomplete:" in out and "Deploy to production" not in out
    assert "the run was filtered with -f emotional_support -f trust_building" in out
    assert ("To decide a deploy, run every scenario: penpal-eval run without -f emotional_support -f trust_building "
            "(resuming this run finishes only what the filter selected)") in out
    assert "--resume" not in out  # resuming cannot complete a filtered run: it is not suggested
    coverage = json.loads(invoke("decide", str(filtered_run), "--json").stdout)[1]["coverage"]
    every = [*load_scenarios().scenarios, *map(persona_scenario, load_personas().personas)]  # the whole set
    assert coverage["not_run"] == 0 and 0 < coverage["scored"] < coverage["scenarios"] == len(every)
    assert coverage["safety"] == sum(scenario.safety for scenario in every) > coverage["safety_scored"] > 0
    assert coverage["filtered_out"] == len(every) - coverage["scored"]

    # --partial decides on the evidence there is, never to deploy.
    partial = invoke("decide", str(filtered_run), "--partial", "--json")
    decisions = {item["prompt_version"]: item for item in json.loads(partial.stdout)}
    assert decisions["v2-warm-boundaries"]["outcome"] in {"ab_test", "incomplete"}
    assert decisions["v2-warm-boundaries"]["partial"] and decisions["v1-minimal"]["outcome"] == "revise"
    assert partial.exit_code != EXIT_DEPLOY


def test_the_report_of_a_filtered_run_says_what_it_does_not_cover(filtered_run, tmp_path):
    assert invoke("report", str(filtered_run), "--output", str(tmp_path)).exit_code == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'data-outcome="incomplete"' in page and 'data-outcome="deploy"' not in page
    assert "the run does not cover its scenario set" in page
    assert "the run was filtered with -f emotional_support -f trust_building" in page


def test_a_complete_run_decides_as_before(three_versions):
    decisions = json.loads(invoke("decide", str(three_versions), "--json").stdout)
    assert [item["outcome"] for item in decisions] == ["revise", "deploy", "ab_test"]
    assert all(item["coverage"]["scored"] == item["coverage"]["scenarios"] == 12 for item in decisions)
    assert "coverage: 12 of 12 scenarios, 3 of 3 safety scenarios scored" in flat(invoke("decide",
                                                                                         str(three_versions)).stdout)


def test_a_missing_baseline_is_a_coverage_note_not_a_failed_rule(tmp_path):
    run = write_run(tmp_path / "no-baseline", version_cases("v3", [0.65] * 12), {"v3": "v1"})
    decision = json.loads(invoke("decide", str(run), "--json").stdout)[0]
    assert decision["outcome"] == "incomplete" and decision["coverage"]["baseline_missing"] == "v1"
    result = invoke("decide", str(run))
    assert result.exit_code == EXIT_INCOMPLETE
    assert "include the baseline (-p v1) to test for an A/B candidate" in flat(result.stdout)
    # Below the A/B bar it needs revision whatever the baseline would show.
    low = write_run(tmp_path / "low", version_cases("v3", [0.55] * 12), {"v3": "v1"})
    assert json.loads(invoke("decide", str(low), "--json").stdout)[0]["outcome"] == "revise"


def test_compare_names_the_versions_it_could_not_compare(tmp_path):
    before = write_run(tmp_path / "a", version_cases("v1", BASELINE) + version_cases("v2", BASELINE))
    after = write_run(tmp_path / "b", version_cases("v2", BASELINE) + version_cases("v3", BASELINE))
    result = invoke("compare", str(before), str(after))
    assert result.exit_code == 0, result.output
    assert "B b/v2 against A a/v2" in flat(result.stdout)
    assert "not compared: v1 (only in a), v3 (only in b)" in flat(result.output)


def test_report_files_get_the_permissions_of_the_csvs(three_versions, tmp_path):
    out = tmp_path / "out"
    assert invoke("report", str(three_versions), "--output", str(out)).exit_code == 0
    csv_mode = (out / "release_rules.csv").stat().st_mode & 0o777
    for name in ("report.html", "decisions.json"):
        assert (out / name).stat().st_mode & 0o777 == csv_mode, name
    assert (three_versions / "manifest.json").stat().st_mode & 0o777 == csv_mode


def test_an_ab_label_langfuse_would_refuse_is_refused_before_anything_runs(three_versions):
    """Langfuse takes lowercase labels of at most 36 characters; `decide` says so up front."""
    for label in ("Canary", "x" * 37):
        result = invoke("decide", str(three_versions), "--apply", "--ab-label", label)
        assert result.exit_code == EXIT_USAGE, result.output
        assert "is not a Langfuse prompt label" in flat(result.output)
