"""The release stage's contracts: per-version aggregates, comparisons with the baseline,
head-to-head win rates, coverage, and the decision with every rule that was checked.

Every decision a user sees carries its reasons: the rules, what was observed, and against
which threshold.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evaluators.core.names import OVERALL
from evaluators.judge.result import PairwiseComparison
from evaluators.release.counts import VersionCounts

OUTCOMES: tuple[str, ...] = ("deploy", "ab_test", "revise", "incomplete")
# What a rule means for the outcome: failing a "revise" rule forces revise; every "deploy" rule
# must pass to deploy, every "ab_test" rule for an A/B candidate; a "flag" only informs; a
# failing "coverage" rule means the run lacks evidence: the outcome is incomplete.
RULE_ROLES: tuple[str, ...] = ("revise", "deploy", "ab_test", "flag", "coverage")


class RuleOutcome(BaseModel):
    """One decision rule checked on a version: what was observed, against which threshold."""

    model_config = ConfigDict(frozen=True)

    name: str
    role: Literal[RULE_ROLES]
    passed: bool
    observed: float | None = None
    threshold: float | None = None
    message: str


class GroupMeans(BaseModel):
    """Means over one group of a version's scored cases: a scenario family, an age group..."""

    group: str
    cases: int
    means: dict[str, float | None]  # the six metrics and overall quality, by name
    hard_criteria_pass_rate: float | None = None


class FairnessGap(BaseModel):
    """The largest difference between two groups' means on one metric."""

    metric: str
    gap: float
    highest_group: str
    highest_mean: float
    lowest_group: str
    lowest_mean: float
    flagged: bool


class BehaviourRow(BaseModel):
    """A learned detector over one simulated conversation (turns are 1-based)."""

    behaviour: str
    slope: float | None = None
    first_turn: int | None = None
    worst_turn: int
    worst_value: float


class ConversationRow(BaseModel):
    """One simulated conversation of a version, as the release rules and the reports read it
    (from `CaseResult.conversation`; turns are 1-based)."""

    persona: str
    turns: int
    trust: list[float]  # the trajectory metric per turn
    erosion: float | None = None  # minus the slope per turn; None when too short to measure
    worst_turn: int
    worst_value: float
    first_flag_turn: int | None = None
    first_flag: str | None = None
    dependency_rate: float
    dependency_trend: float
    dependency_turns: list[int] = Field(default_factory=list)
    outward_rate: float
    memory_fidelity: float | None = None
    recalled: int = 0
    wrong: int = 0
    invented: int = 0
    invented_turns: list[int] = Field(default_factory=list)
    contradictions: list[str] = Field(default_factory=list)  # "nature: turn 2 vs turn 7"
    judge_verdict: str | None = None  # the conversation judge's, when it ran
    judge_overall: float | None = None
    behaviours: list[BehaviourRow] = Field(default_factory=list)  # learned detectors turn by turn


class Percentiles(BaseModel):
    """The median and the 95th percentile of a per-turn figure, over `count` turns."""

    p50: float
    p95: float
    count: int


class VersionLatency(BaseModel):
    """How long a version keeps its user waiting and listening (evaluators.release.latency).

    The timings are None when no turn was timed (replayed replies): not measured, not zero.
    """

    turns: int  # replies of scored cases
    timed_turns: int  # of those, produced by a live, timed call
    cached_turns: int  # of the timed ones, served from the response cache (timed when first made)
    replayed_turns: int = 0  # recorded replies: never timed
    time_to_first_token_s: Percentiles | None = None
    total_s: Percentiles | None = None
    tokens_per_s: Percentiles | None = None
    speaking_s: Percentiles | None = None  # estimated from the words: every reply has one

    @property
    def measured(self) -> bool:
        return self.time_to_first_token_s is not None


class ScenarioRepeats(BaseModel):
    """One scenario's repeats for one version (`run --repeat N`): how often it passed its hard
    criteria, the Wilson interval of that rate, and the spread of its decision scores."""

    scenario_id: str
    safety: bool = False
    repeats: int  # cases in the run store
    scored: int
    passed: int  # of the scored repeats
    pass_rate: float | None = None
    low: float | None = None  # Wilson interval of the pass rate
    high: float | None = None
    confidence: float = 0.95
    score_mean: float | None = None  # overall decision score over the scored repeats
    score_min: float | None = None
    score_max: float | None = None
    score_sd: float | None = None  # sample standard deviation; None with fewer than two
    failed_criteria: list[str] = Field(default_factory=list)  # over every failing repeat

    @property
    def flaky(self) -> bool:
        """Passes in some repeats and fails in others."""
        return 0 < self.passed < self.scored

    def rate_text(self) -> str:
        """`passed 3 of 4 repeats (75%)`, the form the reasons quote."""
        if not self.scored:
            return "no scored repeat"
        return f"passed {self.passed} of {self.scored} repeats ({self.passed / self.scored:.0%})"

    def interval_text(self) -> str:
        if self.low is None or self.high is None:
            return ""
        return f"{self.confidence:.0%} CI {self.low:.0%}–{self.high:.0%}"


class SafetyFailureSplit(BaseModel):
    """The failed safety scenarios split by what they failed on (evaluators.release.concerns):
    any failure about safety; only failures about the reply's form; other criteria. Per group,
    how many scenarios failed each criterion."""

    on_safety: list[str] = Field(default_factory=list)
    format_only: list[str] = Field(default_factory=list)
    other: list[str] = Field(default_factory=list)
    safety_criteria: dict[str, int] = Field(default_factory=dict)
    format_criteria: dict[str, int] = Field(default_factory=dict)
    other_criteria: dict[str, int] = Field(default_factory=dict)

    @staticmethod
    def _counted(criteria: dict[str, int]) -> str:
        return ", ".join(f"{name} {count}" for name, count in criteria.items())

    def sentence(self) -> str:
        """`3 on safety (crisis_without_help 2, harmful_reply 1), 22 on format only (not_voice_ready 22)`."""
        parts = [f"{len(self.on_safety)} on safety" + (f" ({self._counted(self.safety_criteria)})"
                                                        if self.on_safety else ""),
                 f"{len(self.format_only)} on format only" + (f" ({self._counted(self.format_criteria)})"
                                                               if self.format_only else "")]
        if self.other:
            parts.append(f"{len(self.other)} on other criteria ({self._counted(self.other_criteria)})")
        return ", ".join(parts)


class VersionAggregate(BaseModel):
    """Everything a release decision reads about one prompt version, over its scored cases.

    `means` hold the decision scores (see `average_of`); `means["overall_quality"]` is the
    version's average. Failed cases are counted and never averaged.
    """

    prompt_version: str
    prompt_name: str = ""
    prompt_source: str = "local"
    cases: int
    scored: int
    failed: int
    average_of: str  # in words: which per-case score the means are of
    judged_cases: int = 0  # scored cases whose decision scores include the judge's
    means: dict[str, float | None]
    heuristic_means: dict[str, float | None]
    judge: dict | None = None  # evaluators.release.summaries.judge_aggregates
    hard_criteria_pass_rate: float | None = None
    hard_criteria: dict[str, float] = Field(default_factory=dict)  # pass rate per criterion
    counts: VersionCounts  # every count the outputs show (evaluators.release.counts), computed once
    safety_failed: dict[str, list[str]] = Field(default_factory=dict)  # scenario id -> failed criteria
    # The same scenarios, what they failed by concern (safety, format, other -> failure names),
    # and the split a reader is told (evaluators.release.concerns).
    safety_failed_concerns: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    safety_failures: SafetyFailureSplit = Field(default_factory=SafetyFailureSplit)
    composite: float | None = None
    quality_level: str | None = None
    by_family: list[GroupMeans] = Field(default_factory=list)
    by_fairness_group: list[GroupMeans] = Field(default_factory=list)
    by_demographic_group: list[GroupMeans] = Field(default_factory=list)
    fairness_group_by: str = "age_group"
    fairness: list[FairnessGap] = Field(default_factory=list)
    conversations: list[ConversationRow] = Field(default_factory=list)  # simulated conversations scored
    latency: VersionLatency | None = None
    # Scenario-declared assertions over the scored cases (evaluators.release.failures):
    # how many were checked, and each failed one as "scenario turn N: assertion (detail)".
    assertions_checked: int = 0
    assertions_failed: list[str] = Field(default_factory=list)
    scenario_repeats: list[ScenarioRepeats] = Field(default_factory=list)  # per scenario, in first-seen order
    failure_kinds: dict[str, int] = Field(default_factory=dict)  # failure label -> failed cases (core.failures)

    @property
    def repeated(self) -> bool:
        """Some scenario has more than one scored repeat: the rules then quote pass rates."""
        return any(item.scored > 1 for item in self.scenario_repeats)

    @property
    def flaky(self) -> list[ScenarioRepeats]:
        return [item for item in self.scenario_repeats if item.flaky]

    @property
    def average(self) -> float | None:
        return self.means.get(OVERALL)

    @property
    def safety_cases(self) -> int:
        return self.counts.safety_scenarios

    @property
    def safety_scored(self) -> int:
        return self.counts.safety_scored


class MetricDelta(BaseModel):
    """Candidate minus baseline on one metric over paired scenarios, with its bootstrap interval."""

    metric: str
    candidate_mean: float
    baseline_mean: float
    delta: float
    low: float
    high: float
    change: Literal["improved", "regressed", "no_difference"]


class Comparison(BaseModel):
    """A version against its baseline, scenario by scenario (paired bootstrap)."""

    candidate: str
    baseline: str
    pairs: int  # scenarios both versions answered and scored
    dropped: int  # scenarios present on both sides but failed on at least one
    unpaired: int  # scenarios only one side has
    enough_pairs: bool  # at least the rubric's min_pairs: otherwise nothing counts as significant
    confidence: float
    resamples: int
    seed: int
    deltas: list[MetricDelta] = Field(default_factory=list)

    def delta(self, metric: str) -> MetricDelta | None:
        return next((item for item in self.deltas if item.metric == metric), None)


class WinRate(BaseModel):
    """The candidate's win rate over scenarios (ties count half), with its bootstrap interval.

    Each scenario scores the mean of its comparisons (win 1, tie 0.5, loss 0); the rate is the
    mean over scenarios and the interval resamples whole scenarios.
    """

    scenarios: int
    comparisons: int
    wins: int
    ties: int
    losses: int
    rate: float | None = None
    low: float | None = None
    high: float | None = None
    confidence: float = 0.95

    @property
    def beyond_noise(self) -> Literal["better", "worse"] | None:
        """better when the interval lies above 50%, worse when below, else None."""
        if self.low is not None and self.low > 0.5:
            return "better"
        if self.high is not None and self.high < 0.5:
            return "worse"
        return None


class HeadToHead(BaseModel):
    """A candidate against its baseline by the pairwise judge: every comparison, and the win rates."""

    candidate: str
    baseline: str
    judge_model: str = ""
    overall: WinRate
    by_family: dict[str, WinRate] = Field(default_factory=dict)
    position_bias: int = 0  # comparisons whose verdict changed with the order
    position_bias_rate: float | None = None  # of the comparisons with a verdict in both orders
    unscored: int = 0  # comparisons without a verdict in some order
    resamples: int = 0
    seed: int = 0
    comparisons: list[PairwiseComparison] = Field(default_factory=list)


class Coverage(BaseModel):
    """How much of the scenario set the manifest hashed one version's run scored, and why not all.

    A version is deployed only on complete coverage: every scenario of the set scored,
    including every safety scenario (and the set must hold some). A declared baseline missing
    from the run is a coverage note too: without it no A/B decision can be shown.
    """

    scenarios: int  # in the scenario set the run was made from
    scored: int  # of those, scored for this version
    safety: int  # safety scenarios in the set
    safety_scored: int
    not_run: int = 0  # selected for the run but never finished: the run was interrupted
    failed: int = 0  # ran and failed (the call failed, or a reply was cut short); retried on resume
    truncated: int = 0  # of the failed, those with a truncated reply (never scored as whole)
    judge_failed: int = 0  # scored, but the judge the run asked for failed: missing evidence; its stored replies judged again on resume
    unverified: int = 0  # scored, but a judged assertion was not verified (no judge, or no answer)
    # of the failed, simulated conversations whose simulated user left its role or persona
    # (evaluators.run.simulation.validity): evidence about the simulator, left out
    invalid_simulations: int = 0
    filtered_out: int = 0  # left out by --family / --scenario
    baseline_missing: str | None = None  # the declared baseline, when the run does not hold it
    reasons: list[str] = Field(default_factory=list)  # why scenarios are missing, in words
    finish: list[str] = Field(default_factory=list)  # what to do to complete the evidence

    @property
    def complete(self) -> bool:
        """Every scenario of the set scored, and the set has safety scenarios."""
        return self.scored == self.scenarios and self.safety > 0 and self.safety_scored == self.safety

    @property
    def message(self) -> str:
        """E.g. "21 of 67 scenarios, 4 of 20 safety scenarios scored; the run was interrupted"."""
        counts = (f"{self.scored} of {self.scenarios} scenarios, {self.safety_scored} of {self.safety} safety "
                  "scenarios scored")
        return "; ".join([counts, *self.reasons])


class SafetyEvidence(BaseModel):
    """One version's safety-relevant replies and what verified them (evaluators.release.safety_evidence).

    Safety-relevant: the safety judge's triggered items for any reason but being judged by the
    quality judge, persona conversations included. Verified by a judge admitted for safety that
    answered usably, or by a detector allowed a hard flag at its flag_at; every other item is
    unverified, the judge's failures among them (missing evidence, never a pass).
    """

    relevant: int = 0
    by_judge: int = 0
    by_detector: int = 0
    unverified: int = 0
    # of the unverified: the judge call failed or its answer could not be read
    judge_failed: int = 0
    # of the unverified: answered by a judge model not admitted for safety (no calibration at the bar)
    not_admitted: int = 0
    # of the unverified: left out by --judge-budget
    left_out: int = 0
    judged: bool = False  # the run asked the safety judge about some case of this version
    models: list[str] = Field(default_factory=list)  # the judge models that answered
    unadmitted_models: list[str] = Field(default_factory=list)  # of those, not admitted for safety
    failed_models: list[str] = Field(default_factory=list)  # the judge models whose calls failed (judge_failed)
    admission: str | None = None  # why the answering models are not admitted (None: admitted, or none)
    unverified_ids: list[str] = Field(default_factory=list)
    verify: str = ""  # the command that verifies the unverified items
    guards: list[str] = Field(default_factory=list)  # the outcomes the gate holds back (rubric)

    @property
    def verified(self) -> int:
        return self.by_judge + self.by_detector

    @property
    def complete(self) -> bool:
        return self.unverified == 0

    def sentence(self) -> str:
        """The figures in words: '12 safety-relevant replies: 3 verified by the judge, ...'."""
        parts = [f"{self.by_judge} verified by an admitted judge", f"{self.by_detector} by a detector",
                 f"{self.unverified} unverified"]
        why = [f"{count} {what}" for count, what in ((self.judge_failed, "judge failed"),
               (self.not_admitted, "judge not admitted"), (self.left_out, "left out by the judge budget")) if count]
        return (f"{self.relevant} safety-relevant {'reply' if self.relevant == 1 else 'replies'}: {', '.join(parts)}"
                + (f" ({', '.join(why)})" if why else ""))


class Decision(BaseModel):
    """deploy | ab_test | revise | incomplete for one prompt version, with every rule and the ones
    that decided, and the coverage of the run it was decided on."""

    prompt_version: str
    prompt_name: str = ""
    prompt_source: str = "local"
    outcome: Literal[OUTCOMES]
    summary: str
    average: float
    average_of: str
    quality_level: str
    composite: float
    hard_criteria_pass_rate: float
    counts: VersionCounts | None = None  # the same counts as the aggregate's (None in decisions stored before)
    baseline: str | None = None
    rules: list[RuleOutcome]
    fired: list[str]  # names of the rules that decided the outcome, and any failing flag
    coverage: Coverage | None = None
    partial: bool = False  # decided on incomplete coverage by request (--partial): never deploy
    # Failure kind (evaluators.core.failures) -> how many of the version's cases carry it.
    failure_kinds: dict[str, int] = Field(default_factory=dict)
    # The failed safety scenarios split by what they failed on: safety, format only, other.
    safety_failures: SafetyFailureSplit | None = None
    # With repeats (run --repeat N): each scenario's pass rate, interval and score spread, and the
    # scenarios that passed in some repeats and failed in others. Empty without repeats.
    pass_rates: list[ScenarioRepeats] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)
    # The safety-relevant replies and what verified them (None in decisions stored before), and the
    # shipping outcome the gate refused for want of it (None: nothing refused).
    safety_evidence: SafetyEvidence | None = None
    refused: str | None = None

    @property
    def reasons(self) -> list[RuleOutcome]:
        return [rule for rule in self.rules if rule.name in self.fired]


class ReleaseReport(BaseModel):
    """A run's release view: aggregates, baseline comparisons and decisions, per version."""

    run_id: str = ""
    sample_data: bool = False
    rubric_version: str = ""
    rubric_hash: str = ""
    notices: list[str] = Field(default_factory=list)
    aggregates: dict[str, VersionAggregate]
    comparisons: dict[str, Comparison] = Field(default_factory=dict)  # by candidate version
    head_to_head: dict[str, HeadToHead] = Field(default_factory=dict)  # by candidate version (pairwise judge)
    decisions: list[Decision]

    def decision(self, version: str) -> Decision | None:
        return next((item for item in self.decisions if item.prompt_version == version), None)
