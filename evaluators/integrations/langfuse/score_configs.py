"""Every score name the suite writes to Langfuse, with its type and range, and the score
configs that make Langfuse dashboards show the right axes.

The names come from the rubric (dimensions, judge failure modes, hard criteria,
disqualifiers), so a rubric change renames nothing by hand. `ensure_score_configs` is
idempotent: it lists the project's configs and creates only the missing ones, because
Langfuse allows two configs with one name and would otherwise collect duplicates.

The server checks a new config with a strict schema per data type (zod, in
web/src/features/public-api/types/score-configs.ts): a BOOLEAN config must not carry
`categories` at all, not even null, and a CATEGORICAL one no range. So each config is sent
with only the fields of its type (`config_fields`), and one refused config is reported
without stopping the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langfuse.api import ConfigCategory

from evaluators.core.failures import FailureKind
from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.integrations.langfuse.rest import LangfuseCallFailed, LangfuseRest
from evaluators.integrations.langfuse.settings import LangfuseConfigError
from evaluators.release.counts import COUNT_LEGENDS
from evaluators.release.hard_criteria import SCENARIO_ASSERTIONS, SCENARIO_EXPECTATIONS
from evaluators.rubric.loader import VERDICTS, Rubric

NUMERIC, CATEGORICAL, BOOLEAN = "NUMERIC", "CATEGORICAL", "BOOLEAN"
# Langfuse's limit for score config names: the create body takes any length, an update at most
# 35 (web/src/features/public-api/types/score-configs.ts), so a longer name could never be fixed
# in place. The suite keeps every name within it.
MAX_NAME_LENGTH = 35

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
PAIRWISE_WIN_RATE = "pairwise_win_rate"  # against the baseline, by the pairwise judge (when the run has it)
PAIRWISE_POSITION_BIAS = "pairwise_position_bias"
# The version's safety evidence (evaluators.release.safety_evidence): what the gate counts.
SAFETY_UNVERIFIED = "safety_unverified"
SAFETY_VERIFIED_SHARE = "safety_verified_share"
# Category values are the positions, so a new outcome goes at the end: existing configs keep
# their values. "incomplete": a version whose run did not cover enough to decide.
DECISION_OUTCOMES: tuple[str, ...] = ("revise", "ab_test", "deploy", "incomplete")
# On the session (one scenario conversation): what only the whole conversation shows.
CONVERSATION_TRUST_BOUNDARIES = "conversation_trust_boundaries"
CONVERSATION_CONTINUITY = "conversation_continuity"
CONVERSATION_OVERALL_QUALITY = "conversation_overall_quality"
CONVERSATION_HARD_CRITERIA = "conversation_hard_criteria"
# On the session of a simulated conversation (a persona played over many turns).
CONVERSATION_TRUST_EROSION = "conversation_trust_erosion"
CONVERSATION_HARD_FLAG = "conversation_hard_flag"
CONVERSATION_DEPENDENCY = "conversation_dependency_rate"
CONVERSATION_MEMORY = "conversation_memory_fidelity"
CONVERSATION_CONTRADICTIONS = "conversation_contradictions"
CONVERSATION_JUDGE_OVERALL = "conversation_judge_overall"
CONVERSATION_JUDGE_VERDICT = "conversation_judge_verdict"
# On the session: one categorical score per kind of failure the case carries (core.failures).
FAILURE_KIND = "failure_kind"
# Queue configs: what a reviewer scores in the annotation queue.
REVIEW_CONFIGS: tuple[str, ...] = (OVERALL, JUDGE_OVERALL, JUDGE_VERDICT, HARD_CRITERIA)


SAFETY_JUDGE_FLAGGED = "safety_judge_flagged"


def safety_name(question: str) -> str:
    """The score of one safety question's answer (`safety_harmful_advice`: 1 for yes)."""
    return f"safety_{question}"


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


class ScoreNameError(LangfuseConfigError):
    """A rubric key makes a score name longer than Langfuse's config names take."""


def score_name_problems(rubric: Rubric) -> list[str]:
    """One line per rubric key whose score name would exceed MAX_NAME_LENGTH, naming the key."""
    keyed = [(f"disqualifiers.{key}", flag_name(key)) for key in rubric.disqualifiers]
    keyed += [(f"hard_criteria.{key}", criterion_name(key)) for key in rubric.hard_criteria]
    return [f"rubric {key}: its Langfuse score {name!r} has {len(name)} characters; score config names take at "
            f"most {MAX_NAME_LENGTH}, so shorten the key by {len(name) - MAX_NAME_LENGTH}"
            for key, name in keyed if len(name) > MAX_NAME_LENGTH]


def score_definitions(rubric: Rubric) -> list[ScoreDefinition]:
    """All score names the suite writes, per trace (turn) and per experiment (version run).

    Raises ScoreNameError (naming every rubric key at fault) when a name would be too long."""
    problems = score_name_problems(rubric)
    if problems:
        raise ScoreNameError("; ".join(problems))
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
    definitions += [ScoreDefinition(safety_name(name), BOOLEAN, f"Safety judge, 1 for yes: {question}")
                    for name, question in rubric.judge.safety.questions.items()]
    definitions.append(ScoreDefinition(SAFETY_JUDGE_FLAGGED, BOOLEAN, "Safety judge: some answer flags this reply "
                                       "(the rubric's judge.safety rule; the comment names them)."))
    definitions.append(ScoreDefinition(HARD_CRITERIA, BOOLEAN, "Every hard criterion passed on this reply."))
    definitions += [ScoreDefinition(criterion_name(name), BOOLEAN, f"Hard criterion: {rule.description}")
                    for name, rule in rubric.hard_criteria.items()]
    definitions.append(ScoreDefinition(criterion_name(SCENARIO_EXPECTATIONS), BOOLEAN,
                                       "Hard criterion: the scenario's expectations for this turn held."))
    definitions.append(ScoreDefinition(criterion_name(SCENARIO_ASSERTIONS), BOOLEAN,
                                       "Hard criterion: no assertion the scenario declares for this turn failed."))
    definitions += [ScoreDefinition(flag_name(name), BOOLEAN, f"Hard flag raised: {rule.description}")
                    for name, rule in rubric.disqualifiers.items()]
    # Per scenario conversation, on its session:
    definitions.append(_unit(CONVERSATION_TRUST_BOUNDARIES, "Worst turn's trust & boundaries in the conversation."))
    definitions.append(_unit(CONVERSATION_CONTINUITY, "Mean personalization & continuity of the turns after the "
                                                      "first: how well the companion carried the conversation."))
    definitions.append(_unit(CONVERSATION_OVERALL_QUALITY, "Mean overall quality over the conversation's turns."))
    definitions.append(ScoreDefinition(CONVERSATION_HARD_CRITERIA, BOOLEAN,
                                       "Every turn of the conversation passed every hard criterion."))
    # Per simulated conversation, on its session:
    definitions.append(ScoreDefinition(CONVERSATION_TRUST_EROSION, NUMERIC, "Fall of trust & boundaries per turn "
                                       "(minus the least-squares slope); above 0 the boundaries erode.", -1.0, 1.0))
    definitions.append(ScoreDefinition(CONVERSATION_HARD_FLAG, BOOLEAN,
                                       "A hard flag fired on some turn of the simulated conversation."))
    definitions.append(_unit(CONVERSATION_DEPENDENCY, "Share of replies that make the companion the user's main "
                                                      "support."))
    definitions.append(_unit(CONVERSATION_MEMORY, "Persona facts recalled over recalled, got wrong and invented."))
    topics = 1 + len(rubric.conversation.contradictions)  # its name, and each statement: one contradiction each
    definitions.append(ScoreDefinition(CONVERSATION_CONTRADICTIONS, NUMERIC,
                                       "Contradictions of the companion's own earlier statements.", 0.0, float(topics)))
    definitions.append(_unit(CONVERSATION_JUDGE_OVERALL, "LLM judge: the whole conversation, read once."))
    definitions.append(ScoreDefinition(CONVERSATION_JUDGE_VERDICT, CATEGORICAL,
                                       "LLM judge: verdict on the whole conversation.", categories=VERDICTS))
    definitions.append(ScoreDefinition(FAILURE_KIND, CATEGORICAL, "Why the conversation failed, one score per kind "
                                       "(the comment gives the rules and reasons).",
                                       categories=tuple(kind.value for kind in FailureKind)))
    # Per prompt version, on its experiment (dataset run):
    definitions += [_unit(mean_name(name), f"Mean {name} over the version's scenarios.")
                    for name in (*METRIC_NAMES, OVERALL)]
    definitions.append(_unit(mean_name(JUDGE_OVERALL), "Mean LLM-judge overall over the version's scenarios."))
    definitions.append(_unit(HARD_CRITERIA_PASS_RATE, "Share of scored cases passing every hard criterion."))
    # The release counts (evaluators.release.counts), each named for what it counts, as the
    # terminal, --json and the report show them; the comment gives the denominator.
    definitions += [ScoreDefinition(name, NUMERIC, f"Count of {legend}.", 0.0)
                    for name, legend in COUNT_LEGENDS.items()]
    definitions.append(_unit(COMPOSITE, "Composite of mean quality and hard-criteria pass rate."))
    definitions.append(_unit(RELEASE_AVERAGE, "The average the release decision is taken on."))
    definitions.append(_unit(RELEASE_COVERAGE, "Share of the run's scenario set scored for the version (1: all)."))
    definitions.append(_unit(PAIRWISE_WIN_RATE, "Pairwise judge: the version's win rate against its baseline over "
                                                "scenarios, ties half (the comment gives the interval)."))
    definitions.append(_unit(PAIRWISE_POSITION_BIAS, "Pairwise judge: share of comparisons whose verdict changed "
                                                     "with the order of the two replies."))
    definitions.append(ScoreDefinition(SAFETY_UNVERIFIED, NUMERIC, "Count of the version's safety-relevant replies "
                                       "that neither an admitted judge nor a detector verified (the comment gives "
                                       "why, and the command that verifies them).", 0.0))
    definitions.append(_unit(SAFETY_VERIFIED_SHARE, "Share of the version's safety-relevant replies verified by an "
                                                    "admitted judge or a detector (1: the gate has its evidence)."))
    definitions.append(ScoreDefinition(RELEASE_DECISION, CATEGORICAL, "Release decision for the prompt version.",
                                       categories=DECISION_OUTCOMES))
    return definitions


def definitions_by_name(rubric: Rubric) -> dict[str, ScoreDefinition]:
    return {definition.name: definition for definition in score_definitions(rubric)}


@dataclass
class ConfigSetup:
    """What `ensure_score_configs` found and did; `ids` maps score names to config ids and
    `configs` to the config as the server holds it (what local validation checks against)."""

    ids: dict[str, str] = field(default_factory=dict)
    configs: dict[str, Any] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)  # same name and type, other range or categories
    failed: dict[str, str] = field(default_factory=dict)  # name -> why the server refused to create it

    def problems(self) -> list[str]:
        """One line per config the server refused (their scores go without a configId)."""
        return [f"score config {name} not created: {reason}" for name, reason in self.failed.items()]


def config_fields(definition: ScoreDefinition) -> dict[str, Any]:
    """The create-config arguments for this data type and no others (the server's schema is
    strict: BOOLEAN takes no categories, even null; CATEGORICAL no range; NUMERIC no categories)."""
    fields: dict[str, Any] = {"name": definition.name, "data_type": definition.data_type,
                              "description": definition.description}
    if definition.data_type == NUMERIC:
        fields.update({key: value for key, value in (("min_value", definition.min_value),
                                                      ("max_value", definition.max_value)) if value is not None})
    elif definition.data_type == CATEGORICAL:
        fields["categories"] = [ConfigCategory(label=label, value=float(index))
                                for index, label in enumerate(definition.categories)]
    return fields


def _matches(config, definition: ScoreDefinition) -> bool:
    if definition.data_type == NUMERIC:
        return config.min_value == definition.min_value and config.max_value == definition.max_value
    if definition.data_type == CATEGORICAL:
        return [(c.label, c.value) for c in config.categories or []] == [
            (label, float(index)) for index, label in enumerate(definition.categories)]
    return True


def ensure_score_configs(rest: LangfuseRest, definitions: Sequence[ScoreDefinition]) -> ConfigSetup:
    """Create the configs that are missing; reuse those present (by name and data type).

    Listing them failing raises LangfuseCallFailed (nothing is known); a config the server
    refuses is noted in `failed` and the others are still created. Once Langfuse proved
    unreachable, the rest are noted at once instead of each waiting for its retries.
    """
    setup = ConfigSetup()
    present: dict[tuple[str, str], object] = {}
    for config in rest.pages(rest.api.score_configs.get, what="list score configs"):
        if not config.is_archived:
            present.setdefault((config.name, str(getattr(config.data_type, "value", config.data_type))), config)
    for definition in definitions:
        config = present.get((definition.name, definition.data_type))
        if config is None:
            try:
                config = rest.call(rest.api.score_configs.create, **config_fields(definition),
                                   what=f"create score config {definition.name}")
            except LangfuseCallFailed as error:
                setup.failed[definition.name] = str(error).removeprefix(f"create score config {definition.name}: ")
                continue
            setup.created.append(definition.name)
        else:
            setup.existing.append(definition.name)
            if not _matches(config, definition):
                setup.differing.append(definition.name)
        setup.ids[definition.name] = config.id
        setup.configs[definition.name] = config
    return setup


def _kind(config: Any) -> str:
    return str(getattr(config.data_type, "value", config.data_type))


def score_problem(body: Mapping[str, Any], config: Any) -> str | None:
    """Why Langfuse would drop this score against its config, or None when it fits.

    The server answers 200 to such a score and its ingestion worker then drops it without a
    word (packages/shared/src/server/ingestion/validateAndInflateScore.ts), so the check has
    to happen here, before sending: data type, range, categories, archived. A score named
    otherwise than its config is not dropped but renamed to the config's name, which takes
    it out of every dashboard filtered on its own name: it is held back too.
    """
    value, kind = body.get("value"), _kind(config)
    if getattr(config, "is_archived", False):
        return f"its config {config.name} is archived"
    if config.name != body.get("name"):  # the server renames it to the config's name (validateAndInflateScore.ts)
        return f"its config is now named {config.name}: Langfuse would store the score as {config.name}"
    if body.get("dataType") not in (None, kind):
        return f"it is {body.get('dataType')} but its config is {kind}"
    if kind in (NUMERIC, BOOLEAN) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"{value!r} is not a number"
    if kind == NUMERIC:
        low, high = config.min_value, config.max_value
        if (low is not None and value < low) or (high is not None and value > high):
            return f"value {value:g} is outside the config's range [{low}, {high}]"
    elif kind == BOOLEAN and value not in (0, 1):
        return f"value {value!r} is not 0 or 1"
    elif kind == CATEGORICAL:
        labels = [category.label for category in config.categories or []]
        if value not in labels:
            return f"{value!r} is not one of the config's categories ({', '.join(labels)})"
    return None
