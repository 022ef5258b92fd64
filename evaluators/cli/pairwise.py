"""`penpal-eval pairwise`: two prompt versions of a run judged head to head, and `run --pairwise`.

Presentation only: the judging is evaluators.judge.pairwise, the pairs and the storing
evaluators.release.pairwise_run, the win rates evaluators.release.head_to_head.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from evaluators.cli.common import EXIT_OK, EXIT_USAGE, RubricOption, fail
from evaluators.cli.judge import JudgeCacheOption, JudgeModelOption
from evaluators.cli.release import _read, _results_console, load_rubric_option
from evaluators.core.locations import display_path
from evaluators.core.text import plural
from evaluators.inputs.contracts import Scenario
from evaluators.judge.factory import JudgeConfig, JudgeConfigError, create_judge
from evaluators.judge.pairwise import PairwiseJudge
from evaluators.release.contracts import HeadToHead
from evaluators.release.pairwise_run import PairwiseError, PairwiseOutcome, chosen_pairs, judge_pairs, store_results
from evaluators.report.console import stderr_console
from evaluators.report.terminal import head_to_head_table
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult
from evaluators.store.run_store import PAIRWISE, RunStore, StoreError

EXIT_UNSCORED = 1  # some comparison has no verdict in both orders (the call failed or the answer was unreadable)


def pairwise_judge(config: JudgeConfig, rubric: Rubric) -> PairwiseJudge:
    """The pairwise judge on the reply judge's endpoint and cache (exit 2 naming what is missing)."""
    try:
        return PairwiseJudge(create_judge(config, rubric, os.environ))
    except JudgeConfigError as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None


def judge_and_store(judge: PairwiseJudge, store: RunStore, cases: Sequence[CaseResult],
                    scenarios: Sequence[Scenario], pairs: Sequence[tuple[str, str]]) -> PairwiseOutcome:
    """Judge the pairs and keep the comparisons in the run store (exit 2 when nothing can be compared)."""
    try:
        outcome = asyncio.run(judge_pairs(judge, cases, scenarios, pairs))
    except PairwiseError as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    store_results(store, outcome.results)
    return outcome


def print_head_to_head(results: Sequence[HeadToHead], outcome: PairwiseOutcome | None, store: RunStore) -> None:
    """The tables on stdout; where the results went, what it cost and what was left out on stderr."""
    console = _results_console()
    for figures in results:
        console.print(head_to_head_table(figures))
    errors = stderr_console()
    for figures in outcome.results if outcome is not None else results:
        failed = [comparison for comparison in figures.comparisons if comparison.outcome is None]
        for comparison in failed[:5]:
            where = f"turn {comparison.turn}" if comparison.turn else "conversation"
            errors.print(Text(f"no verdict: {figures.candidate} vs {figures.baseline}, {comparison.scenario_id} "
                              f"{where}: {comparison.error}", style="yellow"))
        if len(failed) > 5:
            errors.print(Text(f"  ... and {len(failed) - 5} more (see {display_path(store.directory / PAIRWISE)})",
                              style="yellow"))
    if outcome is not None:
        compared = sum(len(figures.comparisons) for figures in outcome.results)
        errors.print(Text(f"pairwise: {plural(compared, 'comparison')} in both orders, {outcome.calls} API calls "
                          f"({outcome.cached} comparisons from cache); results in "
                          f"{display_path(store.directory / PAIRWISE)}"))


def pairwise(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (runs/RUN_ID).", show_default=False)],
    a: Annotated[str | None, typer.Option(
        "--a", help="The candidate version. With --b; default: every version against its baseline.",
        show_default=False)] = None,
    b: Annotated[str | None, typer.Option("--b", help="The version --a is compared with.", show_default=False)] = None,
    judge_model: JudgeModelOption = None,
    judge_cache: JudgeCacheOption = True,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Judge calls at once.")] = 4,
    timeout: Annotated[float, typer.Option(min=0.001, help="Per-call timeout in seconds.")] = 120.0,
    max_attempts: Annotated[int, typer.Option(min=1, help="Attempts per call (429, 5xx, timeouts).")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the win rates as JSON instead of the tables.")] = False,
    rubric_path: RubricOption = None,
) -> None:
    """Judge two prompt versions of a run head to head: win rate with its interval, per family.

    Each scenario turn both versions answered goes to the pairwise judge (the judge's endpoint:
    PENPAL_JUDGE_BASE_URL and PENPAL_JUDGE_API_KEY, else the OPENAI_* variables) in both orders;
    a verdict that changes with the order is a tie and counts as position bias. The results go
    to pairwise.json in the run directory, where `decide` and `report` read them. Exit codes:
    0 every comparison has a verdict; 1 some comparison has none (failed or unreadable); 2 bad
    arguments or inputs.
    """
    rubric = load_rubric_option(rubric_path)
    run = _read(run_dir, rubric)
    try:
        pairs = chosen_pairs(run.cases, run.baselines, a, b)
        store = RunStore.open(run.directory)
        inputs = store.read_inputs()
    except (PairwiseError, StoreError) as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    config = JudgeConfig(model=judge_model, use_cache=judge_cache, timeout_s=timeout, max_attempts=max_attempts,
                         concurrency=concurrency)
    judge = pairwise_judge(config, rubric)
    outcome = judge_and_store(judge, store, run.cases, inputs.scenarios if inputs else [], pairs)
    if as_json:
        typer.echo(json.dumps([figures.model_dump(mode="json", exclude={"comparisons"})
                               for figures in outcome.results], indent=2, ensure_ascii=False))
        print_head_to_head([], outcome, store)
    else:
        print_head_to_head(outcome.results, outcome, store)
    unscored = any(figures.unscored for figures in outcome.results)
    raise typer.Exit(code=EXIT_UNSCORED if unscored else EXIT_OK)
