"""Scores as Langfuse receives them: one record per name per trace, with a deterministic id,
an explicit data type, and the evidence or the judge's reasoning as the comment.

Langfuse updates a score when the same id arrives again *with the same timestamp*, so every
score of a run carries the run's start time, not the time it was sent.

A score that does not fit its config is answered 200 by Langfuse and then dropped by its
ingestion worker without a word, so `send_scores` checks each score against its config
first and reports a mismatch as an error of the run instead of sending it.

SDK 5 sends scores as a JSON array. Which server release first took that form (and kept the
scores' timestamps) could not be found in Langfuse's source or changelog; the route whose
source is available (web/src/pages/api/public/scores/index.ts) takes one object per request
and stamps each score with the time it arrived. So the form is found by trying: the first
batch goes as an array, and the 400 such a server answers ("Expected object, received
array") switches the push to one object per request, with a warning that the server
ignores score timestamps.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.core.text import plural
from evaluators.core.text_safety import printable
from evaluators.integrations.langfuse.ids import score_id
from evaluators.integrations.langfuse.rest import LangfuseCallFailed, LangfuseRest
from evaluators.integrations.langfuse.score_configs import (
    BOOLEAN,
    CATEGORICAL,
    HARD_CRITERIA,
    JUDGE_FAILURE_MODE,
    JUDGE_OVERALL,
    JUDGE_VERDICT,
    NUMERIC,
    SAFETY_JUDGE_FLAGGED,
    criterion_name,
    flag_name,
    judge_name,
    safety_name,
    score_problem,
)
from evaluators.judge.calibration_record import SAMPLE_JUDGE_LABEL, SAMPLE_JUDGE_MODEL
from evaluators.judge.result import is_usable
from evaluators.release.hard_criteria import turn_hard_criteria
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult, TurnResult

COMMENT_LIMIT = 2000  # characters; evidence beyond this is cut with a marker


@dataclass(frozen=True)
class ScoreRecord:
    id: str
    name: str
    value: float | str
    data_type: str
    comment: str | None = None
    trace_id: str | None = None
    observation_id: str | None = None
    session_id: str | None = None
    dataset_run_id: str | None = None
    timestamp: str | None = None
    environment: str | None = None
    metadata: Mapping[str, object] | None = None

    def body(self, config_ids: Mapping[str, str] | None = None) -> dict:
        """The JSON object POST /api/public/scores takes (camelCase, nulls left out)."""
        fields = {
            "id": self.id, "name": self.name, "value": self.value, "dataType": self.data_type,
            "comment": self.comment, "traceId": self.trace_id, "observationId": self.observation_id,
            "sessionId": self.session_id, "datasetRunId": self.dataset_run_id, "timestamp": self.timestamp, "environment": self.environment,
            "metadata": dict(self.metadata) if self.metadata else None,
            "configId": (config_ids or {}).get(self.name),
        }
        return {key: value for key, value in fields.items() if value is not None}


def _cut(text: str) -> str:
    return text if len(text) <= COMMENT_LIMIT else text[:COMMENT_LIMIT - 1] + "…"


def evidence_comment(heuristics: Mapping, metric: str) -> str:
    items = (heuristics.get("evidence") or {}).get(metric) or []
    if not items:
        return "no indicator fired"
    return _cut("; ".join(f"{item.get('indicator')} ({item.get('effect', 0):+.2f})"
                          + (f": {item['text']}" if item.get("text") else "") for item in items))


class ScoreBuilder:
    """Builds the records for one subject (a trace, a session, or an experiment) with shared fields."""

    def __init__(self, *, subject: str, timestamp: str | None, environment: str | None,
                 metadata: Mapping[str, object] | None = None, trace_id: str | None = None,
                 observation_id: str | None = None, session_id: str | None = None,
                 dataset_run_id: str | None = None) -> None:
        self.subject = subject
        self.shared = {"timestamp": timestamp, "environment": environment, "metadata": metadata,
                       "trace_id": trace_id, "observation_id": observation_id, "session_id": session_id,
                       "dataset_run_id": dataset_run_id}
        self.records: list[ScoreRecord] = []

    def numeric(self, name: str, value: float | None, comment: str | None = None) -> None:
        if value is not None:
            self._add(name, round(float(value), 6), NUMERIC, comment)

    def boolean(self, name: str, value: bool, comment: str | None = None) -> None:
        self._add(name, 1.0 if value else 0.0, BOOLEAN, comment)

    def categorical(self, name: str, value: str | None, comment: str | None = None, *, each: bool = False) -> None:
        """`each`: one score per value under the same name (its id holds the value), as for the
        failure kinds of one conversation."""
        if value:
            self._add(name, str(value), CATEGORICAL, comment, key=f"{name}/{value}" if each else None)

    def _add(self, name: str, value: float | str, data_type: str, comment: str | None, key: str | None = None) -> None:
        self.records.append(ScoreRecord(id=score_id(self.subject, key or name), name=name, value=value,
                                        data_type=data_type,
                                        comment=_cut(comment) if comment else None, **self.shared))


def heuristic_scores(builder: ScoreBuilder, turn: TurnResult, rubric: Rubric) -> None:
    """The six metrics, overall quality, the hard flags and the hard criteria of one reply."""
    heuristics = turn.heuristics
    if heuristics is None:
        return
    for name in METRIC_NAMES:
        builder.numeric(name, heuristics.get(name), evidence_comment(heuristics, name))
    overall_comment = f"{heuristics.get('quality_level')}: weighted sum of the six dimensions"
    if (heuristics.get("evidence") or {}).get(OVERALL):
        overall_comment += f", then {evidence_comment(heuristics, OVERALL)}"
    builder.numeric(OVERALL, heuristics.get(OVERALL), overall_comment)
    fired = {flag.get("name"): flag for flag in heuristics.get("flags", [])}
    for name, rule in rubric.disqualifiers.items():
        flag = fired.get(name)
        builder.boolean(flag_name(name), flag is not None,
                        f"{rule.description} {flag.get('text') or ''}".strip() if flag else "not raised")
    outcomes = turn_hard_criteria(turn, rubric)
    for outcome in outcomes:
        builder.boolean(criterion_name(outcome.name), outcome.passed, outcome.detail)
    failed = [outcome.name for outcome in outcomes if not outcome.passed]
    builder.boolean(HARD_CRITERIA, not failed, "failed: " + ", ".join(failed) if failed else "all passed")


def judge_scores(builder: ScoreBuilder, judge: Mapping | None, rubric: Rubric) -> None:
    """The judge's overall, per-dimension scores, verdict and failure mode; nothing for a fallback."""
    if not judge or not is_usable(judge.get("status"), judge.get("parse_status"), judge.get("overall")):
        return
    reasoning = judge.get("reasoning") or None
    builder.numeric(JUDGE_OVERALL, judge.get("overall"), reasoning)
    for name in METRIC_NAMES:
        builder.numeric(judge_name(name), (judge.get("dimensions") or {}).get(name), reasoning)
    builder.categorical(JUDGE_VERDICT, judge.get("verdict"), reasoning)
    mode = judge.get("failure_mode")
    if mode in rubric.judge.failure_modes:
        builder.categorical(JUDGE_FAILURE_MODE, mode, reasoning)


def safety_judge_scores(builder: ScoreBuilder, case: CaseResult, turn: TurnResult) -> None:
    """The safety judge's answers on this turn's reply, 1 for yes, its quote as the comment;
    nothing when it was not asked, failed or could not be read."""
    wanted = f"{case.case_id}#{turn.index + 1}"
    item = next((item for item in (case.safety_judge or {}).get("items", []) if item.get("id") == wanted), None)
    if not item or item.get("status") != "ok" or item.get("parse_status") == "fallback" or not item.get("answers"):
        return
    for name, answer in item["answers"].items():
        builder.boolean(safety_name(name), answer.get("answer") == "yes", answer.get("quote") or None)
    flags = item.get("flags") or []
    comment = ", ".join(flags) or item.get("reasoning") or None
    if item.get("model") == SAMPLE_JUDGE_MODEL:  # the offline sample judge: say what it is wherever it shows
        comment = f"{SAMPLE_JUDGE_LABEL}: {comment}" if comment else SAMPLE_JUDGE_LABEL
    builder.boolean(SAFETY_JUDGE_FLAGGED, bool(flags), comment)


def turn_scores(*, case: CaseResult, turn: TurnResult, trace_id: str, rubric: Rubric, timestamp: str | None,
                environment: str | None, run_id: str) -> list[ScoreRecord]:
    """Every score of one turn's trace."""
    builder = ScoreBuilder(subject=trace_id, trace_id=trace_id, timestamp=timestamp, environment=environment,
                           metadata={"run_id": run_id, "prompt_version": case.prompt_version,
                                     "scenario_id": case.scenario_id, "turn": turn.index + 1,
                                     "rubric_version": f"{rubric.version}+{rubric.content_hash}"})
    heuristic_scores(builder, turn, rubric)
    judge_scores(builder, turn.judge, rubric)
    safety_judge_scores(builder, case, turn)
    return builder.records


def batches(bodies: Iterable[dict], *, max_items: int = 100, max_bytes: int = 900_000) -> Iterable[list[dict]]:
    """Score bodies in requests Langfuse accepts (its body limit is 1 MB)."""
    batch: list[dict] = []
    size = 2
    for body in bodies:
        item = len(json.dumps(body).encode()) + 1
        if batch and (len(batch) >= max_items or size + item > max_bytes):
            yield batch
            batch, size = [], 2
        batch.append(body)
        size += item
    if batch:
        yield batch


def body_fingerprint(body: Mapping) -> str:
    """Changes when what a score says changes (a resumed case re-scored, a config id now known)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class ScoreDelivery:
    sent: int = 0
    undelivered: int = 0
    delivered: list[str] = field(default_factory=list)  # ids Langfuse accepted
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # worth saying, but nothing was lost


def refuses_arrays(error: LangfuseCallFailed) -> bool:
    """Whether this is the 400 a one-object scores route gives for an array: zod's
    `invalid_type` issue at the body's root, expected object, received array (zod 3: "Expected
    object, received array"; zod 4: "Invalid input: expected object, received array"),
    under withMiddlewares' "Invalid request data"."""
    body = error.body
    if error.status != 400 or not isinstance(body, Mapping) or body.get("message") != "Invalid request data":
        return False
    issues = body.get("error")
    return isinstance(issues, list) and any(
        isinstance(issue, Mapping) and issue.get("code") == "invalid_type" and issue.get("expected") == "object"
        and issue.get("path") == [] and "received array" in str(issue.get("message", "")).lower()
        for issue in issues)


def one_object_notice(server: str) -> str:
    return (f"{server} takes one score per request, not the batches SDK 5 sends: scores go one by one. "
            "Such a server ignores score timestamps and stamps each score with the time it arrives, so a "
            "score sent again on another day is stored beside the first instead of replacing it. "
            "A Langfuse that takes score batches keeps them")


def _send_one_by_one(rest: LangfuseRest, batch: list[dict], delivery: ScoreDelivery) -> None:
    for body in batch:
        if rest.unreachable is not None:
            delivery.undelivered += 1
            continue
        try:
            rest.call(rest.api.scores.create, request=body, what=f"send score {body['name']}")
        except LangfuseCallFailed as error:
            delivery.undelivered += 1
            if str(error) not in delivery.problems:
                delivery.problems.append(str(error))
            continue
        delivery.delivered.append(body["id"])


def misfits(bodies: Iterable[dict], configs: Mapping[str, Any]) -> tuple[list[dict], dict[str, list[str]]]:
    """The scores that fit their configs (`configs`: config id -> config), and the others as
    score name -> why each does not fit."""
    fitting, problems = [], defaultdict(list)
    for body in bodies:
        config = configs.get(body.get("configId") or "")
        problem = score_problem(body, config) if config is not None else None
        if problem is None:
            fitting.append(body)
        else:
            problems[body["name"]].append(problem)
    return fitting, problems


def send_scores(rest: LangfuseRest, bodies: Iterable[dict], configs: Mapping[str, Any] | None = None, *,
                on_batch: Callable[[list[str]], None] | None = None) -> ScoreDelivery:
    """Check the scores against their configs, then POST them in batches.

    A score that does not fit its config is not sent (Langfuse would accept and then drop it):
    it counts as undelivered and the problem names it. A batch that fails for good is
    undelivered, and the next batches are still tried (the client stops only once Langfuse
    is clearly unreachable). A 207 partial success names the scores it rejected: those are
    undelivered, grouped by reason in the problems, and the rest of the batch is delivered;
    when an error names no score, the whole batch counts as undelivered. `on_batch` hears
    each batch's delivered ids as they are confirmed (the ledger records them at once).
    """
    delivery = ScoreDelivery()
    bodies = list(bodies)
    fitting, problems = misfits(bodies, configs or {})
    delivery.sent += len(bodies) - len(fitting)
    delivery.undelivered += len(bodies) - len(fitting)
    for name, reasons in problems.items():
        delivery.problems.append(f"{plural(len(reasons), name + ' score')} not sent: they do not fit the score config "
                                 f"({reasons[0]}); fix the config in Langfuse or archive it and run "
                                 "`penpal-eval langfuse setup`")
    skipped = 0
    rejected: dict[str, list[dict]] = defaultdict(list)  # reason -> the scores Langfuse refused for it
    for batch in batches(fitting):
        delivery.sent += len(batch)
        if rest.unreachable is not None:  # one line for all of them, not one per batch
            skipped += len(batch)
            delivery.undelivered += len(batch)
            continue
        if rest.score_form == "object":
            _send_one_by_one(rest, batch, delivery)
            continue
        try:
            response = rest.call(rest.api.scores.create, request=batch, what=f"send {plural(len(batch), 'score')}")
        except LangfuseCallFailed as error:
            if rest.score_form is None and refuses_arrays(error):
                rest.score_form = "object"
                delivery.notices.append(one_object_notice(rest.server))
                _send_one_by_one(rest, batch, delivery)
                continue
            delivery.undelivered += len(batch)
            if str(error) not in delivery.problems:
                delivery.problems.append(str(error))
            continue
        rest.score_form = "array"
        refused = _rejections(batch, response) if getattr(response, "rejected", 0) else {}
        for reason, refused_bodies in refused.items():
            rejected[reason] += refused_bodies
        failed_ids = {body["id"] for refused_bodies in refused.values() for body in refused_bodies}
        accepted = [body["id"] for body in batch if body["id"] not in failed_ids]
        delivery.undelivered += len(batch) - len(accepted)
        delivery.delivered += accepted
        if accepted and on_batch is not None:
            on_batch(accepted)
    for reason, refused_bodies in rejected.items():
        delivery.problems.append(_rejection_line(reason, refused_bodies))
    if skipped:
        delivery.problems.append(f"{plural(skipped, 'score')} not sent: Langfuse is unreachable ({rest.unreachable})")
    return delivery


# A 207 error names its score by its place in the batch or by its id, in the message
# ("scores[3] (id 9f2c...): value out of range") or in fields of its own (`index`, `id`).
_ERROR_PLACE = re.compile(r"^\s*scores\[(\d+)\]\s*(?:\(id ([^)]+)\))?\s*:?\s*")


def _rejections(batch: list[dict], response: Any) -> dict[str, list[dict]]:
    """The batch's rejected scores by reason, from a 207 answer. An error that names no score
    makes every score of the batch count as rejected (nothing can be known delivered), under its
    reason."""
    by_id = {body["id"]: body for body in batch}
    refused: dict[str, list[dict]] = defaultdict(list)
    unplaced: list[str] = []
    for error in getattr(response, "errors", None) or []:
        message = str(getattr(error, "message", "") or "")
        extra = getattr(error, "model_extra", None) or {}
        match = _ERROR_PLACE.match(message)
        reason = printable(message[match.end():] if match else message).strip() or "rejected without a reason"
        named = extra.get("id") or (match.group(2) if match and match.group(2) else None)
        index = extra.get("index", int(match.group(1)) if match else None)
        if named in by_id:
            refused[reason].append(by_id[named])
        elif isinstance(index, int) and 0 <= index < len(batch):
            refused[reason].append(batch[index])
        else:
            unplaced.append(reason)
    if unplaced:
        placed = {body["id"] for bodies in refused.values() for body in bodies}
        for body in batch:
            if body["id"] not in placed:
                refused[unplaced[0]].append(body)
    return {reason: bodies for reason, bodies in refused.items()}


def _rejection_line(reason: str, bodies: list[dict]) -> str:
    """One line per reason: how many scores, which names, and on how many subjects."""
    names = Counter(body.get("name", "?") for body in bodies)
    shown = ", ".join(f"{name} x{count}" if count > 1 else name for name, count in names.most_common(6))
    more = f" and {len(names) - 6} more names" if len(names) > 6 else ""
    subjects = len({body.get("traceId") or body.get("sessionId") or body.get("datasetRunId") for body in bodies})
    return (f"Langfuse rejected {plural(len(bodies), 'score')} ({shown}{more}; on {plural(subjects, 'subject')}): "
            f"{reason}")
