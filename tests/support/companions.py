"""Companions as `python` targets for the target tests: plain functions and classes a team would
write around its own backend (evaluators.run.targets.Conversation in, the reply out)."""

from __future__ import annotations

import asyncio

FORGETFUL_REPLY = "Thanks for telling me. How are you feeling about all of it?"


def remembering(conversation) -> str:
    """Sync, no memory of its own: it reads what it knows about the user from the system prompt
    and the earlier user turns from the messages it is given."""
    system = conversation.messages[0]["content"] if conversation.messages[0]["role"] == "system" else ""
    known = system.partition("What you know about the user:")[2].strip()
    earlier = [m["content"] for m in conversation.messages[:-1] if m["role"] == "user"]
    if known:
        earlier.insert(0, known)
    if not earlier:
        return FORGETFUL_REPLY
    return f"Earlier you told me: {' / '.join(earlier)}. How are you feeling about it now?"


class Forgetful:
    """An async method on a class made once per run with `init` arguments."""

    def __init__(self, greeting: str = "Hello") -> None:
        self.greeting = greeting
        self.calls = 0

    async def reply(self, conversation) -> str:
        await asyncio.sleep(0)
        self.calls += 1
        return f"{self.greeting}! {FORGETFUL_REPLY}"


class Flaky:
    """Raises on the first call of every conversation (its backend dropped the connection), then
    answers; and always raises for one scenario."""

    def __init__(self, broken_scenario: str = "") -> None:
        self.seen: set[str] = set()
        self.broken_scenario = broken_scenario

    def reply(self, conversation) -> str:
        if conversation.scenario_id == self.broken_scenario:
            raise RuntimeError("the companion backend is down")
        if conversation.conversation_id not in self.seen:
            self.seen.add(conversation.conversation_id)
            raise ConnectionError("connection reset by the companion backend")
        return FORGETFUL_REPLY
