"""Read a run directory for the release commands (decide, compare, report).

The run store keeps the cases (and the pairwise judge's comparisons, when it ran); the
manifest keeps each version's baseline (runs made before it did fall back to the prompt files
the run was made from) and the scenario set the run's coverage is measured against (runs made
before it fall back to inputs.json, then to the cases, and say so). Decisions use the rubric
given now, so a changed threshold changes the decision; when the run was scored with another
rubric, that is said, because the stored scores are the old rubric's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evaluators.core.locations import PROJECT_ROOT, display_path
from evaluators.inputs.persona import Persona
from evaluators.inputs.prompts import PromptError, load_prompts
from evaluators.judge.calibration_record import SAMPLE_JUDGE_LABEL, read_calibration
from evaluators.release.contracts import HeadToHead, ReleaseReport
from evaluators.release.coverage import MANIFEST_KEY as COVERAGE_KEY
from evaluators.release.coverage import ScenarioSet
from evaluators.release.head_to_head import head_to_head_from_records
from evaluators.release.rules import ReleaseError, release_report
from evaluators.rubric.loader import Rubric
from evaluators.run.sample_judge import SAMPLE_JUDGE_LINE
from evaluators.run.simulation.stage import with_conversation_metrics
from evaluators.store.records import CaseResult
from evaluators.store.run_store import CASES, RunStore, StoreError


@dataclass
class ReleaseRun:
    directory: Path
    manifest: dict
    cases: list[CaseResult]
    baselines: dict[str, str | None]
    notices: list[str] = field(default_factory=list)
    scenario_set: ScenarioSet | None = None  # None: measured against the cases the run holds
    # The pairwise judge's results by (candidate, baseline) (pairwise.json); empty without them.
    head_to_head: dict[tuple[str, str], HeadToHead] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.directory.name)

    @property
    def sample_data(self) -> bool:
        return bool(self.manifest.get("sample_data"))


def _judge_warnings(store: RunStore) -> list[str]:
    """The run's judge and simulator warnings (same model family, the models that answered), so the
    report and `decide` show them as the run's terminal did."""
    summary = store.read_summary()
    judge = summary.get("judge") if isinstance(summary, dict) else None
    warnings = judge.get("warnings") if isinstance(judge, dict) else None
    return [f"judge: {warning}" for warning in warnings or [] if isinstance(warning, str)]


def sample_judge_notice(manifest: dict) -> list[str]:
    """The offline run's safety judge is hand-written sample data: the report says so wherever it
    shows the run (the terminal's notices and the HTML report's banners)."""
    record = manifest.get("config", {}).get("safety_judge")
    if not isinstance(record, dict):
        return []
    versions = ", ".join(map(str, record.get("versions") or [])) or "no version"
    return [f"{SAMPLE_JUDGE_LINE}: the safety verdicts on {versions} are {SAMPLE_JUDGE_LABEL}"]


def _baselines(manifest: dict, notices: list[str]) -> dict[str, str | None]:
    config = manifest.get("config", {})
    if isinstance(config.get("baselines"), dict):
        return dict(config["baselines"])
    prompts_dir = config.get("prompts_dir")
    if not prompts_dir:
        notices.append("the manifest names no baselines and no prompts directory: no baseline comparisons")
        return {}
    try:
        prompts = load_prompts(PROJECT_ROOT / prompts_dir)
    except PromptError as error:
        notices.append(f"baselines unknown ({error.problems[0]}): no baseline comparisons")
        return {}
    notices.append(f"baselines read from {prompts_dir}/ (this run's manifest predates recording them)")
    return {prompt.version: prompt.baseline for prompt in prompts}


def _scenario_set(store: RunStore, manifest: dict, notices: list[str]) -> ScenarioSet | None:
    record = manifest.get(COVERAGE_KEY)
    if isinstance(record, dict) and record.get("scenarios"):
        return ScenarioSet.from_record(record)
    try:
        inputs = store.read_inputs()
    except StoreError:
        inputs = None
    if inputs is not None and inputs.scenarios:
        notices.append(f"coverage is measured against the {len(inputs.scenarios)} scenarios this run selected (its "
                       "manifest predates recording the whole scenario set)")
        return ScenarioSet.of_scenarios(inputs.scenarios, inputs.scenarios)
    notices.append("coverage is measured against the scenarios in cases.jsonl (the manifest records no scenario set)")
    return None


def read_run(directory: Path, rubric: Rubric, personas: Mapping[str, Persona] | None = None) -> ReleaseRun:
    """The run's cases, baselines and notices; StoreError or ReleaseError naming the problem.

    A simulated conversation stored without its conversation metrics (a run made before the
    stage existed) gets them now, with the persona's facts when `personas` has it.
    """
    store = RunStore.open(directory)
    manifest = store.manifest
    cases = with_conversation_metrics(store.read_cases(), personas or {}, rubric)
    if not cases:
        raise ReleaseError(f"{display_path(store.directory / CASES)}: the run holds no cases")
    notices: list[str] = _judge_warnings(store) + sample_judge_notice(manifest)
    scored_with = manifest.get("hashes", {}).get("rubric")
    if scored_with and rubric.content_hash and scored_with != rubric.content_hash:
        notices.append(f"the run was scored with rubric {scored_with}; thresholds and hard criteria come from "
                       f"rubric {rubric.content_hash} (the stored scores are the run's)")
    return ReleaseRun(store.directory, manifest, cases, _baselines(manifest, notices), notices,
                      _scenario_set(store, manifest, notices), head_to_head_from_records(store.read_pairwise(), rubric))


def report_for_run(run: ReleaseRun, rubric: Rubric, *, versions: list[str] | None = None,
                   baseline_override: str | None = None, partial: bool = False) -> ReleaseReport:
    """The release report of a run read by `read_run` (`partial`: see evaluators.release.rules)."""
    return release_report(run.cases, rubric, baselines=run.baselines, versions=versions,
                          baseline_override=baseline_override, run_id=run.run_id,
                          sample_data=run.sample_data, notices=run.notices, scenario_set=run.scenario_set,
                          run_dir=display_path(run.directory), partial=partial, head_to_head=run.head_to_head,
                          calibration=read_calibration())


__all__ = ["ReleaseError", "ReleaseRun", "StoreError", "read_run", "report_for_run", "sample_judge_notice"]
