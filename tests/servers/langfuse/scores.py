"""Scores: POST /api/public/scores in the server's two known forms, the ingestion worker's
silent drops, and the v3 read `monitor` uses.

`scores_mode="array"` plays a server that takes the SDK 5 batch (a JSON array, 202 or 207)
and keeps each score's timestamp. `scores_mode="object"` plays the route whose source could
be read (web/src/pages/api/public/scores/index.ts): one score object per request, answered
`{id}`, its time the time of receipt; an array is a zod error. `"object-zod4"` is the same
route built on zod 4, whose message reads differently.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from tests.servers.langfuse.core import (
    ApiFailure,
    Reply,
    Request,
    Route,
    cites,
    cursor_page,
    invalid,
    iso,
    new_id,
    now,
    parse_time,
)

SCORES_PATH = "/api/public/scores"
SCORE_MODES = ("array", "object", "object-zod4")
_ENVIRONMENT_PATTERN = re.compile(r"^(?!langfuse)[a-z0-9_-]+$")
_SCORE_TYPES = ("NUMERIC", "BOOLEAN", "CATEGORICAL", "TEXT", "CORRECTION")
_ONE_SUBJECT = ("Provide exactly one of the following: traceId (with optional observationId), sessionId or "
                "datasetRunId. ObservationId requires traceId.")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class ScoreRejected(Exception):
    """One score the API refuses, with Langfuse's reason."""


class ScoreDropped(ScoreRejected):
    """A score the API accepts and the ingestion worker then drops without a word."""


@cites("packages/shared/src/server/ingestion/types.ts", "packages/shared/src/utils/scores.ts")
def checked_body(body: Any) -> dict:
    """The API's checks (ScoreBody with applyScoreValidation): a refusal here is a 400 for a
    single score and an error entry of a 207 for a batch.

    An environment outside PublicEnvironmentName (at most 40 of a-z 0-9 _ -, not starting with
    "langfuse") is refused; absent, it is "default". Issue 30 said the server turns a bad name
    into "default": the source read shows a validation error instead, and that is played here.
    """
    if not isinstance(body, dict):
        raise ScoreRejected("A score must be a JSON object")
    name, value = body.get("name"), body.get("value")
    if not isinstance(name, str) or not name:
        raise ScoreRejected("name: Required")
    if not (_is_number(value) or isinstance(value, str)):
        raise ScoreRejected("value: Expected number or string")
    trace, session, run = (bool(body.get(key)) for key in ("traceId", "sessionId", "datasetRunId"))
    observation = bool(body.get("observationId"))
    if not ((trace and not session and not run) or (session and not trace and not run and not observation)
            or (run and not trace and not session and not observation)):
        raise ScoreRejected(_ONE_SUBJECT)
    if body.get("dataType") is not None and body["dataType"] not in _SCORE_TYPES:
        raise ScoreRejected(f"dataType: Invalid enum value {body['dataType']!r}")
    if (body.get("source") or "API") not in ("API", "ANNOTATION"):
        raise ScoreRejected(f"source: Invalid enum value {body['source']!r}")
    environment = body.get("environment") or "default"
    if not _ENVIRONMENT_PATTERN.match(environment) or len(environment) > 40:
        raise ScoreRejected(f"environment: invalid value {environment!r}")
    return body


@cites("packages/shared/src/server/ingestion/validateAndInflateScore.ts",
       "worker/src/services/IngestionService/index.ts")
def inflated(body: dict, configs: dict[str, dict]) -> dict[str, Any]:
    """The worker's checks (validateAndInflateScore): the answer has gone out already, so a
    score that fails them is dropped, not refused (IngestionService "rejects silently").

    With a config, the body takes the config's name *before* the name check
    (`bodyWithConfigOverrides = {...body, name: config.name}`): a score named otherwise is
    stored under the config's name, never dropped for it.
    """
    name, value, data_type = body["name"], body["value"], body.get("dataType")
    source = body.get("source") or "API"
    config = None
    if body.get("configId"):
        config = configs.get(body["configId"])
        if config is None:
            raise ScoreDropped(f"No score config with id {body['configId']} found")
        if config["isArchived"]:
            raise ScoreDropped("Config is archived and cannot be used to create new scores. "
                               "Please restore the config first.")
        name = config["name"]
        if data_type is not None and data_type != config["dataType"]:
            raise ScoreDropped(f"Data type mismatch based on config: expected {config['dataType']}, got {data_type}")
        data_type = config["dataType"]
    elif source == "ANNOTATION":
        raise ScoreDropped("configId is required for ANNOTATION scores")
    data_type = data_type or ("NUMERIC" if _is_number(value) else "CATEGORICAL")
    number: float | None = None
    string_value: str | None = None
    if data_type == "NUMERIC":
        if not _is_number(value):
            raise ScoreDropped("Value must be a number for numeric scores")
        number = float(value)
        low, high = (config or {}).get("minValue"), (config or {}).get("maxValue")
        if (low is not None and number < low) or (high is not None and number > high):
            raise ScoreDropped("Ingested score body not valid against provided config: "
                               f"value {number} is outside the range [{low}, {high}]")
    elif data_type == "BOOLEAN":
        if not _is_number(value) or value not in (0, 1):
            raise ScoreDropped("Value must be a number equal to either 0 or 1 for boolean scores")
        number, string_value = float(value), "True" if value == 1 else "False"
    elif data_type == "CATEGORICAL":
        if not isinstance(value, str):
            raise ScoreDropped("Value must be a string for categorical scores")
        string_value, number = value, 0.0
        if config is not None:
            matches = [c for c in config.get("categories") or [] if c["label"] == value]
            if not matches:
                labels = ", ".join(c["label"] for c in config.get("categories") or [])
                raise ScoreDropped("Ingested score body not valid against provided config: "
                                   f"value {value!r} must map to one of the categories: {labels}")
            number = float(matches[0]["value"])
    else:  # TEXT, CORRECTION: a string
        string_value = str(value)
    return {"name": name, "dataType": data_type, "source": source, "value": number, "stringValue": string_value}


@cites("langfuse/_task_manager/score_consumer.py")
def score_time(body: dict) -> str:
    """The time a batch score is stored under: its own timestamp (SDK 5 always sends one with a
    UTC offset), the receipt time without one; an unreadable one refuses the score."""
    if body.get("timestamp") is None:
        return iso(now())
    moment = parse_time(body["timestamp"])
    if moment is None:
        raise ScoreRejected("timestamp: Invalid datetime")
    return iso(moment)


class ScoresResource:
    """POST scores (array or object form), dropped scores, and GET v3 scores."""

    def _init_scores(self, scores_mode: str) -> None:
        if scores_mode not in SCORE_MODES:
            raise ValueError(f"scores_mode: one of {', '.join(SCORE_MODES)}, got {scores_mode!r}")
        self.scores_mode = scores_mode
        self._scores: dict[str, dict] = {}
        self._score_deliveries: dict[str, int] = {}
        self._dropped_scores: list[tuple[str, str]] = []  # (score id, reason): accepted, then dropped
        # The scores table (clickhouse migration 0003_scores): a ReplacingMergeTree ordered by
        # (project_id, toDate(timestamp), name, id): the same id on another day is another row.
        self._score_rows: dict[tuple[str, str, str], dict] = {}

    def _scores_routes(self, p: str) -> list[Route]:
        return [Route("POST", f"{p}/scores", self._post_scores, body="json"),
                Route("GET", f"{p}/v3/scores", self._list_scores_v3)]

    # --- what arrived -----------------------------------------------------------------------------
    @property
    def scores(self) -> dict[str, dict]:
        return self.snapshot(self._scores)

    @property
    def score_deliveries(self) -> dict[str, int]:
        """How often each stored score was accepted by a POST."""
        with self._lock:
            return dict(self._score_deliveries)

    @property
    def score_rows(self) -> list[dict]:
        """Every stored score row, as the scores table holds them (keyed by day, name and id)."""
        return self.snapshot(list(self._score_rows.values()))

    @property
    def dropped_scores(self) -> list[tuple[str, str]]:
        """Scores the API accepted and the ingestion worker dropped: (score id, reason)."""
        with self._lock:
            return list(self._dropped_scores)

    def score_view_v2(self) -> list[dict]:
        """Each score as the v4 score widgets read it, with its trace's root-event fields."""
        with self._lock:
            return [{**copy.deepcopy(score), **self.score_trace_fields(score.get("traceId"))}
                    for score in self._scores.values()]

    # --- ingestion --------------------------------------------------------------------------------
    @cites("packages/shared/clickhouse/migrations/clustered/0003_scores.up.sql")
    def _store(self, body: dict, timestamp: str) -> None:
        """Upsert on id; the scores table keys rows on (day of timestamp, name, id)."""
        checked = inflated(body, self._score_configs)
        moment = iso(now())
        score_id = body.get("id") or new_id()
        previous = self._scores.get(score_id)
        score: dict[str, Any] = {
            "id": score_id, "projectId": self.project_id, "traceId": body.get("traceId"),
            "sessionId": body.get("sessionId"), "observationId": body.get("observationId"),
            "datasetRunId": body.get("datasetRunId"), "name": checked["name"], "dataType": checked["dataType"],
            "source": checked["source"], "timestamp": timestamp, "authorUserId": None, "comment": body.get("comment"),
            "metadata": body.get("metadata") if body.get("metadata") is not None else {},
            "configId": body.get("configId"), "queueId": body.get("queueId"),
            "environment": body.get("environment") or "default",
            "createdAt": previous["createdAt"] if previous else moment, "updatedAt": moment,
        }
        if checked["value"] is not None:
            score["value"] = checked["value"]
        if checked["stringValue"] is not None:
            score["stringValue"] = checked["stringValue"]
        self._scores[score_id] = score
        self._score_rows[(timestamp[:10], score["name"], score_id)] = score
        self._score_deliveries[score_id] = self._score_deliveries.get(score_id, 0) + 1

    def _post_scores(self, request: Request) -> Reply:
        if self.scores_mode == "array":
            return self._post_score_batch(request)
        return self._post_score_object(request)

    @cites("web/src/pages/api/public/scores/index.ts", "web/src/features/public-api/server/withMiddlewares.ts")
    def _post_score_object(self, request: Request) -> Reply:
        """One object per request, answered {id}; the body schema has no `timestamp`, so zod
        strips it and the score takes the time of receipt. An array fails the body schema:
        400 "Invalid request data" with zod's issue (zod 3 or zod 4 wording)."""
        body = request.body
        if isinstance(body, list):
            message = ("Invalid input: expected object, received array" if self.scores_mode == "object-zod4"
                       else "Expected object, received array")
            raise ApiFailure(400, "Invalid request data", issues=[
                {"code": "invalid_type", "expected": "object", "received": "array", "path": [], "message": message}])
        try:
            checked_body(body)
        except ScoreRejected as rejection:
            raise invalid([], str(rejection)) from None
        self.check_body("POST", SCORES_PATH, request.path, body)
        score_id = body.get("id") or new_id()
        try:
            self._store({**body, "id": score_id}, iso(now()))
        except ScoreDropped as dropped:
            self._dropped_scores.append((score_id, str(dropped)))
        return Reply(200, {"id": score_id})

    @cites("langfuse/_task_manager/score_consumer.py", "langfuse/api/scores/types/create_score_batch_results.py")
    def _post_score_batch(self, request: Request) -> Reply:
        """The SDK 5 batch: each score is accepted or refused on its own; 202 when all were
        accepted, else 207 with counts and one message per refusal (no id, no index). A score
        the worker drops still counts as accepted."""
        body = request.body
        if not isinstance(body, list):
            raise invalid([], "Expected array, received object")
        errors: list[dict[str, str]] = []
        accepted = 0
        accepted_ids: list[str] = []
        schema = self._spec.component("CreateScoreRequest") if self._spec is not None else None
        for index, item in enumerate(body):
            label = f"scores[{index}]"
            if schema is not None:
                reasons = self._spec.spec.errors(schema, item)
                if reasons:
                    self._schema_errors.extend(f"POST {request.path} {label}: {reason}" for reason in reasons)
                    errors.append({"message": f"{label}: Invalid request data: {'; '.join(reasons)}"})
                    continue
            reason = self.score_rejections(item) if self.score_rejections and isinstance(item, dict) else None
            if reason:  # the test's own refusal (LangfuseCompatServer.score_rejections)
                errors.append({"message": f"{label}: {reason}"})
                continue
            try:
                checked_body(item)
                self._store(item, score_time(item))
                accepted += 1
                accepted_ids.append(item.get("id"))
            except ScoreDropped as dropped:
                self._dropped_scores.append((item.get("id") or "", str(dropped)))
                accepted += 1
            except ScoreRejected as rejection:
                errors.append({"message": f"{label}: {rejection}"})
        self._batches.append(("scores", accepted_ids))
        if errors:
            return Reply(207, {"accepted": accepted, "rejected": len(errors), "errors": errors})
        return Reply(202, {"message": "Accepted"})

    # --- the v3 read ------------------------------------------------------------------------------
    def _score_v3(self, score: dict, groups: set[str]) -> dict:
        data_type = score["dataType"]
        if data_type == "NUMERIC":
            value: Any = score["value"]
        elif data_type == "BOOLEAN":
            value = score["value"] == 1
        else:
            value = score.get("stringValue", "")
        result: dict[str, Any] = {key: score[key] for key in ("id", "projectId", "name", "source", "timestamp",
                                                              "environment", "createdAt", "updatedAt")}
        result.update(dataType=data_type, value=value)
        if "details" in groups:
            result.update(comment=score["comment"], configId=score["configId"], metadata=score["metadata"])
        if "annotation" in groups:
            result.update(authorUserId=score["authorUserId"], queueId=score["queueId"])
        if "subject" in groups:
            if score.get("observationId"):
                subject = {"kind": "observation", "id": score["observationId"], "traceId": score["traceId"]}
            elif score.get("traceId"):
                subject = {"kind": "trace", "id": score["traceId"]}
            elif score.get("sessionId"):
                subject = {"kind": "session", "id": score["sessionId"]}
            else:
                subject = {"kind": "experiment", "id": score["datasetRunId"]}
            result["subject"] = subject
        return copy.deepcopy(result)

    @cites("fern/apis/server/definition/scores.yml")
    def _list_scores_v3(self, request: Request) -> Reply:
        """Cursor pages, newest first; comma-separated filters mean any of them; field groups
        details, subject and annotation (others refused)."""
        groups = set(request.args("fields"))
        unknown = groups - {"details", "subject", "annotation"}
        if unknown:
            raise invalid("fields", f"Unknown field groups: {', '.join(sorted(unknown))}")
        scores = list(self._scores.values())
        for parameter in ("name", "configId", "traceId", "sessionId", "observationId", "environment", "id"):
            values = request.args(parameter)
            if values:
                scores = [s for s in scores if s.get(parameter) in values]
        data_types = [value.upper() for value in request.args("dataType")]
        if data_types:
            scores = [s for s in scores if s["dataType"] in data_types]
        start, end = request.time_arg("fromTimestamp"), request.time_arg("toTimestamp")
        if start is not None:
            scores = [s for s in scores if parse_time(s["timestamp"]) >= start]
        if end is not None:
            scores = [s for s in scores if parse_time(s["timestamp"]) < end]
        scores = sorted(reversed(scores), key=lambda s: s["timestamp"], reverse=True)
        chunk, meta = cursor_page(scores, request, max_limit=100)
        return Reply(200, {"data": [self._score_v3(s, groups) for s in chunk], "meta": meta})
