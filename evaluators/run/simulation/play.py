"""Where a conversation's user messages come from: the script, or the simulated persona.

The runner plays every conversation the same way (ask for the next user message, get the
companion's reply, repeat until there is none); only the source differs. A simulated
conversation stops by the first rule that holds, checked in this order after each reply:
the persona ended it (goal reached or leaving, marked in its last message), the companion
said goodbye, or the turn limit was reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluators.core.completion import Completion, Usage
from evaluators.inputs.contracts import Scenario
from evaluators.inputs.persona import Persona
from evaluators.run.simulation.simulator import (
    COMPANION_ENDED,
    TURN_LIMIT,
    Simulator,
    UserTurnRequest,
    companion_ended,
)

Exchanges = Sequence[tuple[str, str]]  # (user message, companion reply), in order


@dataclass
class ScriptedTurns:
    """A scripted scenario's user turns, in order."""

    scenario: Scenario
    stop_reason: str | None = None

    async def next_message(self, exchanges: Exchanges) -> str | None:
        index = len(exchanges)
        return self.scenario.turns[index].user if index < len(self.scenario.turns) else None

    def record(self) -> dict | None:
        return None


@dataclass
class SimulatedTurns:
    """The persona's messages: its fixed opening, then whatever the simulator writes.

    `next_message` raises CallFailed (with the simulator's reason) when no message could be
    had; the runner fails the case with it.
    """

    simulator: Simulator
    persona: Persona
    prompt_version: str
    max_turns: int
    repeat: int = 0  # which play of the conversation (run --repeat)
    stop_reason: str | None = None
    calls: list[Completion] = field(default_factory=list)  # every simulator call, a final wordless one too
    _ends_after_reply: str | None = None

    async def next_message(self, exchanges: Exchanges) -> str | None:
        if exchanges:
            if self._ends_after_reply is not None:
                return self._stop(self._ends_after_reply)
            if companion_ended(exchanges[-1][1]):
                return self._stop(COMPANION_ENDED)
        if len(exchanges) >= self.max_turns:
            return self._stop(TURN_LIMIT)
        if not exchanges:
            return self.persona.opening  # fixed, so every version starts from the same message
        turn = await self.simulator.next_turn(UserTurnRequest(
            persona=self.persona, prompt_version=self.prompt_version, turn_number=len(exchanges) + 1,
            max_turns=self.max_turns, exchanges=list(exchanges), repeat=self.repeat))
        if turn.call is not None:
            self.calls.append(turn.call)
        if not turn.text:
            return self._stop(turn.stop)
        self._ends_after_reply = turn.stop
        return turn.text

    def _stop(self, reason: str | None) -> None:
        self.stop_reason = reason
        return None

    def record(self) -> dict:
        """What the case keeps about the simulation (CaseResult.simulation)."""
        fresh = [call for call in self.calls if not call.cached]
        usage = sum((call.usage for call in fresh), Usage())
        return {
            "persona": self.persona.id,
            "simulator": self.simulator.kind,
            "model": self.simulator.model,
            # The model the server says answered (each response's `model` field): a server may
            # serve another model than the one asked for, and the record must name that one.
            "answered_by": sorted({call.model for call in self.calls if call.model}),
            # What the simulator wrote, markers and all, for the validity checks: call i wrote
            # user turn i + 2 (the opening is fixed), the last one perhaps only a marker.
            "raw_messages": [call.text for call in self.calls],
            "endpoint": self.simulator.endpoint,
            "stop_reason": self.stop_reason,
            "max_turns": self.max_turns,
            "calls": len(fresh),
            "cached_calls": len(self.calls) - len(fresh),
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
        }
