"""`monitor --engine ray`: production replies read from Langfuse, scored on the Ray cluster, and
the scores written back equal local scoring of the same replies."""

from __future__ import annotations

import subprocess
import sys

import pytest
from langfuse import Langfuse
from opentelemetry.sdk.trace import TracerProvider

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.scoring.api import score_reply
from tests.support.paths import PROJECT_ROOT
from tests.support.production import CALM, CRISIS, ROUTINE, production_reply

pytestmark = pytest.mark.slow  # a two-node Ray cluster


def test_monitor_on_ray_writes_back_the_scores_local_scoring_gives(ray_cluster, langfuse_server, tmp_path):
    server = langfuse_server()
    app_client = Langfuse(**server.sdk_kwargs(), tracer_provider=TracerProvider(shutdown_on_exit=False))
    replies = {production_reply(app_client, user, reply, 1)[1]: (user, reply) for user, reply in
               [*CALM, *ROUTINE, CRISIS]}
    app_client.flush()
    env = {**ray_cluster["env"], "LANGFUSE_PUBLIC_KEY": server.public_key, "LANGFUSE_SECRET_KEY": server.secret_key,
           "LANGFUSE_BASE_URL": server.base_url, "PENPAL_EVAL_CACHE": str(tmp_path / "cache")}
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY"):
        env.pop(name, None)
    result = subprocess.run([sys.executable, "-m", "evaluators", "monitor", "--since", "1h", "--no-judge",
                             "--sampling-state", str(tmp_path / "state.json"), "--engine", "ray", "--address",
                             ray_cluster["address"], "--workers", "2"],
                            cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{len(replies)} production replies read" in result.stdout
    for generation_id, (user, reply) in replies.items():
        scores = {score["name"]: score["value"] for score in server.scores.values()
                  if score.get("observationId") == generation_id}
        local = score_reply(user, reply).values()
        for name in (*METRIC_NAMES, OVERALL):
            assert scores[name] == pytest.approx(round(local[name], 4), abs=1e-9), (reply, name)
