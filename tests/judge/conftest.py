"""Fixtures for the judge tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No judge or companion API in the environment, and a cache of the test's own."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PENPAL_JUDGE_BASE_URL", "PENPAL_JUDGE_API_KEY",
                 "PENPAL_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PENPAL_EVAL_CACHE", str(tmp_path / "penpal-cache"))
