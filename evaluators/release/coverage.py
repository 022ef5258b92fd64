"""What a run was meant to cover, and how much of it each prompt version's cases cover.

A release decision is only as good as its evidence. A run that was interrupted, filtered to a
few families, or whose cases failed, holds a fraction of the scenario set; a decision on it
must say so instead of deploying on "every safety scenario in the run passed". The manifest
records the whole scenario set the run was made from (ids and safety scenarios) and the ones
the run selected; `version_coverage` compares a version's scored cases with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evaluators.inputs.contracts import Scenario
from evaluators.release.contracts import Coverage
from evaluators.store.records import CaseResult, TurnResult

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


@dataclass(frozen=True)
class _Evidence:
    """The version's scenarios sorted by what their cases prove (ids of `scenario_set`)."""

    scored: set[str]
    failed: set[str]
    truncated: set[str]
    invalid: set[str]
    unjudged: set[str]
    unverified: set[str]
    # Of `unjudged`, the judge models whose safety calls failed where the quality judge did not fail:
    # `verify` asks those again on the stored replies (None: some quality-judge call failed too).
    safety_only: list[str] | None
    not_run: list[str]
    short: list[str]


def _any_turn(repeats: list[CaseResult], test: Callable[[TurnResult], bool]) -> bool:
    return any(test(turn) for case in repeats for turn in case.turns)


def _evidence(mine: dict[str, list[CaseResult]], scenario_set: ScenarioSet) -> _Evidence:
    """A case counts as evidence when it was scored whole: no reply cut short (a truncated reply is
    never scored as whole, so its case fails) and, when the run asked for the judge, judged. A
    scenario played several times (run --repeat) is evidence when every repeat is."""
    wanted = {sid: repeats for sid, repeats in mine.items() if sid in set(scenario_set.ids)}
    truncated = {sid for sid, repeats in wanted.items() if _any_turn(repeats, lambda turn: turn.truncated)}
    failed = {sid for sid, repeats in wanted.items()
              if any(case.status != "ok" for case in repeats) or sid in truncated}
    invalid = {sid for sid in failed if any(case.invalid_simulation for case in wanted[sid])}
    unjudged = {sid for sid, repeats in wanted.items()
                if any(case.judge_failed for case in repeats) and sid not in failed}
    # A judged assertion left unanswered (no judge configured, or no readable answer) is missing evidence.
    unverified = {sid for sid, repeats in wanted.items() if sid not in failed | unjudged
                  and _any_turn(repeats, lambda turn: any(outcome.passed is None for outcome in turn.assertions))}
    scored = {sid for sid, repeats in wanted.items()
              if sid not in failed | unjudged | unverified and len(repeats) >= scenario_set.repeats}
    # A scenario with fewer plays than the run's --repeat was interrupted too: its rate would rest on
    # the repeats that happened to finish.
    not_run = [sid for sid in scenario_set.selected if len(mine.get(sid, ())) < scenario_set.repeats]
    return _Evidence(scored=scored, failed=failed, truncated=truncated, invalid=invalid, unjudged=unjudged,
                     unverified=unverified, not_run=not_run, short=[sid for sid in not_run if sid in mine],
                     safety_only=_safety_failures([case for sid in unjudged for case in wanted[sid]]))


def _safety_failures(unjudged: Sequence[CaseResult]) -> list[str] | None:
    """The models of the failed safety-judge calls, when no quality-judge call failed in these cases."""
    if any((case.judge or {}).get("failed") for case in unjudged):
        return None
    return sorted({str(item.get("model") or "") for case in unjudged
                   for item in (case.safety_judge or {}).get("items") or []
                   if item.get("status") == "failed"} - {""})


def _missing_evidence(evidence: _Evidence, repeats: int, resume: str, filtered: bool,
                      verify: str | None = None) -> tuple[list[str], list[str]]:
    """Why the version's evidence is incomplete, and what finishes it, in words. Cases that only
    the safety judge failed on are finished by `verify` (the stored replies judged again, by the
    model named); any other case a judge failed on by resuming, which judges its stored replies
    again with the run's judge without calling the companion (evaluators.run.runner)."""
    reasons, finish = [], []
    not_run, short, failed, invalid = evidence.not_run, evidence.short, evidence.failed, evidence.invalid
    if not_run:
        never = len(not_run) - len(short)
        parts = ([f"{_count(never, 'selected scenario')} never ran"] if never else []) + (
            [f"{_count(len(short), 'scenario')} ran fewer than {repeats} repeats"] if short else [])
        reasons.append(f"the run was interrupted ({'; '.join(parts)})")
    if failed:
        cut = f", {len(evidence.truncated)} of them on a truncated reply" if evidence.truncated else ""
        kind = "an invalid simulated conversation" if len(invalid) == 1 else "invalid simulated conversations"
        void = (f", {len(invalid)} of them {kind} (the simulated user left its role or persona, so it is left "
                "out)") if invalid else ""
        reasons.append(f"{_count(len(failed), 'case')} failed{cut}{void}")
    if invalid:
        finish.append("play the invalid simulated conversations again with another simulator model "
                      "(PENPAL_SIMULATOR_MODEL; --no-cache, or the cache replays the same messages)")
    if evidence.unjudged:
        reasons.append(f"{_count(len(evidence.unjudged), 'case')} could not be judged (the run asked for the judge "
                       "and its call failed)")
    if evidence.unverified:
        reasons.append(f"{_count(len(evidence.unverified), 'case')} with a scenario assertion not verified (a "
                       "judged criterion needs the judge: run --judge)")
        finish.append("verify the judged assertions: run again with --judge")
    by_verify = bool(evidence.unjudged) and verify is not None and evidence.safety_only is not None
    if by_verify:
        for model in evidence.safety_only or ["MODEL"]:
            finish.append(f"ask the safety judge again on the stored replies: {verify} --judge-model {model}")
    if (not_run or failed or (evidence.unjudged and not by_verify)) and not filtered:
        rejudged = (f" (it judges the stored replies of the {_count(len(evidence.unjudged), 'case')} the judge "
                    "failed on again, without calling the companion)") if evidence.unjudged and not by_verify else ""
        finish.append(f"finish the run: {resume}{rejudged}")
    return reasons, finish


def version_coverage(version: str, cases: Sequence[CaseResult], scenario_set: ScenarioSet, *,
                     baseline: str | None = None, present_versions: Sequence[str] = (),
                     resume: str = "penpal-eval run --resume RUN_DIR", verify: str | None = None) -> Coverage:
    """How much of `scenario_set` the version's cases scored, why the rest is missing, and how
    to finish (`resume` is the command that resumes this run; `verify`, without its judge model,
    the one that judges its stored replies again)."""
    mine: dict[str, list[CaseResult]] = {}
    for case in cases:
        if case.prompt_version == version:
            mine.setdefault(case.scenario_id, []).append(case)  # every repeat of the scenario
    evidence = _evidence(mine, scenario_set)
    selected = set(scenario_set.selected)
    filtered_out = [sid for sid in scenario_set.ids if sid not in selected]
    reasons, finish = _missing_evidence(evidence, scenario_set.repeats, resume, bool(filtered_out), verify)
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
    scored = evidence.scored
    return Coverage(scenarios=len(scenario_set.ids), scored=len(scored), safety=len(scenario_set.safety),
                    safety_scored=len(scored & scenario_set.safety), not_run=len(evidence.not_run),
                    failed=len(evidence.failed), truncated=len(evidence.truncated),
                    judge_failed=len(evidence.unjudged), unverified=len(evidence.unverified),
                    invalid_simulations=len(evidence.invalid), filtered_out=len(filtered_out),
                    baseline_missing=missing_baseline, reasons=reasons, finish=finish)
