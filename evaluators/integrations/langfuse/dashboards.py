"""The suite's Langfuse dashboard, created through Langfuse's (unstable) dashboards API.

"Langfuse score dashboards" is one of the things the suite exists for; `docs/langfuse.md`
describes the dashboard and `penpal-eval langfuse dashboards` builds it: the metric means
per prompt version over time, the hard-flag rates, the judge against the heuristics, and the
release decisions.

The server checks each widget against its view (validatePublicDashboardWidgetInput in
web/src/features/widgets/server/public-dashboard-widget-service.ts): dimensions and measures
the view declares, filter columns it takes, a chart config of the chart's type, and only a
pivot table may have two dimensions. So a breakdown by score name *and* prompt version is a
pivot table. Widgets are standalone and a dashboard holds tiles that point at them, so the
dashboard is found or created first, then each widget is created, updated or kept, and every
widget it lacks gets a tile. A widget the server refuses is reported with the server's
reason and the others are still built; the next run builds what is missing and says
"unchanged" when nothing is. A server without the API (older self-hosted) answers 404; the
caller then prints the recipe (`recipe_lines`) to build the same dashboard by hand.

The bodies follow the server's types (web/src/features/public-api/types/unstable-dashboard-
widgets.ts and unstable-dashboards.ts): score views "scores-numeric" (numeric and boolean
scores) and "scores-categorical", dimensions such as `name`, `traceVersion` (the prompt
version: traces carry it as their version) and `stringValue`, measures `value` and `count`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.core.text import plural
from evaluators.integrations.langfuse.rest import LangfuseCallFailed, LangfuseRest
from evaluators.integrations.langfuse.score_configs import (
    CONVERSATION_TRUST_BOUNDARIES,
    JUDGE_OVERALL,
    RELEASE_DECISION,
    flag_name,
)
from evaluators.rubric.loader import Rubric

DASHBOARD_NAME = "penpal-eval scores"
DASHBOARD_DESCRIPTION = ("Written by `penpal-eval langfuse dashboards` (see docs/langfuse.md): prompt versions, "
                         "hard flags, judge against heuristics and release decisions.")
EVALUATION_ENVIRONMENT = "penpal-eval"
PIVOT_ROWS = 200  # a version per row and score name per column: more rows than the UI's default 20
_COMPARED = ("description", "view", "dimensions", "metrics", "filters", "chartType", "chartConfig")
# Older servers stored the score-name filter column under the alias `scoreName`.
_FILTER_ALIASES = {"scoreName": "name"}


class DashboardsUnavailable(RuntimeError):
    """The server has no dashboards API (it answered 404)."""


def _names(names: list[str]) -> dict:
    return {"column": "name", "operator": "any of", "type": "stringOptions", "value": names}


def _evaluation() -> dict:
    return {"column": "environment", "operator": "any of", "type": "stringOptions", "value": [EVALUATION_ENVIRONMENT]}


def _widget(name: str, description: str, view: str, dimensions: list[str], measure: str, agg: str,
            names: list[str], chart: str) -> dict:
    config: dict[str, Any] = {"type": chart}
    if chart == "PIVOT_TABLE":
        config["row_limit"] = PIVOT_ROWS
    return {"name": name, "description": description, "view": view,
            "dimensions": [{"field": dimension} for dimension in dimensions],
            "metrics": [{"measure": measure, "agg": agg}], "filters": [_names(names), _evaluation()],
            "chartType": chart, "chartConfig": config}


def widget_specs(rubric: Rubric) -> list[dict]:
    """The widgets of the dashboard, as create-widget bodies (camelCase, as the API takes them).

    Only a pivot table may have two dimensions: the breakdowns by prompt version and score
    name are pivot tables, every chart has one dimension."""
    flags = [flag_name(name) for name in rubric.disqualifiers]
    return [
        _widget("Quality per prompt version over time", "Mean heuristic overall quality of each prompt version.",
                "scores-numeric", ["traceVersion"], "value", "avg", [OVERALL], "LINE_TIME_SERIES"),
        _widget("Metric means per prompt version", "Mean of each of the six metrics, per prompt version.",
                "scores-numeric", ["traceVersion", "name"], "value", "avg", list(METRIC_NAMES), "PIVOT_TABLE"),
        _widget("Hard flag rates per prompt version", "Share of replies that raised each hard flag (booleans).",
                "scores-numeric", ["traceVersion", "name"], "value", "avg", flags, "PIVOT_TABLE"),
        _widget("Judge against heuristics over time", "LLM judge overall beside the heuristic overall quality.",
                "scores-numeric", ["name"], "value", "avg", [JUDGE_OVERALL, OVERALL], "LINE_TIME_SERIES"),
        _widget("Worst turn trust & boundaries per conversation", "Conversation scores on sessions.",
                "scores-numeric", ["name"], "value", "avg", [CONVERSATION_TRUST_BOUNDARIES], "LINE_TIME_SERIES"),
        _widget("Release decisions", "How often each decision was taken (run-level scores on experiments).",
                "scores-categorical", ["stringValue"], "count", "count", [RELEASE_DECISION], "BAR_TIME_SERIES"),
    ]


def recipe_lines(rubric: Rubric) -> list[str]:
    """The same dashboard as steps a person follows in the Langfuse UI."""
    lines = [f"Create a dashboard '{DASHBOARD_NAME}' in Langfuse (Dashboards -> New) with these widgets, "
             f"each filtered to environment {EVALUATION_ENVIRONMENT}:"]
    for spec in widget_specs(rubric):
        dimensions = ", ".join(d["field"] for d in spec["dimensions"]) or "-"
        metric = spec["metrics"][0]
        lines.append(f"- {spec['name']}: view {spec['view']}, {metric['agg']} of {metric['measure']} by {dimensions}, "
                     f"score names {', '.join(spec['filters'][0]['value'])}, chart {spec['chartType']}")
    return lines


@dataclass
class DashboardSync:
    dashboard_created: bool = False
    widgets_created: list[str] = field(default_factory=list)
    widgets_updated: list[str] = field(default_factory=list)
    widgets_unchanged: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # widget name -> the server's reason
    tiles_added: int = 0

    @property
    def changed(self) -> bool:
        return self.dashboard_created or bool(self.widgets_created or self.widgets_updated or self.tiles_added)

    def lines(self) -> list[str]:
        refused = f", {len(self.refused)} refused" if self.refused else ""
        lines = [f"dashboard {DASHBOARD_NAME}: " + ("created" if self.dashboard_created else "already there"),
                 f"widgets: {len(self.widgets_created)} created, {len(self.widgets_updated)} updated, "
                 f"{len(self.widgets_unchanged)} unchanged{refused}; {plural(self.tiles_added, 'tile')} placed"]
        if not self.changed and not self.refused:
            lines.append("unchanged: the dashboard is as docs/langfuse.md describes it")
        return lines

    def problems(self) -> list[str]:
        """One line per widget the server refused, with its reason (the others were built)."""
        return [f"widget {name} refused: {reason}" for name, reason in self.refused.items()]


def _plain(value: Any) -> Any:
    """An SDK model, enum or list as plain JSON-like data with the API's (camelCase) keys."""
    if hasattr(value, "dict"):
        return _plain(value.dict(by_alias=True, exclude_none=True))
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return getattr(value, "value", value)


def _as_stored(existing: Any, spec: dict) -> dict:
    """The existing widget in the spec's terms, with the server's normalisation undone: the
    `scoreName` alias of older servers, and chart-config keys the spec does not set (server
    defaults, or options a person added in the UI)."""
    current = {key: _plain(getattr(existing, attribute, None)) for key, attribute in (
        ("description", "description"), ("view", "view"), ("dimensions", "dimensions"), ("metrics", "metrics"),
        ("filters", "filters"), ("chartType", "chart_type"), ("chartConfig", "chart_config"))}
    current["description"] = current["description"] or ""
    current["filters"] = [{**condition, "column": _FILTER_ALIASES.get(condition.get("column"),
                                                                       condition.get("column"))}
                          for condition in current["filters"] or []]
    config = current["chartConfig"] or {}
    current["chartConfig"] = {key: value for key, value in config.items() if key in spec["chartConfig"]}
    return current


def _differs(existing: Any, spec: dict) -> bool:
    current = _as_stored(existing, spec)
    return any(current[key] != spec[key] for key in _COMPARED)


def _pages(rest: LangfuseRest, method, what: str) -> list:
    items, page = [], 1
    while True:
        answer = rest.call(method, page=page, limit=100, what=what)
        items += list(answer.data)
        if page >= (answer.meta.total_pages or 1) or not answer.data:
            return items
        page += 1


def _arguments(spec: dict) -> dict:
    return {"name": spec["name"], "description": spec["description"], "view": spec["view"],
            "dimensions": spec["dimensions"], "metrics": spec["metrics"], "filters": spec["filters"],
            "chart_type": spec["chartType"], "chart_config": spec["chartConfig"]}


def _refusal(error: LangfuseCallFailed) -> bool:
    """A 4xx on a widget or tile: the server refused that one thing, the others may go on.
    (A 404 on the first call means there is no dashboards API at all; 5xx and dropped
    connections end the command.)"""
    return error.status is not None and 400 <= error.status < 500


def _dashboard(rest: LangfuseRest, sync: DashboardSync) -> Any:
    """The suite's dashboard, found by name or created (first: widgets are placed on it)."""
    try:
        dashboards = _pages(rest, rest.api.unstable.dashboards.list, "list dashboards")
    except LangfuseCallFailed as error:
        if error.status == 404:
            raise DashboardsUnavailable(str(error)) from None
        raise
    dashboard = next((d for d in dashboards if d.name == DASHBOARD_NAME), None)
    if dashboard is None:
        dashboard = rest.call(rest.api.unstable.dashboards.create, name=DASHBOARD_NAME,
                              description=DASHBOARD_DESCRIPTION, what=f"create dashboard {DASHBOARD_NAME}")
        sync.dashboard_created = True
    return dashboard


def sync_dashboard(rest: LangfuseRest, rubric: Rubric) -> DashboardSync:
    """Find or create the dashboard, then create, update or keep each widget and place every
    widget it lacks; a refused widget is noted in `refused` and the rest go on.
    DashboardsUnavailable without the API."""
    api = rest.api.unstable
    sync = DashboardSync()
    dashboard = _dashboard(rest, sync)
    widgets = {widget.name: widget for widget in _pages(rest, api.dashboard_widgets.list, "list dashboard widgets")}
    widget_ids = []
    for spec in widget_specs(rubric):
        existing = widgets.get(spec["name"])
        try:
            if existing is None:
                created = rest.call(api.dashboard_widgets.create, **_arguments(spec),
                                    what=f"create widget {spec['name']}")
                widget_ids.append(created.id)
                sync.widgets_created.append(spec["name"])
            elif _differs(existing, spec):
                widget_ids.append(existing.id)  # it exists: it gets its tile even if the update is refused
                rest.call(api.dashboard_widgets.update, existing.id, **_arguments(spec),
                          what=f"update widget {spec['name']}")
                sync.widgets_updated.append(spec["name"])
            else:
                widget_ids.append(existing.id)
                sync.widgets_unchanged.append(spec["name"])
        except LangfuseCallFailed as error:
            if not _refusal(error):
                raise
            sync.refused[spec["name"]] = str(error).split(": ", 1)[-1]
    placed = {getattr(tile, "widget_id", None) for tile in dashboard.definition.widgets}
    for widget_id in widget_ids:
        if widget_id in placed:
            continue
        try:
            rest.call(api.dashboards.add_placement, dashboard.id, request={"type": "widget", "widgetId": widget_id},
                      what="place a widget on the dashboard")
        except LangfuseCallFailed as error:
            if not _refusal(error):
                raise
            sync.refused[f"tile for widget {widget_id}"] = str(error).split(": ", 1)[-1]
            continue
        sync.tiles_added += 1
    return sync
