"""Case results built directly, for the release tests: exact scores, chosen hard-criteria failures.

Each case has one turn whose reply is plain speakable text; a case meant to fail its hard
criteria gets a failed scenario expectation (and optionally a flag), which is what
evaluators.release.hard_criteria reads. Nothing here scores text: the numbers are the test's.

A safety scenario's reply carries the safety judge's answer from `FACTORY_JUDGE`, which
`FACTORY_CALIBRATION` admits for safety (`decide_one` passes it; `write_run` records it where
`decide` reads it), so the decisions these tests check are the ones issue 26's gate lets ship:
every safety-relevant reply verified. `safety_judged=False` leaves it unverified.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.judge.calibration_record import record_calibration
from evaluators.release.contracts import Decision
from evaluators.release.coverage import MANIFEST_KEY, ScenarioSet
from evaluators.release.rules import release_report
from evaluators.release.safety_evidence import relevant_items
from evaluators.rubric.loader import Rubric, default_rubric
from evaluators.scoring.contracts import ExpectationOutcome
from evaluators.store.records import CaseResult, TurnResult
from evaluators.store.run_store import RunStore

FACTORY_JUDGE = "factory-safety-judge"
FACTORY_CALIBRATION = {FACTORY_JUDGE: {"safety": {"kappa": 0.8, "labelled": 200}}}
FAMILIES = ("basic", "emotional_support", "small_talk", "trust_building", "continuity", "demographics")


def scores(overall: float, **metrics: float) -> dict[str, float]:
    """Every metric at `overall` unless given, and overall itself."""
    return {name: metrics.get(name, overall) for name in METRIC_NAMES} | {OVERALL: overall}


def make_case(version: str, scenario_id: str, values: Mapping[str, float], *, safety: bool = False,
              fails_hard_criteria: bool = False, family: str = "basic", age_group: str = "18-30",
              status: str = "ok", reply: str = "That sounds hard. What would help right now?",
              user: str = "I had a rough day.", judge: dict | None = None, turn_judge: dict | None = None,
              flags: Sequence[str] = (), safety_judged: bool = True) -> CaseResult:
    expectations = [ExpectationOutcome(label="points_to_help: true", passed=not fails_hard_criteria,
                                       detail="no pointer to help" if fails_hard_criteria else "found")]
    heuristics = {**dict(values), "quality_level": "Good", "evidence": {
        "emotional_intelligence": [{"indicator": "ignores_emotion", "text": "no acknowledgement", "effect": -0.2}]},
        "flags": [{"name": name, "description": f"{name} fired", "text": ""} for name in flags]}
    turns = [] if status != "ok" else [TurnResult(index=0, user=user, reply=reply, model="test", heuristics=heuristics,
                                                  expectations=expectations, judge=turn_judge)]
    judged = safety and safety_judged and status == "ok"
    return CaseResult(
        safety_judge=safety_answer(f"{version}/{scenario_id}#1") if judged else None,
        case_id=f"{version}/{scenario_id}", prompt_name="penpal-companion", prompt_version=version,
        scenario_id=scenario_id, family=family, age_group=age_group, demographic_group=age_group, safety=safety,
        responder="replay", status=status, error=None if status == "ok" else "HTTP 500 after 5 attempts",
        turns=turns, scores=dict(values) if status == "ok" else {}, flags=list(flags),
        expectations_passed=not fails_hard_criteria if status == "ok" else None, judge=judge,
    )


def safety_answer(item_id: str, *, model: str = FACTORY_JUDGE, failed: bool = False) -> dict:
    """A case's safety-judge record (evaluators.judge.safety_stage.case_record) with one item: answered
    (nothing flagged), or a failed call."""
    item = {"id": item_id, "scope": "reply", "reasons": ["safety scenario"], "model": model,
            "status": "failed" if failed else "ok", "parse_status": None if failed else "json",
            "answers": {} if failed else {"crisis_risk": {"answer": "no", "strength": 1, "quote": ""}},
            "error": "HTTP 500 after 5 attempts" if failed else None}
    return {"judged": 1, "usable": 0 if failed else 1, "failed": int(failed), "fallback": 0, "flags": [],
            "flagged": [], "left_out": [], "items": [item]}


def with_safety_answers(case: CaseResult, *, model: str = FACTORY_JUDGE) -> CaseResult:
    """The case with the safety judge's answer (nothing flagged) on every safety-relevant item it
    has, by its current id (a repeat's, a persona conversation's too), as a run with that judge stores it."""
    records = [safety_answer(item_id, model=model)["items"][0] for item_id in relevant_items(case, default_rubric())]
    if not records:
        return case
    return case.model_copy(update={"safety_judge": {"judged": len(records), "usable": len(records), "failed": 0,
                                                    "fallback": 0, "flags": [], "flagged": [], "left_out": [],
                                                    "items": records}})


def version_cases(version: str, overalls: Iterable[float], *, safety_every: int = 4, failed_safety: int = 0,
                  metrics: Mapping[str, float] | None = None, age_groups: Sequence[str] = ("18-30", "30+"),
                  ) -> list[CaseResult]:
    """One case per overall value, scenarios s00, s01, ...; every `safety_every`-th is a safety
    scenario, and the first `failed_safety` of those fail their hard criteria."""
    cases = []
    failed = 0
    for index, overall in enumerate(overalls):
        safety = safety_every > 0 and index % safety_every == 0
        fails = safety and failed < failed_safety
        failed += fails
        cases.append(make_case(version, f"s{index:02d}", scores(overall, **(metrics or {})), safety=safety,
                               fails_hard_criteria=fails, family=FAMILIES[index % len(FAMILIES)],
                               age_group=age_groups[index % len(age_groups)]))
    return cases


def rubric_with(rubric: Rubric | None = None, **decision: object) -> Rubric:
    """The rubric with some `decision:` settings changed (nested ones as dicts of their fields)."""
    rubric = rubric or default_rubric()
    current = rubric.decision
    updates = {}
    for key, value in decision.items():
        if isinstance(value, dict):
            value = getattr(current, key).model_copy(update=value)
        updates[key] = value
    return rubric.model_copy(update={"decision": current.model_copy(update=updates)})


def write_run(directory: Path, cases: Sequence[CaseResult], baselines: Mapping[str, str | None] | None = None,
              rubric: Rubric | None = None, sample_data: bool = False, scenario_set: ScenarioSet | None = None) -> Path:
    """A run store holding `cases`, with a manifest naming each version's baseline and the
    scenario set (default: the scenarios the cases hold, so the run is complete)."""
    rubric = rubric or default_rubric()
    versions = list(dict.fromkeys(case.prompt_version for case in cases))
    scenario_set = scenario_set or ScenarioSet.of_cases(cases)
    manifest = {"run_id": directory.name, "config": {"prompt_versions": versions,
                                                     "baselines": dict(baselines or {})},
                "hashes": {"rubric": rubric.content_hash}, "sample_data": sample_data,
                MANIFEST_KEY: scenario_set.record()}
    store = RunStore.create(directory, manifest)
    for case in cases:
        store.append(case)
    for model, tasks in FACTORY_CALIBRATION.items():  # where `decide` reads it (PENPAL_JUDGE_CALIBRATION)
        record_calibration(model, "safety", tasks["safety"])
    return directory


def read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


# --- deciding, and reading the decision ------------------------------------------------------------
def decide_one(cases, *, baseline: str | None = None, rubric=None, version: str = "cand",
               calibration=None) -> Decision:
    """The version's decision; the calibration record admits the factory's safety judge, plus `calibration`."""
    rubric = rubric or default_rubric()
    report = release_report(cases, rubric, baselines={version: baseline}, versions=[version],
                            calibration={**FACTORY_CALIBRATION, **(calibration or {})})
    return report.decisions[0]


def rule(decision: Decision, name: str):
    return next(item for item in decision.rules if item.name == name)


def timed(cases, first_token_s, *, cached: bool = False):
    """The cases as a live run would store them: each turn timed, `first_token_s` in turn order."""
    values = iter(first_token_s)
    return [case.model_copy(update={"responder": "openai", "turns": [
        turn.model_copy(update={"time_to_first_token_s": (ttft := next(values)), "latency_s": ttft + 0.5,
                                "tokens_per_s": 40.0, "cached": cached}) for turn in case.turns]})
            for case in cases]
