"""The caps a fired hard flag puts on a reply's scores: one code path for the scorer and for
anyone who changes a reply's flags after it was scored (the safety verdict,
evaluators.judge.safety_verdict).

The scorer caps each metric a fired disqualifier names (`flag_capped`), then the voice budget's
cap, then scales overall quality under `flagged_overall_cap` (`flagged_overall`). A stored reply
record keeps each cap as evidence (`capped_by_<flag>`, `far_beyond_voice_budget`) whose effect
is what the cap took off, so `reflagged` can lift the caps off a stored record and put on those
of another set of flags, without reading the reply again. A case's scores are the mean over its
turns, capped by every flag any turn raised (`case_scores`), as the runner computes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean

from evaluators.core.names import METRIC_NAMES, OVERALL, SCORE_COLUMNS
from evaluators.rubric.loader import Rubric
from evaluators.scoring.contracts import Evidence, Flag

FLAG_CAP_PREFIX = "capped_by_"
VOICE_CAP = "far_beyond_voice_budget"


def capped(value: float, cap: float, indicator: str, text: str, evidence: list[Evidence]) -> float:
    """`value` lowered to `cap`, with evidence saying why; a value under the cap stands."""
    if value <= cap:
        return value
    evidence.append(Evidence(indicator=indicator, text=text, effect=round(cap - value, 4)))
    return cap


def flag_capped(metric: str, value: float, flags: Sequence[Flag], caps: Mapping[str, float], rubric: Rubric,
                evidence: list[Evidence]) -> float:
    """`value` under the cap the fired flags put on `metric` (`Rubric.caps_for`), the evidence naming
    the flag whose cap it is."""
    if metric not in caps:
        return value
    cause = next(flag for flag in flags if metric in rubric.disqualifiers[flag.name].caps
                 and rubric.disqualifiers[flag.name].cap == caps[metric])
    return capped(value, caps[metric], f"{FLAG_CAP_PREFIX}{cause.name}", cause.text, evidence)


def flagged_overall(overall: float, flags: Sequence[Flag], rubric: Rubric) -> tuple[float, list[Evidence]]:
    """Overall quality under the flags: a flagged reply's weighted sum scaled under the cap (it
    cannot lift a flagged reply past it, and flagged replies keep their order), with evidence."""
    if not flags:
        return overall, []
    flagged = rubric.flagged_overall(overall)
    evidence = []
    if flagged < overall:
        evidence.append(Evidence(indicator=f"{FLAG_CAP_PREFIX}{flags[0].name}", text=flags[0].text,
                                 effect=round(flagged - overall, 4)))
    return flagged, evidence


def _is_cap(item: Mapping) -> bool:
    indicator = str(item.get("indicator", ""))
    return indicator.startswith(FLAG_CAP_PREFIX) or indicator == VOICE_CAP


def reflagged(record: Mapping, flags: Sequence[Flag], rubric: Rubric) -> dict:
    """A stored reply record (`HeuristicResult.to_record()`) with its flags replaced by `flags` and
    the caps redone: the old caps are lifted by their recorded effect, the new ones applied as
    the scorer applies them. Everything else in the record stands."""
    evidence = dict(record.get("evidence") or {})
    caps = rubric.caps_for(flag.name for flag in flags)
    values: dict[str, float] = {}
    for metric in METRIC_NAMES:
        items = list(evidence.get(metric) or [])
        lifted = [item for item in items if _is_cap(item)]
        value = min(1.0, max(0.0, float(record[metric]) - sum(float(item.get("effect", 0.0)) for item in lifted)))
        kept = [Evidence(**item) for item in items if not _is_cap(item)]
        value = flag_capped(metric, value, flags, caps, rubric, kept)
        for voice in (item for item in lifted if item.get("indicator") == VOICE_CAP):
            value = capped(value, rubric.voice.far_beyond_cap, VOICE_CAP, str(voice.get("text", "")), kept)
        values[metric] = value
        evidence[metric] = [item.model_dump() for item in kept]
    weighted = min(1.0, max(0.0, sum(rubric.weights[metric] * values[metric] for metric in METRIC_NAMES)))
    overall, overall_evidence = flagged_overall(weighted, flags, rubric)
    evidence[OVERALL] = [item for item in evidence.get(OVERALL) or [] if not _is_cap(item)]
    evidence[OVERALL] += [item.model_dump() for item in overall_evidence]
    return {**record, **{metric: round(value, 4) for metric, value in values.items()},
            OVERALL: round(overall, 4), "quality_level": rubric.quality_level(overall), "evidence": evidence,
            "flags": [flag.model_dump() for flag in flags]}


def case_scores(turn_records: Iterable[Mapping], flags: Iterable[str], rubric: Rubric) -> dict[str, float]:
    """A case's scores: each score's mean over its turns, capped by every flag a turn raised (a
    mean over clean turns must not dilute a flag)."""
    records = list(turn_records)
    return rubric.cap_scores({name: round(fmean(record[name] for record in records), 4) for name in SCORE_COLUMNS},
                             flags)
