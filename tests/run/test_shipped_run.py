"""The README's main job on the shipped data: every prompt version over every scenario, offline.

Runs scripts/evaluate_prompts.py the way a user does (fresh working directory, no API
variables), then checks the store and that the versions differ the way they were written.
"""

from __future__ import annotations

import pytest

from evaluators.inputs.personas import load_personas
from evaluators.inputs.prompts import load_prompts
from evaluators.inputs.scenarios import load_scenarios
from evaluators.run.responder import load_recorded_repeats, load_recordings
from evaluators.run.simulation.recordings import load_persona_recordings

pytestmark = pytest.mark.slow  # the whole shipped run


def test_every_shipped_scenario_has_a_recorded_reply_per_turn_for_every_shipped_version():
    recordings = load_recordings()
    scenarios = load_scenarios().scenarios
    versions = [prompt.version for prompt in load_prompts()]
    for version in versions:
        for scenario in scenarios:
            replies = recordings.get((version, scenario.id))
            assert replies is not None, f"no recording for {version}/{scenario.id}"
            assert len(replies) == len(scenario.turns), f"{version}/{scenario.id}: one reply per user turn"
    known = {(v, s.id) for v in versions for s in scenarios}
    assert set(recordings) <= known, f"recordings without a scenario: {sorted(set(recordings) - known)}"
    turns = {scenario.id: len(scenario.turns) for scenario in scenarios}
    for (version, scenario_id), plays in load_recorded_repeats().items():
        assert (version, scenario_id) in known, f"recorded repeats without a scenario: {version}/{scenario_id}"
        assert all(len(play) == turns[scenario_id] for play in plays), f"{version}/{scenario_id}: a reply per turn"


def test_every_shipped_persona_has_a_recorded_conversation_per_shipped_version():
    conversations = load_persona_recordings()
    personas = load_personas().personas
    versions = [prompt.version for prompt in load_prompts()]
    for version in versions:
        for persona in personas:
            recorded = conversations.get((version, persona.id))
            assert recorded is not None, f"no recorded conversation for {version}/{persona.id}"
            assert recorded.users[0] == persona.opening, f"{version}/{persona.id}: opens with the persona's opening"
            assert 4 <= len(recorded.users) <= min(10, persona.max_turns), f"{version}/{persona.id}"
    known = {(v, p.id) for v in versions for p in personas}
    assert set(conversations) <= known, f"recordings without a persona: {sorted(set(conversations) - known)}"


def test_the_main_job_runs_offline_and_prints_the_per_version_table(shipped_run):
    completed, store = shipped_run
    assert completed.returncode == 0, completed.stderr
    assert "replays the recorded replies" in " ".join(completed.stderr.split())
    for version in ("v1-minimal", "v2-warm-boundaries", "v3-verbose-formatted"):
        assert version in completed.stdout
    cases = store.read_cases()
    scenarios, personas = load_scenarios().scenarios, load_personas().personas
    first_plays = [case for case in cases if case.repeat == 0]
    assert len(first_plays) == 3 * (len(scenarios) + len(personas)) >= 180 + 24
    further = sum(len(plays) for plays in load_recorded_repeats().values())
    assert len(cases) == len(first_plays) + further and further >= 6  # the sample data's recorded repeats
    assert all(case.status == "ok" for case in cases)
    assert (store.directory / "summary.json").is_file() and (store.directory / "cases.parquet").is_file()


def test_the_shipped_versions_differ_the_way_they_were_written(shipped_run):
    _, store = shipped_run
    summary = store.read_summary()["versions"]
    minimal, warm, verbose = (summary[v] for v in ("v1-minimal", "v2-warm-boundaries", "v3-verbose-formatted"))
    overall = {name: s["means"]["overall_quality"] for name, s in summary.items()}
    assert overall["v2-warm-boundaries"] > overall["v1-minimal"] > overall["v3-verbose-formatted"]
    # The research-informed prompt passes every scenario check, safety scenarios included.
    assert warm["expectations_pass_rate"] == 1.0
    assert warm["counts"]["safety_hard_criteria_passed"] == warm["counts"]["safety_scenarios"] > 0
    # The minimal prompt has no safety guidance: it fails safety scenarios.
    assert minimal["counts"]["safety_hard_criteria_passed"] < minimal["counts"]["safety_scenarios"]
    # The verbose drift is unfit for voice: markdown and length sink these two metrics.
    assert verbose["means"]["conversational_quality"] < 0.5
    assert verbose["means"]["appropriateness"] < warm["means"]["appropriateness"] - 0.3


def test_the_recorded_repeats_show_pass_rates_and_one_flaky_scenario(shipped_run):
    """The sample data records further repeats of a few scenarios: the offline job plays them, and
    v1-minimal's quick dinner passes two of its three plays (its second drifts into a list)."""
    completed, store = shipped_run
    plays = [case for case in store.read_cases() if case.scenario_id == "basic-quick-dinner"]
    assert sorted((case.prompt_version, case.repeat) for case in plays) == [
        (version, repeat) for version in ("v1-minimal", "v2-warm-boundaries", "v3-verbose-formatted")
        for repeat in range(3)]
    rates = {row["scenario_id"]: row for row in store.read_summary()["versions"]["v1-minimal"]["pass_rates"]}
    assert (rates["basic-quick-dinner"]["passed"], rates["basic-quick-dinner"]["scored"]) == (2, 3)
    assert [sid for sid, row in rates.items() if row["flaky"]] == ["basic-quick-dinner"]
    output = " ".join(completed.stdout.split())
    assert "flaky_scenarios: 1 scenario passes in some repeats and fails in others (flaky): basic-quick-dinner " \
           "passed 2 of 3 repeats (67%)" in output


def test_the_recorded_persona_conversations_are_played_and_v1_erodes_under_the_lonely_persona(shipped_run):
    _, store = shipped_run
    cases = {case.case_id: case for case in store.read_cases() if case.family == "personas"}
    assert len(cases) == 3 * len(load_personas().personas) and all(case.status == "ok" for case in cases.values())
    assert all(case.simulation["simulator"] == "replay" and case.simulation["stop_reason"] for case in cases.values())

    def trust(version: str) -> list[float]:
        return [turn.heuristics["trust_boundaries"] for turn in cases[f"{version}/lonely-young-only-friend"].turns]

    # v1 points outward at first, then slides into "you don't need anyone else": trust falls from the
    # third turn, where the sample judge reads the first, slight dependency (the rules from the fifth).
    v1 = trust("v1-minimal")
    assert min(v1[:2]) >= 0.6 and min(v1[4:]) < 0.3
    assert "dependency_encouraging" in cases["v1-minimal/lonely-young-only-friend"].flags
    # v2 holds its boundaries the whole way, in every persona conversation.
    assert min(trust("v2-warm-boundaries")) >= 0.6
    assert not any(case.flags for cid, case in cases.items() if cid.startswith("v2-warm-boundaries/"))


def test_a_flag_on_any_turn_caps_its_case_in_the_store(shipped_run):
    """Disqualifiers dominate per case too: clean turns cannot average a flagged one away."""
    from evaluators.core.names import OVERALL
    from evaluators.rubric.loader import default_rubric

    _, store = shipped_run
    rubric = default_rubric()
    flagged = [case for case in store.read_cases() if case.flags]
    assert flagged, "the minimal prompt's recorded replies raise flags"
    for case in flagged:
        assert case.scores[OVERALL] <= rubric.flagged_overall_cap, case.case_id
        for name, cap in rubric.caps_for(case.flags).items():
            assert case.scores[name] <= cap, (case.case_id, name)
        for turn in case.turns:
            if turn.heuristics["flags"]:
                assert turn.heuristics[OVERALL] <= rubric.flagged_overall_cap
                assert turn.heuristics["quality_level"] in ("Poor", "Unacceptable")


# --- release decisions on the shipped data (docs/release.md) ----------------------------------------
def _release(store):
    from evaluators.release.rules import release_report
    from evaluators.rubric.loader import default_rubric

    return release_report(store.read_cases(), default_rubric(), baselines=store.manifest["config"]["baselines"])


def test_the_main_job_ends_with_the_decisions(shipped_run):
    completed, _ = shipped_run
    out = " ".join(completed.stdout.split())
    assert out.index("Penpal rubric means per prompt version") < out.index("Release decision per prompt version")
    assert "v1-minimal: Needs revision" in out
    assert "v2-warm-boundaries: Deploy to production" in out
    assert "v3-verbose-formatted: Needs revision" in out


def test_the_decisions_differ_the_way_the_versions_were_written(shipped_run):
    from evaluators.release.rules import (
        AVERAGE_DEPLOY,
        AVERAGE_FLOOR,
        BASELINE_REGRESSIONS,
        METRIC_FLOOR,
        SAFETY_HARD_CRITERIA,
    )

    _, store = shipped_run
    report = _release(store)
    minimal, warm, verbose = (report.decision(v) for v in ("v1-minimal", "v2-warm-boundaries", "v3-verbose-formatted"))
    rules = {decision.prompt_version: {rule.name: rule for rule in decision.rules} for decision in report.decisions}

    # v1 has no safety guidance: its average over the scripted scenarios alone clears the revise
    # floor with room to spare; failed safety scenarios stop it, and its eroding persona
    # conversations pull the average further from the deploy bar.
    assert minimal.outcome == "revise" and minimal.fired[0] == SAFETY_HARD_CRITERIA
    assert rules["v1-minimal"][SAFETY_HARD_CRITERIA].observed > 0
    scripted = [case.scores["overall_quality"] for case in store.read_cases()
                if case.prompt_version == "v1-minimal" and case.family != "personas"]
    scripted_mean = sum(scripted) / len(scripted)
    assert scripted_mean > rules["v1-minimal"][AVERAGE_FLOOR].threshold + 0.05
    assert scripted_mean > rules["v1-minimal"][AVERAGE_DEPLOY].observed
    assert rules["v1-minimal"][AVERAGE_DEPLOY].threshold > rules["v1-minimal"][AVERAGE_DEPLOY].observed

    # v2 was written to meet the rubric: it deploys, and beats v1 beyond noise on every metric.
    assert warm.outcome == "deploy" and warm.baseline == "v1-minimal"
    assert {delta.change for delta in report.comparisons["v2-warm-boundaries"].deltas} == {"improved"}

    # v3 drifted into screen formatting: unfit for voice, below the floors, and worse than v2.
    assert verbose.outcome == "revise"
    assert {METRIC_FLOOR, AVERAGE_FLOOR, BASELINE_REGRESSIONS} <= set(verbose.fired)
    assert "conversational_quality" in rules["v3-verbose-formatted"][METRIC_FLOOR].message
    regressions = {delta.metric for delta in report.comparisons["v3-verbose-formatted"].deltas
                   if delta.change == "regressed"}
    assert {"conversational_quality", "appropriateness", "overall_quality"} <= regressions

    # No shipped version sits between the bars, so none is an A/B candidate (docs/release.md).
    assert "ab_test" not in {decision.outcome for decision in report.decisions}


def test_decide_and_the_report_on_the_shipped_run(shipped_run, tmp_path):
    from html import escape

    from typer.testing import CliRunner

    from evaluators.cli import app
    from tests.support.browser import ARTIFACTS, browser_unavailable, offline_page

    _, store = shipped_run
    runner = CliRunner()
    assert runner.invoke(app, ["decide", str(store.directory)]).exit_code == 4
    assert runner.invoke(app, ["decide", str(store.directory), "-p", "v2-warm-boundaries"]).exit_code == 0

    result = runner.invoke(app, ["report", str(store.directory), "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    for decision in _release(store).decisions:  # the page shows why: every deciding rule's sentence
        assert f'data-outcome="{decision.outcome}"' in page
        for rule in decision.reasons:
            assert escape(rule.message) in page, (decision.prompt_version, rule.name)
    assert "v2-warm-boundaries minus v1-minimal" in page and "v3-verbose-formatted minus v2-warm-boundaries" in page
    if browser_unavailable() is None:
        ARTIFACTS.mkdir(exist_ok=True)
        with offline_page() as (browser_page, log):
            browser_page.goto((tmp_path / "report.html").as_uri(), wait_until="load")
            browser_page.screenshot(path=str(ARTIFACTS / "shipped-release-report.png"), full_page=True)
        assert log.console_errors == [] and log.page_errors == [] and log.outside_requests == []
