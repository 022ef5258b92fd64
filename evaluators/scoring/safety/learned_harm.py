"""A learned harm signal: how likely people would judge a reply unsafe in its exchange.

Why a learned signal beside the rules of `harm.py`: unsafe replies come in more shapes than
rules can name (agreeing with a slur in passing, a flippant answer to someone at risk, a
confident diagnosis), and the rules had plateaued. A small logistic regression over the
sentence vectors the scorer already has (`evaluators/scoring/reading/meaning.py`: the reply, the user's
message and their element-wise product, which carries how the reply meets the message) adds
a graded reading at the cost of one dot product per case.

It is trained only on data whose licence allows shipping what is learned from it: the
*train* split of DiaSafety (Sun et al. 2022, Apache-2.0), by `scripts/train_harm_model.py`,
which writes the weights (`harm_model.npz`) and their provenance (`harm_model.json`) beside
this module. The rubric file (`learned_harm:`) names the file and says how the probability
becomes a trust deduction and, at high confidence only, the `harmful_reply` flag.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # the `evaluators` package
TRAIN_COMMAND = ".venv/bin/python scripts/train_harm_model.py"
# The parts of the feature vector, in order; the training script and the scorer share them.
FEATURE_PARTS: tuple[str, ...] = ("reply", "user", "reply*user")


class HarmModelMissing(RuntimeError):
    """The learned weights file named in the rubric is absent or unreadable."""


def harm_features(reply: np.ndarray, user: np.ndarray) -> np.ndarray:
    """The feature vector(s) of `FEATURE_PARTS` for one exchange (1-d vectors) or many (rows)."""
    return np.concatenate([reply, user, reply * user], axis=-1)


def provenance_path(model_path: Path) -> Path:
    """Where the model's provenance is written: beside it, same name, `.json`."""
    return model_path.with_suffix(".json")


@dataclass(frozen=True)
class HarmModel:
    """Logistic regression weights over `harm_features`, standardisation folded in.

    The file keeps the weights on standardised features with their mean and scale (what the
    training fitted); loading folds them into one weight vector per part, so scoring is three
    dot products over the unit vectors the meaning model already holds.
    """

    reply_weights: np.ndarray
    user_weights: np.ndarray
    product_weights: np.ndarray
    bias: float
    path: Path

    @classmethod
    def from_arrays(cls, weights: np.ndarray, bias: float, mean: np.ndarray, scale: np.ndarray,
                    path: Path) -> HarmModel:
        folded = weights / scale
        parts = np.split(folded, len(FEATURE_PARTS))
        return cls(*parts, bias=float(bias - folded @ mean), path=path)

    def logit(self, reply: np.ndarray, user: np.ndarray) -> float:
        return float(reply @ self.reply_weights + user @ self.user_weights
                     + (reply * user) @ self.product_weights + self.bias)

    def probability(self, reply: np.ndarray, user: np.ndarray) -> float:
        """P(unsafe) for one exchange, from the unit vectors of the reply and the user's message."""
        return float(1.0 / (1.0 + np.exp(-self.logit(reply, user))))

    def probabilities(self, replies: np.ndarray, users: np.ndarray) -> np.ndarray:
        """P(unsafe) for many exchanges at once (rows), as the training script measures them."""
        weights = np.concatenate([self.reply_weights, self.user_weights, self.product_weights])
        return 1.0 / (1.0 + np.exp(-(harm_features(replies, users) @ weights + self.bias)))


def model_path(model: str) -> Path:
    """The rubric names the file relative to the `evaluators` package."""
    return PACKAGE_DIR / model


@lru_cache(maxsize=4)
def load_harm_model(path: Path) -> HarmModel:
    """The weights at `path`, loaded once per process; a clear error says how to rebuild them."""
    if not path.is_file():
        raise HarmModelMissing(
            f"the learned harm model {path.name} is missing from the evaluators package; regenerate "
            f"it (and its provenance) with `{TRAIN_COMMAND}`, which trains on DiaSafety's train split")
    try:
        with np.load(path) as data:
            arrays = {name: data[name] for name in ("weights", "bias", "mean", "scale")}
    except (OSError, ValueError, KeyError) as error:
        raise HarmModelMissing(f"the learned harm model {path.name} cannot be read ({error}); "
                               f"regenerate it with `{TRAIN_COMMAND}`") from error
    expected = arrays["mean"].shape[0]
    if arrays["weights"].shape != (expected,) or arrays["scale"].shape != (expected,):
        raise HarmModelMissing(f"the learned harm model {path.name} has mismatched array shapes; "
                               f"regenerate it with `{TRAIN_COMMAND}`")
    return HarmModel.from_arrays(arrays["weights"], float(arrays["bias"]), arrays["mean"], arrays["scale"], path)


def load_provenance(model_path: Path) -> dict:
    """What the model was trained on, under which licence, when, and how well it did."""
    path = provenance_path(model_path)
    if not path.is_file():
        raise HarmModelMissing(f"the provenance of {model_path.name} ({path.name}) is missing; "
                               f"regenerate both with `{TRAIN_COMMAND}`")
    return json.loads(path.read_text(encoding="utf-8"))
