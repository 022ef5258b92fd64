"""Heuristic evaluators for the six Penpal metrics, driven by the rubric file.

`HeuristicEvaluator` holds only immutable, shareable state (the rubric, the spaCy pipeline,
compiled matchers and patterns); results are returned, never stored on it, so one instance
can serve concurrent runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from spacy.language import Language

from evaluators.core.names import METRIC_NAMES
from evaluators.rubric.loader import Rubric, RubricError, default_rubric

# Imported for what it reads from the rubric by name: a rubric it cannot check is refused here.
from evaluators.scoring import expectations  # noqa: F401
from evaluators.scoring.caps import VOICE_CAP, capped, flag_capped, flagged_overall
from evaluators.scoring.contracts import Evidence, Flag, HeuristicResult, MetricScore, ReplyCase, Unscored

# Importing the metric modules registers their signals.
from evaluators.scoring.heuristics import (  # noqa: F401
    appropriateness,
    conversational_quality,
    detected_behaviours,
    emotional_intelligence,
    helpfulness,
    personalization_continuity,
    shared,
    trust_boundaries,
)
from evaluators.scoring.heuristics.registry import SIGNAL_READS, SIGNALS, Signal, clip
from evaluators.scoring.heuristics.unread import (
    READING_FLAGS,
    SILENCE_REASON,
    SILENT_REPLY,
    WRONG_LANGUAGE,
    disqualified_result,
    is_silent,
    wrong_language_reason,
)
from evaluators.scoring.reading.features import CaseFeatures, HistoryView, TextView, TurnReading, meaning_texts
from evaluators.scoring.reading.language import Guesser, LanguageCheck
from evaluators.scoring.reading.matchers import LexiconMatcher
from evaluators.scoring.reading.meaning import MeaningModel, load_meaning_model
from evaluators.scoring.reading.nlp import as_read, clip_for_parse, history_for_parse, load_pipeline
from evaluators.scoring.reading.offline import ensure_cmudict
from evaluators.scoring.reading.sentiment import SentimentAnalyzer
from evaluators.scoring.reading.text_cache import TextCache
from evaluators.scoring.rubric_names import missing_names, pattern_groups
from evaluators.scoring.safety import SafetyWords
from evaluators.scoring.safety.detectors import DetectorBank, DetectorsMissing, detectors_path, load_detectors
from evaluators.scoring.safety.learned_harm import HarmModel, HarmModelMissing, load_harm_model, model_path

EMPTY_HISTORY = HistoryView()
# Allocations between runs of CPython's cyclic collector while a batch is scored (its default
# is 700). See `fewer_collections`.
COLLECT_EVERY_WHILE_SCORING = 20_000


def case_as_read(case: ReplyCase) -> ReplyCase:
    """The case with its texts as a reader sees them (`evaluators.scoring.reading.nlp.as_read`): typographic
    apostrophes as ASCII, invisible characters dropped. Done once where cases enter scoring,
    so the parse, the caches, the meaning vectors and every rule read the same text."""
    response, user_message = as_read(case.response), as_read(case.user_message)
    history = [as_read(turn) for turn in case.history]
    if response == case.response and user_message == case.user_message and history == case.history:
        return case
    return case.model_copy(update={"response": response, "user_message": user_message, "history": history})


def harm_model_of(rubric: Rubric) -> HarmModel:
    """The learned harm model the rubric names; a missing or unreadable file is a problem of
    the rubric's `learned_harm.model` setting, reported like any other (with how to rebuild it)."""
    try:
        return load_harm_model(model_path(rubric.learned_harm.model))
    except HarmModelMissing as error:
        raise RubricError(f"learned_harm.model: {error}") from error


def detectors_of(rubric: Rubric, bank: DetectorBank | None = None) -> DetectorBank:
    """The learned detectors the rubric names (`detectors.model`), or `bank` when given, each
    behaviour the rubric reads present in it; a missing or unreadable file, or a behaviour the
    bank has no detector for, is a problem of the rubric's `detectors` section, named by its key."""
    if bank is None:
        try:
            bank = load_detectors(detectors_path(rubric.detectors.model))
        except DetectorsMissing as error:
            raise RubricError(f"detectors.model: {error}") from error
    unknown = [name for name in rubric.detectors.behaviours if name not in bank.names()]
    if unknown:
        raise RubricError([f"detectors.behaviours.{name}: no such detector in {bank.path.name} "
                           f"(it has {', '.join(bank.names())})" for name in unknown])
    return bank


def check_signals(rubric: Rubric) -> None:
    """Every signal the rubric weighs must exist in code, and every disqualifier too; and the
    rubric must hold every lexicon, word set, pattern and pattern group the code reads by name
    (`evaluators.scoring.rubric_names`). Every problem is named, in one pass."""
    problems = []
    for metric, dimension in rubric.dimensions.items():
        for name in dimension.signals:
            if name not in SIGNALS:
                problems.append(f"dimensions.{metric}.signals.{name}: no such signal in the evaluators")
    for name in rubric.disqualifiers:
        if name not in SIGNALS and name not in READING_FLAGS:
            problems.append(f"disqualifiers.{name}: no such signal in the evaluators")
    problems += missing_names(rubric)
    if problems:
        raise RubricError(problems)


class HeuristicEvaluator:
    """Scores replies on the six metrics with evidence, plus the rubric's hard flags."""

    def __init__(self, rubric: Rubric | None = None, nlp: Language | None = None,
                 meaning: MeaningModel | None = None, detectors: DetectorBank | None = None) -> None:
        self.rubric = rubric or default_rubric()
        check_signals(self.rubric)
        self.harm_model = harm_model_of(self.rubric)  # before the slow loads: a missing file fails fast
        # The rubric's detectors file, or a bank given (a test's, or weights being compared),
        # checked alike: every behaviour the rubric reads must be in it.
        self.detectors = detectors_of(self.rubric, detectors)
        with ThreadPoolExecutor(max_workers=2) as pool:
            # The language model's load is mostly LZMA decompression, which frees the GIL:
            # it overlaps the spaCy load instead of adding to every start-up; so does reading
            # the sentence-vector model's files.
            language = pool.submit(LanguageCheck, self.rubric.language)
            meaning_model = pool.submit(load_meaning_model) if meaning is None else None
            self.nlp = nlp or load_pipeline()
            self.matchers = {role: LexiconMatcher(self.nlp, self.rubric, role) for role in ("reply", "user")}
            self.patterns = self.rubric.compiled_patterns()
            self.pattern_groups = pattern_groups(self.rubric)
            # Read once: `Rubric.weights` builds its dict on every access.
            self._weights = tuple((metric, self.rubric.weights[metric]) for metric in METRIC_NAMES)
            self._plan = ScoringPlan.of(self.rubric)
            self.safety = SafetyWords.from_rubric(self.rubric)
            self.sentiment = SentimentAnalyzer()
            ensure_cmudict()
            self.language = language.result()
            self.meaning = meaning or meaning_model.result()

    # --- public API ------------------------------------------------------------------------
    def score(self, user_message: str, response: str, history: Sequence[str] = (),
              id: str = "") -> HeuristicResult | Unscored:
        case = ReplyCase(id=id, history=list(history), user_message=user_message, response=response)
        return next(self.score_cases([case]))

    def score_cases(self, cases: Iterable[ReplyCase], batch_size: int = 256,
                    cache: TextCache | None = None) -> Iterator[HeuristicResult | Unscored]:
        """Score cases lazily, parsing each distinct text of the stream once with ``nlp.pipe``.

        Parses are shared by content through a `TextCache` that lives as long as this stream
        (pass one to watch or size it) and is bounded, so memory stays flat on streams of any
        length; what it holds is a pure function of each text, so records are the same
        whatever the batch size or the order. A case whose user message is in a language the
        heuristics do not read comes back `Unscored`, with an `unsupported_language` notice,
        instead of English scores; a silent reply, or a reply in another language, is scored
        by its `silent_reply` or `wrong_language` flag without being read. Every text is read as
        a reader sees it (`case_as_read`), so evidence quotes that form.
        """
        cache = cache if cache is not None else TextCache()
        cache.serve(self)
        batch: list[ReplyCase] = []
        for case in cases:
            batch.append(case_as_read(case))
            if len(batch) >= batch_size:
                yield from self._score_batch(batch, cache)
                batch = []
        if batch:
            yield from self._score_batch(batch, cache)

    # --- internals ---------------------------------------------------------------------------
    def _score_batch(self, cases: list[ReplyCase], cache: TextCache) -> Iterator[HeuristicResult | Unscored]:
        with fewer_collections():  # the whole batch inside, so no caller's code runs under it
            guess = partial(cache.language_guess, self.language)
            settled = [self._unread(case, guess) for case in cases]
            scored = iter(list(self._score_parsed([case for case, result in zip(cases, settled)
                                                   if result is None], cache)))
        for result in settled:
            yield result if result is not None else next(scored)

    def _unread(self, case: ReplyCase, guess: Guesser) -> HeuristicResult | Unscored | None:
        """The outcome of a case whose words are not read (evaluators.scoring.heuristics.unread): a
        silent reply (in any language: silence needs no reading), a user message in another
        language (unscored), a reply in another language (scored by its flag); None for a case
        to read."""
        disqualifiers = self.rubric.disqualifiers
        if is_silent(case):
            if SILENT_REPLY not in disqualifiers:
                return Unscored(case.id, "response: empty or whitespace only, nothing to score")
            return disqualified_result(case, SILENT_REPLY, SILENCE_REASON, self.rubric)
        unscored = self.language.unscored(case, guess, reply_scored=WRONG_LANGUAGE in disqualifiers)
        if unscored is not None:
            return unscored
        reply = self.language.notice("reply", case.response, guess)
        if reply is None:
            return None
        reason = wrong_language_reason(reply, self.language.supported_names)
        return disqualified_result(case, WRONG_LANGUAGE, reason, self.rubric)

    def _score_parsed(self, cases: list[ReplyCase], cache: TextCache) -> Iterator[HeuristicResult]:
        """Score cases, parsing only the texts neither this batch nor the cache has read.

        Replies and user messages are read with their role's lexicon matcher; each history
        turn is parsed on its own for its anchors and claims, and a history is its previous turn's
        history plus one turn (`HistoryView.extended`). The batch holds on to what it uses
        (`views`, `readings`), so an eviction from the bounded cache never loses a parse the
        batch still needs.
        """
        texts = [(clip_for_parse(case.response), clip_for_parse(case.user_message), history_for_parse(case.history))
                 for case in cases]
        views: dict[tuple[str, str], TextView] = {}
        readings: dict[str, TurnReading] = {}
        for reply, user, turns in texts:
            for role, text in (("reply", reply), ("user", user)):
                if (role, text) not in views and (cached := cache.views.get((role, text))) is not None:
                    views[role, text] = cached
            for turn in turns:
                if turn not in readings and (known := cache.turn_readings.get(turn)) is not None:
                    readings[turn] = known

        def parsed(text: str) -> TextView | None:
            """A view of `text` at hand or cached, in either role: its parse serves the other
            role and the text's turns in later histories too."""
            for key in (("user", text), ("reply", text)):
                if key not in views and (cached := cache.views.get(key)) is not None:
                    views[key] = cached
                if key in views:
                    return views[key]
            return None

        unread: dict[str, None] = {}
        for reply, user, turns in texts:
            unread.update((text, None) for role, text in (("reply", reply), ("user", user))
                          if (role, text) not in views and parsed(text) is None)
            unread.update((turn, None) for turn in turns if turn not in readings and parsed(turn) is None)
        docs = dict(zip(unread, self.nlp.pipe(unread, batch_size=512)))

        def view(role: str, text: str) -> TextView:
            if (role, text) not in views:
                known = parsed(text)
                doc = known.doc if known is not None else docs[text]
                views[role, text] = TextView(doc.text, doc, self.matchers[role].find(doc))
                cache.keep_view(role, text, views[role, text])
            return views[role, text]

        def turn_reading(turn: str) -> TurnReading:
            if turn not in readings:
                readings[turn] = TurnReading.of(parsed(turn) or TextView(turn, docs[turn], {}))
                cache.keep_turn_reading(turn, readings[turn])
            return readings[turn]

        def history(turns: tuple[str, ...]) -> HistoryView:
            if not turns:
                return EMPTY_HISTORY
            known = cache.histories.get(turns)
            if known is None:
                earlier = cache.histories.get(turns[:-1]) if len(turns) > 1 else EMPTY_HISTORY
                if earlier is not None:
                    known = earlier.extended(turns[-1], turn_reading(turns[-1]))
                else:
                    known = HistoryView.of(turns, [turn_reading(turn) for turn in turns])
                cache.histories.put(turns, known)
            return known

        if self.meaning is not None:
            self.meaning.prefetch(text for case in cases for text in meaning_texts(case, self.rubric.meaning))
            # The fine-tuned detectors' pass over the batch's distinct replies, up front (none
            # unless detectors.json names one); the detectors read only with the meaning model.
            if self.detectors is not None:
                self.detectors.prefetch(reply for reply, _, _ in texts)
        for case, (reply, user, turns) in zip(cases, texts):
            features = CaseFeatures(
                case=case,
                reply=view("reply", reply),
                user=view("user", user),
                history=history(turns),
                patterns=self.patterns,
                pattern_groups=self.pattern_groups,
                voice_rules=self.rubric.voice,
                tone_rules=self.rubric.tone,
                shapes=self.rubric.shapes,
                sentiment=self.sentiment,
                safety=self.safety,
                meaning=self.meaning,
                meaning_rules=self.rubric.meaning,
                harm_model=self.harm_model,
                harm_rules=self.rubric.learned_harm,
                detectors=self.detectors,
                detector_rules=self.rubric.detectors,
            )
            yield self._score_features(features)

    def _score_features(self, features: CaseFeatures) -> HeuristicResult:
        plan = self._plan
        fired = {name: SIGNALS[name](features) for name in plan.signals}
        flags = [
            Flag(name=name, description=description, text=hit.text)
            for name, description in plan.disqualifiers
            if (hit := fired[name]) is not None and hit.strength >= 1.0
        ]
        caps = self.rubric.caps_for(flag.name for flag in flags)
        voice = self.rubric.voice
        seconds = voice.far_beyond_budget(features.word_count)
        tables = {"reply": features.reply_table, "exchange": features.exchange_table}
        metrics = {}
        for metric, base, signals in plan.dimensions:
            value = base
            evidence = []
            for name, weight, reads, key in signals:
                hit = fired[name]
                if hit is None:
                    continue
                effect = weight * hit.strength
                value += effect
                evidence.append(_evidence(name, hit, effect, tables.get(reads), key))
            value = clip(value)
            value = flag_capped(metric, value, flags, caps, self.rubric, evidence)
            if seconds is not None and metric in voice.far_beyond_caps:
                value = capped(value, voice.far_beyond_cap, VOICE_CAP,
                               f"about {seconds:.0f} s spoken, over {voice.far_beyond_seconds:g} s", evidence)
            metrics[metric] = MetricScore(value=value, evidence=evidence)
        # A disqualifier dominates: the weighted sum cannot lift a flagged reply past the cap,
        # and is scaled under it rather than clipped, so flagged replies keep their order.
        overall, overall_evidence = flagged_overall(clip(sum(weight * metrics[m].value for m, weight in self._weights)),
                                                    flags, self.rubric)
        return HeuristicResult(
            id=features.case.id,
            metrics=metrics,
            overall_quality=overall,
            quality_level=self.rubric.quality_level(overall),
            flags=flags,
            detectors=features.detector_scores,
            user_risk=features.user_risk,
            overall_evidence=overall_evidence,
        )


@dataclass(frozen=True)
class ScoringPlan:
    """The rubric's scoring read once per evaluator, in the order it is scored: every signal
    it names (disqualifiers first, then each dimension's, each once), the disqualifiers with
    their descriptions, and per dimension its base and its signals, each with its weight,
    what it reads (`SIGNAL_READS`) and where its evidence is kept (`_evidence`)."""

    signals: tuple[str, ...]
    disqualifiers: tuple[tuple[str, str], ...]
    dimensions: tuple[tuple[str, float, tuple[tuple[str, float, str, str], ...]], ...]

    @classmethod
    def of(cls, rubric: Rubric) -> ScoringPlan:
        dimensions = tuple(
            (metric, rubric.dimensions[metric].base,
             tuple((name, weight, SIGNAL_READS[name], f"evidence\0{metric}\0{name}")
                   for name, weight in rubric.dimensions[metric].signals.items()))
            for metric in METRIC_NAMES)
        read = {name: rule for name, rule in rubric.disqualifiers.items() if name not in READING_FLAGS}
        names = [*read, *(name for _, _, signals in dimensions for name, *_ in signals)]
        return cls(tuple(dict.fromkeys(names)), tuple((name, rule.description) for name, rule in read.items()),
                   dimensions)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the cyclic garbage collector less often while a batch is scored, then as before.

    Why: a batch allocates hundreds of thousands of small objects (parses, views, evidence,
    results) that all live until the batch ends. At CPython's default threshold the collector
    runs after every 700 of them and walks the young objects each time, and its older
    generations every few runs: about a twentieth of the scoring time (measured on
    benchmarks/throughput.py's records) went to finding nothing to free. Raising the threshold for the batch gives the same collections, fewer and later;
    nothing is kept longer than the batch, so memory stays bounded by the batch as before.
    """
    before = gc.get_threshold()
    gc.set_threshold(COLLECT_EVERY_WHILE_SCORING, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _evidence(name: str, hit: Signal, effect: float, table: dict[str, object] | None, key: str) -> Evidence:
    """The evidence of a fired signal. A signal read once per reply or exchange (`table` is
    where it was kept) has the same evidence in every case that shares it: built once, kept
    beside it. Evidence is frozen, so results may share it."""
    if table is None:
        # Validated construction: pydantic's core validator is faster than model_construct here.
        return Evidence(indicator=name, text=hit.text, effect=round(effect, 4))
    item = table.get(key)
    if item is None:
        item = table[key] = Evidence(indicator=name, text=hit.text, effect=round(effect, 4))
    return item  # type: ignore[return-value]
