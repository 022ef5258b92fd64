"""Recorded simulated conversations (prompts/recorded/personas/*.yaml): the offline personas.

Hand-written sample data, like the recorded scripted replies: per persona and prompt version,
the exchanges `{user, reply}` and why the conversation stopped. The replay simulator plays the
user messages, the replay responder the replies, so the persona family runs with no key.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from evaluators.core.locations import display_path, read_data_file
from evaluators.core.yaml_io import describe_yaml_error, parse_yaml
from evaluators.run.responder import DEFAULT_RECORDED_DIR, RecordingError
from evaluators.run.simulation.simulator import STOP_REASONS, RecordedConversation

PERSONA_RECORDINGS_SUBDIR = "personas"
_TOP_LEVEL_KEYS = ("sample_data", "persona", "conversations")


def persona_recordings_dir(recorded_dir: Path | None = None) -> Path:
    return Path(recorded_dir if recorded_dir is not None else DEFAULT_RECORDED_DIR) / PERSONA_RECORDINGS_SUBDIR


def recording_files(recorded_dir: Path | None = None) -> list[Path]:
    directory = persona_recordings_dir(recorded_dir)
    return sorted(path for path in directory.glob("*.yaml") if path.is_file()) if directory.is_dir() else []


def load_persona_recordings(recorded_dir: Path | None = None) -> dict[tuple[str, str], RecordedConversation]:
    """(prompt version, persona id) -> the recorded conversation; RecordingError names file and key."""
    conversations: dict[tuple[str, str], RecordedConversation] = {}
    problems: list[str] = []
    for path in recording_files(recorded_dir):
        source = display_path(path)
        try:
            data = parse_yaml(read_data_file(path))
        except (yaml.YAMLError, ValueError) as error:
            problems.append(f"{source}: {describe_yaml_error(error) if isinstance(error, yaml.YAMLError) else error}")
            continue
        if not isinstance(data, dict):
            problems.append(f"{source}: expected a mapping with persona and conversations")
            continue
        problems += [f"{source}: {key}: unknown key" for key in map(str, data) if key not in _TOP_LEVEL_KEYS]
        persona_id = data.get("persona")
        if not isinstance(persona_id, str) or not persona_id:
            problems.append(f"{source}: persona: expected the persona id")
            continue
        by_version = data.get("conversations")
        if not isinstance(by_version, dict) or not by_version:
            problems.append(f"{source}: conversations: expected a mapping of prompt version to a conversation")
            continue
        for version, recorded in by_version.items():
            where = f"{source}: conversations.{version}"
            conversation, own = _conversation(recorded, where)
            problems += own
            if conversation is not None:
                conversations[(str(version), persona_id)] = conversation
    if problems:
        raise RecordingError("\n".join(problems))
    return conversations


def _conversation(recorded: object, where: str) -> tuple[RecordedConversation | None, list[str]]:
    if not isinstance(recorded, dict) or set(recorded) - {"stopped", "exchanges"}:
        return None, [f"{where}: expected a mapping with stopped and exchanges"]
    problems = []
    stopped = recorded.get("stopped")
    if stopped not in STOP_REASONS:
        problems.append(f"{where}.stopped: {stopped!r} is not one of {', '.join(STOP_REASONS)}")
    exchanges = recorded.get("exchanges")
    if not isinstance(exchanges, list) or not exchanges:
        return None, problems + [f"{where}.exchanges: expected a non-empty list of {{user, reply}}"]
    users, replies = [], []
    for index, exchange in enumerate(exchanges):
        texts = exchange if isinstance(exchange, dict) and set(exchange) == {"user", "reply"} else None
        if texts is None or not all(isinstance(texts[key], str) and texts[key].strip() for key in ("user", "reply")):
            problems.append(f"{where}.exchanges[{index}]: expected {{user, reply}}, both non-empty text")
            continue
        users.append(" ".join(texts["user"].split()))
        replies.append(texts["reply"].strip())
    if problems:
        return None, problems
    return RecordedConversation(tuple(users), tuple(replies), stopped), []


def persona_replies(conversations: dict[tuple[str, str], RecordedConversation]) -> dict[tuple[str, str], list[str]]:
    """The companion's side, in the replay responder's shape: (version, persona id) -> replies."""
    return {key: list(conversation.replies) for key, conversation in conversations.items()}
