"""A real model end to end: llama.cpp's OpenAI server with SmolLM2-135M, through the openai SDK.

Opt-in (`--llm`; scripts/test.sh passes it): it starts a real inference server. The model is
tiny and its replies are poor; the point is the real wire path, not quality.
"""

from __future__ import annotations

import pytest

from evaluators.inputs.scenarios import load_scenarios
from evaluators.pipeline import execute, prepare_run
from evaluators.run.config import RunConfig
from evaluators.scoring.api import default_evaluator
from tests.servers.llama import LLAMA_MODEL_ALIAS as MODEL_ALIAS

pytestmark = [pytest.mark.llm, pytest.mark.slow]


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
        # The reply was streamed and timed: first token, whole reply, and the pace after the first
        # (llama.cpp streams one token per chunk and sends no usage chunk, so nothing is counted).
        assert 0 < turn.time_to_first_token_s <= turn.latency_s
        assert turn.tokens_per_s is None or turn.tokens_per_s > 0
        assert turn.usage.total_tokens == 0 or turn.usage.completion_tokens > 0
        assert turn.heuristics is not None and 0.0 <= turn.heuristics["overall_quality"] <= 1.0
    # Each turn's prompt holds the conversation so far; when the server reports usage, prompt
    # tokens grow turn by turn.
    prompt_tokens = [turn.usage.prompt_tokens for turn in case.turns]
    if any(prompt_tokens):
        assert prompt_tokens == sorted(prompt_tokens) and prompt_tokens[0] < prompt_tokens[-1]
    manifest = report.store.manifest
    assert manifest["config"]["endpoint"] == llama_server and manifest["config"]["model_override"] == MODEL_ALIAS
