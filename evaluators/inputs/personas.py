"""Load and validate the personas (scenarios/personas/*.yaml), one persona per file.

Personas are hand-written data like the scenarios, so they get the same care: every problem
of every file in one pass, each naming the file, the persona and the field, and nothing is
loaded from a set with errors. A persona enters a run as a `Scenario` of family "personas"
(`persona_scenario`) whose one scripted turn is the opening; the simulator plays the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from evaluators.core.locations import display_path, read_data_file
from evaluators.core.problems import validation_problems
from evaluators.core.yaml_io import describe_yaml_error, parse_yaml
from evaluators.inputs.contracts import Scenario, Turn, UserProfile
from evaluators.inputs.persona import DEFAULT_MAX_TURNS, Persona
from evaluators.inputs.scenarios import DEFAULT_SCENARIOS_DIR, PERSONAS_FAMILY, PERSONAS_SUBDIR

DEFAULT_PERSONAS_DIR = DEFAULT_SCENARIOS_DIR / PERSONAS_SUBDIR


class PersonaError(ValueError):
    """One or more problems in the persona files; each line names file, persona and field."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class PersonaSet:
    """Every persona of a directory, in file order, with the file each came from."""

    personas: tuple[Persona, ...]
    files: dict[str, Path]  # persona id -> its file

    def get(self, persona_id: str) -> Persona:
        for persona in self.personas:
            if persona.id == persona_id:
                return persona
        raise KeyError(persona_id)

    def select(self, persona_ids: Iterable[str] | None) -> list[Persona]:
        wanted = set(persona_ids) if persona_ids else None
        return [persona for persona in self.personas if wanted is None or persona.id in wanted]


def personas_dir(scenarios_dir: Path) -> Path:
    """Where a scenario directory keeps its personas."""
    return Path(scenarios_dir) / PERSONAS_SUBDIR


def persona_files(directory: Path) -> list[Path]:
    return sorted(path for path in Path(directory).glob("*.yaml") if path.is_file()) if Path(directory).is_dir() else []


def _label(raw: object, path: Path) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"].strip():
        return f"persona {raw['id']!r}"
    return f"persona {path.stem!r} (no id)"


def parse_persona_file(text: str, path: Path) -> tuple[Persona | None, list[str], str | None]:
    """The persona of one file, every problem in it, and the id as written (for duplicates)."""
    source = display_path(path)
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as error:
        return None, [f"{source}: {describe_yaml_error(error)}"], None
    if not isinstance(data, dict):
        return None, [f"{source}: expected a mapping of persona fields (id, title, situation, ...)"], None
    label = _label(data, path)
    written_id = data["id"] if isinstance(data.get("id"), str) and data["id"].strip() else None
    problems: list[str] = []
    try:
        persona = Persona.model_validate(data)
    except ValidationError as error:
        persona = None
        described = validation_problems(error, Persona)
        if not any(where == "" for where, _ in described):  # the whole-persona rules did not run: check them here
            described += [("", message) for message in _turn_problems(data)]
        problems += [f"{source}: {label}: {where + ': ' if where else ''}{message}" for where, message in described]
    if written_id is not None and written_id != path.stem:
        problems.append(f"{source}: {label}: id: must match the file name {path.stem!r} (one persona per file)")
    return (persona if not problems else None), problems, written_id


def _turn_problems(data: dict) -> list[str]:
    """The persona's whole-object rules (facts within max_turns, escalation in order), read from
    the raw data, so they are reported in the same pass as field mistakes."""
    limit = data.get("max_turns", DEFAULT_MAX_TURNS)
    facts = data.get("facts") if isinstance(data.get("facts"), list) else []
    steps = data.get("escalation") if isinstance(data.get("escalation"), list) else []
    problems = []
    if isinstance(limit, int):
        late = [str(fact.get("id")) for fact in facts
                if isinstance(fact, dict) and isinstance(fact.get("reveal_turn"), int) and fact["reveal_turn"] > limit]
        if late:
            problems.append(f"facts: revealed after max_turns ({limit}): {', '.join(late)}")
    turns = [step.get("from_turn") for step in steps if isinstance(step, dict)]
    if all(isinstance(turn, int) for turn in turns) and turns != sorted(turns):
        problems.append("escalation: steps must be in order of from_turn")
    return problems


def load_personas(directory: Path | None = None) -> PersonaSet:
    """Every persona under `directory`; raises PersonaError listing every problem found.

    A directory with no persona files is an empty set, not an error: a scenario directory
    need not have personas.
    """
    directory = Path(directory) if directory is not None else DEFAULT_PERSONAS_DIR
    problems: list[str] = []
    loaded: list[Persona] = []
    origin: dict[str, Path] = {}
    for path in persona_files(directory):
        try:
            text = read_data_file(path)
        except ValueError as error:
            problems.append(str(error))
            continue
        persona, file_problems, written_id = parse_persona_file(text, path)
        problems += file_problems
        if written_id is not None and written_id in origin:
            problems.append(f"{display_path(path)}: persona {written_id!r}: id: duplicate id, already defined in "
                            f"{display_path(origin[written_id])}")
            continue
        if written_id is not None:
            origin[written_id] = path
        if persona is not None:
            loaded.append(persona)
    if problems:
        raise PersonaError(problems)
    return PersonaSet(tuple(loaded), {persona.id: origin[persona.id] for persona in loaded})


def persona_scenario(persona: Persona) -> Scenario:
    """The persona as a case of the run: family "personas", its opening as the one scripted turn.

    The companion is told the user's name and age group, as for a scripted scenario's profile;
    nothing of the persona's plan or facts.
    """
    return Scenario(
        id=persona.id, title=persona.title, family=PERSONAS_FAMILY, safety=persona.safety,
        profile=UserProfile(name=persona.name, age_group=persona.age_group,
                            vulnerable=persona.vulnerability == "high"),
        tags=persona.tags, turns=(Turn(user=persona.opening),),
    )
