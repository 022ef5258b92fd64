"""Awkward replies: each gets a score in [0, 1] or a clear per-record error, never a crash."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from evaluators import METRIC_COLUMNS, HeuristicResult, Unscored, score_frame, score_records, score_reply

USER = "I'm feeling stressed about work."
PLAIN = "That sounds hard. Try taking short breaks, and maybe make a simple list of what matters most today."
MARKDOWN = (
    "## That sounds hard\n\n"
    "**Try these:**\n\n"
    "1. *Take* short breaks\n"
    "2. Make a simple `list` of what matters most today\n\n"
    "- [more tips](https://example.com)"
)
SSML_PLAIN = "Hello"
SSML = '<speak><break time="1s"/>Hello</speak>'

ODD_REPLIES = {
    "very-long": ("I hear you, and that sounds like a lot to carry. " * 2_100)[:100_000],
    "emoji-only": "😊🎉💖🤗",
    "markdown": MARKDOWN,
    "ssml": SSML,
    "html": "<div><p>That sounds <b>really</b> hard.</p><ul><li>Take a break</li></ul><br/></div>",
    "control-chars": "Hi\x00 there\x07, how\u200b are you?\ufeff",
}

# The heuristics read English only: these come back unscored with a notice, not as scores.
FOREIGN_REPLIES = {
    "spanish": "Lo siento mucho. ¿Quieres contarme qué pasó en el trabajo?",
    "japanese": "それは大変でしたね。仕事で何があったのか話してくれますか？",
    "arabic": "أنا آسف جدًا لسماع ذلك. هل تريد التحدث عن ذلك؟",
}


def assert_in_unit_range(result: HeuristicResult) -> None:
    for name, value in result.values().items():
        assert 0.0 <= value <= 1.0, f"{name} = {value}"
        assert not math.isnan(value)


def test_the_long_reply_really_is_100k_characters():
    assert len(ODD_REPLIES["very-long"]) == 100_000


@pytest.mark.parametrize("response", ["", "   ", "\n\t  \r\n", "\u3000\u2003", "\u200b"])
def test_empty_and_whitespace_replies_are_scored_as_silence(response):
    """A silent companion failed its turn: scored by the silent_reply flag, with the reason, not an error."""
    result = score_reply(USER, response)
    assert [flag.name for flag in result.flags] == ["silent_reply"]
    assert result.flags[0].text.startswith("the reply is empty")
    assert result.quality_level == "Unacceptable"
    assert all(value <= 0.1 for value in result.values().values())
    [outcome] = score_records([{"id": "blank", "user_message": USER, "response": response}])
    assert isinstance(outcome, HeuristicResult) and outcome.id == "blank"
    assert outcome.flags[0].name == "silent_reply"


def test_a_blank_reply_does_not_sink_its_batch():
    outcomes = list(score_records([
        {"id": "ok-1", "user_message": USER, "response": PLAIN},
        {"id": "blank", "user_message": USER, "response": ""},
        {"id": "no-reply", "user_message": USER},
        {"id": "ok-2", "user_message": USER, "response": PLAIN},
    ]))
    assert [type(o).__name__ for o in outcomes] == ["HeuristicResult", "HeuristicResult", "Unscored", "HeuristicResult"]
    assert [o.id for o in outcomes] == ["ok-1", "blank", "no-reply", "ok-2"]
    assert "response" in outcomes[2].error  # a missing reply is a broken record, not silence


@pytest.mark.parametrize("name", sorted(ODD_REPLIES))
def test_odd_replies_each_get_a_score_in_range(name):
    result = score_reply(USER, ODD_REPLIES[name])
    assert_in_unit_range(result)
    assert result.quality_level


@pytest.mark.parametrize("name", sorted(FOREIGN_REPLIES))
def test_replies_in_other_languages_are_scored_as_the_wrong_language(name):
    """The user wrote English: a reply they may not follow failed the turn, scored by wrong_language."""
    result = score_reply(USER, FOREIGN_REPLIES[name])
    assert [flag.name for flag in result.flags] == ["wrong_language"]
    assert result.flags[0].text.startswith(f"the reply reads as {name.capitalize()}")
    assert result.flags[0].text.endswith("the conversation is in English")
    assert all(value <= 0.1 for value in result.values().values())


@pytest.mark.parametrize("name", sorted(FOREIGN_REPLIES))
def test_a_user_message_in_another_language_is_left_unscored_with_a_notice(name):
    message = "Lo siento, ya no quiero vivir. Nadie me echaría de menos si desapareciera."
    with pytest.raises(ValueError, match="unsupported_language"):
        score_reply(message, FOREIGN_REPLIES[name])
    [outcome] = score_records([{"id": name, "user_message": message, "response": FOREIGN_REPLIES[name]}])
    assert isinstance(outcome, Unscored)
    assert [notice.name for notice in outcome.notices] == ["unsupported_language"] * 2
    assert outcome.notices[0].text.startswith("the user message reads as Spanish")
    assert outcome.to_record()["notices"][0]["name"] == "unsupported_language"


def test_odd_user_messages_and_history_are_scored_too():
    result = score_reply("😊" * 500, PLAIN, history=["", "<speak>hi</speak>", "**bold**", "x" * 50_000])
    assert_in_unit_range(result)


def test_markdown_lowers_appropriateness_against_the_same_text_plain():
    plain = score_reply(USER, PLAIN)
    markdown = score_reply(USER, MARKDOWN)
    assert markdown.metrics["appropriateness"].value < plain.metrics["appropriateness"].value


def test_ssml_lowers_appropriateness_against_the_same_text_plain():
    plain = score_reply("Hi!", SSML_PLAIN)
    ssml = score_reply("Hi!", SSML)
    assert ssml.metrics["appropriateness"].value < plain.metrics["appropriateness"].value


def test_a_mixed_batch_via_score_frame_returns_one_row_per_input_in_order():
    rows = [{"id": "plain", "user_message": USER, "response": PLAIN, "history": []}]
    rows += [{"id": name, "user_message": USER, "response": text, "history": []}
             for name, text in (ODD_REPLIES | FOREIGN_REPLIES).items()]
    rows += [
        {"id": "empty", "user_message": USER, "response": "", "history": []},
        {"id": "whitespace", "user_message": USER, "response": " \n\t ", "history": []},
        {"id": "missing-fields", "response": "Hi there! How's your week going?"},  # NaN cells in the frame
        {"id": "no-response", "user_message": USER},
    ]
    frame = pd.DataFrame(rows)
    scored = score_frame(frame)

    assert len(scored) == len(rows)
    assert list(scored["id"]) == [row["id"] for row in rows]
    failed = {"no-response"}
    flagged = {"empty": "silent_reply", "whitespace": "silent_reply"} | {name: "wrong_language" for name in FOREIGN_REPLIES}
    for _, row in scored.iterrows():
        if row["id"] in failed:
            assert isinstance(row["error"], str) and row["error"]
            assert all(math.isnan(row[name]) for name in METRIC_COLUMNS)
            assert pd.isna(row["quality_level"])
        else:
            assert pd.isna(row["error"]), row["error"]
            assert all(0.0 <= row[name] <= 1.0 for name in METRIC_COLUMNS)
        if row["id"] in flagged:
            assert row["flags"] == [flagged[row["id"]]]
        assert row["notices"] == []
    errors = dict(zip(scored["id"], scored["error"]))
    assert "response" in errors["no-response"]


def test_score_frame_error_column_is_none_for_scored_rows_and_a_reason_otherwise():
    frame = pd.DataFrame([
        {"id": "ok", "user_message": "hi", "response": "Hi there, how's your day going?"},
        {"id": "blank", "user_message": "hi", "response": "   "},
        {"id": "no-reply", "user_message": "hi"},
    ])
    result = score_frame(frame)
    assert result.loc[0, "error"] is None and result.loc[1, "error"] is None
    assert result.loc[1, "flags"] == ["silent_reply"]
    assert "response" in result.loc[2, "error"]
    assert math.isnan(result.loc[2, "overall_quality"])
