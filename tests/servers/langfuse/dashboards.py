"""The unstable dashboards API: widgets (the zod body, then the per-view rules of
validatePublicDashboardWidgetInput), dashboards and placements. Errors follow the structured
contract: `{"message", "code", "details"}`.

Only the score views the suite builds are declared (scores-numeric, scores-categorical, in
their v2 form, which reads the events tables); a widget on another view is refused as not
modelled here rather than accepted unchecked.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.servers.langfuse.core import (
    STRUCTURED,
    ApiFailure,
    Reply,
    Request,
    Route,
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

WIDGET_VIEWS = ("observations", "scores-numeric", "scores-boolean", "scores-categorical")
WIDGET_CHART_TYPES = ("LINE_TIME_SERIES", "AREA_TIME_SERIES", "BAR_TIME_SERIES", "HORIZONTAL_BAR", "VERTICAL_BAR",
                      "PIE", "NUMBER", "HISTOGRAM", "PIVOT_TABLE")
# packages/shared/src/features/query/types.ts: metricAggregations
WIDGET_AGGREGATIONS = ("sum", "avg", "count", "max", "min", "p50", "p75", "p90", "p95", "p99", "histogram", "uniq")
TOTAL_VALUE_CHARTS = ("HORIZONTAL_BAR", "VERTICAL_BAR", "PIE", "NUMBER", "HISTOGRAM", "PIVOT_TABLE")
MAX_PIVOT_TABLE_DIMENSIONS, MAX_PIVOT_TABLE_METRICS = 2, 10  # web/src/features/widgets/utils/pivot-table-utils.ts
PLACEMENT_DEFAULT_SIZE = (6, 6)  # width, height of a new tile

# packages/shared/src/features/query/dataModel.ts, the v2 score views: dimension -> uiHidden.
_SCORE_DIMENSIONS = {
    "sessionId": False, "datasetRunId": True, "traceName": False, "userId": False, "tags": False,
    "traceRelease": False, "traceVersion": False, "observationName": False, "observationModelName": False,
    "observationPromptName": False, "observationPromptVersion": False, "experimentName": True,
    "experimentId": True, "id": False, "environment": False, "name": False, "source": False, "dataType": False,
    "traceId": False, "configId": False, "timestampMonth": False, "timestampDay": False, "observationId": False,
}
VIEW_DECLARATIONS: dict[str, dict[str, dict]] = {
    "scores-numeric": {"dimensions": {**_SCORE_DIMENSIONS, "value": False},
                       "measures": {"count": "integer", "value": "number"}},
    "scores-categorical": {"dimensions": {**_SCORE_DIMENSIONS, "stringValue": False},
                           "measures": {"count": "integer"}},
}
# web/src/features/dashboard/lib/dashboardUiTableToViewMapping.ts: the filter columns each view takes.
_SCORE_FILTER_COLUMNS = ("name", "source", "dataType", "tags", "environment", "userId", "sessionId", "metadata",
                         "traceName", "observationName", "traceRelease", "traceVersion")
FILTER_COLUMNS = {"scores-numeric": (*_SCORE_FILTER_COLUMNS, "value"),
                  "scores-categorical": (*_SCORE_FILTER_COLUMNS, "stringValue")}
_NUMBER_AGGREGATIONS = WIDGET_AGGREGATIONS


def _rule(message: str, field: str, **details: Any) -> ApiFailure:
    return ApiFailure(400, message, code="invalid_request", details={"field": field, **details})


@cites("web/src/features/public-api/types/unstable-dashboard-widgets.ts")
def parsed_widget_body(body: Any, *, partial: bool) -> dict:
    """PostUnstableDashboardWidgetBody (or its .partial() with "At least one field is required"
    for PATCH); POST's description defaults to ""."""
    if not isinstance(body, dict):
        raise invalid([], "Expected object")
    if partial and not body:
        raise invalid([], "At least one field is required")
    for key in ("name", "view", "dimensions", "metrics", "filters", "chartType"):
        if key not in body and not partial:
            raise invalid(key, "Required")
    if "name" in body and (not isinstance(body["name"], str) or not body["name"]):
        raise invalid("name", "Widget name is required")
    if "description" in body and not isinstance(body["description"], str):
        raise invalid("description", "Expected string")  # z.string(): null is refused
    if "view" in body and body["view"] not in WIDGET_VIEWS:
        raise invalid("view", f"Invalid enum value {body['view']!r}")
    if "dimensions" in body and (not isinstance(body["dimensions"], list) or not all(
            isinstance(d, dict) and isinstance(d.get("field"), str) and d["field"] for d in body["dimensions"])):
        raise invalid("dimensions", "Each dimension needs a field")
    if "metrics" in body:
        metrics = body["metrics"]
        if not isinstance(metrics, list) or not metrics:
            raise invalid("metrics", "Array must contain at least 1 element(s)")
        for metric in metrics:
            if not isinstance(metric, dict) or not isinstance(metric.get("measure"), str) or not metric["measure"]:
                raise invalid("metrics", "Each metric needs a measure")
            if metric.get("agg") not in WIDGET_AGGREGATIONS:
                raise invalid("metrics", f"Invalid enum value {metric.get('agg')!r}")
    if "filters" in body and (not isinstance(body["filters"], list) or not all(
            isinstance(f, dict) and all(isinstance(f.get(k), str) for k in ("column", "operator", "type"))
            for f in body["filters"])):
        raise invalid("filters", "A filter needs column, operator and type")
    if "chartType" in body and body["chartType"] not in WIDGET_CHART_TYPES:
        raise invalid("chartType", f"Invalid enum value {body['chartType']!r}")
    if body.get("chartConfig") is not None and not isinstance(body["chartConfig"], dict):
        raise invalid("chartConfig", "Expected object")
    if not partial:
        body = {"description": "", **body}
    return body


@cites("web/src/features/dashboard/lib/dashboardUiTableToViewMapping.ts",
       "web/src/features/widgets/server/public-dashboard-widget-service.ts")
def normalized_filters(view: str, filters: list[dict]) -> list[dict]:
    """normalizePublicDashboardWidgetInput: each filter column must be one the view takes."""
    allowed = FILTER_COLUMNS[view]
    for condition in filters:
        if condition["column"] not in allowed:
            raise _rule(f'Unsupported filter column for view "{view}": {condition["column"]}', "filters")
    return copy.deepcopy(filters)


@cites("web/src/features/widgets/server/public-dashboard-widget-service.ts",
       "packages/shared/src/server/services/DashboardService/types.ts")
def normalized_chart_config(chart_type: str, config: dict | None) -> dict:
    """`chartConfig.type` must equal `chartType`; then ChartConfigSchema: row_limit an integer
    1..1000 on total-value charts and pivot tables, bins 1..100 on histograms (default 10),
    show_value_labels on horizontal bars, defaultSort {column, order ASC|DESC} on pivot
    tables; time series take no options."""
    config = dict(config or {})
    if config.get("type") not in (None, chart_type):
        raise _rule("chartConfig.type must match chartType", "chartConfig.type")
    config["type"] = chart_type
    allowed = {"type"}
    if chart_type in TOTAL_VALUE_CHARTS:
        allowed.add("row_limit")
        limit = config.get("row_limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or not 0 < limit <= 1000):
            raise _rule("Invalid chartConfig: row_limit: Number must be an integer from 1 to 1000", "chartConfig")
    if chart_type == "HISTOGRAM":
        allowed.add("bins")
        bins = config.setdefault("bins", 10)
        if not isinstance(bins, int) or isinstance(bins, bool) or not 1 <= bins <= 100:
            raise _rule("Invalid chartConfig: bins: Number must be an integer from 1 to 100", "chartConfig")
    if chart_type == "HORIZONTAL_BAR":
        allowed.add("show_value_labels")
    if chart_type == "PIVOT_TABLE":
        allowed.add("defaultSort")
        sort = config.get("defaultSort")
        if sort is not None and (not isinstance(sort, dict) or sort.get("order") not in ("ASC", "DESC")
                                 or not isinstance(sort.get("column"), str)):
            raise _rule("Invalid chartConfig: defaultSort: Expected {column, order: ASC | DESC}", "chartConfig")
    return {key: value for key, value in config.items() if key in allowed and value is not None}


@cites("web/src/features/widgets/server/public-dashboard-widget-service.ts",
       "packages/shared/src/features/query/dataModel.ts", "packages/shared/src/features/query/types.ts",
       "web/src/features/widgets/utils/pivot-table-utils.ts", "web/src/features/widgets/server/widget-version.ts")
def validated_widget(widget: dict) -> dict:
    """validatePublicDashboardWidgetInput on the normalised widget, in the server's order:
    filters, chart config, then against the view's v2 declaration each dimension (declared and
    not uiHidden) and each metric (declared measure, aggregation valid for its type), then
    "Only pivot table widgets can have multiple dimensions", then the pivot table limits."""
    view = widget["view"]
    declaration = VIEW_DECLARATIONS.get(view)
    if declaration is None:
        raise NotImplementedError(f"the stand-in does not model the {view!r} widget view")
    widget = {**widget, "filters": normalized_filters(view, widget["filters"]),
              "chartConfig": normalized_chart_config(widget["chartType"], widget.get("chartConfig"))}
    dimensions, measures = declaration["dimensions"], declaration["measures"]
    visible = sorted(name for name, hidden in dimensions.items() if not hidden)
    for index, dimension in enumerate(widget["dimensions"]):
        if dimension["field"] not in dimensions:
            raise _rule(f'Dimension "{dimension["field"]}" is not available for view "{view}" in version "v2"',
                        f"dimensions[{index}].field", allowedValues=visible)
        if dimensions[dimension["field"]]:
            raise _rule(f'Dimension "{dimension["field"]}" is not available for widgets',
                        f"dimensions[{index}].field", allowedValues=visible)
    for index, metric in enumerate(widget["metrics"]):
        kind = measures.get(metric["measure"])
        if kind is None:
            raise _rule(f'Measure "{metric["measure"]}" is not available for view "{view}" in version "v2"',
                        f"metrics[{index}].measure", allowedValues=sorted(measures))
        valid = (_NUMBER_AGGREGATIONS if kind in ("integer", "decimal", "number")
                 else ("min", "max") if kind == "datetime" else ("count", "uniq"))
        if metric["agg"] not in valid:
            raise _rule(f'Aggregation "{metric["agg"]}" is not valid for measure "{metric["measure"]}"',
                        f"metrics[{index}].agg", allowedValues=list(valid))
    if widget["chartType"] != "PIVOT_TABLE" and len(widget["dimensions"]) > 1:
        raise _rule("Only pivot table widgets can have multiple dimensions", "dimensions")
    if widget["chartType"] == "PIVOT_TABLE":
        if len(widget["dimensions"]) > MAX_PIVOT_TABLE_DIMENSIONS:
            raise _rule(f"Pivot tables support at most {MAX_PIVOT_TABLE_DIMENSIONS} dimensions", "dimensions")
        if len(widget["metrics"]) > MAX_PIVOT_TABLE_METRICS:
            raise _rule(f"Pivot tables support at most {MAX_PIVOT_TABLE_METRICS} metrics", "metrics")
    return widget


@cites("web/src/features/public-api/types/unstable-dashboards.ts")
def parsed_placement(body: Any) -> dict:
    """PostDashboardPlacementBody: type "widget" and a widget id; id, x, y, width and height
    optional (positions non-negative, sizes positive)."""
    if not isinstance(body, dict) or body.get("type") != "widget":
        raise invalid("type", "Invalid discriminator value. Expected 'widget'")
    if not isinstance(body.get("widgetId"), str):
        raise invalid("widgetId", "Required")
    for key, low in (("x", 0), ("y", 0), ("width", 1), ("height", 1)):
        value = body.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
            raise invalid(key, f"Number must be greater than or equal to {low}")
    if body.get("id") is not None and not isinstance(body["id"], str):
        raise invalid("id", "Expected string")
    return body


class DashboardsResource:
    def _init_dashboards(self, enabled: bool) -> None:
        self.dashboards_api = enabled
        self._dashboards: dict[str, dict] = {}
        self._widgets: dict[str, dict] = {}

    def _dashboards_routes(self, p: str) -> list[Route]:
        u = f"{p}/unstable"
        return [Route("GET", f"{u}/dashboard-widgets", self._list_widgets, body=None, family=STRUCTURED),
                Route("POST", f"{u}/dashboard-widgets", self._post_widget, body="json", family=STRUCTURED),
                Route("PATCH", f"{u}/dashboard-widgets/{{widgetId}}", self._patch_widget, body="json",
                      family=STRUCTURED),
                Route("GET", f"{u}/dashboards", self._list_dashboards, body=None, family=STRUCTURED),
                Route("POST", f"{u}/dashboards", self._post_dashboard, body="json", family=STRUCTURED),
                Route("POST", f"{u}/dashboards/{{dashboardId}}/placements", self._post_placement, body="json",
                      family=STRUCTURED)]

    @property
    def dashboards(self) -> dict[str, dict]:
        return self.snapshot(self._dashboards)

    @property
    def dashboard_widgets(self) -> dict[str, dict]:
        return self.snapshot(self._widgets)

    def edit_widget(self, widget_id: str, **changes: Any) -> None:
        """Change a stored widget as a person would in the UI (the API's rules do not apply)."""
        with self._lock:
            self._widgets[widget_id].update(copy.deepcopy(changes))

    def remove_placement(self, dashboard_id: str, widget_id: str) -> None:
        """Take a widget's tile off a dashboard, as a person would in the UI."""
        with self._lock:
            tiles = self._dashboards[dashboard_id]["definition"]["widgets"]
            tiles[:] = [tile for tile in tiles if tile["widgetId"] != widget_id]

    # --- widgets ----------------------------------------------------------------------------------
    def _list_widgets(self, request: Request) -> Reply:
        return Reply(200, copy.deepcopy(page(newest_first(self._widgets.values()), request)))

    def _post_widget(self, request: Request) -> Reply:
        widget = validated_widget(parsed_widget_body(request.body, partial=False))
        moment = iso(now())
        record = {"id": new_id(), "createdAt": moment, "updatedAt": moment,
                  **{key: copy.deepcopy(widget[key]) for key in ("name", "description", "view", "dimensions",
                                                                  "metrics", "filters", "chartType", "chartConfig")}}
        self._widgets[record["id"]] = record
        return Reply(200, copy.deepcopy(record))

    @cites("web/src/features/widgets/server/public-dashboard-widget-service.ts")
    def _patch_widget(self, request: Request) -> Reply:
        """updatePublicDashboardWidget: the body merges into the stored widget and the result is
        normalised and validated like a new one; a new chartType without a chartConfig resets
        the config to the new type."""
        widget = self._widgets.get(request.params["widgetId"])
        if widget is None:
            raise not_found(f"Dashboard widget {request.params['widgetId']} not found")
        body = parsed_widget_body(request.body, partial=True)
        merged = {**copy.deepcopy(widget), **copy.deepcopy(body)}
        if "chartType" in body and "chartConfig" not in body:
            merged["chartConfig"] = {"type": body["chartType"]}
        merged = validated_widget(merged)
        merged["updatedAt"] = iso(now())
        self._widgets[widget["id"]] = merged
        return Reply(200, copy.deepcopy(merged))

    # --- dashboards and placements ----------------------------------------------------------------
    def _list_dashboards(self, request: Request) -> Reply:
        return Reply(200, copy.deepcopy(page(newest_first(self._dashboards.values()), request)))

    @cites("web/src/features/public-api/types/unstable-dashboards.ts")
    def _post_dashboard(self, request: Request) -> Reply:
        """A name of at least one character, a string description; placements come later."""
        body = request.body
        if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not body["name"]:
            raise invalid("name", "String must contain at least 1 character(s)")
        if "description" in body and not isinstance(body["description"], str):
            raise invalid("description", "Expected string")
        moment = iso(now())
        dashboard = {"id": new_id(), "createdAt": moment, "updatedAt": moment, "name": body["name"],
                     "description": body.get("description", ""), "definition": {"widgets": []},
                     "filters": copy.deepcopy(body.get("filters") or [])}
        self._dashboards[dashboard["id"]] = dashboard
        return Reply(200, copy.deepcopy(dashboard))

    @cites("web/src/features/dashboard/server/public-dashboard-service.ts",
           "web/src/pages/api/public/unstable/dashboards/[dashboardId]/placements/index.ts")
    def _post_placement(self, request: Request) -> Reply:
        """A tile for an existing widget (404 "Dashboard widget <id> not found"); an id already
        on the dashboard is a 409; by default 6x6 at x 0, below the lowest tile. The answer is
        the placement."""
        dashboard = self._dashboards.get(request.params["dashboardId"])
        if dashboard is None:
            raise not_found(f"Dashboard {request.params['dashboardId']} not found")
        body = parsed_placement(request.body)
        if body["widgetId"] not in self._widgets:
            raise not_found(f"Dashboard widget {body['widgetId']} not found")
        tiles = dashboard["definition"]["widgets"]
        if body.get("id") and any(tile["id"] == body["id"] for tile in tiles):
            raise conflict(f"Placement {body['id']} already exists")
        bottom = max((tile["y"] + tile["height"] for tile in tiles), default=0)

        def given(key: str, default: int) -> int:
            return body[key] if body.get(key) is not None else default

        placement = {"type": "widget", "id": body.get("id") or new_id(), "widgetId": body["widgetId"],
                     "x": given("x", 0), "y": given("y", bottom), "width": given("width", PLACEMENT_DEFAULT_SIZE[0]),
                     "height": given("height", PLACEMENT_DEFAULT_SIZE[1])}
        tiles.append(placement)
        dashboard["updatedAt"] = iso(now())
        return Reply(200, copy.deepcopy(placement))
