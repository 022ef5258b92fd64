"""The scoring stream's cache: bounded by a count on any stream, and never a change to a record."""

from __future__ import annotations

import pytest

from evaluators.scoring.api import default_evaluator
from evaluators.scoring.contracts import ReplyCase
from evaluators.scoring.reading.text_cache import LruTable, TextCache


def test_an_lru_table_forgets_the_least_recently_used_entry_past_its_limit():
    table: LruTable[str, int] = LruTable(2)
    table.put("a", 1)
    table.put("b", 2)
    assert table.get("a") == 1  # "a" is now the most recently used
    table.put("c", 3)
    assert len(table) == 2
    assert table.get("b") is None and table.get("a") == 1 and table.get("c") == 3
    with pytest.raises(ValueError, match="at least one entry"):
        LruTable(0)


def _conversations(count: int, turns: int) -> list[ReplyCase]:
    """`count` conversations with no text in common, each turn with the user's earlier turns."""
    cases = []
    for number in range(count):
        history: list[str] = []
        for turn in range(turns):
            user = f"Conversation {number}, turn {turn}: my friend Dana {number} baked bread number {turn}."
            reply = f"Bread number {turn} with Dana sounds lovely. What kind, conversation {number}?"
            cases.append(ReplyCase(id=f"c{number}t{turn}", history=list(history), user_message=user, response=reply))
            history.append(user)
    return cases


def test_a_long_stream_keeps_at_most_the_bound_of_entries_in_every_table():
    evaluator = default_evaluator()
    cases = _conversations(count=12, turns=5)
    bound = 8
    cache = TextCache(max_parses=bound, max_texts=bound, max_histories=bound)
    peaks = dict.fromkeys(cache.sizes(), 0)
    outcomes = []
    for outcome in evaluator.score_cases(cases, batch_size=4, cache=cache):
        outcomes.append(outcome.to_record())
        peaks = {table: max(peaks[table], size) for table, size in cache.sizes().items()}
    # 60 replies, 60 user messages, 48 history turns and histories: far more than the bound.
    assert peaks == dict.fromkeys(peaks, bound)
    roomy_cache = TextCache(max_parses=10_000, max_texts=10_000, max_histories=10_000)
    roomy = [outcome.to_record() for outcome in evaluator.score_cases(cases, cache=roomy_cache)]
    assert outcomes == roomy  # eviction costs parses, never a different score


def test_a_long_text_is_shared_within_its_batch_but_not_kept_across_batches():
    evaluator = default_evaluator()
    long_reply = "I hear you, and that sounds hard. " * 80  # over the kept-text limit
    cases = [ReplyCase(id=str(index), user_message="Rough week at work.", response=long_reply) for index in range(3)]
    cache = TextCache(max_chars=200)
    list(evaluator.score_cases(cases, cache=cache))
    assert cache.views.get(("reply", long_reply)) is None
    assert cache.views.get(("user", "Rough week at work.")) is not None


def test_a_stock_reply_keeps_its_exchanges_with_at_most_the_bound_of_user_messages():
    from evaluators.scoring.reading.features import MAX_EXCHANGES_PER_REPLY

    evaluator = default_evaluator()
    reply = "I'm sorry to hear that. Do you want to talk about it?"
    cases = [ReplyCase(id=str(index), user_message=f"My plant number {index} died today.", response=reply)
             for index in range(MAX_EXCHANGES_PER_REPLY + 5)]
    cache = TextCache()
    kept = [outcome.to_record() for outcome in evaluator.score_cases(cases, cache=cache)]
    view = cache.views.get(("reply", reply))
    assert len(view._exchanges) == MAX_EXCHANGES_PER_REPLY
    alone = [next(evaluator.score_cases([case])).to_record() for case in cases]
    assert kept == alone  # past the bound a case reads its exchange for itself, to the same scores


def test_a_cache_serves_the_evaluator_that_filled_it_only():
    from evaluators.scoring.heuristics import HeuristicEvaluator

    evaluator = default_evaluator()
    cache = TextCache()
    list(evaluator.score_cases(_conversations(count=1, turns=2), cache=cache))
    other = HeuristicEvaluator(rubric=evaluator.rubric, nlp=evaluator.nlp)
    with pytest.raises(ValueError, match="another evaluator"):
        list(other.score_cases(_conversations(count=1, turns=2), cache=cache))


class CountingPipeline:
    """The real spaCy pipeline, counting the texts it is asked to parse."""

    def __init__(self, nlp) -> None:
        self.nlp = nlp
        self.parsed: list[str] = []

    def pipe(self, texts, **kwargs):
        texts = list(texts)
        self.parsed.extend(texts)
        return self.nlp.pipe(texts, **kwargs)

    def __getattr__(self, name):
        return getattr(self.nlp, name)


def test_a_conversation_parses_each_distinct_text_once_across_batches(monkeypatch):
    evaluator = default_evaluator()
    counting = CountingPipeline(evaluator.nlp)
    monkeypatch.setattr(evaluator, "nlp", counting)
    cases = _conversations(count=2, turns=10)
    list(evaluator.score_cases(cases, batch_size=3))
    distinct = {text for case in cases for text in (case.user_message, case.response, *case.history)}
    assert sorted(counting.parsed) == sorted(distinct)  # every history turn was a user message first
