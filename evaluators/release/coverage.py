"""What a run was meant to cover, and how much of it each prompt version's cases cover.

A release decision is only as good as its evidence. A run that was interrupted, filtered to a
few families, or whose cases failed, holds a fraction of the scenario set; a decision on it
must say so instead of deploying on "every safety scenario in the run passed". The manifest
records the whole scenario set the run was made from (ids and safety scenarios) and the ones
the run selected; `version_coverage` compares a version's scored cases with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluators.inputs.contracts import Scenario
from evaluators.release.contracts import Coverage
from evaluators.store.records import CaseResult

MANIFEST_KEY = "coverage"


@dataclass(frozen=True)
class ScenarioSet:
    """The scenarios a run answers to: the whole set, its safety scenarios, and the selection."""

    ids: tuple[str, ...]  # every scenario of the set the manifest hashed
    safety: frozenset[str]
    selected: tuple[str, ...]  # the scenarios the run was asked for (after --family / --scenario)
    families: tuple[str, ...] = ()  # the --family filter, when there was one
    scenario_ids: tuple[str, ...] = ()  # the --scenario filter, when there was one
    persona_ids: tuple[str, ...] = ()  # the --persona filter, when there was one
    recorded: bool = True  # False: rebuilt from what the run holds (a manifest from before the record)
    repeats: int = 1  # run --repeat: plays each selected scenario needs before it counts as run

    def record(self) -> dict:
        """The manifest's form (`repeats` only when above 1, so other manifests read as before)."""
        return {"scenarios": list(self.ids), "safety": sorted(self.safety), "selected": list(self.selected),
                "families": list(self.families) or None, "scenario_ids": list(self.scenario_ids) or None,
                "persona_ids": list(self.persona_ids) or None, **({"repeats": self.repeats} if self.repeats > 1 else {})}

    @classmethod
    def from_record(cls, record: dict) -> ScenarioSet:
        return cls(ids=tuple(record.get("scenarios") or ()), safety=frozenset(record.get("safety") or ()),
                   selected=tuple(record.get("selected") or record.get("scenarios") or ()),
                   families=tuple(record.get("families") or ()), scenario_ids=tuple(record.get("scenario_ids") or ()),
                   persona_ids=tuple(record.get("persona_ids") or ()), repeats=int(record.get("repeats") or 1))

    @classmethod
    def of_scenarios(cls, every: Sequence[Scenario], selected: Sequence[Scenario], *,
                     families: Sequence[str] | None = None, scenario_ids: Sequence[str] | None = None,
                     persona_ids: Sequence[str] | None = None, repeats: int = 1) -> ScenarioSet:
        return cls(ids=tuple(scenario.id for scenario in every),
                   safety=frozenset(scenario.id for scenario in every if scenario.safety),
                   selected=tuple(scenario.id for scenario in selected), families=tuple(families or ()),
                   scenario_ids=tuple(scenario_ids or ()), persona_ids=tuple(persona_ids or ()), repeats=repeats)

    @classmethod
    def of_cases(cls, cases: Sequence[CaseResult]) -> ScenarioSet:
        """The best that can be said without a record: the scenarios some version of the run holds."""
        ids = tuple(dict.fromkeys(case.scenario_id for case in cases))
        return cls(ids=ids, safety=frozenset(case.scenario_id for case in cases if case.safety), selected=ids,
                   recorded=False)

    @property
    def filters(self) -> str:
        """The filters as typed on the command line ("" when the run took the whole set)."""
        return " ".join([*(f"-f {family}" for family in self.families), *(f"-s {sid}" for sid in self.scenario_ids),
                         *(f"--persona {pid}" for pid in self.persona_ids)])


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}" if number == 1 else f"{number} {thing}s"


def version_coverage(version: str, cases: Sequence[CaseResult], scenario_set: ScenarioSet, *,
                     baseline: str | None = None, present_versions: Sequence[str] = (),
                     resume: str = "penpal-eval run --resume RUN_DIR") -> Coverage:
    """How much of `scenario_set` the version's cases scored, why the rest is missing, and how
    to finish (`resume` is the command that resumes this run)."""
    mine: dict[str, list[CaseResult]] = {}
    for case in cases:
        if case.prompt_version == version:
            mine.setdefault(case.scenario_id, []).append(case)  # every repeat of the scenario
    wanted = set(scenario_set.ids)
    # A case counts as evidence when it was scored whole: no reply cut short (a truncated reply is
    # never scored as whole, so its case fails) and, when the run asked for the judge, judged. A
    # scenario played several times (run --repeat) is evidence when every repeat is.
    truncated = {sid for sid, repeats in mine.items()
                 if sid in wanted and any(turn.truncated for case in repeats for turn in case.turns)}
    failed = {sid for sid, repeats in mine.items()
              if (any(case.status != "ok" for case in repeats) or sid in truncated) and sid in wanted}
    invalid = {sid for sid in failed if any(case.invalid_simulation for case in mine[sid])}
    unjudged = {sid for sid, repeats in mine.items()
                if any(case.judge_failed for case in repeats) and sid in wanted and sid not in failed}
    # A judged assertion left unanswered (no judge configured, or no readable answer) is missing evidence.
    unverified = {sid for sid, repeats in mine.items() if sid in wanted and sid not in failed and sid not in unjudged
                  and any(outcome.passed is None for case in repeats for turn in case.turns
                          for outcome in turn.assertions)}
    scored = {sid for sid, repeats in mine.items()
              if sid in wanted and sid not in failed and sid not in unjudged and sid not in unverified
              and len(repeats) >= scenario_set.repeats}
    # A scenario with fewer plays than the run's --repeat was interrupted too: its rate would rest on
    # the repeats that happened to finish.
    not_run = [sid for sid in scenario_set.selected if len(mine.get(sid, ())) < scenario_set.repeats]
    short = [sid for sid in not_run if sid in mine]
    selected = set(scenario_set.selected)
    filtered_out = [sid for sid in scenario_set.ids if sid not in selected]
    reasons, finish = [], []
    if not_run:
        never = len(not_run) - len(short)
        parts = ([f"{_count(never, 'selected scenario')} never ran"] if never else []) + (
            [f"{_count(len(short), 'scenario')} ran fewer than {scenario_set.repeats} repeats"] if short else [])
        reasons.append(f"the run was interrupted ({'; '.join(parts)})")
    if failed:
        cut = f", {len(truncated)} of them on a truncated reply" if truncated else ""
        void = (f", {len(invalid)} of them {'an invalid simulated conversation' if len(invalid) == 1 else 'invalid simulated conversations'}"
                " (the simulated user left its role or persona, so it is left out)") if invalid else ""
        reasons.append(f"{_count(len(failed), 'case')} failed{cut}{void}")
    if invalid:
        finish.append("play the invalid simulated conversations again with another simulator model "
                      "(PENPAL_SIMULATOR_MODEL; --no-cache, or the cache replays the same messages)")
    if unjudged:
        reasons.append(f"{_count(len(unjudged), 'case')} could not be judged (the run asked for the judge and its "
                       "call failed)")
    if unverified:
        reasons.append(f"{_count(len(unverified), 'case')} with a scenario assertion not verified (a judged "
                       "criterion needs the judge: run --judge)")
        finish.append("verify the judged assertions: run again with --judge")
    if (not_run or failed or unjudged) and not filtered_out:
        finish.append(f"finish the run: {resume}")
    if filtered_out:
        how = f" with {scenario_set.filters}" if scenario_set.filters else ""
        reasons.append(f"the run was filtered{how} ({_count(len(filtered_out), 'scenario')} left out)")
        # Resuming a filtered run finishes only its selection: it can never cover the set.
        without = f" without {scenario_set.filters}" if scenario_set.filters else ""
        finish.append(f"to decide a deploy, run every scenario: penpal-eval run{without} (resuming this run "
                      "finishes only what the filter selected)")
    if not scenario_set.safety:
        reasons.append("the scenario set has no safety scenario")
        finish.append("add safety scenarios (safety: true) to the scenario set")
    missing_baseline = baseline if baseline and baseline != version and baseline not in present_versions else None
    if missing_baseline:
        reasons.append(f"baseline {missing_baseline} is not in the run")
        finish.append(f"include the baseline (-p {missing_baseline}) to test for an A/B candidate")
    return Coverage(scenarios=len(scenario_set.ids), scored=len(scored), safety=len(scenario_set.safety),
                    safety_scored=len(scored & scenario_set.safety), not_run=len(not_run), failed=len(failed),
                    truncated=len(truncated), judge_failed=len(unjudged), unverified=len(unverified),
                    invalid_simulations=len(invalid),
                    filtered_out=len(filtered_out),
                    baseline_missing=missing_baseline, reasons=reasons, finish=finish)
