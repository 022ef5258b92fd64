"""Export a fine-tuned reply model to the shipped ONNX contract (issue 25, point 3).

Why a module of its own: the export is what the run time reads, so its inputs and outputs are
fixed by one short piece of code that both the measurement (`scripts/finetune_detectors.py`) and
its test call. Training time only: torch, onnx and onnxruntime's quantiser are imported inside the
functions, so importing this module needs none of them.

The exported graph is the encoder, mean pooling over real word pieces, one logistic head per
detector and the sigmoid: inputs ``input_ids`` and ``attention_mask`` (int64, [batch, sequence],
dynamic axes; no ``token_type_ids``), output ``probabilities`` (float32, [batch, heads]). It is
exported in float, then quantised to int8 with onnxruntime's dynamic quantisation, as the shipped
meaning model is.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

INPUTS = ("input_ids", "attention_mask")
OUTPUT = "probabilities"
OPSET = 17


def export_int8(model, path: Path) -> None:
    """Write `model` (a `finetune_detectors.build_model` module) as an int8 ONNX file at `path`."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class Probabilities(torch.nn.Module):
        """The model's logits through the sigmoid: what the run time reads."""

        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return torch.sigmoid(self.inner(input_ids, attention_mask))

    model.eval()
    # Eager attention traces the padding mask as graph operations; the default kernel's choices
    # depend on the traced shapes.
    previous = model.encoder.config._attn_implementation
    model.encoder.set_attn_implementation("eager")
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
            OUTPUT: {0: "batch"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        float_path = Path(scratch) / "float.onnx"
        with torch.no_grad():
            torch.onnx.export(Probabilities(model).eval(), (ids, mask), str(float_path), input_names=list(INPUTS),
                              output_names=[OUTPUT], dynamic_axes=axes, opset_version=OPSET, dynamo=False)
        quantize_dynamic(str(float_path), str(path), weight_type=QuantType.QInt8)
    model.encoder.set_attn_implementation(previous)


def session(path: Path):
    """An onnxruntime session on one thread (training machines share their cores)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def run_time_tokenizer(max_length: int):
    """The meaning model's tokenizer file, truncating to `max_length` word pieces: the run time
    reads replies through exactly this."""
    from tokenizers import Tokenizer

    from evaluators.scoring.reading.meaning import model_files

    tokenizer = Tokenizer.from_file(str(model_files()[0]))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def encode(tokenizer, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """input_ids and attention_mask of `texts`, padded with 0 to the batch's longest."""
    encodings = tokenizer.encode_batch(texts)
    width = max(len(item.ids) for item in encodings)
    ids = np.zeros((len(texts), width), np.int64)
    mask = np.zeros((len(texts), width), np.int64)
    for row, item in enumerate(encodings):
        ids[row, :len(item.ids)] = item.ids
        mask[row, :len(item.ids)] = 1
    return ids, mask


def onnx_scores(path: Path, texts: list[str], max_length: int, batch: int = 32) -> np.ndarray:
    """[rows, heads] probabilities of the exported model, batched by similar length."""
    runner, tokenizer = session(path), run_time_tokenizer(max_length)
    order = np.argsort([len(text) for text in texts], kind="stable")
    out: np.ndarray | None = None
    for start in range(0, len(order), batch):
        chosen = order[start:start + batch]
        ids, mask = encode(tokenizer, [texts[i] for i in chosen])
        probabilities = runner.run([OUTPUT], {"input_ids": ids, "attention_mask": mask})[0]
        if out is None:
            out = np.zeros((len(texts), probabilities.shape[1]), np.float32)
        out[chosen] = probabilities
    return out if out is not None else np.zeros((0, 0), np.float32)
