"""The fine-tuned reply model: the safety detectors it serves read the reply's text through an
encoder fine-tuned for them, not a head over the frozen sentence vector.

Why a model of its own: a linear head can only read what the frozen int8 MiniLM vector already
separates; `scripts/finetune_detectors.py` fine-tunes the same encoder (mean pooling, one
logistic head per detector) and ships it only for the detectors its stated rule says it beats
the linear heads on, held out (its verdict, in `finetuned_reply.json`). detectors.json marks
those detectors `"method": "finetuned_onnx"`; the others stay linear.

The file is an int8 ONNX export (inputs `input_ids` and `attention_mask`, output
`probabilities`, one column per head). It reads the meaning model's tokenizer file (the same
vocabulary as the encoder it was tuned from), truncated to the `max_length` word pieces it was
trained on, and runs on onnxruntime on the CPU, without torch. Its price is a forward pass per
distinct reply text (`benchmarks/throughput.py` times it on its own line); probabilities are
kept by text, so a reply that recurs across a run, or a sentence asked for as evidence twice,
is scored once, and a run scores its distinct replies up front (`prefetch`).

Why one text per pass, where the meaning model batches texts of similar length: onnxruntime's
dynamic quantisation scales the activations by the range of the whole batch tensor, padding
included, so a text scored beside others gets a slightly different probability than alone (up
to 0.017 on the contract sample, 0.002 on average, over the throughput benchmark's replies).
A detector's score must be the reply's own, whatever else the run holds, or a reply near a
threshold would flag in one run and not in another. Alone costs no more CPU there (8.9 s against
9.3 s batched, one thread, 1159 replies of median 84 word pieces): replies are long enough that
batching saved little. `batch_texts` > 1 batches by similar length, for a model whose scores do
not depend on the batch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from evaluators.scoring.reading.lru import ModelOutputs
from evaluators.scoring.reading.meaning import model_files, padded_batches

MODEL_FILE = "finetuned_reply.onnx"
INPUTS = frozenset({"input_ids", "attention_mask"})
OUTPUT = "probabilities"
SHIP = "ship"
# Intra-op threads at most: the machine the throughput target is set on has two cores, and the
# parse and the meaning model share them.
MAX_THREADS = 2
# Texts per forward pass (see the module's docstring for why one).
BATCH_TEXTS = 1
# Distinct texts whose probabilities are kept per process: replies and evidence sentences
# (a few floats each, so the bound is about the dictionary, not the arrays).
CACHE_TEXTS = 8192


class FinetunedModelUnreadable(ValueError):
    """The fine-tuned model's file, or its provenance beside it, is missing or does not fit
    the contract (inputs, output, heads)."""


class FinetunedReplyModel:
    """P(behaviour) for each head of the fine-tuned model, by reply text.

    With one text per pass (the default) a text's probabilities depend on the text alone, so
    they are the same however a run groups its texts, and kept by text.
    """

    def __init__(self, session, tokenizer, heads: Sequence[str], batch_texts: int = BATCH_TEXTS) -> None:
        inputs = {item.name for item in session.get_inputs()}
        if inputs != INPUTS:
            raise FinetunedModelUnreadable(f"the model takes {sorted(inputs)}, not {sorted(INPUTS)}")
        outputs = [item.name for item in session.get_outputs()]
        if OUTPUT not in outputs:
            raise FinetunedModelUnreadable(f"the model has no `{OUTPUT}` output (it has {outputs})")
        width = session.get_outputs()[outputs.index(OUTPUT)].shape[-1]
        if isinstance(width, int) and width != len(heads):
            raise FinetunedModelUnreadable(f"the model has {width} heads, its provenance names {len(heads)}")
        self._session = session
        self._tokenizer = tokenizer
        self._batch_texts = batch_texts
        self.heads: tuple[str, ...] = tuple(heads)
        self._column = {name: column for column, name in enumerate(self.heads)}
        # Per instance: the probabilities belong to this model.
        self._scores: ModelOutputs[np.ndarray] = ModelOutputs(CACHE_TEXTS)

    def column(self, name: str) -> int:
        """The output column of head `name`."""
        return self._column[name]

    def probabilities(self, text: str) -> np.ndarray:
        """Every head's probability for the text, kept for the next case that reads it."""
        return self._scores.get(text, lambda one: self.score_many([one])[0])

    def probability(self, name: str, text: str) -> float:
        return float(self.probabilities(text)[self._column[name]])

    def prefetch(self, texts: Iterable[str]) -> None:
        """Score the texts not yet kept, all at once before the cases read them one by one: the
        tokenizer encodes them together, and with `batch_texts` > 1 they share passes."""
        self._scores.fill(texts, self.score_many)

    def score_many(self, texts: list[str]) -> np.ndarray:
        """Probabilities (texts × heads), computed afresh (in batches of similar length when
        `batch_texts` > 1), nothing kept: the model's own cost for the texts (the throughput
        benchmark's floor)."""
        scores = np.zeros((len(texts), len(self.heads)), dtype=np.float32)
        if not texts:
            return scores
        encodings = self._tokenizer.encode_batch(list(texts))
        for batch, ids, mask in padded_batches(encodings, self._batch_texts):
            found = np.asarray(self._session.run([OUTPUT], {"input_ids": ids, "attention_mask": mask})[0])
            if found.shape != (len(batch), len(self.heads)):
                raise FinetunedModelUnreadable(f"the model gave {found.shape} for {len(batch)} texts "
                                               f"and {len(self.heads)} heads")
            scores[batch] = found
        scores.setflags(write=False)
        return scores


def provenance_of(model_path: Path) -> dict:
    """The model's provenance and use, beside it (`finetuned_reply.json`)."""
    provenance = model_path.with_suffix(".json")
    try:
        document = json.loads(provenance.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise FinetunedModelUnreadable(f"its provenance {provenance.name} cannot be read ({error})") from error
    heads, length = document.get("heads"), document.get("max_length")
    if not isinstance(heads, list) or not heads or not isinstance(length, int) or length < 3:
        raise FinetunedModelUnreadable(f"{provenance.name} names no heads or no max_length")
    return document


def shipped_heads(document: dict) -> tuple[str, ...]:
    """The heads whose verdict is "ship": only those are read; the others stay linear."""
    verdict = document.get("verdict") or {}
    return tuple(name for name in document["heads"] if verdict.get(name) == SHIP)


def session_of(model_path: Path):
    """An onnxruntime session on the CPU, built as the meaning model builds its own (quiet, idle
    threads asleep rather than spinning on the cores the parse needs), at most `MAX_THREADS`."""
    import onnxruntime

    if not model_path.is_file():
        raise FinetunedModelUnreadable(f"{model_path.name} is missing")
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = max(1, min(MAX_THREADS, os.cpu_count() or 1))
    options.inter_op_num_threads = 1
    try:
        return onnxruntime.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime's errors share no base class below Exception
        raise FinetunedModelUnreadable(f"{model_path.name} cannot be read ({error})") from error


def tokenizer_for(max_length: int, tokenizer_path: Path | None = None):
    """The meaning model's tokenizer file, read afresh (its truncation is this model's own):
    [CLS] ... [SEP] by its post-processor, at most `max_length` word pieces in all."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path or model_files()[0]))
    tokenizer.no_padding()  # batches are padded here, to their own longest text
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


@lru_cache(maxsize=4)
def load_finetuned_model(model_path: Path) -> FinetunedReplyModel:
    """The model at `model_path` with the heads its provenance names, loaded once per process;
    FinetunedModelUnreadable says what is wrong with it."""
    document = provenance_of(model_path)
    session = session_of(model_path)
    return FinetunedReplyModel(session, tokenizer_for(document["max_length"]), document["heads"])
