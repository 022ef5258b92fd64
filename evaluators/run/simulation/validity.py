"""Is a simulated conversation evidence about the companion? Checks on the simulated user's side.

A simulator LLM can drift into the companion's role (a small model, tried live, answered "as a
digital assistant, I don't have personal data"), forget its persona, reveal its facts out of
order, or misuse the stopping markers. The conversation then measures the simulator, not the
companion, so it is marked invalid (kind invalid_simulation), kept on record with the reasons,
and left out of the decisions (evaluators.release.coverage counts it). The thresholds and
phrase lists are the rubric's `simulation_checks:` section.

The checks read only the messages the simulator wrote: the opening is the persona file's own,
and a replayed conversation (prompts/recorded/personas/, written by hand) is not checked.

- `role_drift`: a user message says what an assistant says (the rubric's AI self-descriptions
  and service formulas, outside a question: "are you an AI?" is a user's question), writes the
  companion's part too (a "Companion:" line in what it wrote), or mirrors the companion's reply
  before it (sentence-vector similarity at or above `max_mirror_similarity`);
- `persona_facts`: each fact is revealed when due (by `reveal_turn` + `fact_grace_turns`), not
  before its turn;
- `persona_style`: each message is as short as the instructions ask (`max_user_words`);
- `stop_markers`: a marker ends the message, once, and only one the persona has a condition for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evaluators.core.failures import Failure, FailureKind
from evaluators.inputs.persona import Persona
from evaluators.rubric.loader import Rubric
from evaluators.run.simulation.simulator import _MARKER, _OTHER_SIDE, GOAL_REACHED, PERSONA_LEFT
from evaluators.scoring.expectations import find_phrases, word_count

if TYPE_CHECKING:
    from evaluators.scoring.reading.meaning import MeaningModel

ROLE_DRIFT = "role_drift"
PERSONA_FACTS = "persona_facts"
PERSONA_STYLE = "persona_style"
STOP_MARKERS = "stop_markers"
CHECKS: tuple[str, ...] = (ROLE_DRIFT, PERSONA_FACTS, PERSONA_STYLE, STOP_MARKERS)


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    reason: str

    def as_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "reason": self.reason}


def _statements(text: str) -> str:
    """The message without its questions: "are you an AI?" is a user's question, not drift."""
    return " ".join(part for part in re.split(r"(?<=[.!?])\s+", text) if not part.rstrip().endswith("?"))


def _assistant_phrases(rubric: Rubric) -> list[str]:
    checks = rubric.simulation_checks
    skipped = {entry.casefold() for entry in checks.assistant_lexicon_exceptions}
    return [*checks.assistant_phrases, *(entry for name in checks.assistant_lexicons
                                         for entry in rubric.lexicons[name].entries if entry.casefold() not in skipped)]


def role_drift(users: Sequence[str], replies: Sequence[str], raw: Sequence[str], rubric: Rubric,
               meaning: MeaningModel | None) -> CheckOutcome:
    found = []
    phrases = _assistant_phrases(rubric)
    limit = rubric.simulation_checks.max_mirror_similarity
    for turn in range(1, len(users)):  # the opening (turn 1) is the persona file's, not the simulator's
        said = find_phrases(_statements(users[turn]), phrases)
        if said:
            found.append(f"turn {turn + 1} speaks as an assistant ({', '.join(said)})")
        elif meaning is not None and turn - 1 < len(replies):
            similarity = meaning.similarity(users[turn], replies[turn - 1])
            if similarity >= limit:
                found.append(f"turn {turn + 1} mirrors the companion's reply (similarity {similarity:.2f} >= {limit:g})")
    found += [f"message {index + 2} also writes the companion's part" for index, text in enumerate(raw)
              if _OTHER_SIDE.search(text)]
    return CheckOutcome(ROLE_DRIFT, not found, "; ".join(found) or "the simulated user stayed the user")


def _has_word(text: str, words: Sequence[str]) -> bool:
    return any(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags=re.IGNORECASE) for word in words)


def persona_facts(users: Sequence[str], persona: Persona, rubric: Rubric) -> CheckOutcome:
    grace = rubric.simulation_checks.fact_grace_turns
    found = []
    for fact in persona.facts:
        # The turn (1-based) whose message first carries one of the fact's words; the opening counts.
        first = next((turn for turn, text in enumerate(users, start=1) if _has_word(text, fact.recall)), None)
        due_by = fact.reveal_turn + grace
        if first is not None and 1 < first < fact.reveal_turn:
            found.append(f"{fact.id} revealed on turn {first}, before its turn {fact.reveal_turn}")
        elif (first is None and len(users) >= due_by) or (first is not None and first > due_by):
            when = f"only on turn {first}" if first else "never"
            found.append(f"{fact.id} due on turn {fact.reveal_turn} (at most {grace} late) but revealed {when}")
    return CheckOutcome(PERSONA_FACTS, not found, "; ".join(found) or "every fact revealed when due")


def persona_style(users: Sequence[str], rubric: Rubric) -> CheckOutcome:
    limit = rubric.simulation_checks.max_user_words
    long = [f"turn {turn + 1} has {word_count(users[turn])} words" for turn in range(1, len(users))
            if word_count(users[turn]) > limit]
    return CheckOutcome(PERSONA_STYLE, not long,
                        f"{'; '.join(long)} (the instructions ask for one to three short sentences, at most {limit})"
                        if long else "every message as short as the instructions ask")


def stop_markers(raw: Sequence[str], stop_reason: str | None, persona: Persona) -> CheckOutcome:
    """Markers as the instructions say: at the end of the message, once, and only one the persona has
    a condition for (`goal_reached_when` for [DONE], `leaves_when` for [LEAVE])."""
    found = []
    allowed = {GOAL_REACHED: persona.goal_reached_when, PERSONA_LEFT: persona.leaves_when}
    for index, text in enumerate(raw):
        markers = list(_MARKER.finditer(text))
        if len(markers) > 1:
            found.append(f"message {index + 2} has {len(markers)} markers")
        if markers and re.search(r"[^\W\d_]{2}", text[markers[-1].end():]):
            found.append(f"message {index + 2} goes on after its marker {markers[-1].group(0)}")
    if stop_reason in allowed and not allowed[stop_reason]:
        found.append(f"ended as {stop_reason}, which persona {persona.id!r} has no condition for")
    return CheckOutcome(STOP_MARKERS, not found, "; ".join(found) or "markers used as the instructions say")


def validate_simulation(users: Sequence[str], replies: Sequence[str], record: dict, persona: Persona,
                        rubric: Rubric, meaning: MeaningModel | None = None) -> dict:
    """{valid, checks: [{name, passed, reason}]}: what `CaseResult.simulation["validity"]` keeps."""
    raw = [text for text in record.get("raw_messages") or [] if isinstance(text, str)]
    outcomes = [role_drift(users, replies, raw, rubric, meaning), persona_facts(users, persona, rubric),
                persona_style(users, rubric), stop_markers(raw, record.get("stop_reason"), persona)]
    return {"valid": all(outcome.passed for outcome in outcomes), "checks": [o.as_dict() for o in outcomes]}


def validity_failures(validity: dict | None) -> list[Failure]:
    """Each failed check as a typed failure (kind invalid_simulation, named by the check)."""
    return [Failure(FailureKind.INVALID_SIMULATION, check["reason"], check["name"])
            for check in (validity or {}).get("checks", []) if not check["passed"]]
