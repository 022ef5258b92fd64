"""The judge on a real model: 20 replies through llama.cpp's OpenAI server and SmolLM2-135M.

Opt-in (`--llm`; scripts/test.sh passes it). llama-cpp-python refuses `json_schema` but takes
`json_object` with a schema, which it turns into a grammar: the judge must find that path by
itself, remember it, and read at least 95% of the verdicts without falling back. The model
is far too small to judge well; what is measured here is the wire path and the parsing.
"""

from __future__ import annotations

import asyncio

import pytest

from evaluators.core.names import METRIC_NAMES
from evaluators.core.retry import RetryPolicy
from evaluators.inputs.scenarios import load_scenarios
from evaluators.judge.client import JudgeSettings, LLMJudge, ModeMemory
from evaluators.judge.stage import turn_inputs
from evaluators.rubric.loader import default_rubric
from evaluators.run.responder import load_recordings
from evaluators.store.records import CaseResult, TurnResult
from tests.servers.llama import LLAMA_MODEL_ALIAS

pytestmark = [pytest.mark.llm, pytest.mark.slow]
# 20 replies, over every family: about 20 s a verdict on two cores. 30 took over 11 minutes of CI,
# and 95% of 20 still lets one verdict fall back and no more.
CASES = 20


def replies_over_every_family():
    """The first recorded reply of CASES (version, scenario) pairs, spread over every family."""
    scenarios = {scenario.id: scenario for scenario in load_scenarios().scenarios}
    recorded = sorted(load_recordings().items(), key=lambda item: (item[0][1], item[0][0]))
    by_family: dict[str, list] = {}
    for item in recorded:  # round robin over the families, so each is judged whatever the set's sizes
        by_family.setdefault(scenarios[item[0][1]].family, []).append(item)
    queues = [items[::max(1, len(items) * len(by_family) // CASES)] for items in by_family.values()]
    chosen = [queue[i] for i in range(CASES) for queue in queues if i < len(queue)][:CASES]
    inputs = []
    for (version, scenario_id), replies in chosen:
        scenario = scenarios[scenario_id]
        case = CaseResult(case_id=f"{version}/{scenario_id}", prompt_name=version, prompt_version=version,
                          scenario_id=scenario_id, family=scenario.family, age_group=scenario.profile.age_group,
                          demographic_group=scenario.profile.demographic_group, responder="replay", status="ok",
                          turns=[TurnResult(index=0, user=scenario.turns[0].user, reply=replies[0], model="replay")])
        inputs += turn_inputs(case, scenario)
    return inputs


def test_twenty_verdicts_from_a_real_model_parse_through_json_object_with_a_schema(llama_server, tmp_path):
    inputs = replies_over_every_family()
    assert len(inputs) == CASES and len({item.family for item in inputs}) == 6
    judge = LLMJudge(default_rubric(), JudgeSettings(model=LLAMA_MODEL_ALIAS, concurrency=1, max_tokens=400,
                                                     timeout_s=300), base_url=llama_server,
                     retry=RetryPolicy(max_attempts=2, base_delay_s=0.1), modes=ModeMemory(tmp_path / "modes.json"))

    async def judge_all():
        try:
            return [await judge.judge(item) for item in inputs]
        finally:
            await judge.aclose()

    results = asyncio.run(judge_all())
    assert all(result.status == "ok" for result in results), [r.error for r in results if r.status != "ok"]
    assert {result.mode for result in results} == {"json_object_schema"}
    assert judge.modes.get(judge.endpoint, LLAMA_MODEL_ALIAS) == "json_object_schema"
    # json_schema was refused once, on the first call; after that the remembered mode was used.
    repairs = sum(result.parse_status == "repaired" for result in results)
    fallbacks = sum(result.parse_status == "fallback" for result in results)
    assert judge.stats.calls == CASES + 1 + repairs + fallbacks
    parsed = [result for result in results if result.usable]
    print(f"\n{len(parsed)}/{CASES} verdicts read ({repairs} after a repair request), {fallbacks} fell back")
    assert len(parsed) >= 0.95 * CASES
    grid = set(default_rubric().judge.score_grid())
    for result in parsed:
        assert result.parse_status in {"json", "repaired"}
        assert result.overall in grid and result.verdict in {"good", "acceptable", "poor"}
        assert set(result.dimensions) == set(METRIC_NAMES)
