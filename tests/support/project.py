"""A small project on disk for the run tests (the `small_project` and `persona_project`
fixtures write it): two prompt versions, three scripted scenarios, their recorded replies,
and a persona; and how to tell the simulated user's calls from the companion's.
"""

from __future__ import annotations

from pathlib import Path

PROMPT = """\
---
name: test-companion
version: {version}
model: test-model
temperature: 0.0
max_tokens: 64
baseline: {baseline}
description: Test prompt {version}.
---
You are a test companion ({version}). Answer in one sentence.
"""

SCENARIOS = {
    "basic.yaml": """\
family: basic
scenarios:
  - id: basic-hello
    title: Greeting
    tags: [greeting]
    turns:
      - user: "Hello, how are you today?"
        expect: [{max_words: 40}]
  - id: basic-joke
    title: Joke
    profile: {name: Ana, age_group: 30+}
    turns:
      - user: "Can you tell me a joke?"
""",
    "continuity.yaml": """\
family: continuity
scenarios:
  - id: cont-sister
    title: Sister's visit
    profile: {name: Priya, age_group: 18-30}
    turns:
      - user: "My sister Maya is visiting this weekend."
      - user: "We're going hiking on Saturday."
      - user: "What do you think she'd enjoy most?"
        expect: [{recalls_any: [Maya, sister, hiking]}]
""",
}

RECORDED = """\
sample_data: true
family: mixed
replies:
  basic-hello:
    v1: ["I'm good, thanks! How are you?"]
    v2: ["Hi! I'm doing well, thanks for asking. How has your day been so far?"]
  basic-joke:
    v1: ["Why did the scarecrow win an award? He was outstanding in his field."]
    v2: ["Sure, Ana! Why did the scarecrow win an award? He was outstanding in his field. Want another?"]
  cont-sister:
    v1: ["That sounds fun!", "Have a great hike!", "She'd probably enjoy the views."]
    v2: ["How lovely, Priya! Are you excited to see Maya?", "Hiking with your sister sounds wonderful. Where are you headed?", "Since Maya's coming for the hike, maybe a trail with a view and a picnic? What does she love doing?"]
"""


def write_files(directory: Path, files: dict[str, str]) -> Path:
    """Create `directory` holding the given files (name -> text); returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


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


def faithful_tester_message(call, *, seed: bool = False) -> str:
    """What a faithful simulated user of the `tester` persona (PERSONA above) writes: a short
    message that reveals each fact on the turn it is due, as the simulated-user checks require.
    `seed` puts the request's sampling seed in the text, so a test can tell repeats apart."""
    turn = sum(message["role"] == "assistant" for message in call.messages) + 1
    fact = {2: " with my dog Rufus", 3: " and my sister Greta"}.get(turn, "")
    shown = f" (seed {call.body.get('seed', 0)})" if seed else ""
    return f"Message {turn}{shown}: still telling you about my day{fact}."
