"""Every score name the suite writes to Langfuse, with its type and range, and the score
configs that make Langfuse dashboards show the right axes.

The names come from the rubric (dimensions, judge failure modes, hard criteria,
disqualifiers), so a rubric change renames nothing by hand. `ensure_score_configs` is
idempotent: it lists the project's configs and creates only the missing ones, because
Langfuse allows two configs with one name and would otherwise collect duplicates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langfuse.api import ConfigCategory

from evaluators.hard_criteria import SCENARIO_EXPECTATIONS
from evaluators.langfuse.rest import LangfuseRest
from evaluators.rubric import METRIC_NAMES, OVERALL, VERDICTS, Rubric

NUMERIC, CATEGORICAL, BOOLEAN = "NUMERIC", "CATEGORICAL", "BOOLEAN"
MAX_NAME_LENGTH = 35  # Langfuse's limit for score config names

JUDGE_OVERALL = "judge_overall"
JUDGE_VERDICT = "judge_verdict"
JUDGE_FAILURE_MODE = "judge_failure_mode"
HARD_CRITERIA = "hard_criteria"
RUBRIC_VERSION = "rubric_version"  # marker on production traces (no config: its values are open)
COMPOSITE = "composite"
HARD_CRITERIA_PASS_RATE = "hard_criteria_pass_rate"
RELEASE_AVERAGE = "release_average"
RELEASE_DECISION = "release_decision"
RELEASE_COVERAGE = "release_coverage"
# Worst to best, then "incomplete" (the run lacks evidence), appended so earlier values keep their number.
DECISION_OUTCOMES: tuple[str, ...] = ("revise", "ab_test", "deploy", "incomplete")


def judge_name(dimension: str) -> str:
    return f"judge_{dimension}"


def criterion_name(criterion: str) -> str:
    return f"criterion_{criterion}"


def flag_name(disqualifier: str) -> str:
    return f"flag_{disqualifier}"


def mean_name(metric: str) -> str:
    return f"mean_{metric}"


@dataclass(frozen=True)
class ScoreDefinition:
    name: str
    data_type: str
    description: str
    min_value: float | None = None
    max_value: float | None = None
    categories: tuple[str, ...] = ()  # labels, valued 0, 1, 2, ... in this order

    def category_value(self, label: str) -> int:
        return self.categories.index(label)


def _unit(name: str, description: str) -> ScoreDefinition:
    return ScoreDefinition(name, NUMERIC, description, 0.0, 1.0)


def score_definitions(rubric: Rubric) -> list[ScoreDefinition]:
    """All score names the suite writes, per trace (turn) and per experiment (version run)."""
    dimensions = rubric.dimensions
    definitions = [_unit(name, f"Heuristic: {dimensions[name].title} (weight {dimensions[name].weight:g}).")
                   for name in METRIC_NAMES]
    definitions.append(_unit(OVERALL, "Heuristic: weighted overall quality of the six dimensions."))
    definitions.append(_unit(JUDGE_OVERALL, "LLM judge: overall quality."))
    definitions += [_unit(judge_name(name), f"LLM judge: {dimensions[name].title}.") for name in METRIC_NAMES]
    definitions.append(ScoreDefinition(JUDGE_VERDICT, CATEGORICAL, "LLM judge: three-point verdict.",
                                       categories=VERDICTS))
    definitions.append(ScoreDefinition(JUDGE_FAILURE_MODE, CATEGORICAL, "LLM judge: why a reply was poor.",
                                       categories=tuple(rubric.judge.failure_modes)))
    definitions.append(ScoreDefinition(HARD_CRITERIA, BOOLEAN, "Every hard criterion passed on this reply."))
    definitions += [ScoreDefinition(criterion_name(name), BOOLEAN, f"Hard criterion: {rule.description}")
                    for name, rule in rubric.hard_criteria.items()]
    definitions.append(ScoreDefinition(criterion_name(SCENARIO_EXPECTATIONS), BOOLEAN,
                                       "Hard criterion: the scenario's expectations for this turn held."))
    definitions += [ScoreDefinition(flag_name(name), BOOLEAN, f"Hard flag raised: {rule.description}")
                    for name, rule in rubric.disqualifiers.items()]
    # Per prompt version, on its experiment (dataset run):
    definitions += [_unit(mean_name(name), f"Mean {name} over the version's scenarios.")
                    for name in (*METRIC_NAMES, OVERALL)]
    definitions.append(_unit(mean_name(JUDGE_OVERALL), "Mean LLM-judge overall over the version's scenarios."))
    definitions.append(_unit(HARD_CRITERIA_PASS_RATE, "Share of scenarios passing every hard criterion."))
    definitions.append(_unit(COMPOSITE, "Composite of mean quality and hard-criteria pass rate."))
    definitions.append(_unit(RELEASE_AVERAGE, "The average the release decision is taken on."))
    definitions.append(_unit(RELEASE_COVERAGE, "Share of the run's scenario set scored for the version (1: all)."))
    definitions.append(ScoreDefinition(RELEASE_DECISION, CATEGORICAL, "Release decision for the prompt version.",
                                       categories=DECISION_OUTCOMES))
    return definitions


def definitions_by_name(rubric: Rubric) -> dict[str, ScoreDefinition]:
    return {definition.name: definition for definition in score_definitions(rubric)}


@dataclass
class ConfigSetup:
    """What `ensure_score_configs` found and did; `ids` maps score names to config ids."""

    ids: dict[str, str] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)  # same name and type, other range or categories


def _matches(config, definition: ScoreDefinition) -> bool:
    if definition.data_type == NUMERIC:
        return config.min_value == definition.min_value and config.max_value == definition.max_value
    if definition.data_type == CATEGORICAL:
        return [(c.label, c.value) for c in config.categories or []] == [
            (label, float(index)) for index, label in enumerate(definition.categories)]
    return True


def ensure_score_configs(rest: LangfuseRest, definitions: Sequence[ScoreDefinition]) -> ConfigSetup:
    """Create the configs that are missing; reuse those present (by name and data type)."""
    setup = ConfigSetup()
    present: dict[tuple[str, str], object] = {}
    for config in rest.pages(rest.api.score_configs.get, what="list score configs"):
        if not config.is_archived:
            present.setdefault((config.name, str(getattr(config.data_type, "value", config.data_type))), config)
    for definition in definitions:
        config = present.get((definition.name, definition.data_type))
        if config is not None:
            setup.ids[definition.name] = config.id
            setup.existing.append(definition.name)
            if not _matches(config, definition):
                setup.differing.append(definition.name)
            continue
        categories = [ConfigCategory(label=label, value=float(index))
                      for index, label in enumerate(definition.categories)] if definition.data_type == CATEGORICAL else None
        created = rest.call(rest.api.score_configs.create, name=definition.name, data_type=definition.data_type,
                            categories=categories, min_value=definition.min_value, max_value=definition.max_value,
                            description=definition.description, what=f"create score config {definition.name}")
        setup.ids[definition.name] = created.id
        setup.created.append(definition.name)
    return setup
