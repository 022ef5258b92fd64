"""Fixtures for the scoring tests: one evaluator (spaCy loads once per session)."""

from __future__ import annotations

import pytest

from evaluators.scoring.api import default_evaluator, score_reply
from evaluators.scoring.contracts import HeuristicResult


@pytest.fixture(scope="session")
def score():
    """score(user, response, history=()) -> HeuristicResult, on the packaged rubric."""
    evaluator = default_evaluator()

    def _score(user: str, response: str, history: tuple[str, ...] = ()) -> HeuristicResult:
        return score_reply(user, response, history, evaluator=evaluator)

    return _score
