"""What a version's safety-relevant replies rest on: verified by a judge or a detector, or not at all.

Issue 26's gate: a version may ship only when every reply that matters for safety was verified.
Safety-relevant replies are the safety judge's triggered items (evaluators.judge.safety_stage
planned_items) for any reason but "judged by the quality judge", each persona conversation
included; they are computed from the stored cases, so a run without a judge has them too.

An item is verified when
- a judge admitted for safety (a recorded `calibrate --safety` kappa at the rubric's bar:
  evaluators.judge.calibration_record.admission) answered it usably; or
- a detector whose rubric entry lets it raise a hard flag (its `flag` is a disqualifier) scored
  it at or beyond its `flag_at`, and that flag fired on the reply.
Everything else is unverified: no judge, a failed or unreadable judge call, a judge not admitted,
an item a --judge-budget left out. A failed judge is missing evidence, never a pass.

Pure: the calibration book is read by the caller, as evaluators.release.judge_admission does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluators.judge.calibration_record import CalibrationBook, admission
from evaluators.judge.safety_judge import SafetyJudgeResult
from evaluators.judge.safety_stage import planned_items, safety_relevant
from evaluators.release.contracts import SafetyEvidence
from evaluators.release.judge_admission import UNNAMED
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult, TurnResult

SHOWN_IDS = 20  # unverified item ids kept on the decision; the count is always whole


def relevant_items(case: CaseResult, rubric: Rubric) -> list[str]:
    """The ids of the case's safety-relevant items (contract point 1), in the judge's order, by
    the triggers the decision's rubric states (its detectors' judge bands)."""
    if case.status != "ok" or not case.turns:
        return []  # a failed case is missing evidence already (evaluators.release.coverage)
    return [item.id for item, why in planned_items(case, rubric=rubric) if safety_relevant(why)]


def _answers(case: CaseResult) -> dict[str, SafetyJudgeResult]:
    """The safety judge's stored answers on the case, by item id."""
    items = (case.safety_judge or {}).get("items") or []
    return {str(record.get("id")): SafetyJudgeResult.model_validate(record) for record in items
            if isinstance(record, Mapping)}


def _left_out(case: CaseResult) -> set[str]:
    return {str(entry.get("id")) for entry in (case.safety_judge or {}).get("left_out") or []
            if isinstance(entry, Mapping)}


def hard_flag_detectors(rubric: Rubric) -> dict[str, tuple[str, float]]:
    """Detector name -> (the hard flag it may raise, its flag_at), for the detectors whose `use`
    lets them raise one; under the shipped weights none does, so none verifies anything."""
    return {name: (rule.flag, rule.flag_at) for name, rule in rubric.detectors.behaviours.items()
            if rule.flag is not None and rule.flag in rubric.disqualifiers}


def detector_verified(turn: TurnResult, detectors: Mapping[str, tuple[str, float]]) -> bool:
    """A detector allowed a hard flag scored the reply at or beyond its flag_at, and the flag fired."""
    heuristics = turn.heuristics or {}
    scores = heuristics.get("detectors") or {}
    fired = {flag.get("name") for flag in heuristics.get("flags") or [] if isinstance(flag, Mapping)}
    return any(isinstance(scores.get(name), int | float) and scores[name] >= flag_at and flag in fired
               for name, (flag, flag_at) in detectors.items())


def version_safety_evidence(cases: Sequence[CaseResult], version: str, rubric: Rubric,
                            book: CalibrationBook | None) -> SafetyEvidence:
    """The version's safety-relevant items counted by what verified them (every repeat counts)."""
    mine = [case for case in cases if case.prompt_version == version]
    answers = {case.case_id: _answers(case) for case in mine}
    models = sorted({result.model or UNNAMED for found in answers.values() for result in found.values()
                     if result.usable})  # an answer with no named model counts as one no record admits
    bar = rubric.judge.calibration.min_kappa
    admitted = {model for model in models if admission(book or {}, [model], "safety", bar) is None}
    refused = [model for model in models if model not in admitted]
    failed_models: set[str] = set()
    detectors = hard_flag_detectors(rubric)
    counts = dict.fromkeys(("relevant", "by_judge", "by_detector", "judge_failed", "not_admitted", "left_out"), 0)
    unverified: list[str] = []
    for case in mine:
        turns = {f"{case.case_id}#{turn.index + 1}": turn for turn in case.turns}
        left_out = _left_out(case)
        for item_id in relevant_items(case, rubric):
            counts["relevant"] += 1
            result = answers[case.case_id].get(item_id)
            turn = turns.get(item_id)
            if result is not None and result.usable and (result.model or UNNAMED) in admitted:
                counts["by_judge"] += 1
                continue
            if turn is not None and detector_verified(turn, detectors):
                counts["by_detector"] += 1
                continue
            unverified.append(item_id)
            if result is not None and not result.usable:
                counts["judge_failed"] += 1
                failed_models.add(result.model or UNNAMED)
            elif result is not None:
                counts["not_admitted"] += 1
            elif item_id in left_out:
                counts["left_out"] += 1
    return SafetyEvidence(
        **counts, unverified=len(unverified), judged=any(case.safety_judge for case in mine), models=models,
        unadmitted_models=refused, failed_models=sorted(failed_models),
        admission=admission(book or {}, refused, "safety", bar) if refused else None,
        unverified_ids=unverified[:SHOWN_IDS], guards=list(rubric.decision.safety_evidence.guards))


def admitted_models(book: CalibrationBook | None, bar: float) -> list[str]:
    """The models the calibration record admits for safety, to name in the command."""
    return sorted(model for model in (book or {}) if admission(book or {}, [model], "safety", bar) is None)


def verify_command(evidence: SafetyEvidence, version: str, run_dir: str, suggested_model: str | None) -> str:
    """The command that verifies the version's unverified safety-relevant items, in words.

    A failed judge call is asked again by `penpal-eval verify` with the model that failed: it
    puts the stored replies to the judge again. `run --resume` judges the stored replies again
    too (the companion is not called), but it asks the quality judge again as well and refuses
    a judge endpoint other than the run's, so verify is the step named. A judge not admitted becomes admitted by calibrating it
    (`decide` then reads the new record; nothing to run again). A run without a judge, or whose
    budget left items out, has its stored replies judged by `penpal-eval verify` too
    (evaluators.release.verify_run).
    """
    steps = []
    if evidence.judge_failed:
        failed = [model for model in evidence.failed_models if model != UNNAMED]
        if len(failed) != len(evidence.failed_models) or not failed:  # a failure with no named model
            failed.append(suggested_model or "MODEL")
        steps.extend(f"ask the judge again where it failed, on the stored replies: penpal-eval verify {run_dir} "
                     f"-p {version} --judge-model {model}" for model in dict.fromkeys(failed))
    if evidence.not_admitted:
        for model in [model for model in evidence.unadmitted_models if model != UNNAMED]:
            steps.append(f"calibrate {model} for safety on the team's labelled sample: "
                         f"penpal-eval calibrate --safety FILE --judge-model {model}")
    rest = evidence.unverified - evidence.judge_failed - evidence.not_admitted
    if rest or UNNAMED in evidence.unadmitted_models:  # answers no record can admit: judged again
        model = suggested_model or "MODEL"
        why = "no judge answered them" if not evidence.judged else "the judge did not read them"
        steps.append(f"{why}: judge the stored replies, penpal-eval verify {run_dir} -p {version} --judge-model {model}"
                     + ("" if suggested_model else "; MODEL must be admitted first: penpal-eval calibrate "
                        "--safety FILE --judge-model MODEL"))
    return "; ".join(steps)
