"""evaluators/scoring/safety/detectors.py: the shipped detectors load, score one exchange or many
alike, name the training command when their file is missing, and point at the sentence that
drove a score."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.scoring.safety.detectors import (
    DETECTORS_FILE,
    TRAIN_COMMAND,
    Detector,
    DetectorsMissing,
    detectors_path,
    load_detector_provenance,
    load_detectors,
    save_detectors,
)


def unit_rows(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(count, 384))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def bank():
    return load_detectors(detectors_path(DETECTORS_FILE))


def test_the_shipped_bank_loads_with_its_provenance(bank):
    provenance = load_detector_provenance(bank.path)
    assert set(bank.names()) == set(provenance["detectors"])
    assert "crisis_risk" in bank.names() and bank.detectors["crisis_risk"].reads == "user"
    for name in bank.names():
        record = provenance["detectors"][name]
        assert bank.detectors[name].form == record["form"]
        low, high = record["thresholds (out of fold, pooled rows)"]["uncertain"]
        assert 0.0 <= low <= high <= 1.0


def test_batch_and_single_rows_agree_and_give_probabilities(bank):
    """Of the heads over vectors (a detector the fine-tuned model serves reads text instead:
    tests/scoring/safety/test_finetuned_runtime.py)."""
    replies, users = unit_rows(5, 1), unit_rows(5, 2)
    for detector in bank.detectors.values():
        if not isinstance(detector, Detector):
            continue
        batch = detector.probability(replies, users)
        assert batch.shape == (5,) and np.all((batch >= 0) & (batch <= 1))
        single = [float(detector.probability(replies[i], users[i])) for i in range(5)]
        assert np.allclose(batch, single)
    scores = bank.score_exchange(replies[0], users[0], "Sure, happy to help.")
    assert set(scores) == set(bank.names())
    assert scores["crisis_risk"] == pytest.approx(float(bank.detectors["crisis_risk"].probability(users[0])))


def test_a_missing_file_names_the_train_command(tmp_path):
    with pytest.raises(DetectorsMissing, match=TRAIN_COMMAND.split()[-1]):
        load_detectors(tmp_path / "absent.npz")
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip")
    with pytest.raises(DetectorsMissing, match="scripts/train_detectors.py"):
        load_detectors(broken)


def test_written_heads_read_back_the_same_and_evidence_is_the_top_sentence(tmp_path):
    direction = unit_rows(1, 3)[0]
    hidden = unit_rows(384 * 3, 4)[:, :8]  # exchange features (1152) to 8 hidden units
    heads = [Detector("toward", "reply", "text", direction * 10, -1.0),
             Detector("mlp", "reply", "exchange", np.ones(8), 0.5, hidden, np.zeros(8))]
    path = tmp_path / "heads.npz"
    save_detectors(path, heads)
    loaded = load_detectors(path)
    rows, users = unit_rows(4, 5), unit_rows(4, 6)
    for head in heads:
        assert np.allclose(loaded.detectors[head.name].probability(rows, users), head.probability(rows, users),
                           atol=1e-5)
    sentences = ["far", "nearest", "other", "another"]
    vectors = rows.copy()
    vectors[1] = direction
    sentence, score = loaded.strongest_sentence("toward", sentences, vectors, users[0])
    assert sentence == "nearest"
    assert score == pytest.approx(float(heads[0].probability(direction)), abs=1e-5)
    assert loaded.strongest_sentence("mlp", [], np.zeros((0, 384)), users[0]) == ("", 0.0)
