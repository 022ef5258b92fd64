"""Load and validate the scenario sets (scenarios/*.yaml).

A scenario file is hand-written data, so every error names the file, the scenario (by id,
or by position when the id itself is missing) and the field, and nothing is loaded from a
set with errors: a run on half the scenarios would compare versions unfairly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from evaluators.core.locations import PROJECT_ROOT, display_path, read_data_file
from evaluators.core.problems import did_you_mean, validation_problems
from evaluators.core.yaml_io import describe_yaml_error, parse_yaml
from evaluators.inputs.contracts import FAMILIES, Scenario
from evaluators.rubric.loader import Rubric, default_rubric

PERSONAS_FAMILY = "personas"  # played by a simulator (evaluators.run.simulation), never scripted
PERSONAS_SUBDIR = "personas"

DEFAULT_SCENARIOS_DIR = PROJECT_ROOT / "scenarios"


class ScenarioError(ValueError):
    """One or more problems in the scenario files; each line names file, scenario and field."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class ScenarioSet:
    """All scenarios of a directory, in file order, with where each came from."""

    scenarios: tuple[Scenario, ...]
    files: dict[str, Path]  # scenario id -> file it came from

    def by_family(self, families: Iterable[str] | None = None) -> list[Scenario]:
        wanted = set(families) if families else set(FAMILIES)
        return [scenario for scenario in self.scenarios if scenario.family in wanted]

    def get(self, scenario_id: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.id == scenario_id:
                return scenario
        raise KeyError(scenario_id)


_TOP_LEVEL_KEYS = ("family", "description", "scenarios")


def _scenario_label(raw: object, index: int) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"].strip():
        return f"scenario {raw['id']!r}"
    return f"scenario #{index + 1} (no id)"


def _raw_expectations(raw: dict) -> list[tuple[str, object]]:
    """(where, item) for every expectation written in a scenario, read before validation."""
    found: list[tuple[str, object]] = []
    if isinstance(raw.get("expect"), list):
        found += [(f"expect[{index}]", item) for index, item in enumerate(raw["expect"])]
    turns = raw.get("turns")
    for number, turn in enumerate(turns if isinstance(turns, list) else []):
        if isinstance(turn, dict) and isinstance(turn.get("expect"), list):
            found += [(f"turns[{number}].expect[{index}]", item) for index, item in enumerate(turn["expect"])]
    return found


def _unknown_lexicons(raw: dict, rubric: Rubric) -> list[str]:
    """`avoids:` names that are not rubric lexicons; checked on the raw data, so they are
    reported together with the scenario's other mistakes, not after those are fixed."""
    problems = []
    for where, item in _raw_expectations(raw):
        names = item.get("avoids") if isinstance(item, dict) and len(item) == 1 else None
        if not isinstance(names, list):
            continue
        unknown = [str(name) for name in names if isinstance(name, str) and name not in rubric.lexicons]
        for name in unknown:
            problems.append(f"{where}: avoids: unknown rubric lexicon {name!r}{did_you_mean(name, rubric.lexicons)}")
    return problems


def _unknown_flags(raw: dict, rubric: Rubric) -> list[str]:
    """`no_flag:` names that are not rubric flags (disqualifiers), read on the raw data like
    `avoids:`, so they are reported with the scenario's other mistakes."""
    problems = []
    turns = raw.get("turns")
    for number, turn in enumerate(turns if isinstance(turns, list) else []):
        items = turn.get("assertions") if isinstance(turn, dict) else None
        for index, item in enumerate(items if isinstance(items, list) else []):
            names = item.get("no_flag") if isinstance(item, dict) and len(item) == 1 else None
            names = [names] if isinstance(names, str) else names
            for name in names if isinstance(names, list) else []:
                if isinstance(name, str) and name not in rubric.disqualifiers:
                    problems.append(f"turns[{number}].assertions[{index}]: no_flag: unknown rubric flag "
                                    f"{name!r}{did_you_mean(name, rubric.disqualifiers)}")
    return problems


def _field_problems(raw: dict, family: str) -> tuple[Scenario | None, list[str]]:
    """The scenario, or every field problem pydantic found (a list emptied by its own bad items is left out)."""
    try:
        return Scenario.model_validate({**raw, "family": family}), []
    except ValidationError as error:
        errors = error.errors()
        emptied = {index for index, item in enumerate(errors) if item["type"] == "too_short" and any(
            len(other["loc"]) > len(item["loc"]) and other["loc"][: len(item["loc"])] == item["loc"]
            for other in errors)}
        described = validation_problems(error, Scenario)
        return None, [f"{where + ': ' if where else ''}{message}"
                      for index, (where, message) in enumerate(described) if index not in emptied]


def parse_scenario_file(text: str, source: str, rubric: Rubric | None = None) -> tuple[list[Scenario], list[str]]:
    """Scenarios of one file and every problem found in it (each prefixed with `source`)."""
    scenarios, problems, _ = _parse_file(text, source, rubric or default_rubric())
    return scenarios, problems


def _parse_file(text: str, source: str, rubric: Rubric) -> tuple[list[Scenario], list[str], list[str]]:
    """Valid scenarios, every problem, and every id written (valid scenario or not, for duplicates).

    A file with an unknown family still has its scenarios checked (against the rules every
    family shares), so one pass shows every mistake.
    """
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as error:
        return [], [f"{source}: {describe_yaml_error(error)}"], []
    if not isinstance(data, dict):
        return [], [f"{source}: expected a mapping with 'family' and 'scenarios' at the top level"], []
    problems: list[str] = []
    for key in sorted(set(map(str, data)) - set(_TOP_LEVEL_KEYS)):
        problems.append(f"{source}: {key}: unknown top-level key{did_you_mean(key, _TOP_LEVEL_KEYS)}")
    family = data.get("family")
    family_known = family in FAMILIES and family != PERSONAS_FAMILY
    if family == PERSONAS_FAMILY:
        problems.append(f"{source}: family: personas are not scripted scenarios; they live in "
                        f"scenarios/{PERSONAS_SUBDIR}/, one persona per file")
    elif not family_known:
        problems.append(f"{source}: family: {family!r} is not a known family ({', '.join(FAMILIES)})")
    raw_scenarios = data.get("scenarios")
    if not isinstance(raw_scenarios, list) or not raw_scenarios:
        return [], problems + [f"{source}: scenarios: expected a non-empty list of scenarios"], []
    written_ids = [raw["id"] for raw in raw_scenarios
                   if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"].strip()]

    scenarios: list[Scenario] = []
    for index, raw in enumerate(raw_scenarios):
        label = _scenario_label(raw, index)
        if not isinstance(raw, dict):
            problems.append(f"{source}: {label}: expected a mapping of fields")
            continue
        own: list[str] = []
        if family_known and "family" in raw and raw["family"] != family:
            own.append(f"family: {raw['family']!r} differs from the file's family {family!r}")
        # With the file's family unknown, "basic" stands in: the rules every family shares still apply.
        scenario, field_problems = _field_problems(raw, family if family_known else "basic")
        own += field_problems + _unknown_lexicons(raw, rubric) + _unknown_flags(raw, rubric)
        problems += [f"{source}: {label}: {problem}" for problem in own]
        if scenario is not None and not own and family_known:
            scenarios.append(scenario)
    return scenarios, problems, written_ids


def scenario_files(directory: Path) -> list[Path]:
    return sorted(path for path in directory.glob("*.yaml") if path.is_file())


def load_scenarios(directory: Path | None = None, rubric: Rubric | None = None) -> ScenarioSet:
    """Every scenario under `directory`; raises ScenarioError listing every problem found."""
    directory = Path(directory) if directory is not None else DEFAULT_SCENARIOS_DIR
    files = scenario_files(directory) if directory.is_dir() else []
    if not files:
        raise ScenarioError([f"{display_path(directory)}: no scenario files (*.yaml) found"])
    rubric = rubric or default_rubric()
    problems: list[str] = []
    loaded: list[Scenario] = []
    origin: dict[str, Path] = {}
    seen: dict[str, Path] = {}  # every id written, valid or not -> its first file
    for path in files:
        source = display_path(path)
        try:
            text = read_data_file(path)
        except ValueError as error:
            problems.append(str(error))
            continue
        scenarios, file_problems, written_ids = _parse_file(text, source, rubric)
        problems += file_problems
        # Ids are compared as written, valid scenario or not: a duplicate is named in the same pass.
        for scenario_id in written_ids:
            if scenario_id in seen:
                where = "earlier in this file" if seen[scenario_id] == path else f"in {display_path(seen[scenario_id])}"
                problems.append(f"{source}: scenario {scenario_id!r}: id: duplicate id, already defined {where}")
            seen.setdefault(scenario_id, path)
        for scenario in scenarios:
            if scenario.id not in origin:  # a later duplicate is reported above
                origin[scenario.id] = path
                loaded.append(scenario)
    problems += _check_variants(loaded, origin)
    if problems:
        raise ScenarioError(problems)
    return ScenarioSet(tuple(loaded), origin)


def _check_variants(scenarios: list[Scenario], origin: dict[str, Path]) -> list[str]:
    """Matched demographic variants must cover distinct groups of one situation."""
    groups: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        if scenario.variant_of:
            groups.setdefault(scenario.variant_of, []).append(scenario)
    problems = []
    for situation, members in groups.items():
        seen: dict[str, str] = {}
        for member in members:
            group = member.profile.demographic_group
            if group in seen:
                problems.append(f"{display_path(origin[member.id])}: scenario {member.id!r}: profile: "
                                f"variant of {situation!r} repeats group {group!r} (also {seen[group]!r})")
            seen[group] = member.id
        if len(members) < 2:
            problems.append(f"{display_path(origin[members[0].id])}: scenario {members[0].id!r}: variant_of: "
                            f"{situation!r} has only one variant; matched variants need two or more")
    return problems
