"""The suite's Langfuse dashboard, created through Langfuse's (unstable) dashboards API.

"Langfuse score dashboards" is one of the things the suite exists for; `docs/langfuse.md`
describes the dashboard and `penpal-eval langfuse dashboards` builds it: the metric means
per prompt version over time, the hard-flag rates, the judge against the heuristics, and the
release decisions. Run it again and it changes nothing: widgets are matched by name, one that
differs from its spec is updated in place, and the dashboard gets a tile for each widget it
lacks. A server without the API (older self-hosted) answers 404; the caller then prints the
recipe (`recipe_lines`) to build the same dashboard by hand.

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
_COMPARED = ("description", "view", "dimensions", "metrics", "filters", "chartType")


class DashboardsUnavailable(RuntimeError):
    """The server has no dashboards API (it answered 404)."""


def _names(names: list[str]) -> dict:
    return {"column": "name", "operator": "any of", "type": "stringOptions", "value": names}


def _evaluation() -> dict:
    return {"column": "environment", "operator": "any of", "type": "stringOptions", "value": [EVALUATION_ENVIRONMENT]}


def _widget(name: str, description: str, view: str, dimensions: list[str], measure: str, agg: str,
            names: list[str], chart: str) -> dict:
    return {"name": name, "description": description, "view": view,
            "dimensions": [{"field": dimension} for dimension in dimensions],
            "metrics": [{"measure": measure, "agg": agg}], "filters": [_names(names), _evaluation()],
            "chartType": chart}


def widget_specs(rubric: Rubric) -> list[dict]:
    """The widgets of the dashboard, as create-widget bodies (camelCase, as the API takes them)."""
    flags = [flag_name(name) for name in rubric.disqualifiers]
    return [
        _widget("Quality per prompt version over time", "Mean heuristic overall quality of each prompt version.",
                "scores-numeric", ["traceVersion"], "value", "avg", [OVERALL], "LINE_TIME_SERIES"),
        _widget("Metric means per prompt version", "Mean of each of the six metrics, per prompt version.",
                "scores-numeric", ["name", "traceVersion"], "value", "avg", list(METRIC_NAMES), "VERTICAL_BAR"),
        _widget("Hard flag rates per prompt version", "Share of replies that raised each hard flag (booleans).",
                "scores-numeric", ["name", "traceVersion"], "value", "avg", flags, "VERTICAL_BAR"),
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
    tiles_added: int = 0

    @property
    def changed(self) -> bool:
        return self.dashboard_created or bool(self.widgets_created or self.widgets_updated or self.tiles_added)

    def lines(self) -> list[str]:
        lines = [f"dashboard {DASHBOARD_NAME}: " + ("created" if self.dashboard_created else "already there"),
                 f"widgets: {len(self.widgets_created)} created, {len(self.widgets_updated)} updated, "
                 f"{len(self.widgets_unchanged)} unchanged; {plural(self.tiles_added, 'tile')} placed"]
        if not self.changed:
            lines.append("unchanged: the dashboard is as docs/langfuse.md describes it")
        return lines


def _plain(value: Any) -> Any:
    """An SDK model, enum or list as plain JSON-like data with the API's (camelCase) keys."""
    if hasattr(value, "dict"):
        return _plain(value.dict(by_alias=True, exclude_none=True))
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return getattr(value, "value", value)


def _differs(existing: Any, spec: dict) -> bool:
    current = {key: _plain(getattr(existing, attribute)) for key, attribute in (
        ("description", "description"), ("view", "view"), ("dimensions", "dimensions"), ("metrics", "metrics"),
        ("filters", "filters"), ("chartType", "chart_type"))}
    return any(current[key] != spec[key] for key in _COMPARED)


def _call(rest: LangfuseRest, method, *args: Any, what: str, **kwargs: Any) -> Any:
    try:
        return rest.call(method, *args, what=what, **kwargs)
    except LangfuseCallFailed as error:
        if error.status == 404:
            raise DashboardsUnavailable(str(error)) from None
        raise


def _pages(rest: LangfuseRest, method, what: str) -> list:
    items, page = [], 1
    while True:
        answer = _call(rest, method, page=page, limit=100, what=what)
        items += list(answer.data)
        if page >= (answer.meta.total_pages or 1) or not answer.data:
            return items
        page += 1


def sync_dashboard(rest: LangfuseRest, rubric: Rubric) -> DashboardSync:
    """Create or update the dashboard and its widgets; DashboardsUnavailable without the API."""
    api = rest.api.unstable
    sync = DashboardSync()
    widgets = {widget.name: widget for widget in _pages(rest, api.dashboard_widgets.list, "list dashboard widgets")}
    widget_ids = []
    for spec in widget_specs(rubric):
        existing = widgets.get(spec["name"])
        arguments = {"name": spec["name"], "description": spec["description"], "view": spec["view"],
                     "dimensions": spec["dimensions"], "metrics": spec["metrics"], "filters": spec["filters"],
                     "chart_type": spec["chartType"]}
        if existing is None:
            created = _call(rest, api.dashboard_widgets.create, **arguments, what=f"create widget {spec['name']}")
            widget_ids.append(created.id)
            sync.widgets_created.append(spec["name"])
        elif _differs(existing, spec):
            _call(rest, api.dashboard_widgets.update, existing.id, **arguments, what=f"update widget {spec['name']}")
            widget_ids.append(existing.id)
            sync.widgets_updated.append(spec["name"])
        else:
            widget_ids.append(existing.id)
            sync.widgets_unchanged.append(spec["name"])
    dashboard = next((d for d in _pages(rest, api.dashboards.list, "list dashboards") if d.name == DASHBOARD_NAME),
                     None)
    if dashboard is None:
        dashboard = _call(rest, api.dashboards.create, name=DASHBOARD_NAME, description=DASHBOARD_DESCRIPTION,
                          what=f"create dashboard {DASHBOARD_NAME}")
        sync.dashboard_created = True
    placed = {getattr(tile, "widget_id", None) for tile in dashboard.definition.widgets}
    for widget_id in widget_ids:
        if widget_id not in placed:
            _call(rest, api.dashboards.add_placement, dashboard.id, request={"type": "widget", "widgetId": widget_id},
                  what="place a widget on the dashboard")
            sync.tiles_added += 1
    return sync
