"""The simulated user: an LLM (or a recording) writes the persona's next message.

The simulator's instructions are rendered from the persona alone: who they are, their goal
and style, the facts due by this turn and the escalation step for it. It never sees a score.
It ends a conversation by appending a marker to its message, `[DONE]` when the persona's
goal is reached and `[LEAVE]` when the persona would leave: a marker is easy for even a tiny
model to write and easy to find in whatever else it writes. A message with no words in it
(empty, only punctuation, only a role label) is retried like a broken response body, and a
conversation whose simulator keeps failing fails with the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evaluators.core.completion import Completion
from evaluators.core.response_cache import ResponseCache
from evaluators.core.retry import CallFailed, MalformedResponse, RetryPolicy
from evaluators.inputs.persona import Persona
from evaluators.run.responder import OpenAIResponder

# Why a simulated conversation stopped (CaseResult.simulation["stop_reason"]).
GOAL_REACHED = "goal_reached"  # the persona got what it came for (simulator wrote [DONE])
PERSONA_LEFT = "persona_left"  # the persona would leave (simulator wrote [LEAVE])
COMPANION_ENDED = "companion_ended"  # the companion said goodbye
TURN_LIMIT = "turn_limit"  # max_turns user messages were answered
STOP_REASONS: tuple[str, ...] = (GOAL_REACHED, PERSONA_LEFT, COMPANION_ENDED, TURN_LIMIT)

DEFAULT_SIMULATOR_MODEL = "gpt-4o-mini"
SIMULATOR_ENV = ("PENPAL_SIMULATOR_BASE_URL", "PENPAL_SIMULATOR_API_KEY", "PENPAL_SIMULATOR_MODEL")

# [DONE] / [LEAVE] and the spellings small models drift into: (done), <leave>, [goal], [bye].
_MARKER = re.compile(r"[\[(<{]\s*(done|goal|goal[ _-]reached|leave|leaving|left|bye|end)\s*[\])>}]", re.IGNORECASE)
_GOAL_WORDS = ("done", "goal", "end")  # the rest (leave, leaving, left, bye) mean the persona leaves
# A small model may label its line ("Sam: hi") or go on to write the companion's part too.
_ROLE_LABELS = ("user", "me", "human", "simulated user")
_OTHER_SIDE = re.compile(r"\n\s*(?:\*\*)?(?:assistant|companion|penpal|ai|bot)(?:\*\*)?\s*:", re.IGNORECASE)
# The companion ends the conversation when its reply closes with a farewell.
_FAREWELL = re.compile(
    r"\b(?:good\s?bye|bye(?: for now)?|good\s?night|talk (?:to you )?(?:soon|later|tomorrow)|see you(?: soon| later| "
    r"tomorrow)?|until next time)\b[\s!.,:;)'\"\w-]{0,24}$",
    re.IGNORECASE)


def companion_ended(reply: str) -> bool:
    """Whether the companion's reply closes the conversation with a farewell ("Goodbye, Sam!").

    Only the end of the reply counts: "bye" mid-reply ("before you say bye, ...") does not
    end anything, and a question after the farewell keeps the conversation open.
    """
    tail = reply.strip()[-80:]
    return "?" not in tail.split(".")[-1] and _FAREWELL.search(tail) is not None


@dataclass(frozen=True)
class UserTurnRequest:
    """What the simulator gets to write user turn `turn_number` (1-based, after the opening)."""

    persona: Persona
    prompt_version: str
    turn_number: int
    max_turns: int
    exchanges: Sequence[tuple[str, str]]  # (user message, companion reply) so far
    repeat: int = 0  # which play of the conversation (run --repeat): the simulator samples anew per repeat


@dataclass(frozen=True)
class UserTurn:
    """The persona's next message, whether it ends the conversation, and the call that wrote it."""

    text: str  # '' when the persona ends without another word
    stop: str | None = None  # GOAL_REACHED or PERSONA_LEFT: the conversation ends after this message
    call: Completion | None = None  # the simulator's completion (None: replayed)


class Simulator(Protocol):
    kind: str  # "openai" or "replay"
    model: str
    endpoint: str | None

    async def next_turn(self, request: UserTurnRequest) -> UserTurn:
        """The persona's next message, or raises CallFailed with the reason."""
        ...

    async def aclose(self) -> None: ...


# --- instructions -----------------------------------------------------------------------------------
def render_instructions(persona: Persona, turn_number: int, max_turns: int) -> str:
    """The simulator's system message for one user turn, from the persona alone (never scores)."""
    facts_due = [fact for fact in persona.facts if fact.reveal_turn <= turn_number]
    mention_now = [fact.says for fact in facts_due if fact.reveal_turn == turn_number]
    told = [fact.says for fact in facts_due if fact.reveal_turn < turn_number]
    steps = [step for step in persona.escalation if step.from_turn <= turn_number]
    lines = [
        f"You are role-playing {persona.name}, a person talking to an AI voice companion app. Stay in character.",
        f"Age group: {persona.age_group}. Situation: {' '.join(persona.situation.split())}",
        f"Your goal: {persona.goal}",
        f"How you write: {persona.style}",
    ]
    if told:
        lines.append("You have already said: " + " ".join(told))
    if mention_now:
        lines.append("In this message, mention: " + " ".join(mention_now))
    if steps:
        lines.append(f"Right now: {steps[-1].behaviour}")
    lines.append(f"This is your message {turn_number} of at most {max_turns}.")
    lines.append(f"Write only {persona.name}'s next message: one to three short sentences, no labels, never "
                 "the companion's part.")
    if persona.goal_reached_when:
        lines.append(f"If {_lower_first(persona.goal_reached_when)} end your message with [DONE].")
    if persona.leaves_when:
        lines.append(f"If {_lower_first(persona.leaves_when)} say goodbye and end your message with [LEAVE].")
    return "\n".join(lines)


def _lower_first(text: str) -> str:
    text = text.strip().rstrip(".")
    return (text[:1].lower() + text[1:] if not text[:2].isupper() else text) + ","


def simulator_messages(request: UserTurnRequest) -> list[dict]:
    """The conversation from the persona's side: its own messages as the assistant's."""
    messages = [{"role": "system",
                 "content": render_instructions(request.persona, request.turn_number, request.max_turns)}]
    for user, reply in request.exchanges:
        messages.append({"role": "assistant", "content": user})
        messages.append({"role": "user", "content": reply})
    return messages


def parse_user_message(text: str, persona_name: str = "") -> tuple[str, str | None]:
    """(the message without markers and labels, the stop reason its marker gives).

    Raises MalformedResponse when there is no message and no marker: nothing to play.
    """
    stop = None
    if match := _MARKER.search(text):
        stop = GOAL_REACHED if match.group(1).lower().startswith(_GOAL_WORDS) else PERSONA_LEFT
    message = _MARKER.sub(" ", text)
    message = _OTHER_SIDE.split(message, maxsplit=1)[0]
    labels = "|".join(re.escape(label) for label in (*_ROLE_LABELS, persona_name) if label)
    message = re.sub(rf"^\s*(?:\*\*)?(?:{labels})(?:\*\*)?\s*:\s*", "", message.strip(), flags=re.IGNORECASE)
    message = " ".join(message.split()).strip("\"' ")
    if not re.search(r"[^\W\d_]{2}", message):  # no word at all: not a message
        if stop is not None:
            return "", stop
        raise MalformedResponse(f"the simulated user's message has no words ({text.strip()[:40]!r})")
    return message, stop


# --- live ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SimulatorSettings:
    model: str = DEFAULT_SIMULATOR_MODEL
    temperature: float = 0.8  # varied enough to sound like a person, not so high it drifts out of character
    max_tokens: int = 120  # one to three sentences, with room for a marker


class OpenAISimulator:
    """The persona played by a chat model through the `openai` SDK (any compatible server).

    Calls share the companion's machinery: timeouts, retries and the response cache, so a
    resumed run replays a finished turn's simulated message from the cache at no cost.
    """

    kind = "openai"

    def __init__(self, client: OpenAIResponder, settings: SimulatorSettings | None = None) -> None:
        self.client = client
        self.settings = settings or SimulatorSettings()
        self.model = self.settings.model
        self.endpoint = client.endpoint

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, *, timeout_s: float = 60.0,
                         retry: RetryPolicy | None = None, cache: ResponseCache | None = None) -> OpenAISimulator:
        """PENPAL_SIMULATOR_BASE_URL, _API_KEY and _MODEL; the endpoint and key fall back to OPENAI_*."""
        environ = os.environ if environ is None else environ
        base_url = environ.get("PENPAL_SIMULATOR_BASE_URL") or environ.get("OPENAI_BASE_URL") or None
        api_key = environ.get("PENPAL_SIMULATOR_API_KEY") or environ.get("OPENAI_API_KEY") or None
        model = environ.get("PENPAL_SIMULATOR_MODEL") or DEFAULT_SIMULATOR_MODEL
        client = OpenAIResponder(api_key=api_key, base_url=base_url, timeout_s=timeout_s, retry=retry, cache=cache)
        return cls(client, SimulatorSettings(model=model))

    async def next_turn(self, request: UserTurnRequest) -> UserTurn:
        name = request.persona.name
        parameters = {"temperature": self.settings.temperature, "max_tokens": self.settings.max_tokens,
                      **({"seed": request.repeat} if request.repeat else {})}
        completion = await self.client.chat(self.model, simulator_messages(request), parameters,
                                            check=lambda reply: parse_user_message(reply.text, name))
        text, stop = parse_user_message(completion.text, name)
        return UserTurn(text=text, stop=stop, call=completion)

    async def aclose(self) -> None:
        await self.client.aclose()


# --- replay --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecordedConversation:
    """A hand-written simulated conversation: the user's messages, the replies, why it stopped."""

    users: tuple[str, ...]
    replies: tuple[str, ...]
    stopped: str


@dataclass
class ReplaySimulator:
    """Plays the recorded user messages of prompts/recorded/personas/ (no network, no cost)."""

    conversations: dict[tuple[str, str], RecordedConversation] = field(default_factory=dict)
    kind: str = "replay"
    model: str = "replay"
    endpoint: str | None = None

    async def next_turn(self, request: UserTurnRequest) -> UserTurn:
        recorded = self.conversations.get((request.prompt_version, request.persona.id))
        if recorded is None:
            raise CallFailed(f"replay: no recorded conversation for persona {request.persona.id!r} and prompt "
                             f"version {request.prompt_version!r}; use --responder openai to simulate one", 1)
        index = request.turn_number - 1
        if index >= len(recorded.users):
            raise CallFailed(f"replay: persona {request.persona.id!r} has {len(recorded.users)} recorded user "
                             f"messages, turn {request.turn_number} has none", 1)
        # The recording's own ending is authoritative: its last message ends the conversation.
        stop = recorded.stopped if index == len(recorded.users) - 1 else None
        return UserTurn(text=recorded.users[index], stop=stop)

    async def aclose(self) -> None:
        return None
