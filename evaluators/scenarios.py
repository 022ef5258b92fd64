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

from evaluators.locations import PROJECT_ROOT, display_path, field_path, read_data_file
from evaluators.models import FAMILIES, Scenario
from evaluators.rubric import Rubric, default_rubric
from evaluators.yaml_io import describe_yaml_error, parse_yaml

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


def _scenario_label(raw: object, index: int) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"].strip():
        return f"scenario {raw['id']!r}"
    return f"scenario #{index + 1} (no id)"


def _check_lexicon_names(scenario: Scenario, rubric: Rubric) -> list[str]:
    problems = []
    checks = [("expect", item) for item in scenario.expect] + [
        (f"turns[{number}].expect", item) for number, turn in enumerate(scenario.turns) for item in turn.expect
    ]
    for where, expectation in checks:
        if expectation.kind == "avoids":
            unknown = [name for name in expectation.value if name not in rubric.lexicons]
            if unknown:
                problems.append(f"{where}: avoids: unknown rubric lexicon(s) {', '.join(unknown)}")
    return problems


def parse_scenario_file(text: str, source: str, rubric: Rubric | None = None) -> tuple[list[Scenario], list[str]]:
    """Scenarios of one file and the problems found (each prefixed with `source`)."""
    rubric = rubric or default_rubric()
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as error:
        return [], [f"{source}: {describe_yaml_error(error)}"]
    if not isinstance(data, dict):
        return [], [f"{source}: expected a mapping with 'family' and 'scenarios' at the top level"]
    problems: list[str] = []
    unknown_keys = sorted(set(map(str, data)) - {"family", "description", "scenarios"})
    if unknown_keys:
        problems.append(f"{source}: unknown top-level key(s): {', '.join(unknown_keys)}")
    family = data.get("family")
    if family not in FAMILIES:
        problems.append(f"{source}: family: {family!r} is not a known family ({', '.join(FAMILIES)})")
        return [], problems
    raw_scenarios = data.get("scenarios")
    if not isinstance(raw_scenarios, list) or not raw_scenarios:
        return [], problems + [f"{source}: scenarios: expected a non-empty list of scenarios"]

    scenarios: list[Scenario] = []
    for index, raw in enumerate(raw_scenarios):
        label = _scenario_label(raw, index)
        if not isinstance(raw, dict):
            problems.append(f"{source}: {label}: expected a mapping of fields")
            continue
        if "family" in raw and raw["family"] != family:
            problems.append(f"{source}: {label}: family: {raw['family']!r} differs from the file's family {family!r}")
            continue
        try:
            scenario = Scenario.model_validate({**raw, "family": family})
        except ValidationError as error:
            errors = error.errors()
            for item in errors:
                if item["type"] == "too_short" and any(
                    len(other["loc"]) > len(item["loc"]) and other["loc"][: len(item["loc"])] == item["loc"]
                    for other in errors
                ):
                    continue  # a list emptied by its own invalid items: the item errors say why
                message = item["msg"].removeprefix("Value error, ")
                where = field_path(item["loc"])
                problems.append(f"{source}: {label}: {where + ': ' if where else ''}{message}")
            continue
        lexicon_problems = _check_lexicon_names(scenario, rubric)
        problems += [f"{source}: {label}: {problem}" for problem in lexicon_problems]
        if not lexicon_problems:
            scenarios.append(scenario)
    return scenarios, problems


def scenario_files(directory: Path) -> list[Path]:
    return sorted(path for path in directory.glob("*.yaml") if path.is_file())


def load_scenarios(directory: Path | None = None, rubric: Rubric | None = None) -> ScenarioSet:
    """Every scenario under `directory`; raises ScenarioError listing every problem found."""
    directory = Path(directory) if directory is not None else DEFAULT_SCENARIOS_DIR
    files = scenario_files(directory) if directory.is_dir() else []
    if not files:
        raise ScenarioError([f"{display_path(directory)}: no scenario files (*.yaml) found"])
    problems: list[str] = []
    loaded: list[Scenario] = []
    origin: dict[str, Path] = {}
    for path in files:
        source = display_path(path)
        try:
            text = read_data_file(path)
        except ValueError as error:
            problems.append(str(error))
            continue
        scenarios, file_problems = parse_scenario_file(text, source, rubric)
        problems += file_problems
        for scenario in scenarios:
            if scenario.id in origin:
                problems.append(f"{source}: scenario {scenario.id!r}: id: duplicate id, "
                                f"already defined in {display_path(origin[scenario.id])}")
                continue
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
