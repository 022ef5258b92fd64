"""The form of POST /api/public/scores is found by trying, not by a version number: a server
that takes one score per request answers the SDK's array with zod's 400, and the push goes on
one object per request, with a warning that such a server ignores score timestamps."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from evaluators.cli import app
from evaluators.integrations.langfuse.ledger import LEDGER
from evaluators.integrations.langfuse.rest import LangfuseCallFailed
from evaluators.integrations.langfuse.scores import refuses_arrays
from tests.support.langfuse_runs import run_replay

runner = CliRunner()
SCORES = "/api/public/scores"
WARNING = "takes one score per request"


def score_posts(server) -> list:
    return server.requests_to(SCORES, "POST")


@pytest.mark.parametrize("mode", ["object", "object-zod4"])
def test_a_one_object_server_gets_every_score_one_per_request_with_one_warning(small_project, langfuse, capsys,
                                                                               mode):
    server = langfuse(scores_mode=mode)
    code, store = run_replay(small_project)
    assert code == 0
    err = " ".join(capsys.readouterr().err.split())
    assert err.count(WARNING) == 1 and "ignores score timestamps" in err
    assert "NOT DELIVERED" not in err
    posts = score_posts(server)
    refused, singles = posts[0], posts[1:]
    assert isinstance(refused.body, list) and refused.status == 400  # the one try of the array form
    assert singles and all(isinstance(post.body, dict) and post.status == 200 for post in singles)
    ledger = json.loads((store.directory / LEDGER).read_text())
    assert set(ledger["scores"]) == set(server.scores) and len(singles) == len(server.scores)
    assert server.score_deliveries == {score_id: 1 for score_id in server.scores}

    again = runner.invoke(app, ["push", str(store.directory)])  # nothing missing: nothing sent
    assert again.exit_code == 0, again.output
    assert len(score_posts(server)) == len(posts)


def test_an_array_server_gets_batches_and_no_warning(small_project, langfuse, capsys):
    server = langfuse()
    code, store = run_replay(small_project)
    assert code == 0
    assert WARNING not in capsys.readouterr().err
    posts = score_posts(server)
    assert posts and all(isinstance(post.body, list) and post.status == 202 for post in posts)
    assert sum(len(post.body) for post in posts) == len(server.scores)


def test_no_server_version_stops_a_command(small_project, langfuse):
    """The old gate refused every server below an uncited 4.59 (exit 2): gone."""
    server = langfuse(version="3.22.0", scores_mode="object")
    result = runner.invoke(app, ["langfuse", "setup", "--scenarios-dir", str(small_project["scenarios"])])
    assert result.exit_code == 0, result.output
    assert server.score_configs


@pytest.mark.parametrize("body, status, expected", [
    ({"message": "Invalid request data", "error": [{"code": "invalid_type", "expected": "object",
                                                    "received": "array", "path": [],
                                                    "message": "Expected object, received array"}]}, 400, True),
    ({"message": "Invalid request data", "error": [{"code": "invalid_type", "expected": "object", "path": [],
                                                    "message": "Invalid input: expected object, received array"}]},
     400, True),
    ({"message": "Invalid request data", "error": [{"code": "invalid_type", "expected": "object", "path": ["0"],
                                                    "message": "Expected object, received array"}]}, 400, False),
    ({"message": "Invalid request data", "error": [{"code": "invalid_type", "expected": "string", "path": [],
                                                    "message": "Expected string, received array"}]}, 400, False),
    ({"message": "Invalid request data", "error": [{"code": "invalid_type", "expected": "object", "path": [],
                                                    "message": "Expected object, received array"}]}, 500, False),
    ("429 - rate limit exceeded", 400, False),
])
def test_only_the_one_object_refusal_switches_the_form(body, status, expected):
    assert refuses_arrays(LangfuseCallFailed("send scores: HTTP 400", status, body)) is expected
