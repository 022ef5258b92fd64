"""Answers for the local OpenAI-compatible server: the recorded sample replies of each prompt
version, served live.

A live run against the server then sees the replies a replay run scores, so the two decide on
the same text, and only what the live run adds (timing, the network) can tell them apart.
A call is matched by its system prompt (the version's text and what it knows about the user)
and its first user message (the scenario); its number of user messages picks the turn. A call
nothing matches (a simulated user, an unknown scenario) gets the server's scripted reply.
"""

from __future__ import annotations

from pathlib import Path

from evaluators.inputs.prompts import load_prompts
from evaluators.inputs.scenarios import load_scenarios
from evaluators.run.responder import build_messages, load_recordings
from tests.servers.openai_compat import AnswerPlan, Call, scripted_reply


def recorded_answers(prompts_dir: Path, scenarios_dir: Path, recorded_dir: Path) -> AnswerPlan:
    recordings = load_recordings(recorded_dir)
    table: dict[tuple[str, str], list[str]] = {}
    for prompt in load_prompts(prompts_dir):
        for scenario in load_scenarios(scenarios_dir).scenarios:
            replies = recordings.get((prompt.version, scenario.id))
            if replies:
                table[(build_messages(prompt, scenario)[0]["content"], scenario.turns[0].user)] = replies

    def answer(call: Call) -> str:
        users = [str(message.get("content", "")) for message in call.messages if message.get("role") == "user"]
        system = str(call.messages[0].get("content", "")) if call.messages else ""
        replies = table.get((system, users[0] if users else ""))
        if replies and len(users) <= len(replies):
            return replies[len(users) - 1]
        return scripted_reply(call.messages)

    return answer
