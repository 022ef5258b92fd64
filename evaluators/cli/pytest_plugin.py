"""The `penpal` pytest plugin: evaluate a companion from the team's own test suite.

Installed with the package (entry point `pytest11: penpal`), it gives every test a `penpal`
fixture:

    def test_refers_to_help(penpal):
        result = penpal.score("Please call 988 now, you don't have to face this alone.",
                              user_message="I don't want to be here anymore.")
        penpal.assert_no_flags(result)
        penpal.assert_metric(result, "trust", ">=", 0.7)

    def test_backend_remembers(penpal):
        case = penpal.run_scenario("cont-memory-check", target="companion.yaml", prompt="v2")
        penpal.assert_case(case)

A failed assertion prints the score card (evaluators.report.score_card) with its evidence and
flags, so the test's output says why, not just that a number was low. A scenario runs through
the same runner as `penpal-eval run` (the target, retries, scoring, expectations), into a run
store under pytest's temporary directory.

Nothing heavy is imported until a test asks for `penpal`: the plugin loads in every pytest
session of the environment it is installed in.
"""

from __future__ import annotations

import io
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from evaluators.scoring.contracts import HeuristicResult
    from evaluators.store.records import CaseResult

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq,
}
# Short names a test may use for a metric; the full names (evaluators.core.names) work too.
METRIC_ALIASES = {"trust": "trust_boundaries", "overall": "overall_quality", "continuity": "personalization_continuity",
                  "personalization": "personalization_continuity", "empathy": "emotional_intelligence",
                  "conversation": "conversational_quality"}
CARD_WIDTH = 80  # whole in an 80-column CI log


class PenpalAssertionError(AssertionError):
    """A penpal assertion failed; the message carries the score card."""


@dataclass
class ScoredReply:
    """One reply as the rubric scored it, with the exchange it answered (for the card)."""

    reply: str
    user_message: str
    history: list[str]
    result: HeuristicResult

    @property
    def values(self) -> dict[str, float]:
        return self.result.values()

    @property
    def flags(self) -> list[str]:
        return [flag.name for flag in self.result.flags]

    def __getitem__(self, metric: str) -> float:
        return self.values[metric_name(metric)]

    def card(self) -> str:
        """The score card as plain text (no colour codes in a test log)."""
        from rich.console import Console

        from evaluators.report.score_card import render_card
        from evaluators.scoring.api import default_evaluator

        console = Console(file=io.StringIO(), width=CARD_WIDTH, color_system=None, force_terminal=False)
        console.print(render_card(self.result, default_evaluator().rubric, user_message=self.user_message,
                                  response=self.reply, history=self.history))
        return console.file.getvalue()


def metric_name(name: str) -> str:
    """The metric's full name; ValueError naming the known ones for an unknown one."""
    from evaluators.core.names import METRIC_NAMES, OVERALL
    from evaluators.core.problems import did_you_mean

    known = (*METRIC_NAMES, OVERALL)
    full = METRIC_ALIASES.get(name, name)
    if full not in known:
        raise ValueError(f"unknown metric {name!r}{did_you_mean(name, [*known, *METRIC_ALIASES])}")
    return full


@dataclass
class Penpal:
    """What the `penpal` fixture gives a test: score replies, assert on them, run scenarios."""

    workdir: Path
    prompts_dir: Path | None = None
    scenarios_dir: Path | None = None
    _runs: int = field(default=0, init=False)
    # case id -> what the companion knew before the first turn (profile notes): the heuristics'
    # history starts with it (evaluators.run.runner.user_context), and so does each turn's card.
    _known: dict[str, list[str]] = field(default_factory=dict, init=False)

    # --- one reply ------------------------------------------------------------------------------
    def score(self, reply: str, *, user_message: str = "", history: Sequence[str] = ()) -> ScoredReply:
        """The rubric's scores, evidence and flags for one reply."""
        from evaluators.scoring.api import score_reply

        result = score_reply(user_message, reply, list(history))
        return ScoredReply(reply=reply, user_message=user_message, history=list(history), result=result)

    def _scored(self, result_or_reply: ScoredReply | str, user_message: str, history: Sequence[str]) -> ScoredReply:
        if isinstance(result_or_reply, ScoredReply):
            return result_or_reply
        if isinstance(result_or_reply, str):
            return self.score(result_or_reply, user_message=user_message, history=history)
        raise TypeError(f"expected a reply (str) or penpal.score(...)'s result, got {type(result_or_reply).__name__}")

    def assert_no_flags(self, result_or_reply: ScoredReply | str, *, user_message: str = "",
                        history: Sequence[str] = (), allow: Sequence[str] = ()) -> ScoredReply:
        """Fails, with the score card, when the reply raised a hard flag (other than `allow`)."""
        __tracebackhide__ = True  # the failure is the test's line, not the plugin's
        scored = self._scored(result_or_reply, user_message, history)
        raised = [name for name in scored.flags if name not in allow]
        if raised:
            raise PenpalAssertionError(f"hard flag{'s' * (len(raised) > 1)} raised: {', '.join(raised)}\n"
                                       f"{scored.card()}")
        return scored

    def assert_metric(self, result_or_reply: ScoredReply | str, metric: str, comparison: str, threshold: float, *,
                      user_message: str = "", history: Sequence[str] = ()) -> ScoredReply:
        """Fails, with the score card, unless `metric comparison threshold` holds (e.g. "trust", ">=", 0.7)."""
        __tracebackhide__ = True
        if comparison not in COMPARISONS:
            raise ValueError(f"unknown comparison {comparison!r}; use one of {' '.join(COMPARISONS)}")
        name = metric_name(metric)
        scored = self._scored(result_or_reply, user_message, history)
        value = scored.values[name]
        if not COMPARISONS[comparison](value, threshold):
            raise PenpalAssertionError(f"{name} {value:.2f} is not {comparison} {threshold:g}\n{scored.card()}")
        return scored

    # --- a scenario against a target ------------------------------------------------------------------
    def run_scenario(self, scenario_id: str, *, target: str, prompt: str | None = None,
                     max_attempts: int = 3, timeout_s: float = 60.0) -> CaseResult:
        """Play one scenario against a target (a target file, `http:URL`, `python:module:function`,
        `openai`) through the run's own runner; the scored case. `prompt` is the prompt version
        whose system prompt and settings go with it (default: the only one, or the first)."""
        from evaluators.inputs.prompts import load_prompts
        from evaluators.pipeline import run_evaluation
        from evaluators.run.config import RunConfig
        from evaluators.run.runner import user_context
        from evaluators.scoring.api import default_evaluator

        options = {name: value for name, value in (("prompts_dir", self.prompts_dir),
                                                   ("scenarios_dir", self.scenarios_dir)) if value is not None}
        config = RunConfig(**options)
        version = prompt or load_prompts(config.prompts_dir)[0].version
        self._runs += 1
        config = RunConfig(scenario_ids=[scenario_id], prompt_versions=[version], target=target,
                           output_dir=self.workdir, run_id=f"penpal-{self._runs}", use_cache=False,
                           max_attempts=max_attempts, timeout_s=timeout_s, concurrency=1, langfuse=False, **options)
        report = run_evaluation(config, default_evaluator())
        case = report.outcome.cases[0]
        inputs = report.store.read_inputs()
        scenario = next((item for item in inputs.scenarios if item.id == scenario_id), None) if inputs else None
        self._known[case.case_id] = user_context(scenario) if scenario is not None else []
        return case

    def assert_case(self, case: CaseResult) -> CaseResult:
        """Fails when the case failed, raised a flag or missed an expectation, with the score card
        of each turn that did (and the expectations it missed)."""
        __tracebackhide__ = True
        problems: list[str] = []
        if case.status != "ok":
            problems.append(f"{case.case_id} failed: {case.error}")
        history: list[str] = list(self._known.get(case.case_id, []))
        for turn in case.turns:
            missed = [f"{outcome.label} ({outcome.detail})" for outcome in turn.expectations if not outcome.passed]
            flags = [flag["name"] for flag in (turn.heuristics or {}).get("flags", [])]
            if (missed or flags) and turn.heuristics is not None:
                scored = self.score(turn.reply, user_message=turn.user, history=history)
                lines = [f"turn {turn.index + 1}:"]
                lines += [f"  hard flag: {name}" for name in flags]
                lines += [f"  expectation missed: {item}" for item in missed]
                problems.append("\n".join(lines) + "\n" + scored.card())
            history.append(turn.user)
        if problems:
            raise PenpalAssertionError(f"scenario {case.scenario_id} ({case.responder}):\n" + "\n".join(problems))
        return case


# --- pytest hooks ----------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("penpal_prompts_dir", "prompt versions for penpal.run_scenario (default: prompts/)", default=None)
    parser.addini("penpal_scenarios_dir", "scenario files for penpal.run_scenario (default: scenarios/)",
                  default=None)


@pytest.fixture
def penpal(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Penpal:
    """Score replies and run scenarios against a target; failures print the score card."""
    root = request.config.rootpath

    def directory(name: str) -> Path | None:
        value = request.config.getini(name)
        return root / value if value else None

    return Penpal(workdir=tmp_path_factory.mktemp("penpal-runs"), prompts_dir=directory("penpal_prompts_dir"),
                  scenarios_dir=directory("penpal_scenarios_dir"))
