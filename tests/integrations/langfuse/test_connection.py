"""The version gate: SDK 5 needs Langfuse 4.59 or later (score batches as arrays, score
timestamps). An older server gets one clear line and nothing is sent; Cloud passes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.connection import MIN_SERVER_VERSION, version_problem
from tests.support.langfuse_runs import run_replay

runner = CliRunner()
HEALTH = "/api/public/health"


def sent_anything(server) -> bool:
    return any(request.path != HEALTH for request in server.requests)


def test_a_run_against_an_older_server_says_which_version_is_needed_and_sends_nothing(small_project, langfuse,
                                                                                       capsys):
    server = langfuse(version="4.16.0")
    code, store = run_replay(small_project)
    assert code == 0  # the run itself is whole
    err = capsys.readouterr().err
    assert "4.16.0" in err and "4.59" in err
    assert not sent_anything(server)
    assert server.requests_to(HEALTH)


@pytest.mark.parametrize("command", [["langfuse", "setup"], ["prompts", "push"], ["monitor", "--no-judge"],
                                     ["langfuse", "dashboards"]])
def test_commands_against_an_older_server_stop_with_the_version_line(small_project, langfuse, command):
    server = langfuse(version="3.22.0")
    arguments = [*command, "--scenarios-dir", str(small_project["scenarios"])] if command[-1] == "setup" else command
    if command == ["prompts", "push"]:
        arguments = [*command, str(small_project["prompts"])]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 2, result.output
    assert "3.22.0" in result.output and "4.59" in result.output
    assert not sent_anything(server)


def test_push_against_an_older_server_sends_nothing(small_project, langfuse):
    code, store = run_replay(small_project)  # no keys yet: nothing published
    server = langfuse(version="4.16.0")
    result = runner.invoke(app, ["push", str(store.directory)])
    assert result.exit_code == 2
    assert "4.59" in result.output
    assert not sent_anything(server)


def test_versions_are_compared_as_numbers_and_cloud_passes():
    assert MIN_SERVER_VERSION == (4, 59)
    assert version_problem("4.59.0", "http://langfuse.internal") is None
    assert version_problem("4.100.1", "http://langfuse.internal") is None
    assert version_problem("v5.0.0", "http://langfuse.internal") is None
    assert "4.59" in version_problem("4.9.3", "http://langfuse.internal")
    assert version_problem(None, "https://cloud.langfuse.com") is None
    assert version_problem("3.0.0", "https://us.cloud.langfuse.com") is None
