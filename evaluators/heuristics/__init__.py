"""Heuristic evaluators for the six Penpal metrics, driven by the rubric file.

`HeuristicEvaluator` holds only immutable, shareable state (the rubric, the spaCy pipeline,
compiled matchers and patterns); results are returned, never stored on it, so one instance
can serve concurrent runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from spacy.language import Language
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

# Importing the metric modules registers their signals.
from evaluators.heuristics import (  # noqa: F401
    appropriateness,
    conversational_quality,
    emotional_intelligence,
    helpfulness,
    personalization_continuity,
    shared,
    trust_boundaries,
)
from evaluators.features import CaseFeatures, TextView
from evaluators.heuristics.registry import SIGNALS, Signal, clip
from evaluators.matchers import LexiconMatcher
from evaluators.models import Evidence, Flag, HeuristicResult, MetricScore, ReplyCase
from evaluators.nlp import clip_for_parse, load_pipeline
from evaluators.offline import ensure_cmudict
from evaluators.rubric import METRIC_NAMES, Rubric, RubricError, default_rubric
from evaluators.safety import SafetyWords

ROLES = ("reply", "user", "history")


def check_signals(rubric: Rubric) -> None:
    """Every signal the rubric weighs must exist in code, and every disqualifier too."""
    for metric, dimension in rubric.dimensions.items():
        for name in dimension.signals:
            if name not in SIGNALS:
                raise RubricError(f"dimensions.{metric}.signals.{name}: no such signal in the evaluators")
    for name in rubric.disqualifiers:
        if name not in SIGNALS:
            raise RubricError(f"disqualifiers.{name}: no such signal in the evaluators")


class HeuristicEvaluator:
    """Scores replies on the six metrics with evidence, plus the rubric's hard flags."""

    def __init__(self, rubric: Rubric | None = None, nlp: Language | None = None) -> None:
        self.rubric = rubric or default_rubric()
        check_signals(self.rubric)
        self.nlp = nlp or load_pipeline()
        self.matchers = {role: LexiconMatcher(self.nlp, self.rubric, role) for role in ("reply", "user")}
        self.patterns = self.rubric.compiled_patterns()
        self.safety = SafetyWords.from_rubric(self.rubric)
        self.sentiment = SentimentIntensityAnalyzer()
        ensure_cmudict()

    # --- public API ------------------------------------------------------------------------
    def score(self, user_message: str, response: str, history: Sequence[str] = (), id: str = "") -> HeuristicResult:
        case = ReplyCase(id=id, history=list(history), user_message=user_message, response=response)
        return next(self.score_cases([case]))

    def score_cases(self, cases: Iterable[ReplyCase], batch_size: int = 256) -> Iterator[HeuristicResult]:
        """Score cases lazily, parsing each text once with ``nlp.pipe`` in batches."""
        batch: list[ReplyCase] = []
        for case in cases:
            batch.append(case)
            if len(batch) >= batch_size:
                yield from self._score_batch(batch)
                batch = []
        if batch:
            yield from self._score_batch(batch)

    # --- internals ---------------------------------------------------------------------------
    def _score_batch(self, cases: list[ReplyCase]) -> Iterator[HeuristicResult]:
        texts = (
            (clip_for_parse(text), (index, role))
            for index, case in enumerate(cases)
            for role, text in zip(ROLES, (case.response, case.user_message, "\n".join(case.history)))
        )
        views: list[dict[str, TextView]] = [{} for _ in cases]
        for doc, (index, role) in self.nlp.pipe(texts, as_tuples=True, batch_size=512):
            # The history is read for carried-over topics only, never for indicator phrases.
            matcher = self.matchers.get(role)
            matches = matcher.find(doc) if matcher is not None else {}
            views[index][role] = TextView(doc.text, doc, matches)
        for case, view in zip(cases, views):
            features = CaseFeatures(
                case=case,
                reply=view["reply"],
                user=view["user"],
                history=view["history"],
                patterns=self.patterns,
                voice_rules=self.rubric.voice,
                sentiment=self.sentiment,
                safety=self.safety,
            )
            yield self._score_features(features)

    def _score_features(self, features: CaseFeatures) -> HeuristicResult:
        fired: dict[str, Signal | None] = {}

        def signal(name: str) -> Signal | None:
            if name not in fired:
                fired[name] = SIGNALS[name](features)
            return fired[name]

        flags = [
            Flag(name=name, description=rule.description, text=hit.text)
            for name, rule in self.rubric.disqualifiers.items()
            if (hit := signal(name)) is not None and hit.strength >= 1.0
        ]
        metrics = {}
        for metric in METRIC_NAMES:
            dimension = self.rubric.dimensions[metric]
            value = dimension.base
            evidence = []
            for name, weight in dimension.signals.items():
                hit = signal(name)
                if hit is None:
                    continue
                effect = weight * hit.strength
                value += effect
                # model_construct: these values are built here, validating them again is waste.
                evidence.append(Evidence.model_construct(indicator=name, text=hit.text, effect=round(effect, 4)))
            value = clip(value)
            for flag in flags:
                rule = self.rubric.disqualifiers[flag.name]
                if metric in rule.caps and value > rule.cap:
                    evidence.append(Evidence(indicator=f"capped_by_{flag.name}", text=flag.text,
                                             effect=round(rule.cap - value, 4)))
                    value = rule.cap
            metrics[metric] = MetricScore.model_construct(value=value, evidence=evidence)
        overall = clip(sum(self.rubric.weights[m] * metrics[m].value for m in METRIC_NAMES))
        return HeuristicResult(
            id=features.case.id,
            metrics=metrics,
            overall_quality=overall,
            quality_level=self.rubric.quality_level(overall),
            flags=flags,
        )
