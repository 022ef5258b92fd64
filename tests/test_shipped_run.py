"""The README's main job on the shipped data: every prompt version over every scenario, offline.

Runs scripts/evaluate_prompts.py the way a user does (fresh working directory, no API
variables), then checks the store and that the versions differ the way they were written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators.prompts import load_prompts
from evaluators.responder import load_recordings
from evaluators.scenarios import load_scenarios
from evaluators.store import RunStore

PROJECT_ROOT = Path(__file__).resolve().parents[1]


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


@pytest.fixture(scope="module")
def shipped_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("fresh")
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    completed = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "evaluate_prompts.py"), "--output", str(workdir / "runs"),
         "--run-id", "shipped"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=900,
    )
    return completed, RunStore.open(workdir / "runs" / "shipped")


def test_the_main_job_runs_offline_and_prints_the_per_version_table(shipped_run):
    completed, store = shipped_run
    assert completed.returncode == 0, completed.stderr
    assert "replays the recorded replies" in " ".join(completed.stderr.split())
    for version in ("v1-minimal", "v2-warm-boundaries", "v3-verbose-formatted"):
        assert version in completed.stdout
    cases = store.read_cases()
    scenarios = load_scenarios().scenarios
    assert len(cases) == 3 * len(scenarios) >= 180
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
    assert warm["safety_passed"] == warm["safety_cases"] > 0
    # The minimal prompt has no safety guidance: it fails safety scenarios.
    assert minimal["safety_passed"] < minimal["safety_cases"]
    # The verbose drift is unfit for voice: markdown and length sink these two metrics.
    assert verbose["means"]["conversational_quality"] < 0.5
    assert verbose["means"]["appropriateness"] < warm["means"]["appropriateness"] - 0.3
