"""`penpal-eval langfuse dashboards`: the dashboard docs/langfuse.md describes, created through
Langfuse's (unstable) dashboards API once; a second call changes nothing and says so; a server
without that API gets the recipe to build it by hand."""

from __future__ import annotations

import httpx
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.dashboards import DASHBOARD_NAME, widget_specs
from evaluators.rubric.loader import default_rubric

runner = CliRunner()
WRITES = ("POST", "PATCH", "PUT", "DELETE")


def writes(server) -> list:
    return [request for request in server.requests if request.method in WRITES]


def test_dashboards_creates_the_dashboard_and_its_widgets_once(langfuse):
    server = langfuse()
    first = runner.invoke(app, ["langfuse", "dashboards"])
    assert first.exit_code == 0, first.output
    specs = widget_specs(default_rubric())
    [dashboard] = server.dashboards.values()
    assert dashboard["name"] == DASHBOARD_NAME
    widgets = server.dashboard_widgets
    assert sorted(widget["name"] for widget in widgets.values()) == sorted(spec["name"] for spec in specs)
    assert sorted(tile["widgetId"] for tile in dashboard["definition"]["widgets"]) == sorted(widgets)
    names = " ".join(widget["name"] for widget in widgets.values()).lower()
    for topic in ("per prompt version", "hard flag", "judge", "release decision"):
        assert topic in names
    assert f"widgets: {len(specs)} created" in first.output

    before = len(writes(server))
    again = runner.invoke(app, ["langfuse", "dashboards"])
    assert again.exit_code == 0, again.output
    assert len(writes(server)) == before  # nothing changed ...
    assert "unchanged" in again.output  # ... and it says so
    assert len(server.dashboards) == 1 and len(server.dashboard_widgets) == len(specs)
    assert server.schema_errors == [] and server.response_schema_errors == []


def test_a_changed_widget_is_updated_in_place(langfuse):
    server = langfuse()
    assert runner.invoke(app, ["langfuse", "dashboards"]).exit_code == 0
    [widget] = [w for w in server.dashboard_widgets.values() if "hard flag" in w["name"].lower()]
    server_widget_id = widget["id"]
    httpx.patch(f"{server.base_url}/api/public/unstable/dashboard-widgets/{server_widget_id}",
                json={"chartType": "PIE"}, headers=server.auth_header(), timeout=5)
    result = runner.invoke(app, ["langfuse", "dashboards"])
    assert result.exit_code == 0, result.output
    assert "1 updated" in result.output
    assert server.dashboard_widgets[server_widget_id]["chartType"] != "PIE"
    assert len(server.dashboard_widgets) == len(widget_specs(default_rubric()))


def test_a_server_without_the_dashboards_api_gets_the_recipe(langfuse):
    server = langfuse(dashboards=False)
    result = runner.invoke(app, ["langfuse", "dashboards"])
    assert result.exit_code == 1
    assert "dashboards API" in result.output and "docs/langfuse.md" in result.output
    assert "Quality per prompt version" in result.output  # the recipe itself
    assert not writes(server)
