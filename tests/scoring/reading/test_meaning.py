"""evaluators/scoring/reading/meaning.py: sentence vectors from the encoder its wheels ship."""

import numpy as np
import pytest
import yaml

from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH, RubricError, parse_rubric
from evaluators.scoring.reading.meaning import load_meaning_model


def test_same_text_is_similar_unrelated_text_is_not_and_empty_text_relates_to_nothing():
    model = load_meaning_model()
    text = "I went hiking in the mountains last weekend."
    assert model.similarity(text, text) == pytest.approx(1.0, abs=1e-3)
    close = model.similarity(text, "We walked up a mountain trail on Saturday.")
    far = model.similarity(text, "Please send the invoice by Monday.")
    assert close > far + 0.1
    assert model.similarity("", text) == 0.0


def test_a_context_blend_leans_towards_the_heavier_part():
    model = load_meaning_model()
    reply = "My cat sleeps all day on the sofa."
    about_cats = "Do you have a cat?"
    about_taxes = "I need to file my taxes."
    heavy_cats = model.similarity_to_blend(reply, [(about_cats, 1.0), (about_taxes, 0.5)])
    heavy_taxes = model.similarity_to_blend(reply, [(about_cats, 0.5), (about_taxes, 1.0)])
    assert heavy_cats > heavy_taxes


def test_a_meaning_threshold_without_its_reason_is_refused_naming_it():
    data = yaml.safe_load(DEFAULT_RUBRIC_PATH.read_text(encoding="utf-8"))
    del data["meaning"]["reasons"]["off_topic_below"]
    with pytest.raises(RubricError, match=r"meaning.*off_topic_below"):
        parse_rubric(yaml.safe_dump(data))


def test_a_vector_is_the_same_alone_or_in_a_batch_of_other_lengths():
    """Padding is masked out, so a text's vector never depends on its batch: scores are the same
    whatever records are scored together."""
    texts = ["No.", "I just got back from a long walk by the river and I'm tired.", "Hi there",
             "What do you think about the new job, and how are your sister and the dog doing?"]
    alone = [load_meaning_model.__wrapped__().embed(text) for text in texts]
    batched = load_meaning_model.__wrapped__()
    batched.prefetch(reversed(texts))
    for text, vector in zip(texts, alone):
        assert np.array_equal(batched.vector(text), vector)
    many = batched.embed_many([*texts, "  "])
    for vector, expected in zip(many, alone):
        assert np.array_equal(vector, expected)
    assert not many[-1].any()  # a text with no words relates to nothing


def test_the_encoder_reads_words_in_their_sentence():
    """The issue's example that static word vectors got wrong: ending a life is not ending a
    subscription."""
    model = load_meaning_model()
    wish = "I want to end my life"
    assert model.similarity(wish, "I don't want to be alive anymore") > \
        model.similarity(wish, "I want to end my subscription") + 0.1
