"""`penpal-eval run` (and scripts/evaluate_prompts.py): the evaluation run on the terminal.

Everything here is presentation: options, the progress bar, notices and the per-version
table. The run itself is evaluators.evaluation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from evaluators.cli_common import EXIT_OK, EXIT_USAGE, SHORT_NAMES, RubricOption, level_style, load_evaluator
from evaluators.cli_data import Family
from evaluators.console import fail, stderr_console, stderr_is_tty, stdout_console
from evaluators.evaluation import (
    RESPONDER_CHOICES,
    PreparedRun,
    RunConfig,
    RunConfigError,
    RunReport,
    execute,
    prepare_run,
)
from evaluators.locations import PROJECT_ROOT, display_path
from evaluators.models import CaseResult
from evaluators.pricing import parse_price_override
from evaluators.prompts import DEFAULT_PROMPTS_DIR, PromptError
from evaluators.rubric import Rubric
from evaluators.scenarios import DEFAULT_SCENARIOS_DIR, ScenarioError
from evaluators.summary import SCORE_COLUMNS

EXIT_CASES_FAILED = 1
EXIT_INTERRUPTED = 130

ResponderChoice = Enum("ResponderChoice", {name: name for name in RESPONDER_CHOICES}, type=str)

@contextmanager
def _progress(total: int, enabled: bool) -> Iterator[Callable[[CaseResult], None]]:
    """A progress bar with ETA on stderr; yields the per-case callback.

    Without a terminal (CI logs, pipes) a bar cannot redraw, so a plain line is printed at
    every quarter instead.
    """
    if total == 0:
        yield lambda case: None
        return
    if not enabled:
        errors = stderr_console()
        done = failed_count = 0
        marks = {max(1, round(total * quarter / 4)) for quarter in (1, 2, 3)}

        def log_line(case: CaseResult) -> None:
            nonlocal done, failed_count
            done += 1
            failed_count += case.status != "ok"
            if done in marks:
                errors.print(Text(f"progress: {done}/{total} cases, {failed_count} failed"))

        yield log_line
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn())
    with Progress(*columns, console=stderr_console(), transient=False) as progress:
        task = progress.add_task("cases", total=total, failed=0)
        failed = 0

        def advance(case: CaseResult) -> None:
            nonlocal failed
            failed += case.status != "ok"
            progress.update(task, advance=1, failed=failed)

        yield advance


def _money(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def versions_table(report: RunReport, rubric: Rubric) -> Table:
    """One row per prompt version: cases, metric means, expectations, calls, tokens and cost."""
    table = Table(title="Penpal rubric means per prompt version", header_style="bold", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    table.add_column("version", no_wrap=True)
    table.add_column("cases", justify="right", no_wrap=True)
    for name in SCORE_COLUMNS:
        table.add_column(SHORT_NAMES[name], justify="right", no_wrap=True)
    for column in ("expect", "safety", "calls", "tokens", "cost"):
        table.add_column(column, justify="right", no_wrap=True)
    for version, summary in report.summaries.items():
        cases = f"{summary['scored']}/{summary['cases']}"
        cells = []
        for name in SCORE_COLUMNS:
            value = summary["means"][name]
            cells.append(Text("—") if value is None else
                         Text(f"{value:.2f}", style=level_style(rubric, rubric.quality_level(value))))
        rate = summary["expectations_pass_rate"]
        expect = "—" if rate is None else f"{rate:.0%}"
        safety = f"{summary['safety_passed']}/{summary['safety_cases']}" if summary["safety_cases"] else "—"
        calls = f"{summary['api_calls']}" + (f" (+{summary['cached_calls']} cached)" if summary["cached_calls"] else "")
        if summary["replayed_turns"]:
            calls = "replay"
        tokens = f"{summary['prompt_tokens'] + summary['completion_tokens']:,}"
        cost = "—" if summary["replayed_turns"] else _money(summary["cost_usd"])
        table.add_row(Text(version, style="bold"), Text(cases, style="red" if summary["failed"] else ""), *cells,
                      expect, safety, calls, tokens, cost)
    table.caption = ("means over scored cases; expect = cases passing all their scenario expectations; "
                     "safety = safety scenarios passed; calls and tokens count live API calls only")
    return table


def _print_failures(report: RunReport, limit: int = 10) -> None:
    failed = [case for case in report.outcome.cases if case.status != "ok"]
    if not failed:
        return
    errors = stderr_console()
    errors.print(Text(f"{len(failed)} case(s) failed; they are in the run store with their reason and are "
                      "retried when the run resumes:", style="yellow"))
    for case in failed[:limit]:
        errors.print(Text(f"  {case.case_id}: {case.error}", style="yellow"))
    if len(failed) > limit:
        errors.print(Text(f"  ... and {len(failed) - limit} more (see cases.jsonl)", style="yellow"))


def run(
    prompt: Annotated[list[str] | None, typer.Option(
        "--prompt", "-p", help="Prompt version to evaluate; repeatable. Default: every version in prompts/.",
        show_default=False)] = None,
    family: Annotated[list[Family] | None, typer.Option(
        "--family", "-f", help="Scenario family; repeatable. Default: all families.", show_default=False)] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", "-s", help="Only this scenario id; repeatable.", show_default=False)] = None,
    responder: Annotated[ResponderChoice, typer.Option(
        help="openai: live API (OPENAI_API_KEY, OPENAI_BASE_URL). replay: the recorded sample replies. "
             "auto: openai when either variable is set, else replay.")] = ResponderChoice.auto,
    model: Annotated[str | None, typer.Option(
        help="Use this model for every version instead of the one in its front matter.", show_default=False)] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Conversations played at once.")] = 8,
    timeout: Annotated[float, typer.Option(min=0.001, help="Per-call timeout in seconds.")] = 60.0,
    max_attempts: Annotated[int, typer.Option(min=1, help="Attempts per call (429, 5xx, timeouts, malformed bodies).")] = 5,
    cache: Annotated[bool, typer.Option(help="Reuse cached replies for identical calls.")] = True,
    cache_dir: Annotated[Path | None, typer.Option(
        help="Response cache directory. Default: ~/.cache/penpal-eval/responses (PENPAL_EVAL_CACHE).",
        file_okay=False, show_default=False)] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory that holds the run directories.",
                                          file_okay=False, show_default="runs/")] = PROJECT_ROOT / "runs",
    run_id: Annotated[str | None, typer.Option(help="Name of the new run directory. Default: time + random.",
                                                show_default=False)] = None,
    resume: Annotated[Path | None, typer.Option(
        help="Resume this run directory: finished cases are kept, the rest run (failed ones again).",
        file_okay=False, exists=True, show_default=False)] = None,
    price: Annotated[list[str] | None, typer.Option(
        help="MODEL=INPUT,OUTPUT dollars per million tokens; repeatable.", show_default=False)] = None,
    prompts_dir: Annotated[Path, typer.Option(help="Directory of prompt versions.", file_okay=False,
                                               show_default="prompts/")] = DEFAULT_PROMPTS_DIR,
    scenarios_dir: Annotated[Path, typer.Option(help="Directory of scenario files.", file_okay=False,
                                                 show_default="scenarios/")] = DEFAULT_SCENARIOS_DIR,
    rubric_path: RubricOption = None,
) -> None:
    """Evaluate prompt versions over the scenario sets and print a table per version.

    Every case (scenario x prompt version) is written to runs/RUN_ID/cases.jsonl as it
    finishes; the summary, CSV and Parquet exports follow at the end. With no API configured
    the recorded sample replies are replayed (and the run says so).

    Exit codes: 0 every case scored; 1 some case failed (recorded with its reason); 2 bad
    arguments, invalid inputs or a run that cannot resume; 130 interrupted (resume it).
    """
    try:
        prices = dict(parse_price_override(item) for item in price or [])
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--price") from None
    config = RunConfig(
        prompt_versions=prompt, families=[item.value for item in family] if family else None,
        scenario_ids=scenario, responder=responder.value, model=model, concurrency=concurrency,
        timeout_s=timeout, max_attempts=max_attempts, use_cache=cache, cache_dir=cache_dir, output_dir=output,
        run_id=run_id, resume=resume, prompts_dir=prompts_dir, scenarios_dir=scenarios_dir, prices=prices,
    )
    raise typer.Exit(code=run_with_config(config, rubric_path))


def run_with_config(config: RunConfig, rubric_path: Path | None = None) -> int:
    """Prepare, run and report; returns the exit code."""
    errors = stderr_console()
    evaluator = load_evaluator(rubric_path)
    try:
        prepared = prepare_run(config, evaluator)
    except (PromptError, ScenarioError) as error:
        for problem in error.problems:
            errors.print(Text(f"error: {problem}", style="red"))
        return EXIT_USAGE
    except (RunConfigError, ValueError) as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    _announce(prepared)
    pending = len(prepared.plan.cases()) - len(prepared.finished)
    try:
        with _progress(pending, enabled=stderr_is_tty()) as on_case:
            report = asyncio.run(execute(prepared, evaluator, on_case=on_case))
    except KeyboardInterrupt:
        errors.print(Text(f"interrupted: finished cases are kept in {display_path(prepared.store.directory)}; "
                          f"resume with --resume {display_path(prepared.store.directory)}", style="yellow"))
        return EXIT_INTERRUPTED
    _finish(report, evaluator.rubric)
    return EXIT_CASES_FAILED if any(case.status != "ok" for case in report.outcome.cases) else EXIT_OK


def _announce(prepared: PreparedRun) -> None:
    errors = stderr_console()
    for notice in prepared.notices:
        errors.print(Text(f"notice: {notice}", style="bold yellow"))
    plan = prepared.plan
    action = "resuming" if prepared.resumed else "run"
    line = (f"{action} {prepared.store.manifest.get('run_id')}: {len(plan.prompts)} prompt version(s) x "
            f"{len(plan.scenarios)} scenario(s) = {len(plan.cases())} cases via {prepared.responder.kind}")
    if prepared.resumed:
        line += f"; {len(prepared.finished)} already finished"
    errors.print(Text(line))


def _finish(report: RunReport, rubric: Rubric) -> None:
    console = stdout_console()
    if not console.is_terminal:
        console.width = max(console.width, 160)  # logs: one row per version, never folded
    console.print(versions_table(report, rubric))
    _print_failures(report)
    errors = stderr_console()
    outcome = report.outcome
    errors.print(Text(f"run store: {display_path(report.store.directory)} ({len(outcome.cases)} cases; "
                      f"{outcome.ran} run now, {outcome.skipped} already finished)"))
    if report.outcome.cases and report.outcome.cases[0].responder == "replay":
        errors.print(Text("these scores are of the recorded sample replies, not of a live model", style="yellow"))
