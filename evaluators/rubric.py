"""The rubric file, loaded and validated into typed models.

Everything that scores reads the rubric from here, so a broken rubric must fail loudly on
load, with the key that is wrong, rather than skew scores silently later.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evaluators.locations import short_hash
from evaluators.yaml_io import parse_yaml

DEFAULT_RUBRIC_PATH = Path(__file__).with_name("rubric.yaml")

METRIC_NAMES: tuple[str, ...] = (
    "appropriateness",
    "conversational_quality",
    "helpfulness",
    "emotional_intelligence",
    "personalization_continuity",
    "trust_boundaries",
)
OVERALL = "overall_quality"
# The scenario families; the judge has guidance for each (models.FAMILIES is this tuple).
SCENARIO_FAMILIES: tuple[str, ...] = (
    "basic", "emotional_support", "small_talk", "trust_building", "continuity", "demographics",
)
ANCHOR_BANDS: tuple[str, ...] = ("excellent", "good", "adequate", "poor", "unacceptable")
VERDICTS: tuple[str, ...] = ("poor", "acceptable", "good")  # the judge's three points, low to high
# The hard criteria that have a check in evaluators.hard_criteria; the rubric names which apply.
HARD_CRITERIA_CHECKS: tuple[str, ...] = ("no_disqualifier", "voice_ready", "crisis_gets_help")
# The crisis rules the safety detectors implement (evaluators/heuristics/safety.py).
CRISIS_RISK_KINDS: tuple[str, ...] = ("passive_wish", "method", "plan", "self_harm", "hopelessness", "burden")
CRISIS_COMPONENTS: tuple[str, ...] = (
    "acknowledges", "concrete_resource", "attends_to_safety", "no_method_information", "no_dismissal",
)
SAFETY_WORD_SETS: tuple[str, ...] = (
    "desire", "living", "dying", "harm_verbs", "method_words", "lethal_means", "means_restriction",
    "human_identity", "ai_identity", "kin", "body", "bodily_verbs", "bodily_states", "travel_verbs", "places",
    "jobs", "companion_roles", "life_stages", "work_life", "hypothetical", "harm_outcomes", "dose_verbs", "drugs", "violence",
)


class RubricError(ValueError):
    """The rubric file is missing, malformed or inconsistent; the message names the key."""


class _Strict(BaseModel):
    # strict: a YAML `yes` must not pass for a weight of 1.0, nor a number for a name.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Dimension(_Strict):
    title: str
    weight: float = Field(ge=0.0, le=1.0)
    definition: str
    anchors: dict[str, str]
    positive_indicators: list[str] = Field(min_length=1)
    negative_indicators: list[str] = Field(min_length=1)
    base: float = Field(ge=0.0, le=1.0)
    signals: dict[str, float]

    @field_validator("anchors")
    @classmethod
    def _all_bands_present(cls, anchors: dict[str, str]) -> dict[str, str]:
        missing = [band for band in ANCHOR_BANDS if not anchors.get(band, "").strip()]
        if missing:
            raise ValueError(f"missing anchor(s): {', '.join(missing)}")
        unknown = sorted(set(anchors) - set(ANCHOR_BANDS))
        if unknown:
            raise ValueError(f"unknown anchor band(s): {', '.join(unknown)}")
        return anchors

    @field_validator("signals")
    @classmethod
    def _weights_in_range(cls, signals: dict[str, float]) -> dict[str, float]:
        for name, weight in signals.items():
            if not -1.0 <= weight <= 1.0:
                raise ValueError(f"signal {name!r} weight {weight} outside [-1, 1]")
        return signals


class Disqualifier(_Strict):
    description: str
    cap: float = Field(ge=0.0, le=1.0)
    caps: list[str] = Field(min_length=1)


class Lexicon(_Strict):
    kind: Literal["phrase", "term"]
    description: str
    applies_to: list[Literal["reply", "user"]] = Field(default=["reply"], min_length=1)
    entries: list[str] = Field(min_length=1)

    @field_validator("entries")
    @classmethod
    def _entries_not_blank(cls, entries: list) -> list[str]:
        cleaned = [str(entry).strip() for entry in entries]
        if any(not entry for entry in cleaned):
            raise ValueError("blank entry")
        return cleaned


class Range(_Strict):
    min: float
    max: float


class VoiceRules(_Strict):
    ideal_words: Range
    long_words: int = Field(gt=0)
    speaking_rate_wps: float = Field(gt=0)
    max_speaking_seconds: float = Field(gt=0)
    max_syllables_per_word: float = Field(gt=0)
    min_reading_ease: float
    max_line_breaks: int = Field(ge=0)


class HardCriterion(_Strict):
    description: str


class QualityLevel(_Strict):
    name: str
    min: float = Field(ge=0.0, le=1.0)


class CompositeWeights(_Strict):
    quality_weight: float = Field(ge=0.0, le=1.0)
    hard_criteria_weight: float = Field(ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sum_to_one(self) -> CompositeWeights:
        total = self.quality_weight + self.hard_criteria_weight
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"quality_weight + hard_criteria_weight must be 1.0, they sum to {total:.4f}")
        return self


class BootstrapSettings(_Strict):
    resamples: int = Field(ge=100, le=1_000_000)
    confidence: float = Field(gt=0.5, lt=1.0)
    seed: int = Field(ge=0)
    min_pairs: int = Field(ge=2)  # fewer paired scenarios than this: no difference counts as significant


class FairnessSettings(_Strict):
    group_by: Literal["age_group", "demographic_group"]
    max_gap: float = Field(ge=0.0, le=1.0)
    min_cases: int = Field(ge=1)


AVERAGE_SOURCES: tuple[str, ...] = ("heuristic", "judge", "blend")
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"  # a prompt label `decide --apply` may set


class DecisionThresholds(_Strict):
    deploy_min_average: float = Field(ge=0.0, le=1.0)
    ab_test_min_average: float = Field(ge=0.0, le=1.0)
    revise_below_average: float = Field(ge=0.0, le=1.0)
    min_metric_mean: float = Field(ge=0.0, le=1.0)
    average_of: Literal[AVERAGE_SOURCES]
    judge_weight: float = Field(ge=0.0, le=1.0)
    composite: CompositeWeights
    bootstrap: BootstrapSettings
    regression_guard: Literal[METRIC_NAMES]
    fairness: FairnessSettings
    ab_label: str = Field(pattern=LABEL_PATTERN)


class JudgeSampling(_Strict):
    calibration_uses: int = Field(ge=0)
    established_max_uses: int = Field(ge=0)
    established_rate: float = Field(ge=0.10, le=0.20)
    trusted_min_share: float = Field(gt=0.0, lt=1.0)
    trigger_metric_below: float = Field(ge=0.0, le=1.0)


class JudgeRubric(_Strict):
    """What the LLM judge is told, and the thresholds its results are read with."""

    role: str = Field(min_length=1)
    special_considerations: list[str] = Field(min_length=1)
    family_guidance: dict[str, str]
    verdicts: dict[str, str]
    failure_modes: dict[str, str] = Field(min_length=1)
    verdict_bands: dict[str, float]
    score_step: float = Field(gt=0.0, le=0.5)
    fallback_score: float = Field(ge=0.0, le=1.0)
    fallback_warn_share: float = Field(ge=0.0, le=1.0)
    unstable_spread: float = Field(ge=0.0, le=1.0)
    disagreement: float = Field(ge=0.0, le=1.0)
    sampling: JudgeSampling

    @field_validator("verdicts")
    @classmethod
    def _three_verdicts(cls, verdicts: dict[str, str]) -> dict[str, str]:
        if set(verdicts) != set(VERDICTS):
            raise ValueError(f"expected exactly {', '.join(VERDICTS)}")
        return verdicts

    @field_validator("verdict_bands")
    @classmethod
    def _bands(cls, bands: dict[str, float]) -> dict[str, float]:
        if set(bands) != {"good", "acceptable"}:
            raise ValueError("expected good and acceptable (poor is everything below acceptable)")
        if not 0.0 < bands["acceptable"] < bands["good"] <= 1.0:
            raise ValueError("need 0 < acceptable < good <= 1")
        return bands

    def score_grid(self) -> list[float]:
        """The scores a judge may give: 0.0 to 1.0 in steps of score_step."""
        steps = round(1.0 / self.score_step)
        return [round(index / steps, 4) for index in range(steps + 1)]



class RiskKind(_Strict):
    description: str
    lexicons: list[str] = Field(min_length=1)


class CrisisComponent(_Strict):
    description: str
    essential: bool
    lexicons: list[str]


class WordSet(_Strict):
    description: str
    words: list[str] = Field(min_length=1)


class SafetyRules(_Strict):
    """What the parse-based safety detectors read: crisis risk kinds and reply components,
    a dose pattern and the word sets their dependency rules look for."""

    crisis_risk: dict[str, RiskKind]
    crisis_components: dict[str, CrisisComponent]
    dose_pattern: str
    phone_pattern: str
    word_sets: dict[str, WordSet]

    def words(self, name: str) -> frozenset[str]:
        return frozenset(word.lower() for word in self.word_sets[name].words)


class Overall(_Strict):
    title: str
    definition: str


class Rubric(_Strict):
    name: str
    version: str
    scale: Range
    dimensions: dict[str, Dimension]
    overall: Overall
    disqualifiers: dict[str, Disqualifier]
    lexicons: dict[str, Lexicon]
    safety: SafetyRules
    patterns: dict[str, str]
    voice: VoiceRules
    hard_criteria: dict[str, HardCriterion]
    quality_levels: list[QualityLevel] = Field(min_length=1)
    decision: DecisionThresholds
    judge: JudgeRubric
    content_hash: str = ""

    @property
    def weights(self) -> dict[str, float]:
        return {name: dimension.weight for name, dimension in self.dimensions.items()}

    def compiled_patterns(self) -> dict[str, re.Pattern[str]]:
        return {name: re.compile(pattern) for name, pattern in self.patterns.items()}

    def quality_level(self, score: float) -> str:
        """Name of the half-open band [min, next min) that holds ``score``.

        Rounded first, so a weighted sum that is a boundary in exact arithmetic
        (0.29999999999999993) lands in the band it belongs to.
        """
        score = round(score, 9)
        for level in sorted(self.quality_levels, key=lambda level: level.min, reverse=True):
            if score >= level.min:
                return level.name
        return self.quality_levels[-1].name


def _location(error: dict) -> str:
    return ".".join(str(part) for part in error["loc"])


def _check_safety(rubric: Rubric) -> None:
    """The safety rules name lexicons, components and word sets the detectors know."""
    safety = rubric.safety
    for section, entries in (("crisis_risk", safety.crisis_risk), ("crisis_components", safety.crisis_components)):
        for name, entry in entries.items():
            for lexicon in entry.lexicons:
                if lexicon not in rubric.lexicons:
                    raise RubricError(f"safety.{section}.{name}.lexicons: unknown lexicon {lexicon!r}")
    if set(safety.crisis_components) != set(CRISIS_COMPONENTS):
        raise RubricError(f"safety.crisis_components: expected {list(CRISIS_COMPONENTS)}")
    if set(safety.crisis_risk) != set(CRISIS_RISK_KINDS):
        raise RubricError(f"safety.crisis_risk: expected {list(CRISIS_RISK_KINDS)}")
    missing = sorted(set(SAFETY_WORD_SETS) - set(safety.word_sets))
    if missing:
        raise RubricError(f"safety.word_sets: missing {missing}")
    for name in ("dose_pattern", "phone_pattern"):
        try:
            re.compile(getattr(safety, name))
        except re.error as error:
            raise RubricError(f"safety.{name}: does not compile: {error}") from None


def _check_consistency(rubric: Rubric) -> None:
    """Cross-field rules pydantic cannot express one field at a time."""
    names = tuple(rubric.dimensions)
    if set(names) != set(METRIC_NAMES):
        missing = sorted(set(METRIC_NAMES) - set(names))
        extra = sorted(set(names) - set(METRIC_NAMES))
        raise RubricError(f"dimensions: expected {list(METRIC_NAMES)}; missing {missing}, unknown {extra}")
    total = sum(rubric.weights.values())
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise RubricError(f"dimensions.*.weight: weights must sum to 1.0, they sum to {total:.4f}")
    for name, pattern in rubric.patterns.items():
        try:
            re.compile(pattern)
        except re.error as error:
            raise RubricError(f"patterns.{name}: does not compile: {error}") from None
    for name, disqualifier in rubric.disqualifiers.items():
        for metric in disqualifier.caps:
            if metric not in rubric.dimensions:
                raise RubricError(f"disqualifiers.{name}.caps: unknown dimension {metric!r}")
    _check_safety(rubric)
    unknown_criteria = sorted(set(rubric.hard_criteria) - set(HARD_CRITERIA_CHECKS))
    if unknown_criteria:
        raise RubricError(f"hard_criteria: no check for {unknown_criteria}; known: {list(HARD_CRITERIA_CHECKS)}")
    names = [level.name for level in rubric.quality_levels]
    if len(set(names)) != len(names):
        raise RubricError("quality_levels: level names must be unique")
    if rubric.scale.min >= rubric.scale.max:
        raise RubricError("scale: min must be below max")
    levels = [level.min for level in rubric.quality_levels]
    if levels != sorted(levels, reverse=True) or levels[-1] != 0.0:
        raise RubricError("quality_levels: list bands from highest min to lowest, ending at 0.0")
    decision = rubric.decision
    if decision.ab_test_min_average > decision.deploy_min_average:
        raise RubricError("decision.ab_test_min_average: must not exceed deploy_min_average")
    judge = rubric.judge
    unknown_families = sorted(set(judge.family_guidance) - set(SCENARIO_FAMILIES))
    missing_families = sorted(set(SCENARIO_FAMILIES) - set(judge.family_guidance))
    if unknown_families or missing_families:
        raise RubricError(f"judge.family_guidance: missing {missing_families}, unknown {unknown_families}")
    if not math.isclose(1.0 / judge.score_step, round(1.0 / judge.score_step), abs_tol=1e-9):
        raise RubricError("judge.score_step: must divide 1.0 evenly (0.1, 0.05, 0.25, ...)")
    if judge.sampling.established_max_uses < judge.sampling.calibration_uses:
        raise RubricError("judge.sampling.established_max_uses: must not be below calibration_uses")
    if decision.revise_below_average > decision.deploy_min_average:
        raise RubricError("decision.revise_below_average: must not exceed deploy_min_average")


def parse_rubric(text: str, source: str = "<rubric>") -> Rubric:
    """Validate rubric YAML text; errors name the source and the offending key."""
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as error:
        raise RubricError(f"{source}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise RubricError(f"{source}: expected a mapping at the top level")
    if "content_hash" in data:
        raise RubricError(f"{source}: content_hash: computed on load, not set in the file")
    try:
        rubric = Rubric.model_validate(data)
    except ValidationError as error:
        details = "; ".join(f"{_location(item)}: {item['msg']}" for item in error.errors())
        raise RubricError(f"{source}: {details}") from None
    try:
        _check_consistency(rubric)
    except RubricError as error:
        raise RubricError(f"{source}: {error}") from None
    return rubric.model_copy(update={"content_hash": short_hash(text)})


def load_rubric(path: Path | str | None = None) -> Rubric:
    """Load the rubric file (the packaged one by default)."""
    path = Path(path) if path is not None else DEFAULT_RUBRIC_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise RubricError(f"{path}: cannot read rubric: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise RubricError(f"{path}: not UTF-8 text: {error.reason} at byte {error.start}") from None
    return parse_rubric(text, source=str(path))


@lru_cache(maxsize=1)
def default_rubric() -> Rubric:
    """The packaged rubric, parsed once per process and shared: treat it as read-only."""
    return load_rubric(DEFAULT_RUBRIC_PATH)
