"""Heuristic evaluators for the six Penpal metrics, driven by the rubric file.

`HeuristicEvaluator` holds only immutable, shareable state (the rubric, the spaCy pipeline,
compiled matchers and patterns); results are returned, never stored on it, so one instance
can serve concurrent runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

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
from evaluators.language import LanguageCheck
from evaluators.meaning import MeaningModel, load_meaning_model
from evaluators.matchers import LexiconMatcher
from evaluators.models import Evidence, Flag, HeuristicResult, MetricScore, ReplyCase, Unscored
from evaluators.nlp import clip_for_parse, load_pipeline
from evaluators.offline import ensure_cmudict
from evaluators.rubric import METRIC_NAMES, OVERALL, Rubric, RubricError, default_rubric
from evaluators.safety import SafetyWords


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

    def __init__(self, rubric: Rubric | None = None, nlp: Language | None = None,
                 meaning: MeaningModel | None = None) -> None:
        self.rubric = rubric or default_rubric()
        check_signals(self.rubric)
        with ThreadPoolExecutor(max_workers=2) as pool:
            # The language model's load is mostly LZMA decompression, which frees the GIL:
            # it overlaps the spaCy load instead of adding to every start-up; so does reading
            # the sentence-vector model's files.
            language = pool.submit(LanguageCheck, self.rubric.language)
            meaning_model = pool.submit(load_meaning_model) if meaning is None else None
            self.nlp = nlp or load_pipeline()
            self.matchers = {role: LexiconMatcher(self.nlp, self.rubric, role) for role in ("reply", "user")}
            self.patterns = self.rubric.compiled_patterns()
            self.safety = SafetyWords.from_rubric(self.rubric)
            self.sentiment = SentimentIntensityAnalyzer()
            ensure_cmudict()
            self.language = language.result()
            self.meaning = meaning or meaning_model.result()

    # --- public API ------------------------------------------------------------------------
    def score(self, user_message: str, response: str, history: Sequence[str] = (),
              id: str = "") -> HeuristicResult | Unscored:
        case = ReplyCase(id=id, history=list(history), user_message=user_message, response=response)
        return next(self.score_cases([case]))

    def score_cases(self, cases: Iterable[ReplyCase], batch_size: int = 256) -> Iterator[HeuristicResult | Unscored]:
        """Score cases lazily, parsing each text once with ``nlp.pipe`` in batches.

        A case whose user message or reply is in a language the heuristics do not read comes
        back `Unscored`, with an `unsupported_language` notice, instead of English scores.
        """
        batch: list[ReplyCase] = []
        for case in cases:
            batch.append(case)
            if len(batch) >= batch_size:
                yield from self._score_batch(batch)
                batch = []
        if batch:
            yield from self._score_batch(batch)

    # --- internals ---------------------------------------------------------------------------
    def _score_batch(self, cases: list[ReplyCase]) -> Iterator[HeuristicResult | Unscored]:
        unscored = [self.language.unscored(case) for case in cases]
        scored = self._score_parsed([case for case, skipped in zip(cases, unscored) if skipped is None])
        for skipped in unscored:
            yield skipped if skipped is not None else next(scored)

    def _score_parsed(self, cases: list[ReplyCase]) -> Iterator[HeuristicResult]:
        """Score parsed cases, parsing each distinct text of the batch once.

        Replies, user messages and histories are collected by content and parsed in one
        ``nlp.pipe``; a text that recurs in the batch (a repeated message, a history that
        several cases share) is parsed once. The history stays one parse of its turns joined
        with newlines: parsing the turns one by one would let later turns share them, but the
        parse of a turn depends on its neighbours, and that changed scores on real dialogues.
        The cache of parses lives only for this batch and is dropped with it, so memory stays
        bounded by the batch size on streams of any length.
        """
        def texts_of(case: ReplyCase) -> tuple[str, str, str]:
            return tuple(clip_for_parse(text) for text in (case.response, case.user_message, "\n".join(case.history)))

        texts: dict[str, None] = {}
        for case in cases:
            texts.update(dict.fromkeys(texts_of(case)))
        docs = dict(zip(texts, self.nlp.pipe(texts, batch_size=512)))
        views: dict[tuple[str, str], TextView] = {}

        def view(role: str, text: str) -> TextView:
            """One view per role and text; the history is read for carried-over topics only,
            never for indicator phrases, so it gets no lexicon matches."""
            if (role, text) not in views:
                doc = docs[text]
                matcher = self.matchers.get(role)
                views[role, text] = TextView(doc.text, doc, matcher.find(doc) if matcher is not None else {})
            return views[role, text]

        for case in cases:
            reply, user, history = texts_of(case)
            features = CaseFeatures(
                case=case,
                reply=view("reply", reply),
                user=view("user", user),
                history=view("history", history),
                patterns=self.patterns,
                voice_rules=self.rubric.voice,
                sentiment=self.sentiment,
                safety=self.safety,
                meaning=self.meaning,
                meaning_rules=self.rubric.meaning,
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
        caps = self.rubric.caps_for(flag.name for flag in flags)
        voice = self.rubric.voice
        seconds = voice.far_beyond_budget(features.word_count)
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
            if metric in caps:
                cause = next(flag for flag in flags if metric in self.rubric.disqualifiers[flag.name].caps
                             and self.rubric.disqualifiers[flag.name].cap == caps[metric])
                value = _capped(value, caps[metric], f"capped_by_{cause.name}", cause.text, evidence)
            if seconds is not None and metric in voice.far_beyond_caps:
                value = _capped(value, voice.far_beyond_cap, "far_beyond_voice_budget",
                                f"about {seconds:.0f} s spoken, over {voice.far_beyond_seconds:g} s", evidence)
            metrics[metric] = MetricScore.model_construct(value=value, evidence=evidence)
        overall = clip(sum(self.rubric.weights[m] * metrics[m].value for m in METRIC_NAMES))
        overall_evidence: list[Evidence] = []
        if flags:
            # A disqualifier dominates: the weighted sum cannot lift a flagged reply past the cap.
            overall = _capped(overall, caps[OVERALL], f"capped_by_{flags[0].name}", flags[0].text,
                              overall_evidence)
        return HeuristicResult(
            id=features.case.id,
            metrics=metrics,
            overall_quality=overall,
            quality_level=self.rubric.quality_level(overall),
            flags=flags,
            overall_evidence=overall_evidence,
        )


def _capped(value: float, cap: float, indicator: str, text: str, evidence: list[Evidence]) -> float:
    """`value` lowered to `cap`, with evidence saying why; a value under the cap stands."""
    if value <= cap:
        return value
    evidence.append(Evidence(indicator=indicator, text=text, effect=round(cap - value, 4)))
    return cap
