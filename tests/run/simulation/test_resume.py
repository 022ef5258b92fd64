"""Kill a run in the middle of a simulated conversation (SIGKILL) and resume it: every turn
that was answered before the kill comes from the response cache, for the simulated user and
the companion alike, so no request the server answered is ever sent twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from evaluators.store.run_store import RunStore
from tests.servers.openai_compat import scripted_reply
from tests.support.paths import PROJECT_ROOT
from tests.support.project import faithful_tester_message, is_simulator_call

pytestmark = pytest.mark.slow  # a run killed and resumed in a subprocess

SCRIPT = PROJECT_ROOT / "scripts" / "evaluate_prompts.py"


def run_script(project: dict[str, Path], server_url: str, *arguments: str) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_BASE_URL": server_url, "OPENAI_API_KEY": "test-key",
           "PENPAL_SIMULATOR_MODEL": "sim-model", "PENPAL_EVAL_CACHE": str(project["root"] / "penpal-cache")}
    return subprocess.Popen([sys.executable, str(SCRIPT), *arguments], cwd=project["root"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def answer(call) -> str:
    if is_simulator_call(call.messages):
        return faithful_tester_message(call)
    return scripted_reply(call.messages)


def test_a_killed_simulated_conversation_resumes_without_a_second_call_for_finished_turns(persona_project,
                                                                                        openai_server):
    server = openai_server(latency_s=0.3, answers=answer)
    run_dir = persona_project["runs"] / "killed"
    process = run_script(persona_project, server.base_url, "--prompts-dir", str(persona_project["prompts"]),
                         "--scenarios-dir", str(persona_project["scenarios"]), "--family", "personas",
                         "--concurrency", "1", "--output", str(persona_project["runs"]), "--run-id", "killed")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None and len(server.calls) < 6:
        time.sleep(0.02)  # 6 calls: the first conversation is in its fourth exchange
    assert process.poll() is None, "the run finished before it could be killed: " + process.stderr.read()
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    answered_before = [call.key for call in server.calls[:-1]]  # the last one may have been in flight
    assert RunStore.open(run_dir).finished_ids() == set()  # killed mid-conversation: nothing finished
    calls_before = len(server.calls)

    resumed = run_script(persona_project, server.base_url, "--resume", str(run_dir))
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr

    cases = RunStore.open(run_dir).read_cases()
    assert len(cases) == 2 and all(case.status == "ok" and len(case.turns) == 5 for case in cases)
    after = Counter(call.key for call in server.calls[calls_before:])
    assert not set(answered_before) & set(after), "a turn answered before the kill was requested again"
    repeated = {key for key, count in Counter(call.key for call in server.calls).items() if count > 1}
    assert repeated <= {server.calls[calls_before - 1].key}  # at most the call the kill interrupted
    # Both sides of the killed conversation's finished turns came from the cache on resume.
    first = next(case for case in cases if case.turns[0].cached)
    assert first.simulation["cached_calls"] >= 1
    assert sum(case.simulation["calls"] for case in cases) + sum(
        not turn.cached for case in cases for turn in case.turns) == len(server.calls[calls_before:])
