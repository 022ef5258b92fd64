"""Datasets and dataset items: upserts, and the item list a sync reads."""

from __future__ import annotations

import copy

from tests.servers.langfuse.core import (
    Reply,
    Request,
    Route,
    cites,
    iso,
    new_id,
    newest_first,
    not_found,
    now,
    page,
)

_ITEM_FIELDS = ("input", "expectedOutput", "metadata", "sourceTraceId", "sourceObservationId", "status")


class DatasetsResource:
    """Routes on the `datasets` rate-limit bucket (createAuthedProjectAPIRoute's rateLimitResource)."""

    def _init_datasets(self) -> None:
        self._datasets: dict[str, dict] = {}
        self._dataset_items: dict[str, dict] = {}

    def _datasets_routes(self, p: str) -> list[Route]:
        return [Route("POST", f"{p}/v2/datasets", self._post_dataset, resource="datasets"),
                Route("GET", f"{p}/v2/datasets/{{datasetName}}", self._get_dataset, resource="datasets"),
                Route("GET", f"{p}/dataset-items", self._list_dataset_items, resource="datasets"),
                Route("POST", f"{p}/dataset-items", self._post_dataset_item, resource="datasets")]

    @property
    def datasets(self) -> dict[str, dict]:
        return self.snapshot(self._datasets)

    @property
    def dataset_items(self) -> dict[str, dict]:
        """Every item, archived ones included (the API lists only active ones)."""
        return self.snapshot(self._dataset_items)

    def _post_dataset(self, request: Request) -> Reply:
        """Upsert on the name: a second create updates the fields it gives."""
        body, moment = request.body, iso(now())
        dataset = self._datasets.get(body["name"])
        if dataset is None:
            dataset = {"id": new_id(), "name": body["name"], "description": None, "metadata": None,
                       "inputSchema": None, "expectedOutputSchema": None, "projectId": self.project_id,
                       "createdAt": moment}
            self._datasets[body["name"]] = dataset
        for key in ("description", "metadata", "inputSchema", "expectedOutputSchema"):
            if body.get(key) is not None:
                dataset[key] = body[key]
        dataset["updatedAt"] = moment
        return Reply(200, copy.deepcopy(dataset))

    @cites("web/src/features/datasets/server/publicDatasetService.ts")
    def _dataset(self, name: str | None) -> dict:
        dataset = self._datasets.get(name or "")
        if dataset is None:
            raise not_found("Dataset not found")
        return dataset

    def _get_dataset(self, request: Request) -> Reply:
        return Reply(200, copy.deepcopy(self._dataset(request.params["datasetName"])))

    @cites("web/src/features/datasets/server/publicDatasetService.ts")
    def _post_dataset_item(self, request: Request) -> Reply:
        """createDatasetItemForApi: an upsert by id in which an omitted *or null* field keeps
        its value (`expectedOutput ?? undefined`, normalizeUndefinedToNull only without an id);
        an id taken by another dataset's item is a 404."""
        body, moment = request.body, iso(now())
        dataset = self._dataset(body["datasetName"])
        item_id = body.get("id") or new_id()
        item = self._dataset_items.get(item_id)
        if item is not None and item["datasetId"] != dataset["id"]:
            raise not_found(f"The dataset item with id {item_id} already exists in a dataset other than "
                            f"{dataset['name']}")
        candidate = copy.deepcopy(item) if item is not None else {
            "id": item_id, "status": "ACTIVE", "input": None, "expectedOutput": None, "metadata": None,
            "sourceTraceId": None, "sourceObservationId": None, "datasetId": dataset["id"],
            "datasetName": dataset["name"], "createdAt": moment, "mediaReferences": []}
        for key in _ITEM_FIELDS:
            if body.get(key) is not None:
                candidate[key] = body[key]
        candidate["updatedAt"] = moment
        self._dataset_items[item_id] = candidate
        return Reply(200, copy.deepcopy(candidate))

    @cites("web/src/features/datasets/server/publicDatasetService.ts")
    def _list_dataset_items(self, request: Request) -> Reply:
        """listDatasetItemsForApi lists `status: "ACTIVE"` items only: archived ones are hidden."""
        items = [item for item in self._dataset_items.values() if item["status"] == "ACTIVE"]
        name = request.arg("datasetName")
        if name is not None:
            items = [item for item in items if item["datasetId"] == self._dataset(name)["id"]]
        return Reply(200, copy.deepcopy(page(newest_first(items), request)))
