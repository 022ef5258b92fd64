"""`penpal-eval langfuse dashboards`: the dashboard docs/langfuse.md describes, built through
Langfuse's (unstable) dashboards API against a stand-in that holds the server's per-view
widget rules; a refused widget is named and the rest are built; a second call repairs what
is missing and changes nothing (and says so) when nothing is; a server without that API gets
the recipe to build it by hand."""

from __future__ import annotations

from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.dashboards import DASHBOARD_NAME, widget_specs
from evaluators.rubric.loader import default_rubric
from tests.servers.langfuse import OK, refusal

runner = CliRunner()
WRITES = ("POST", "PATCH", "PUT", "DELETE")
WIDGETS = "/api/public/unstable/dashboard-widgets"
REFUSED = "Hard flag rates per prompt version"


def writes(server) -> list:
    return [request for request in server.requests if request.method in WRITES]


def placed(server) -> list[str]:
    [dashboard] = server.dashboards.values()
    return sorted(tile["widgetId"] for tile in dashboard["definition"]["widgets"])


def test_dashboards_creates_the_dashboard_and_its_widgets_once(langfuse):
    server = langfuse()
    first = runner.invoke(app, ["langfuse", "dashboards"])
    assert first.exit_code == 0, first.output
    specs = widget_specs(default_rubric())
    [dashboard] = server.dashboards.values()
    assert dashboard["name"] == DASHBOARD_NAME
    widgets = server.dashboard_widgets
    assert sorted(widget["name"] for widget in widgets.values()) == sorted(spec["name"] for spec in specs)
    assert placed(server) == sorted(widgets)  # every widget has its tile
    by_name = {widget["name"]: widget for widget in widgets.values()}
    for name in ("Metric means per prompt version", "Hard flag rates per prompt version"):  # two dimensions
        assert by_name[name]["chartType"] == "PIVOT_TABLE"
        assert [d["field"] for d in by_name[name]["dimensions"]] == ["traceVersion", "name"]
    paths = [request.path for request in writes(server)]
    assert paths[0] == "/api/public/unstable/dashboards"  # the dashboard first, then the widgets
    assert f"widgets: {len(specs)} created" in first.output

    before = len(writes(server))
    again = runner.invoke(app, ["langfuse", "dashboards"])
    assert again.exit_code == 0, again.output
    assert len(writes(server)) == before  # nothing changed ...
    assert "unchanged" in again.output  # ... and it says so
    assert len(server.dashboards) == 1 and len(server.dashboard_widgets) == len(specs)
    assert server.schema_errors == [] and server.response_schema_errors == []


def test_a_refused_widget_is_named_the_rest_are_built_and_a_second_run_repairs_it(langfuse):
    server = langfuse()
    server.faults = lambda request: (
        refusal('Dimension "traceVersion" is not available for view "scores-numeric" in version "v1"')
        if request.method == "POST" and request.path == WIDGETS and (request.body or {}).get("name") == REFUSED
        else OK)
    first = runner.invoke(app, ["langfuse", "dashboards"])
    assert first.exit_code == 1
    output = " ".join(first.output.split())
    assert f"widget {REFUSED} refused: HTTP 400" in output and 'Dimension "traceVersion" is not available' in output
    specs = widget_specs(default_rubric())
    assert len(server.dashboard_widgets) == len(specs) - 1 and placed(server) == sorted(server.dashboard_widgets)

    server.faults = lambda request: OK
    second = runner.invoke(app, ["langfuse", "dashboards"])
    assert second.exit_code == 0, second.output
    assert "1 created" in second.output and "1 tile placed" in second.output
    assert len(server.dashboard_widgets) == len(specs) and placed(server) == sorted(server.dashboard_widgets)
    third = runner.invoke(app, ["langfuse", "dashboards"])
    assert third.exit_code == 0 and "unchanged" in third.output


def test_a_widget_changed_by_hand_is_put_back_and_a_removed_tile_placed_again(langfuse):
    server = langfuse()
    assert runner.invoke(app, ["langfuse", "dashboards"]).exit_code == 0
    [widget] = [w for w in server.dashboard_widgets.values() if w["name"] == REFUSED]
    server.edit_widget(widget["id"], chartType="PIE", chartConfig={"type": "PIE"})
    [dashboard] = server.dashboards
    server.remove_placement(dashboard, widget["id"])
    result = runner.invoke(app, ["langfuse", "dashboards"])
    assert result.exit_code == 0, result.output
    assert "1 updated" in result.output and "1 tile placed" in result.output
    assert server.dashboard_widgets[widget["id"]]["chartType"] == "PIVOT_TABLE"
    assert len(server.dashboard_widgets) == len(widget_specs(default_rubric()))
    assert "unchanged" in runner.invoke(app, ["langfuse", "dashboards"]).output


def test_a_server_without_the_dashboards_api_gets_the_recipe(langfuse):
    server = langfuse(dashboards=False)
    result = runner.invoke(app, ["langfuse", "dashboards"])
    assert result.exit_code == 1
    assert "dashboards API" in result.output and "docs/langfuse.md" in result.output
    assert "Quality per prompt version" in result.output and "PIVOT_TABLE" in result.output  # the recipe itself
    assert not writes(server)
