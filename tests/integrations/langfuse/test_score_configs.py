"""Score configs as the server's strict schema takes them (only the fields of each data type),
a setup that carries on past one failing config, a guarded `monitor`, and every score checked
against its config before it is sent (the server would accept a mismatch, then drop it)."""

from __future__ import annotations

from collections import Counter

from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.score_configs import (
    BOOLEAN,
    CATEGORICAL,
    NUMERIC,
    config_fields,
    score_definitions,
)
from evaluators.rubric.loader import default_rubric
from tests.servers.langfuse import OK, Fault
from tests.support.langfuse_runs import run_replay

runner = CliRunner()
CONFIGS = "/api/public/score-configs"


def test_each_config_carries_only_the_fields_of_its_data_type():
    for definition in score_definitions(default_rubric()):
        fields = config_fields(definition)
        if definition.data_type == BOOLEAN:
            assert set(fields) == {"name", "data_type", "description"}
        elif definition.data_type == CATEGORICAL:
            assert set(fields) == {"name", "data_type", "description", "categories"}
        else:
            assert definition.data_type == NUMERIC
            bounds = {"min_value"} | ({"max_value"} if definition.max_value is not None else set())  # counts: open
            assert set(fields) == {"name", "data_type", "description", *bounds}


def test_setup_sends_no_null_where_the_server_wants_nothing(small_project, langfuse):
    server = langfuse()
    result = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", str(small_project["scenarios"])])
    assert result.exit_code == 0, result.output
    posted = [request.body for request in server.requests_to(CONFIGS, "POST")]
    assert len(posted) == len(score_definitions(default_rubric())) == len(server.score_configs)
    assert all(None not in body.values() for body in posted)


def test_one_failing_config_is_reported_and_the_others_are_created(small_project, langfuse):
    server = langfuse()

    def verdict_config_fails(request):
        if request.method == "POST" and request.path == CONFIGS and (request.body or {}).get("name") == "judge_verdict":
            return Fault("status", 422)
        return OK

    server.faults = verdict_config_fails
    result = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", str(small_project["scenarios"])])
    assert result.exit_code == 1
    assert "judge_verdict" in result.output
    names = Counter(config["name"] for config in server.score_configs.values())
    assert names == Counter(d.name for d in score_definitions(default_rubric()) if d.name != "judge_verdict")
    assert len(server.dataset_items) == 5  # the dataset was still synced


def test_a_score_that_does_not_fit_its_config_is_an_error_not_a_silent_drop(small_project, langfuse):
    server = langfuse()
    server.add_score_config(name="overall_quality", data_type="NUMERIC", min_value=0.0, max_value=0.5)
    code, store = run_replay(small_project)
    assert code == 0  # Langfuse trouble never fails a run
    pushed = runner.invoke(app, ["push", str(store.directory)])
    assert pushed.exit_code == 1
    assert "overall_quality" in pushed.output and "range" in pushed.output
    assert server.dropped_scores == []  # nothing went out that the server would drop
    assert not any(score["name"] == "overall_quality" and score["value"] > 0.5 for score in server.scores.values())


def test_a_score_named_otherwise_than_its_config_is_held_back_saying_what_langfuse_would_do():
    """The server renames such a score to its config's name (validateAndInflateScore.ts), which
    would take it out of every dashboard filtered on its own name."""
    from types import SimpleNamespace

    from evaluators.integrations.langfuse.score_configs import score_problem

    config = SimpleNamespace(name="overall_quality_v2", data_type=NUMERIC, min_value=0.0, max_value=1.0,
                             categories=None, is_archived=False)
    problem = score_problem({"name": "overall_quality", "value": 0.5, "dataType": NUMERIC}, config)
    assert problem == ("its config is now named overall_quality_v2: Langfuse would store the score as "
                       "overall_quality_v2")
    assert score_problem({"name": "overall_quality_v2", "value": 0.5, "dataType": NUMERIC}, config) is None
