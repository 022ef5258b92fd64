"""Score configs, datasets, prompts and annotation queues as the suite uses them."""

from __future__ import annotations

import json

import pytest
from langfuse.api.commons.errors.not_found_error import NotFoundError
from langfuse.api.core.api_error import ApiError

from tests.support.langfuse_http import patch, post

CONFIGS = "/api/public/score-configs"


def test_score_configs_are_created_and_listed(client):
    langfuse, server = client()
    numeric = langfuse.api.score_configs.create(name="emotional_intelligence", data_type="NUMERIC",
                                                min_value=0, max_value=1, description="0-1 from the rubric")
    boolean = langfuse.api.score_configs.create(name="hard_criteria_passed", data_type="BOOLEAN")
    again = langfuse.api.score_configs.create(name="emotional_intelligence", data_type="NUMERIC")
    assert again.id != numeric.id  # Langfuse allows one name twice: clients must look first
    assert [c.label for c in boolean.categories] == ["True", "False"]
    listed = langfuse.api.score_configs.get(page=1, limit=2)
    assert listed.meta.total_items == 3 and listed.meta.total_pages == 2 and len(listed.data) == 2
    long_name = langfuse.api.score_configs.create(name="x" * 40, data_type="BOOLEAN")
    assert long_name.name == "x" * 40  # the create body has no length limit (only an update has)
    with pytest.raises(ApiError) as refused:  # categories for a numeric config
        langfuse.api.score_configs.create(name="x", data_type="NUMERIC", categories=[{"label": "a", "value": 1}])
    assert refused.value.status_code == 400


def test_a_boolean_config_with_null_categories_is_refused(langfuse_server):
    server = langfuse_server()
    refused = post(server, CONFIGS, {"name": "passed", "dataType": "BOOLEAN", "categories": None})
    assert refused.status_code == 400 and "categories" in json.dumps(refused.json())
    refused = post(server, CONFIGS, {"name": "verdict", "dataType": "CATEGORICAL", "minValue": 0,
                                     "categories": [{"label": "good", "value": 1}]})
    assert refused.status_code == 400
    created = post(server, CONFIGS, {"name": "passed", "dataType": "BOOLEAN"})
    assert created.status_code == 200 and created.json()["categories"] == [
        {"label": "True", "value": 1}, {"label": "False", "value": 0}]
    numeric = post(server, CONFIGS, {"name": "quality", "dataType": "NUMERIC", "minValue": 0, "maxValue": 1,
                                     "categories": None})
    assert numeric.status_code == 200  # nullish there
    assert [config["name"] for config in server.score_configs.values()] == ["passed", "quality"]


def test_dataset_items_upsert_keep_omitted_fields_and_hide_archived_ones(client, langfuse_server):
    langfuse, server = client()
    first = langfuse.create_dataset(name="penpal/scenarios", description="v1")
    second = langfuse.create_dataset(name="penpal/scenarios", description="v2", metadata={"families": 3})
    assert first.id == second.id and second.description == "v2"
    langfuse.create_dataset_item(dataset_name="penpal/scenarios", id="basic-hello", input={"turns": ["Hi"]},
                                 expected_output={"max_words": 40}, metadata={"family": "basic"})
    langfuse.create_dataset_item(dataset_name="penpal/scenarios", id="basic-joke", input={"turns": ["Joke?"]})
    langfuse.create_dataset_item(dataset_name="penpal/scenarios", id="basic-hello", input={"turns": ["Hello!"]})
    items = server.dataset_items
    assert items["basic-hello"]["input"] == {"turns": ["Hello!"]}  # the later value wins ...
    assert items["basic-hello"]["expectedOutput"] == {"max_words": 40}  # ... and an omitted field stays

    langfuse.api.dataset_items.create(dataset_name="penpal/scenarios", id="basic-joke", input={"turns": ["Joke?"]},
                                      status="ARCHIVED")
    listed = langfuse.api.dataset_items.list(dataset_name="penpal/scenarios")
    assert [item.id for item in listed.data] == ["basic-hello"]  # listDatasetItemsForApi: ACTIVE only
    assert server.dataset_items["basic-joke"]["status"] == "ARCHIVED"

    langfuse.create_dataset(name="other")
    taken = post(server, "/api/public/dataset-items", {"datasetName": "other", "id": "basic-hello", "input": 1})
    assert taken.status_code == 404 and "already exists in a dataset other than other" in taken.json()["message"]
    with pytest.raises(NotFoundError):
        langfuse.api.datasets.get("no-such-dataset")
    missing = post(server, "/api/public/dataset-items", {"datasetName": "no-such-dataset", "input": 1})
    assert missing.status_code == 404 and missing.json()["message"] == "Dataset not found"


def test_prompts_versions_and_labels(client):
    langfuse, server = client()
    langfuse.create_prompt(name="companion", prompt="v1 {{name}}", labels=["production"], config={"model": "a"})
    v2 = langfuse.create_prompt(name="companion", prompt="v2 {{name}}", labels=["staging"], config={"model": "b"})
    assert v2.version == 2 and set(v2.labels) == {"staging", "latest"}
    production = langfuse.get_prompt("companion")
    assert (production.version, production.config) == (1, {"model": "a"})
    assert langfuse.get_prompt("companion", version=1).prompt == "v1 {{name}}"
    langfuse.update_prompt(name="companion", version=2, new_labels=["production"])
    versions = server.prompts["companion"]
    assert versions[0]["labels"] == [] and set(versions[1]["labels"]) == {"staging", "latest", "production"}
    langfuse.create_prompt(name="companion", prompt="v3", labels=["staging"], tags=["penpal"])
    assert [set(v["labels"]) for v in server.prompts["companion"]] == [set(), {"production"}, {"staging", "latest"}]
    assert all(v["tags"] == ["penpal"] for v in server.prompts["companion"])  # tags span all versions
    with pytest.raises(NotFoundError):
        langfuse.get_prompt("no-such-prompt", max_retries=0)


@pytest.mark.parametrize("label", ["Staging", "a" * 37, "with space"])
def test_prompt_labels_follow_the_servers_pattern(langfuse_server, label):
    server = langfuse_server()
    refused = post(server, "/api/public/v2/prompts", {"name": "companion", "prompt": "hi", "labels": [label]})
    assert refused.status_code == 400 and server.prompts == {}
    accepted = post(server, "/api/public/v2/prompts", {"name": "companion", "prompt": "hi", "labels": ["a" * 36]})
    assert accepted.status_code == 200
    assert patch(server, "/api/public/v2/prompts/companion/versions/1", {"newLabels": [label]}).status_code == 400
    assert patch(server, "/api/public/v2/prompts/companion/versions/1", {"newLabels": ["latest"]}).status_code == 400


def test_annotation_queues_need_existing_score_configs_and_take_items_twice(client):
    langfuse, server = client()
    with pytest.raises(ApiError) as empty:
        langfuse.api.annotation_queues.create_queue(name="review", score_config_ids=[])
    assert empty.value.status_code == 400
    with pytest.raises(ApiError) as unknown:
        langfuse.api.annotation_queues.create_queue(name="review", score_config_ids=["nope"])
    assert unknown.value.status_code == 400 and server.annotation_queues == {}
    config = langfuse.api.score_configs.create(name="empathy", data_type="NUMERIC", min_value=1, max_value=5)
    queue = langfuse.api.annotation_queues.create_queue(name="review", score_config_ids=[config.id])
    for _ in range(2):  # like Langfuse, the same trace may sit in a queue twice
        langfuse.api.annotation_queues.create_queue_item(queue.id, object_id="trace-1", object_type="TRACE")
    listed = langfuse.api.annotation_queues.list_queue_items(queue.id)
    assert [item.object_id for item in listed.data] == ["trace-1", "trace-1"]
    assert [q.name for q in langfuse.api.annotation_queues.list_queues().data] == ["review"]


def test_annotation_queue_and_item_bodies_are_checked_as_langfuse_checks_them(langfuse_server):
    """A second queue of one name is a 409; the bodies are strict zod objects: an unknown key, an
    object type or status outside the enum is a 400; a session may be queued; the object's
    existence is not checked."""
    server = langfuse_server()
    config = post(server, CONFIGS, {"name": "flag_claims_human", "dataType": "BOOLEAN"}).json()
    queues = "/api/public/annotation-queues"
    queue = post(server, queues, {"name": "safety", "scoreConfigIds": [config["id"]]}).json()
    assert post(server, queues, {"name": "safety", "scoreConfigIds": [config["id"]]}).status_code == 409
    assert post(server, queues, {"name": "other", "scoreConfigIds": [config["id"]], "colour": "red"}).status_code == 400
    assert len(server.annotation_queues) == 1
    items = f"{queues}/{queue['id']}/items"
    assert post(server, items, {"objectId": "t-1", "objectType": "SPAN"}).status_code == 400
    assert post(server, items, {"objectId": "t-1", "objectType": "TRACE", "status": "DONE"}).status_code == 400
    assert post(server, items, {"objectId": "t-1", "objectType": "TRACE", "comment": "why"}).status_code == 400
    assert post(server, items, {"objectType": "TRACE"}).status_code == 400
    assert server.annotation_queue_items[queue["id"]] == []
    session = post(server, items, {"objectId": "run/v1/tester", "objectType": "SESSION"})
    assert session.status_code == 200 and session.json()["status"] == "PENDING"
    assert server.annotation_queue_items[queue["id"]][0]["objectType"] == "SESSION"
