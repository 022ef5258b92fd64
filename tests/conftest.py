"""Fixtures shared across the suite: the local OpenAI-compatible and Langfuse-compatible servers,
small run inputs, and the opt-in switch for tests that start a real model (llama.cpp)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluators.store.run_store import RunStore
from tests.servers.langfuse import LangfuseCompatServer
from tests.servers.llama import running_llama_server
from tests.servers.openai_compat import OK, FaultPlan, OpenAICompatServer
from tests.support.paths import PROJECT_ROOT
from tests.support.project import PROMPT, RECORDED, SCENARIOS, write_files


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--llm", action="store_true", default=False,
                     help="also run tests marked 'llm' that start a real local model (llama.cpp)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "llm: starts a real local LLM through llama.cpp (opt in with --llm)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--llm"):
        return
    skip = pytest.mark.skip(reason="starts a real local LLM; opt in with --llm (scripts/test.sh does)")
    for item in items:
        if "llm" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shipped_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, RunStore]:
    """The README's main job, once per session: scripts/evaluate_prompts.py as a user runs it (a fresh
    working directory, no API variables), replaying the shipped versions over every scenario."""
    workdir = tmp_path_factory.mktemp("fresh")
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    completed = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "evaluate_prompts.py"), "--output", str(workdir / "runs"),
         "--run-id", "shipped"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=900,
    )
    return completed, RunStore.open(workdir / "runs" / "shipped")


@pytest.fixture(autouse=True)
def own_judge_calibration(monkeypatch, tmp_path_factory) -> Path:
    """Each test its own judge calibration record (evaluators.judge.calibration_record): no test
    reads the project's record or writes into it."""
    path = tmp_path_factory.mktemp("calibration") / "judge-calibration.json"
    monkeypatch.setenv("PENPAL_JUDGE_CALIBRATION", str(path))
    return path


@pytest.fixture
def openai_server() -> Iterator[callable]:
    """openai_server(faults=..., latency_s=..., answers=..., refused_formats=...) -> a started server,
    stopped after the test."""
    started: list[OpenAICompatServer] = []

    def start(faults: FaultPlan = lambda call: OK, latency_s: float = 0.0, **options) -> OpenAICompatServer:
        server = OpenAICompatServer(faults=faults, latency_s=latency_s, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def langfuse_server() -> Iterator[callable]:
    """langfuse_server(faults=..., public_key=..., events_only=...) -> a started Langfuse stand-in,
    stopped after the test. Each server gets its own public key unless one is given, because the
    Langfuse SDK keeps one client per public key for the whole process."""
    started: list[LangfuseCompatServer] = []

    def start(**options) -> LangfuseCompatServer:
        options.setdefault("public_key", f"pk-lf-test-{uuid.uuid4().hex[:12]}")
        server = LangfuseCompatServer(**options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def no_api_configured(monkeypatch):
    """No companion API in the environment: a run replays unless a test points it at a server."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


# --- a small project: two prompt versions, three scenarios, recorded replies ------------------------
@pytest.fixture
def small_project(tmp_path: Path) -> dict[str, Path]:
    """Directories for prompts (v1, v2), scenarios (3, one with 3 turns) and recordings."""
    prompts = write_files(tmp_path / "prompts", {"v1.md": PROMPT.format(version="v1", baseline="null"),
                                                 "v2.md": PROMPT.format(version="v2", baseline="v1")})
    scenarios = write_files(tmp_path / "scenarios", SCENARIOS)
    recorded = write_files(tmp_path / "recorded", {"mixed.yaml": RECORDED})
    return {"prompts": prompts, "scenarios": scenarios, "recorded": recorded, "runs": tmp_path / "runs",
            "cache": tmp_path / "cache", "root": tmp_path}


# --- a real model: llama.cpp's OpenAI server with SmolLM2-135M (tests marked llm) -------------------
@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[str]:
    """The base URL of a llama.cpp OpenAI server, started once for every llm test of the session."""
    with running_llama_server(tmp_path_factory.mktemp("llama") / "server.log") as base_url:
        yield base_url
