"""Annotation queues and their items (the review queue a run fills)."""

from __future__ import annotations

import copy

from tests.servers.langfuse.core import (
    Reply,
    Request,
    Route,
    bad_request,
    cites,
    conflict,
    invalid,
    iso,
    new_id,
    newest_first,
    not_found,
    now,
    page,
)

OBJECT_TYPES = ("TRACE", "OBSERVATION", "SESSION")
ITEM_STATUSES = ("PENDING", "COMPLETED")


@cites("web/src/features/public-api/types/annotation-queues.ts")
def _strict(body: dict, allowed: tuple[str, ...]) -> None:
    """zod `.strict()`: a key the schema does not name is refused."""
    if not isinstance(body, dict):
        raise invalid([], f"Expected object, received {type(body).__name__}")
    unknown = [key for key in body if key not in allowed]
    if unknown:
        raise invalid([], f"Unrecognized key(s) in object: {', '.join(repr(key) for key in unknown)}",
                      code="unrecognized_keys", keys=unknown)


@cites("web/src/features/public-api/types/annotation-queues.ts")
def check_queue_body(body: dict) -> None:
    """CreateAnnotationQueueBody (strict): `name: z.string()`, `description` nullish,
    `scoreConfigIds: z.array(z.string()).min(1)`."""
    _strict(body, ("name", "description", "scoreConfigIds"))
    if not isinstance(body.get("name"), str):
        raise invalid("name", "Required" if "name" not in body else "Expected string")
    config_ids = body.get("scoreConfigIds")
    if not isinstance(config_ids, list) or not all(isinstance(item, str) for item in config_ids):
        raise invalid("scoreConfigIds", "Expected array of strings")
    if not config_ids:
        raise invalid("scoreConfigIds", "Array must contain at least 1 element(s)")


@cites("web/src/pages/api/public/annotation-queues/index.ts")
def check_queue_create(body: dict, queues: dict, known: dict) -> None:
    """POST /annotation-queues: a second queue of one name is a conflict (409), and each score
    config id must be a config of the project (400)."""
    if any(queue["name"] == body["name"] for queue in queues.values()):
        raise conflict("A queue with this name already exists.")
    if any(config_id not in known for config_id in body["scoreConfigIds"]):
        raise bad_request("At least one of the score config IDs cannot be found for the given project.")


@cites("web/src/features/public-api/types/annotation-queues.ts")
def check_queue_item_body(body: dict) -> None:
    """CreateAnnotationQueueItemBody (strict): `objectId: z.string()`, `objectType` one of
    AnnotationQueueObjectType, `status` one of AnnotationQueueStatus (default PENDING). The
    server does not check that the object exists, nor that it is not queued already."""
    _strict(body, ("objectId", "objectType", "status"))
    if not isinstance(body.get("objectId"), str):
        raise invalid("objectId", "Required" if "objectId" not in body else "Expected string")
    if body.get("objectType") not in OBJECT_TYPES:
        raise invalid("objectType", f"Invalid enum value. Expected {' | '.join(OBJECT_TYPES)}, "
                      f"received {body.get('objectType')!r}", code="invalid_enum_value")
    if body.get("status") is not None and body["status"] not in ITEM_STATUSES:
        raise invalid("status", f"Invalid enum value. Expected {' | '.join(ITEM_STATUSES)}, "
                      f"received {body['status']!r}", code="invalid_enum_value")


class QueuesResource:
    def _init_queues(self) -> None:
        self._annotation_queues: dict[str, dict] = {}
        self._annotation_queue_items: dict[str, list[dict]] = {}

    def _queues_routes(self, p: str) -> list[Route]:
        return [Route("GET", f"{p}/annotation-queues", self._list_queues),
                Route("POST", f"{p}/annotation-queues", self._post_queue),
                Route("GET", f"{p}/annotation-queues/{{queueId}}/items", self._list_queue_items),
                Route("POST", f"{p}/annotation-queues/{{queueId}}/items", self._post_queue_item)]

    @property
    def annotation_queues(self) -> dict[str, dict]:
        return self.snapshot(self._annotation_queues)

    @property
    def annotation_queue_items(self) -> dict[str, list[dict]]:
        return self.snapshot(self._annotation_queue_items)

    def add_annotation_queue(self, name: str, score_config_ids: list[str] = (),
                             description: str | None = None) -> str:
        """An annotation queue, as if created in the UI; returns its id."""
        with self._lock:
            return self._create_queue({"name": name, "scoreConfigIds": list(score_config_ids),
                                       "description": description})["id"]

    def _create_queue(self, body: dict) -> dict:
        moment = iso(now())
        queue = {"id": new_id(), "name": body["name"], "description": body.get("description"),
                 "scoreConfigIds": list(body.get("scoreConfigIds") or []), "createdAt": moment, "updatedAt": moment}
        self._annotation_queues[queue["id"]] = queue
        self._annotation_queue_items[queue["id"]] = []
        return copy.deepcopy(queue)

    def _queue(self, request: Request) -> dict:
        queue = self._annotation_queues.get(request.params["queueId"])
        if queue is None:
            raise not_found("Annotation queue not found")
        return queue

    def _list_queues(self, request: Request) -> Reply:
        return Reply(200, copy.deepcopy(page(newest_first(self._annotation_queues.values()), request)))

    def _post_queue(self, request: Request) -> Reply:
        """A queue; the entitlement check (one queue on the cloud Hobby plan) is not a self-hosted rule."""
        check_queue_body(request.body)
        check_queue_create(request.body, self._annotation_queues, self._score_configs)
        return Reply(200, self._create_queue(request.body))

    def _list_queue_items(self, request: Request) -> Reply:
        items = self._annotation_queue_items[self._queue(request)["id"]]
        status = request.arg("status")
        if status is not None:
            items = [item for item in items if item["status"] == status]
        return Reply(200, copy.deepcopy(page(items, request)))

    def _post_queue_item(self, request: Request) -> Reply:
        """Like Langfuse, the same object may be queued twice: a client must look first."""
        check_queue_item_body(request.body)  # the body's schema first, as createAuthedProjectAPIRoute does
        queue, body, moment = self._queue(request), request.body, iso(now())
        status = body.get("status") or "PENDING"
        item = {"id": new_id(), "queueId": queue["id"], "objectId": body["objectId"],
                "objectType": body["objectType"], "status": status,
                "completedAt": moment if status == "COMPLETED" else None, "createdAt": moment, "updatedAt": moment}
        self._annotation_queue_items[queue["id"]].append(item)
        return Reply(200, copy.deepcopy(item))
