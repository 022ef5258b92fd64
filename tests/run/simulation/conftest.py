"""A small project with one persona beside the scripted scenarios, for the simulation tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.project import PERSONA, write_files


@pytest.fixture
def persona_project(small_project: dict[str, Path]) -> dict[str, Path]:
    """small_project plus scenarios/personas/tester.yaml (max_turns 5)."""
    write_files(small_project["scenarios"] / "personas", {"tester.yaml": PERSONA.format(max_turns=5)})
    return small_project
