"""The unstable dashboards API: the per-view widget rules with the server's messages, the
structured error body the SDK parses, and placements."""

from __future__ import annotations

import pytest
from langfuse.api.unstable.errors.errors.bad_request_error import BadRequestError

from tests.support.langfuse_http import patch, post

WIDGETS = "/api/public/unstable/dashboard-widgets"
NAMES = {"column": "name", "operator": "any of", "type": "stringOptions", "value": ["overall_quality"]}


def widget(**changes) -> dict:
    body = {"name": "Quality", "view": "scores-numeric", "dimensions": [{"field": "traceVersion"}],
            "metrics": [{"measure": "value", "agg": "avg"}], "filters": [NAMES], "chartType": "VERTICAL_BAR"}
    return {**body, **changes}


@pytest.mark.parametrize("changes, message, field", [
    ({"dimensions": [{"field": "name"}, {"field": "traceVersion"}]},
     "Only pivot table widgets can have multiple dimensions", "dimensions"),
    ({"chartType": "PIVOT_TABLE", "dimensions": [{"field": "name"}, {"field": "traceVersion"}, {"field": "tags"}]},
     "Pivot tables support at most 2 dimensions", "dimensions"),
    ({"dimensions": [{"field": "promptVersion"}]},
     'Dimension "promptVersion" is not available for view "scores-numeric" in version "v2"', "dimensions[0].field"),
    ({"dimensions": [{"field": "experimentId"}]}, 'Dimension "experimentId" is not available for widgets',
     "dimensions[0].field"),
    ({"metrics": [{"measure": "latency", "agg": "avg"}]},
     'Measure "latency" is not available for view "scores-numeric" in version "v2"', "metrics[0].measure"),
    ({"view": "scores-categorical", "dimensions": [{"field": "stringValue"}]},
     'Measure "value" is not available for view "scores-categorical" in version "v2"', "metrics[0].measure"),
    ({"filters": [{**NAMES, "column": "scoreName"}]}, 'Unsupported filter column for view "scores-numeric": scoreName',
     "filters"),
    ({"chartConfig": {"type": "PIE"}}, "chartConfig.type must match chartType", "chartConfig.type"),
    ({"chartType": "PIVOT_TABLE", "chartConfig": {"row_limit": 5000}},
     "Invalid chartConfig: row_limit: Number must be an integer from 1 to 1000", "chartConfig"),
])
def test_a_widget_the_server_refuses_is_a_structured_400(client, changes, message, field):
    langfuse, server = client()
    body = widget(**changes)
    with pytest.raises(BadRequestError) as refused:
        langfuse.api.unstable.dashboard_widgets.create(
            name=body["name"], view=body["view"], dimensions=body["dimensions"], metrics=body["metrics"],
            filters=body["filters"], chart_type=body["chartType"], chart_config=body.get("chartConfig"))
    error = refused.value.body  # a PublicApiError: message, code, details
    assert (error.message, error.code, error.details.field) == (message, "invalid_request", field)
    assert server.dashboard_widgets == {}


def test_a_pivot_table_takes_two_dimensions_and_the_answer_is_normalised(client):
    langfuse, server = client()
    created = langfuse.api.unstable.dashboard_widgets.create(
        name="Means", view="scores-numeric", dimensions=[{"field": "traceVersion"}, {"field": "name"}],
        metrics=[{"measure": "value", "agg": "avg"}], filters=[NAMES], chart_type="PIVOT_TABLE",
        chart_config={"type": "PIVOT_TABLE", "row_limit": 200})
    assert created.description == "" and created.chart_config.type == "PIVOT_TABLE"
    assert created.chart_config.row_limit == 200
    plain = langfuse.api.unstable.dashboard_widgets.create(
        name="Line", view="scores-numeric", dimensions=[{"field": "traceVersion"}],
        metrics=[{"measure": "value", "agg": "avg"}], filters=[NAMES], chart_type="LINE_TIME_SERIES")
    assert plain.chart_config.type == "LINE_TIME_SERIES"  # added by the server
    changed = patch(server, f"{WIDGETS}/{created.id}", {"chartType": "VERTICAL_BAR"})
    assert changed.status_code == 400  # the merged widget still has two dimensions
    assert changed.json()["message"] == "Only pivot table widgets can have multiple dimensions"
    renamed = patch(server, f"{WIDGETS}/{created.id}", {"name": "Means per version"})
    assert renamed.status_code == 200 and renamed.json()["chartConfig"] == {"type": "PIVOT_TABLE", "row_limit": 200}


def test_a_body_that_fails_zod_is_invalid_body_with_issues(langfuse_server):
    server = langfuse_server()
    answer = post(server, WIDGETS, {**widget(), "metrics": []})
    assert answer.status_code == 400
    body = answer.json()
    assert body["code"] == "invalid_body" and body["details"]["issues"][0]["path"] == ["metrics"]


def test_placements_append_below_and_refuse_a_missing_widget_or_a_taken_id(client):
    langfuse, server = client()
    created = langfuse.api.unstable.dashboard_widgets.create(
        name="Q", view="scores-numeric", dimensions=[{"field": "name"}], metrics=[{"measure": "value", "agg": "avg"}],
        filters=[NAMES], chart_type="VERTICAL_BAR")
    dashboard = langfuse.api.unstable.dashboards.create(name="penpal-eval", description="scores")
    tile = langfuse.api.unstable.dashboards.add_placement(dashboard.id, request={"type": "widget",
                                                                                  "widgetId": created.id})
    assert tile.widget_id == created.id and (tile.x, tile.y, tile.width, tile.height) == (0, 0, 6, 6)
    again = langfuse.api.unstable.dashboards.add_placement(dashboard.id, request={"type": "widget",
                                                                                   "widgetId": created.id})
    assert again.y == tile.y + tile.height  # appended below
    path = f"/api/public/unstable/dashboards/{dashboard.id}/placements"
    missing = post(server, path, {"type": "widget", "widgetId": "nope"})
    assert missing.status_code == 404 and missing.json() == {"message": "Dashboard widget nope not found",
                                                             "code": "resource_not_found"}
    taken = post(server, path, {"type": "widget", "widgetId": created.id, "id": tile.id})
    assert taken.status_code == 409 and taken.json()["code"] == "conflict"
    [stored] = server.dashboards.values()
    assert [t["id"] for t in stored["definition"]["widgets"]] == [tile.id, again.id]


def test_a_server_without_the_dashboards_api_answers_404(langfuse_server):
    server = langfuse_server(dashboards=False)
    assert post(server, WIDGETS, widget()).status_code == 404
