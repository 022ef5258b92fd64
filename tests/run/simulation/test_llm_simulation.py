"""A real model plays both sides: SmolLM2 through llama.cpp is the simulated persona and the
companion for four turns, end to end through the openai SDK; the conversation is stored and
scored. Opt-in (`--llm`). The model is tiny: the point is the real wire path and that the
simulator copes with what a weak model writes, not the quality of the conversation.
"""

from __future__ import annotations

import asyncio

import pytest

from evaluators.inputs.personas import load_personas
from evaluators.pipeline import execute, prepare_run
from evaluators.run.config import RunConfig
from evaluators.run.simulation.simulator import STOP_REASONS
from evaluators.scoring.api import default_evaluator
from evaluators.store.run_store import RunStore
from tests.servers.llama import LLAMA_MODEL_ALIAS as MODEL_ALIAS

pytestmark = [pytest.mark.llm, pytest.mark.slow]


def test_smollm2_plays_the_persona_and_the_companion_for_four_turns(llama_server, tmp_path):
    persona = load_personas().get("lonely-young-only-friend")
    config = RunConfig(prompt_versions=["v2-warm-boundaries"], persona_ids=[persona.id], max_turns=4,
                       responder="openai", model=MODEL_ALIAS, concurrency=1, timeout_s=120, use_cache=False,
                       output_dir=tmp_path)
    environ = {"OPENAI_BASE_URL": llama_server, "OPENAI_API_KEY": "local", "PENPAL_SIMULATOR_MODEL": MODEL_ALIAS}
    evaluator = default_evaluator()
    report = asyncio.run(execute(prepare_run(config, evaluator, environ), evaluator))

    (case,) = RunStore.open(report.store.directory).read_cases()  # as stored, not as held in memory
    assert case.status == "ok", case.error
    assert case.family == "personas" and case.scenario_id == persona.id and case.responder == "openai"
    assert case.simulation["simulator"] == "openai" and case.simulation["model"] == MODEL_ALIAS
    assert case.simulation["stop_reason"] in STOP_REASONS
    assert 1 <= len(case.turns) <= 4
    if case.simulation["stop_reason"] == "turn_limit":
        assert len(case.turns) == 4
    assert case.turns[0].user == persona.opening
    for turn in case.turns:
        assert turn.user.strip() and turn.reply.strip()
        assert "[DONE]" not in turn.user and "[LEAVE]" not in turn.user
        # llama.cpp sends no usage chunk when streaming: usage is counted only when reported.
        assert turn.usage.total_tokens == 0 or turn.usage.completion_tokens > 0
        assert 0 < turn.time_to_first_token_s <= turn.latency_s
        assert turn.heuristics is not None and 0.0 <= turn.heuristics["overall_quality"] <= 1.0
    assert 0.0 <= case.scores["overall_quality"] <= 1.0
    # The simulated user's own calls were made and counted apart from the companion's.
    assert case.simulation["calls"] >= len(case.turns) - 1
    summary = report.summaries["v2-warm-boundaries"]
    assert summary["simulator"]["completion_tokens"] == case.simulation["completion_tokens"]
    assert summary["completion_tokens"] == sum(turn.usage.completion_tokens for turn in case.turns)
