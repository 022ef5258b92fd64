"""Properties that hold for any text: scores stay in [0, 1] and scoring is deterministic."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evaluators.core.names import METRIC_NAMES
from evaluators.scoring.api import default_evaluator, score_records, validate_record
from evaluators.scoring.reading.text_cache import TextCache

# spaCy makes each example cost milliseconds; a modest number of examples, no deadline.
PROPERTY_SETTINGS = settings(max_examples=40, deadline=None, database=None,
                             suppress_health_check=[HealthCheck.too_slow])

# Arbitrary unicode (hypothesis leaves out surrogates by default), plus text built from
# words and markup the heuristics react to, so matchers and patterns actually fire.
WORDS = st.sampled_from([
    "I", "you", "feel", "giving up", "sorry", "understand", "**", "#", "`", "\n", "?", "!", "AI",
    "therapist", "I'm all you need", "cheer up", "988", "<speak>", "</speak>", "😊", "¿", "仕事",
    "always", "love", "real person", "as we discussed", "work", "stressed", "-", "1.",
])
PHRASES = st.lists(WORDS, max_size=30).map(" ".join)
TEXT = st.one_of(st.text(max_size=400), PHRASES)


def _scored(user: str, response: str, history: list[str]):
    """The scored result, or None for text the heuristics leave unscored with its reason (another language)."""
    outcome = next(score_records([{"user_message": user, "response": response, "history": history}],
                                 evaluator=default_evaluator()))
    if not hasattr(outcome, "metrics"):
        assert [notice.name for notice in outcome.notices] == ["unsupported_language"], outcome.error
        return None
    return outcome


@PROPERTY_SETTINGS
@given(user=TEXT, response=TEXT, history=st.lists(TEXT, max_size=3))
def test_every_metric_stays_in_unit_range(user, response, history):
    assume(response.strip())
    result = _scored(user, response, history)
    if result is None:
        return
    for name, value in result.values().items():
        assert 0.0 <= value <= 1.0, f"{name} = {value}"
    assert set(result.metrics) == set(METRIC_NAMES)
    for name in METRIC_NAMES:
        for item in result.metrics[name].evidence:
            assert -1.0 <= item.effect <= 1.0


@PROPERTY_SETTINGS
@given(user=TEXT, response=TEXT, history=st.lists(TEXT, max_size=3))
def test_scoring_the_same_input_twice_gives_identical_output(user, response, history):
    assume(response.strip())
    first, second = (next(score_records([{"user_message": user, "response": response, "history": history}],
                                        evaluator=default_evaluator())) for _ in range(2))
    assert first.to_record() == second.to_record()


@PROPERTY_SETTINGS
@given(responses=st.lists(TEXT, max_size=8))
def test_a_batch_gives_one_outcome_per_record_in_order(responses):
    records = [{"id": f"r{index}", "response": text} for index, text in enumerate(responses)]
    outcomes = list(score_records(records, evaluator=default_evaluator()))
    assert [outcome.id for outcome in outcomes] == [record["id"] for record in records]
    for outcome, text in zip(outcomes, responses):
        if not hasattr(outcome, "metrics"):  # unscored with a reason it carries, never silently
            assert [notice.name for notice in outcome.notices] == ["unsupported_language"]
        elif not text.strip():  # silence is scored as the failure it is
            assert [flag.name for flag in outcome.flags] == ["silent_reply"]


@PROPERTY_SETTINGS
@given(cases=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=6))
def test_batch_scoring_matches_scoring_one_at_a_time(cases):
    cases = [(user, response) for user, response in cases if response.strip()]
    evaluator = default_evaluator()
    records = [{"id": str(index), "user_message": user, "response": response}
               for index, (user, response) in enumerate(cases)]
    batched = [outcome.to_record() for outcome in score_records(records, evaluator=evaluator)]
    # One at a time: each record alone through the same path (a reply in another language is
    # unscored either way, with the same reason).
    alone = [next(score_records([record], evaluator=evaluator)).to_record() for record in records]
    assert batched == alone


def _conversation(turns: list[tuple[str, str]]) -> list[dict]:
    """One record per turn, each with the user's earlier turns as its history, as the runner builds them."""
    records, history = [], []
    for index, (user, response) in enumerate(turns):
        records.append({"id": f"t{index}", "history": list(history), "user_message": user, "response": response})
        history.append(user)
    return records


def _batch_and_alone(records: list[dict]) -> tuple[list[dict], list[dict]]:
    evaluator = default_evaluator()
    batched = [outcome.to_record() for outcome in score_records(records, evaluator=evaluator)]
    alone = [next(score_records([record], evaluator=evaluator)).to_record() for record in records]
    return batched, alone


# Turns drawn from a small pool repeat within one conversation and across its histories.
TURN = st.one_of(st.sampled_from(["I miss my sister Maya.", "Work has been rough.", "Work has been rough.",
                                  "We talked about the move to Boston.", "", "thanks"]), TEXT)


@PROPERTY_SETTINGS
@given(turns=st.lists(st.tuples(TURN, TEXT.filter(str.strip)), min_size=1, max_size=8))
def test_a_conversation_scored_as_one_batch_matches_its_turns_scored_one_by_one(turns):
    batched, alone = _batch_and_alone(_conversation(turns))
    assert batched == alone


def test_repeated_history_turns_are_read_the_same_in_a_batch_and_alone():
    """A conversation whose user repeats themselves, and whose replies pick up earlier turns:
    the shared parses of the history give the same records as scoring each turn by itself."""
    turns = [
        ("I miss my sister Maya since she moved to Boston.", "That sounds lonely. How long has it been?"),
        ("Work has been rough lately.", "I'm sorry work has been rough. What's been hardest?"),
        ("Work has been rough lately.", "You said that again, it must be weighing on you."),
        ("I miss my sister Maya since she moved to Boston.", "Have you and Maya talked since she got to Boston?"),
        ("Anyway, what should I cook tonight?", "Maybe something Maya used to make, since you miss her?"),
    ]
    batched, alone = _batch_and_alone(_conversation(turns))
    assert batched == alone
    carried = [item["text"] for item in batched[-1]["evidence"]["personalization_continuity"]
               if item["indicator"] == "history_carry_over"]
    assert carried and "maya" in carried[0].lower()  # the history was read, not left empty


def _records_of(outcomes) -> list[dict]:
    return [outcome.to_record() if hasattr(outcome, "metrics") else {"id": outcome.id, "error": outcome.error}
            for outcome in outcomes]


@PROPERTY_SETTINGS
@given(turns=st.lists(st.tuples(TURN, TEXT.filter(str.strip)), min_size=1, max_size=8),
       batch_size=st.integers(min_value=1, max_value=5), split=st.integers(min_value=0, max_value=8))
def test_a_conversation_gives_the_same_records_whatever_the_batches_and_the_cache(turns, batch_size, split):
    """One batch, batches of any size, two streams split anywhere, a stream whose cache already
    holds the conversation: what is shared by content never changes a record."""
    evaluator = default_evaluator()
    cases = [validate_record(record, record["id"]) for record in _conversation(turns)]
    whole = _records_of(evaluator.score_cases(cases))
    assert _records_of(evaluator.score_cases(cases, batch_size=batch_size)) == whole
    split = min(split, len(cases))
    cache = TextCache()
    halves = [*evaluator.score_cases(cases[:split], batch_size=batch_size, cache=cache),
              *evaluator.score_cases(cases[split:], batch_size=batch_size, cache=cache)]
    assert _records_of(halves) == whole
    assert _records_of(evaluator.score_cases(cases, cache=cache)) == whole  # every text already cached
    assert _records_of(evaluator.score_cases(cases, cache=TextCache(max_parses=1, max_texts=1, max_histories=1))) == whole


def test_a_long_conversation_reads_each_history_turn_once_and_in_order():
    """Turn k's history is turn k-1's plus one turn: the view grows by exactly that turn."""
    turns = [(f"Day {index}: I walked my dog Biscuit past the {place}.", "Nice, how was it?")
             for index, place in enumerate(["bakery", "river", "school", "park", "station", "library"])]
    cases = [validate_record(record, record["id"]) for record in _conversation(turns)]
    cache = TextCache()
    list(default_evaluator().score_cases(cases, cache=cache))
    history = cache.histories.get(tuple(user for user, _ in turns[:-1]))
    assert history is not None and history.turns == tuple(user for user, _ in turns[:-1])
    assert {"bakery", "river", "school", "park", "station", "biscuit"} <= history.anchors
    assert history.anchors == frozenset().union(*history.turn_anchors)
    assert "library" not in history.anchors  # the last user turn is the message, not history


def test_cases_sharing_a_reply_and_its_exchanges_score_as_each_case_alone():
    """One reply answering several messages under several histories: what is kept per reply
    and per exchange (features, safety readings) never carries one case's context to another."""
    reply = "Have you and Maya talked since she got to Boston? I'm sorry work has been rough."
    users = ["Work has been rough lately.", "I miss my sister Maya.", "Anyway, what should I cook tonight?"]
    histories = [[], ["I miss my sister Maya since she moved to Boston."], ["My dog Biscuit is sick.", "Hi there!"]]
    records = [{"id": f"{u}-{h}", "user_message": user, "response": reply, "history": history}
               for u, user in enumerate(users) for h, history in enumerate(histories)]
    batched, alone = _batch_and_alone(records)
    assert batched == alone
    carried = {record["id"]: [item["text"] for item in record["evidence"]["personalization_continuity"]
                              if item["indicator"] == "history_carry_over"] for record in batched}
    assert carried["0-1"] and "boston" in carried["0-1"][0].lower()  # the history was read
    assert not carried["0-0"]
