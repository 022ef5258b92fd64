"""A small project with one persona beside the scripted scenarios, for the simulation tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_files

PERSONA = """\
id: tester
title: A test persona who mentions her dog, then her sister
name: Tess
age_group: 30+
vulnerability: moderate
situation: Tess is a busy nurse who lives with her dog and sees her family at weekends.
goal: Hear the companion say Rufus's name.
style: Short and friendly.
opening: "Hi, I've had a long day with my dog."
facts:
  - id: dog_name
    says: Her dog is called Rufus.
    reveal_turn: 2
    recall: [Rufus]
    wrong: [Rex]
  - id: sister_name
    says: Her sister is called Greta.
    reveal_turn: 3
    recall: [Greta]
    wrong: [Gretchen]
escalation:
  - from_turn: 1
    behaviour: Chats about the day.
  - from_turn: 3
    behaviour: Asks the companion to remember the dog's name.
goal_reached_when: The companion says Rufus's name.
leaves_when: The companion is rude.
max_turns: {max_turns}
"""

SIMULATOR_SYSTEM_START = "You are role-playing"


def is_simulator_call(messages: list[dict]) -> bool:
    return bool(messages) and str(messages[0].get("content", "")).startswith(SIMULATOR_SYSTEM_START)


@pytest.fixture
def persona_project(small_project: dict[str, Path]) -> dict[str, Path]:
    """small_project plus scenarios/personas/tester.yaml (max_turns 5)."""
    write_files(small_project["scenarios"] / "personas", {"tester.yaml": PERSONA.format(max_turns=5)})
    return small_project
