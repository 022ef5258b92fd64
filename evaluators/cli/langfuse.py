"""The Langfuse commands: `langfuse setup`, `langfuse dashboards`, `push`, `monitor` and
`prompts push`, and the hooks that let `penpal-eval run` publish as it goes.

Keys come from the environment (LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY, LANGFUSE_BASE_URL).
Without them `run` works as before and says that it pushed nothing; the commands here that
cannot work without Langfuse stop with exit code 2 and say which variable to set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from evaluators.cli.common import EXIT_OK, EXIT_USAGE, RubricOption, fail, load_evaluator, terminate_as_interrupt
from evaluators.cli.judge import JudgeModelOption, SamplingChoice, build_judge, judge_config
from evaluators.cli.lazy import HELP_MARKUP
from evaluators.cli.scale import AddressOption, Engine, EngineOption, WorkersOption
from evaluators.core.locations import PROJECT_ROOT, display_path
from evaluators.core.text import plural
from evaluators.core.text_safety import printable
from evaluators.inputs.prompts import DEFAULT_PROMPTS_DIR, PromptError, load_prompts
from evaluators.inputs.scenarios import DEFAULT_SCENARIOS_DIR, ScenarioError, load_scenarios
from evaluators.integrations.langfuse.connection import connect
from evaluators.integrations.langfuse.dashboards import DashboardsUnavailable, recipe_lines, sync_dashboard
from evaluators.integrations.langfuse.datasets import sync_dataset
from evaluators.integrations.langfuse.ledger import LedgerError
from evaluators.integrations.langfuse.monitor import DEFAULT_FEEDBACK_SCORE
from evaluators.integrations.langfuse.monitor import monitor as monitor_pass
from evaluators.integrations.langfuse.prompts import label_problems, push_prompt
from evaluators.integrations.langfuse.publisher import DeliveryReport, LangfusePublisher, publisher_for_store
from evaluators.integrations.langfuse.rest import LangfuseCallFailed, LangfuseRest
from evaluators.integrations.langfuse.run_scores import add_run_scores
from evaluators.integrations.langfuse.score_configs import ensure_score_configs, score_definitions, score_name_problems
from evaluators.integrations.langfuse.settings import LangfuseConfigError, LangfuseSettings, require_settings
from evaluators.judge.factory import judge_configured
from evaluators.report.console import stderr_console, stdout_console
from evaluators.rubric.loader import Rubric
from evaluators.store.records import CaseResult
from evaluators.store.run_store import RunStore, StoreError

EXIT_UNDELIVERED = 1
EXIT_INTERRUPTED = 130  # SIGINT or SIGTERM (a cancelled CI job)

langfuse_app = typer.Typer(help="Set up Langfuse for the suite: score configs, the scenario dataset and the "
                                "dashboard.", no_args_is_help=True, add_completion=False,
                           rich_markup_mode=HELP_MARKUP)


def _settings_or_exit() -> LangfuseSettings:
    try:
        return require_settings()
    except LangfuseConfigError as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None


def _check_score_names(rubric: Rubric) -> None:
    """Exit 2, naming every rubric key at fault, when a score name would not fit Langfuse."""
    problems = score_name_problems(rubric)
    if problems:
        raise fail("error: " + "\nerror: ".join(problems), EXIT_USAGE)


def _rest(settings: LangfuseSettings) -> LangfuseRest:
    return connect(settings).rest()


def _shutdown(settings: LangfuseSettings) -> None:
    """Stop the SDK's background work."""
    connect(settings).shutdown()


def print_delivery(report: DeliveryReport) -> None:
    errors = stderr_console()
    for line in report.lines():
        style = "yellow" if line.startswith(("NOT DELIVERED", "problem", "warning", "sdk")) else ""
        errors.print(Text(printable(line), style=style))  # problems quote the server: no escape sequences


# --- hooks for `penpal-eval run` --------------------------------------------------------------------------
class LangfuseSink:
    """The runner's CaseSink: each stored case goes to the publisher; a Langfuse error never fails the run."""

    def __init__(self, publisher: LangfusePublisher) -> None:
        self.publisher = publisher

    async def on_case(self, case: CaseResult) -> None:
        self.publisher.add_case(case)  # never raises; a case it cannot publish is named in the report

    async def aclose(self) -> None:
        """Delivery waits for the run-level scores; `finish_run_publishing` does it."""


@dataclass
class RunPublishing:
    """Langfuse for one run: the publisher, or why there is none (said at the end of the run)."""

    publisher: LangfusePublisher | None
    off_reason: str = ""

    @property
    def sinks(self) -> list[LangfuseSink]:
        return [LangfuseSink(self.publisher)] if self.publisher is not None else []

    def finish(self, cases: Sequence[CaseResult]) -> DeliveryReport | None:
        """Run-level scores, then deliver and shut the SDK down, all within the flush timeout."""
        if self.publisher is None:
            stderr_console().print(Text(f"langfuse: nothing pushed ({self.off_reason})"))
            return None
        return finish_publishing(self.publisher, cases)


def finish_publishing(publisher: LangfusePublisher, cases: Sequence[CaseResult]) -> DeliveryReport:
    add_run_scores(publisher, cases, publisher.baselines)
    report = publisher.deliver()
    publisher.connection.shutdown()
    print_delivery(report)
    return report


def start_run_publishing(store: RunStore, rubric: Rubric, enabled: bool | None,
                         environ: Mapping[str, str] | None = None) -> RunPublishing:
    """Langfuse for a run: a publisher ready for cases when the keys are set (and not --no-langfuse)."""
    if enabled is False:
        return RunPublishing(None, "--no-langfuse")
    try:
        settings = LangfuseSettings.from_environment(environ)
    except LangfuseConfigError as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    if settings is None:
        if enabled:
            raise fail("error: --langfuse needs LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY", EXIT_USAGE)
        return RunPublishing(None, "LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are not set")
    _check_score_names(rubric)
    try:
        publisher = publisher_for_store(store, rubric, settings)
    except (StoreError, LedgerError) as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    stderr_console().print(Text(f"langfuse: publishing to {settings.endpoint} (dataset {settings.dataset})"))
    publisher.prepare()
    # A resumed run also delivers what its finished cases still owe Langfuse: an interrupted or
    # killed run may not have got to its delivery. The ledger keeps this to what never arrived.
    publisher.add_stored_cases(store.read_cases())
    return RunPublishing(publisher)


# --- commands -------------------------------------------------------------------------------------------------
def push(
    run_dir: Annotated[Path, typer.Argument(help="The run directory (runs/RUN_ID) to push.", exists=True,
                                            file_okay=False, show_default=False)],
    all_: Annotated[bool, typer.Option("--all", help="Send every score again, not only what Langfuse has not "
                                                     "confirmed (scores update in place). Spans Langfuse has are "
                                                     "never sent again.")] = False,
    republish_traces: Annotated[bool, typer.Option(
        "--republish-traces", help="Also send the spans Langfuse already has. Langfuse keeps the earlier "
                                   "observations: they are events it appends to, not records it replaces.")] = False,
    rubric_path: RubricOption = None,
) -> None:
    """Push a stored run to Langfuse: the spans, scores, experiments and review items it has not yet received.

    Each span is sent once: Langfuse keeps observations as append-only events, so the run
    store's times and ids are reused and a delivered span is never sent again. Scores have
    ids and timestamps of their own and are updated in place. What Langfuse confirmed is kept
    in RUN_DIR/langfuse.json.

    Exit codes: 0 everything delivered; 1 something was not delivered (run push again later);
    2 Langfuse not configured, or the run cannot be pushed; 130 interrupted by Ctrl-C or
    SIGTERM (what arrived is recorded; push again for the rest).
    """
    settings = _settings_or_exit()
    evaluator = load_evaluator(rubric_path)
    _check_score_names(evaluator.rubric)
    try:
        store = RunStore.open(run_dir)
        publisher = publisher_for_store(store, evaluator.rubric, settings, resend_all=all_ or republish_traces,
                                        republish=republish_traces)
    except (StoreError, LedgerError) as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    if republish_traces:
        stderr_console().print(Text(
            "warning: --republish-traces sends every span again; Langfuse keeps the observations it already has, "
            "so its observation lists, metrics and experiment aggregates may count these spans twice",
            style="yellow"))
    cases = store.read_cases()
    if not cases:
        raise fail(f"error: {display_path(run_dir)} holds no cases", EXIT_USAGE)
    stderr_console().print(Text(f"pushing {display_path(run_dir)} ({plural(len(cases), 'case')}) to {settings.endpoint}"))
    try:
        with terminate_as_interrupt():
            publisher.prepare()
            for case in cases:
                publisher.add_case(case)
            report = finish_publishing(publisher, cases)
    except KeyboardInterrupt:
        spans, scores = publisher.waiting()
        stderr_console().print(Text(
            f"interrupted: {plural(spans, 'span')} and {plural(scores, 'score')} wait for push (what Langfuse "
            f"confirmed is recorded in {display_path(publisher.ledger.path)}); send them with: penpal-eval push "
            f"{display_path(run_dir)}", style="yellow"))
        raise typer.Exit(code=EXIT_INTERRUPTED) from None
    raise typer.Exit(code=EXIT_OK if report.complete else EXIT_UNDELIVERED)


@langfuse_app.command("setup")
def setup(
    scenarios_dir: Annotated[Path, typer.Option(help="Scenario directory to sync to the dataset.", file_okay=False,
                                                 show_default="scenarios/")] = DEFAULT_SCENARIOS_DIR,
    rubric_path: RubricOption = None,
) -> None:
    """Create the score configs and sync the scenario dataset (idempotent; safe to run again).

    Score configs give every score the suite writes its type and range (0-1 for metrics; the
    categories of verdicts, failure modes and decisions), so dashboards show the right axes.
    The dataset holds one item per scripted user turn; items of removed scenarios are archived.

    Exit codes: 0 done; 1 Langfuse refused (a config: the others are still created) or
    failed; 2 not configured, or invalid scenarios.
    """
    settings = _settings_or_exit()
    rubric = load_evaluator(rubric_path).rubric
    _check_score_names(rubric)
    try:
        scenarios = load_scenarios(scenarios_dir, rubric).scenarios
    except ScenarioError as error:
        raise fail("error: " + "\nerror: ".join(error.problems), EXIT_USAGE) from None
    rest = _rest(settings)
    out = stdout_console()
    try:
        configs = ensure_score_configs(rest, score_definitions(rubric))
        failed = f", {len(configs.failed)} refused" if configs.failed else ""
        out.print(Text(f"score configs: {len(configs.created)} created, {len(configs.existing)} already there{failed}"))
        for problem in configs.problems():
            stderr_console().print(Text(f"error: {problem}", style="yellow"))
        if configs.differing:
            stderr_console().print(Text("score configs that exist with another range or categories (left as they "
                                        f"are; archive them in Langfuse to recreate): {', '.join(configs.differing)}",
                                        style="yellow"))
        dataset = sync_dataset(rest, settings.dataset, scenarios, archive_missing=True)
        out.print(Text(f"dataset {dataset.name}: {plural(dataset.written, 'item')} written, {dataset.unchanged} unchanged, "
                       f"{dataset.archived} archived"))
    except LangfuseCallFailed as error:
        raise fail(f"error: {error}", EXIT_UNDELIVERED) from None
    finally:
        _shutdown(settings)
    if configs.failed:
        raise typer.Exit(code=EXIT_UNDELIVERED)


@langfuse_app.command("dashboards")
def dashboards(rubric_path: RubricOption = None) -> None:
    """Create or update the suite's score dashboard in Langfuse (idempotent; safe to run again).

    One dashboard, "penpal-eval scores", with the widgets docs/langfuse.md describes: quality
    and metric means per prompt version over time, hard-flag rates, the judge against the
    heuristics, conversation trust & boundaries, and release decisions. A widget Langfuse
    refuses is named with Langfuse's reason and the others are still built; a second call
    builds what is missing, and changes nothing (and says so) when nothing is. A server
    without the dashboards API gets the recipe to build it by hand.

    Exit codes: 0 done; 1 Langfuse refused a widget, failed or has no dashboards API; 2 not
    configured.
    """
    settings = _settings_or_exit()
    rubric = load_evaluator(rubric_path).rubric
    rest = _rest(settings)
    out = stdout_console()
    try:
        sync = sync_dashboard(rest, rubric)
    except DashboardsUnavailable:
        stderr_console().print(Text(f"error: Langfuse at {settings.endpoint} has no dashboards API (it answered 404 "
                                    "on /api/public/unstable/dashboards); build the dashboard by hand as "
                                    "docs/langfuse.md describes:", style="yellow"))
        for line in recipe_lines(rubric):
            out.print(Text(line))
        raise typer.Exit(code=EXIT_UNDELIVERED) from None
    except LangfuseCallFailed as error:
        raise fail(f"error: {error}", EXIT_UNDELIVERED) from None
    finally:
        _shutdown(settings)
    for line in sync.lines():
        out.print(Text(line))
    for problem in sync.problems():
        stderr_console().print(Text(f"error: {problem}", style="yellow"))
    if sync.refused:
        raise typer.Exit(code=EXIT_UNDELIVERED)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`24h`, `90m`, `7d` before now, or an ISO 8601 time (UTC when no zone is given)."""
    now = now or datetime.now(timezone.utc)
    match = _DURATION.match(text)
    if match:
        return now - timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(f"expected a duration like 24h, 90m, 7d or an ISO time, got {text!r}",
                                 param_hint="--since") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def monitor(
    since: Annotated[str, typer.Option(help="How far back to read: 24h, 90m, 7d, or an ISO time.")] = "24h",
    name: Annotated[str | None, typer.Option(help="Only generations with this observation name.",
                                             show_default=False)] = None,
    environment: Annotated[str | None, typer.Option(help="Only this Langfuse environment (e.g. production). "
                                                         "Default: every environment but penpal-eval.",
                                                    show_default=False)] = None,
    include_evaluation: Annotated[bool, typer.Option(
        "--include-evaluation", help="Also read the suite's own evaluation traces (environment penpal-eval), "
                                     "which are left out by default.")] = False,
    judge: Annotated[bool, typer.Option("--judge/--no-judge", help="Judge the replies the sampling policy picks "
                                        "(needs a judge endpoint; see docs/judge.md).")] = True,
    judge_model: JudgeModelOption = None,
    sampling_state: Annotated[Path, typer.Option(help="Sampling policy state, kept across passes.", dir_okay=False,
                                                 show_default="runs/monitor-sampling.json")
                              ] = PROJECT_ROOT / "runs" / "monitor-sampling.json",
    feedback_score: Annotated[str, typer.Option(help="Score name of user feedback; negative feedback always "
                                                     "triggers the judge.")] = DEFAULT_FEEDBACK_SCORE,
    lenient: Annotated[bool, typer.Option(
        "--lenient", help="Read a generation whose input messages carry unknown keys or roles, or content of "
                          "another type, as before (whatever can be read), instead of naming it and leaving it "
                          "unscored.")] = False,
    engine: EngineOption = Engine.local,
    address: AddressOption = None,
    workers: WorkersOption = 2,
    rubric_path: RubricOption = None,
) -> None:
    """Score the companion's production replies in Langfuse and write the scores back.

    Reads every generation since --since (from every environment but the suite's own,
    penpal-eval, unless --environment or --include-evaluation says otherwise, and says which
    it read), skips those already scored under this rubric, scores the rest with the
    heuristics, judges those the sampling policy picks (calibration, established, trusted;
    always on a hard flag, a weak metric or negative feedback), and pushes the scores onto
    their traces. A second pass over the same window adds nothing.

    A generation's input is read as chat messages (role, content, name, tool_calls, ...): one
    with an unknown key or role, or content that is neither text nor a list of parts, is named
    with the key most likely meant and left unscored (--lenient reads it anyway). An empty
    reply is scored as silence.

    Exit codes: 0 done; 1 some scores were not delivered, a score config is missing, or
    Langfuse failed; 2 bad options, Langfuse not configured, or some generation's input breaks
    the message contract (the others are scored).
    """
    moment = parse_since(since)
    settings = _settings_or_exit()
    evaluator = load_evaluator(rubric_path)
    _check_score_names(evaluator.rubric)
    rest = _rest(settings)
    score_cases = None
    if engine is Engine.ray:  # the heuristics on Ray actors; reading, judging and writing stay here
        from evaluators.cli.scale import ray_settings
        from evaluators.integrations.scale.ray_scoring import score_cases_on_ray

        scale = ray_settings(address, workers, rubric_path)

        def score_cases(cases):
            return score_cases_on_ray(cases, scale)
    llm_judge = sampling = None
    if judge and judge_configured(os.environ):
        llm_judge, sampling = build_judge(judge_config(model=judge_model, samples=1, sampling=SamplingChoice.policy,
                                                       sample_rate=None, state_path=sampling_state, use_cache=True),
                                          evaluator.rubric)
    elif judge:
        stderr_console().print(Text("notice: no judge endpoint is configured (PENPAL_JUDGE_BASE_URL or "
                                    "OPENAI_BASE_URL/OPENAI_API_KEY); scoring with the heuristics only",
                                    style="yellow"))
    errors = stderr_console()
    errors.print(Text(f"monitor: {settings.endpoint}, generations since {moment.isoformat(timespec='seconds')}"))
    try:
        report = monitor_pass(rest, evaluator, moment, judge=llm_judge, sampling=sampling, name=name,
                              environment=environment, include_evaluation=include_evaluation,
                              feedback_score=feedback_score, score_cases=score_cases, strict=not lenient)
    except LangfuseCallFailed as error:
        raise fail(f"error: {error}", EXIT_UNDELIVERED) from None
    finally:
        _shutdown(settings)
    for line in report.lines():
        stdout_console().print(Text(line))
    if report.scores_undelivered or report.problems:
        raise typer.Exit(code=EXIT_UNDELIVERED)
    raise typer.Exit(code=EXIT_USAGE if report.invalid else EXIT_OK)


def prompts_push(
    directory: Annotated[Path, typer.Argument(help="Directory of prompt Markdown files.", file_okay=False,
                                              show_default="prompts/")] = DEFAULT_PROMPTS_DIR,
    prompt: Annotated[list[str] | None, typer.Option("--prompt", "-p", help="Only this version; repeatable.",
                                                     show_default=False)] = None,
    label: Annotated[list[str] | None, typer.Option("--label", "-l", help="Also put this deployment label "
                                                    "(e.g. staging) on the pushed versions; repeatable.",
                                                    show_default=False)] = None,
) -> None:
    """Create or update Langfuse prompts from prompts/: text as the prompt, model settings as config.

    Each local version becomes a version of the Langfuse prompt named by its front matter
    `name`, labelled with the local version's name; an unchanged version creates nothing.

    Exit codes: 0 done; 1 Langfuse refused or failed; 2 invalid prompt files or labels, or not
    configured.
    """
    settings = _settings_or_exit()
    problems = label_problems(label or [])
    if problems:
        raise fail("error: --label: " + "\nerror: --label: ".join(problems), EXIT_USAGE)
    try:
        prompts = load_prompts(directory, prompt)
    except PromptError as error:
        raise fail("error: " + "\nerror: ".join(error.problems), EXIT_USAGE) from None
    rest = _rest(settings)
    try:
        for item in prompts:
            stdout_console().print(Text(push_prompt(rest, item, label or []).line()))
    except LangfuseCallFailed as error:
        raise fail(f"error: {error}", EXIT_UNDELIVERED) from None
    finally:
        _shutdown(settings)
