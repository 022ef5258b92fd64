"""Annotation queues and their items (the review queue a run fills)."""

from __future__ import annotations

import copy

from tests.servers.langfuse.core import (
    Reply,
    Request,
    Route,
    bad_request,
    cites,
    invalid,
    iso,
    new_id,
    newest_first,
    not_found,
    now,
    page,
)


@cites("web/src/features/public-api/types/annotation-queues.ts")
def check_queue_configs(config_ids: list, known: dict) -> None:
    """CreateAnnotationQueueBody: `scoreConfigIds: z.array(z.string()).min(1)`, and each id must
    be a config of the project."""
    if not config_ids:
        raise invalid("scoreConfigIds", "Array must contain at least 1 element(s)")
    missing = [config_id for config_id in config_ids if config_id not in known]
    if missing:
        raise bad_request(f"Score configs not found: {', '.join(missing)}")


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
        check_queue_configs(request.body.get("scoreConfigIds") or [], self._score_configs)
        return Reply(200, self._create_queue(request.body))

    def _list_queue_items(self, request: Request) -> Reply:
        items = self._annotation_queue_items[self._queue(request)["id"]]
        status = request.arg("status")
        if status is not None:
            items = [item for item in items if item["status"] == status]
        return Reply(200, copy.deepcopy(page(items, request)))

    def _post_queue_item(self, request: Request) -> Reply:
        """Like Langfuse, the same object may be queued twice: a client must look first."""
        queue, body, moment = self._queue(request), request.body, iso(now())
        status = body.get("status") or "PENDING"
        item = {"id": new_id(), "queueId": queue["id"], "objectId": body["objectId"],
                "objectType": body["objectType"], "status": status,
                "completedAt": moment if status == "COMPLETED" else None, "createdAt": moment, "updatedAt": moment}
        self._annotation_queue_items[queue["id"]].append(item)
        return Reply(200, copy.deepcopy(item))
