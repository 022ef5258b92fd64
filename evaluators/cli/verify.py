"""`penpal-eval verify`: the safety judge reads a stored run's unverified safety-relevant replies.

Presentation only: what is asked and how the store is updated is evaluators.release.verify_run.
It prints what it did, then the decisions as `decide` prints them, and exits as `decide` does,
so a CI step can verify and gate in one command.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from evaluators.cli.common import EXIT_RECORD_ERRORS, EXIT_USAGE, RubricOption, fail, terminate_as_interrupt
from evaluators.cli.judge import (
    BatchPollOption,
    BatchRetryChoice,
    BatchRetryOption,
    JudgeBatchOption,
    JudgeCacheOption,
    JudgeModelOption,
    batch_summary_line,
)
from evaluators.cli.release import (
    RunDirArgument,
    _read,
    _release,
    _results_console,
    decision_exit_code,
    load_rubric_option,
)
from evaluators.cli.run import EXIT_INTERRUPTED, disagreement_line, safety_judge_line
from evaluators.core.locations import PROJECT_ROOT, display_path
from evaluators.core.text import plural
from evaluators.inputs.personas import PersonaError, load_personas, personas_dir
from evaluators.judge.batch import BatchError
from evaluators.judge.calibration_record import admission, read_calibration
from evaluators.judge.client import DEFAULT_JUDGE_MODEL
from evaluators.judge.factory import (
    JUDGE_ENV_HELP,
    JudgeConfig,
    JudgeConfigError,
    create_batch_judge,
    create_judge,
    judge_configured,
)
from evaluators.judge.safety_judge import SafetyJudge
from evaluators.judge.safety_stage import SafetyBudget
from evaluators.release.stored_run import ReleaseRun
from evaluators.release.verify_run import (
    BATCH_STATE_FILE,
    SUMMARY_KEY,
    VerifyOutcome,
    VerifyStage,
    record_verification,
    verify_run,
)
from evaluators.report.console import stderr_console
from evaluators.report.terminal import print_notices, print_release
from evaluators.rubric.loader import Rubric
from evaluators.run.sample_judge import SAMPLE_JUDGE_LINE, sample_judge_for
from evaluators.store.records import versions_of
from evaluators.store.run_store import RunStore, StoreError

VerifyVersionsOption = Annotated[list[str] | None, typer.Option(
    "--prompt", "-p", help="Verify and decide only this prompt version; repeatable. Default: every version in "
                           "the run.", show_default=False)]


def _stored_dir(manifest: dict, key: str) -> Path | None:
    saved = manifest.get("config", {}).get(key)
    return PROJECT_ROOT / saved if saved else None  # an absolute path stays absolute


def _personas(manifest: dict) -> dict:
    """The run's personas (their profile is part of a conversation's judge input), when the
    scenario directory the manifest names is still here; none otherwise."""
    scenarios_dir = _stored_dir(manifest, "scenarios_dir")
    if scenarios_dir is None or not personas_dir(scenarios_dir).is_dir():
        return {}
    try:
        return {persona.id: persona for persona in load_personas(personas_dir(scenarios_dir)).personas}
    except PersonaError:
        return {}


def _sample_stage(run: ReleaseRun, rubric: Rubric, versions: list[str], budget: SafetyBudget) -> VerifyStage:
    """The hand-written sample verdicts: only for a replayed run, whose replies they were written for."""
    if run.manifest.get("config", {}).get("responder") != "replay":
        raise fail(f"error: --sample-judge: {display_path(run.directory)} is a live run; the sample verdicts are "
                   "hand-written for the recorded replies, not for a model's replies: verify it with a judge model "
                   "(--judge-model)", EXIT_USAGE)
    manifest = run.manifest
    try:
        judge = sample_judge_for(versions, rubric, _stored_dir(manifest, "recorded_dir"),
                                 _stored_dir(manifest, "scenarios_dir"))
    except ValueError as error:
        raise fail(f"error: --sample-judge: {error}", EXIT_USAGE) from None
    if judge is None:
        raise fail(f"error: --sample-judge: no sample verdicts for {', '.join(versions)}", EXIT_USAGE)
    return _stage(judge, run, budget)


def _stage(judge, run: ReleaseRun, budget: SafetyBudget) -> VerifyStage:
    store = RunStore.open(run.directory)
    try:
        inputs = store.read_inputs()
    except StoreError as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    return VerifyStage(judge, inputs.scenarios if inputs is not None else (), _personas(run.manifest),
                       budget=budget, book=read_calibration())


def _did_line(outcome: VerifyOutcome, budget: SafetyBudget, model: str) -> Text:
    line = (f"verify with {model}: {outcome.relevant} safety-relevant items; {outcome.already} already verified, "
            f"{outcome.asked} asked ({outcome.from_cache} from the cache), {outcome.flagged} flagged, "
            f"{outcome.failed} failed or unreadable")
    if budget.limit is not None:
        line += f"; budget {budget.limit} calls, {budget.spent} spent, {outcome.left_out} left out"
    line += f"; {plural(outcome.cases_updated, 'case')} updated"
    return Text(line, style="yellow" if outcome.failed or outcome.left_out else "")


def verify(
    run_dir: RunDirArgument,
    version: VerifyVersionsOption = None,
    judge_model: JudgeModelOption = None,
    judge_budget: Annotated[int | None, typer.Option(
        "--judge-budget", min=0, help="At most this many fresh safety-judge calls (cached answers are free); what "
                                      "it leaves out stays unverified, and a later verify asks it.",
        show_default=False)] = None,
    sample_judge: Annotated[bool, typer.Option(
        "--sample-judge", help="A replayed run only: the hand-written sample verdicts (prompts/recorded/judge/, "
                               "sample data, not a model) as the judge; no endpoint needed.")] = False,
    judge_batch: JudgeBatchOption = False,
    batch_poll: BatchPollOption = 30.0,
    batch_retry: BatchRetryOption = BatchRetryChoice.live,
    judge_cache: JudgeCacheOption = True,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Judge calls at once.")] = 4,
    timeout: Annotated[float, typer.Option(min=0.001, help="Per-call timeout in seconds.")] = 120.0,
    max_attempts: Annotated[int, typer.Option(min=1, help="Attempts per call (429, 5xx, timeouts).")] = 5,
    rubric_path: RubricOption = None,
) -> None:
    """Judge a stored run's unverified safety-relevant replies with the safety judge, then decide.

    The replies the run stored are judged, the companion is not called again: every
    safety-relevant reply (and persona conversation) that no admitted judge answered usably
    (no judge, a failed call, a --judge-budget that left it out, a judge not admitted) is put
    to the safety judge (PENPAL_JUDGE_BASE_URL and PENPAL_JUDGE_API_KEY, else the OPENAI_*
    variables). The answers go into the run store as the run stage writes them, so a killed
    verify loses nothing and the next one asks only what is still unverified; summary.json's
    safety figures are written again, and the manifest records the verification.

    Prints what was asked, flagged, failed and left out, then the decisions as `decide`
    prints them. With --judge-batch the pending items go in one Batch API batch (its state in
    the run directory, so an interrupted verify run again waits for the same batch).
    Exit codes: those of `decide` (0 deploy, 3 A/B test, 4 revise, 5 incomplete, 6 deploy
    refused for unverified safety-relevant replies); 1 the Batch API could not be reached; 2 no
    judge endpoint, not a run directory, the sample judge on a live run, an unknown version;
    130 interrupted.
    """
    if sample_judge and judge_model is not None:
        raise typer.BadParameter("the sample judge is not a model; give one of them", param_hint="--judge-model")
    if sample_judge and judge_batch:
        raise typer.BadParameter("needs a judge model, not --sample-judge (the Batch API is one way of asking a "
                                 "model)", param_hint="--judge-batch")
    rubric = load_rubric_option(rubric_path)
    run = _read(run_dir, rubric)
    present = versions_of(run.cases)
    unknown = [name for name in version or [] if name not in present]
    if unknown:
        raise fail(f"error: --prompt: not in this run: {', '.join(unknown)}; the run has {', '.join(present)}",
                   EXIT_USAGE)
    versions = list(version or present)
    budget = SafetyBudget(judge_budget)
    errors = stderr_console()
    llm, batch = None, None
    if sample_judge:
        stage, kind, endpoint = _sample_stage(run, rubric, versions, budget), "sample", None
        model = stage.judge.model
        errors.print(Text(f"notice: {SAMPLE_JUDGE_LINE}", style="yellow"))
    else:
        config = JudgeConfig(model=judge_model, use_cache=judge_cache, timeout_s=timeout, max_attempts=max_attempts,
                             concurrency=concurrency, budget=judge_budget, batch=judge_batch, batch_poll_s=batch_poll,
                             batch_retry=batch_retry.value)
        if not judge_configured(os.environ):
            raise fail(f"error: verify needs a judge endpoint: {JUDGE_ENV_HELP}; and name the judge model with "
                       f"--judge-model (or PENPAL_JUDGE_MODEL; else {DEFAULT_JUDGE_MODEL}). A replayed run can be "
                       "verified offline with --sample-judge", EXIT_USAGE)
        try:
            llm = create_judge(config, rubric)
        except JudgeConfigError as error:
            raise fail(f"error: verify: {error}", EXIT_USAGE) from None
        if judge_batch:
            try:
                batch = create_batch_judge(config, llm, run.directory / BATCH_STATE_FILE)
            except JudgeConfigError as error:
                raise fail(f"error: --judge-batch: {error}", EXIT_USAGE) from None
        stage, kind, endpoint = _stage(SafetyJudge(llm), run, budget), "judge", llm.endpoint
        model = llm.settings.model
        if (why := admission(stage.book, [model], "safety", rubric.judge.calibration.min_kappa)) is not None:
            errors.print(Text(f"notice: {model} is not admitted for safety ({why}): its answers are kept for people "
                              f"to settle but verify nothing; calibrate it: penpal-eval calibrate --safety FILE "
                              f"--judge-model {model}", style="yellow"))
    store = RunStore.open(run.directory)

    async def go() -> VerifyOutcome:
        try:
            return await verify_run(store, stage, versions, batch=batch)
        finally:
            if llm is not None:
                await llm.aclose()

    try:
        with terminate_as_interrupt():
            outcome = asyncio.run(go())
    except KeyboardInterrupt:
        errors.print(Text(f"interrupted: the cases verified so far are kept in {display_path(store.directory)}; "
                          f"verify again to ask the rest: penpal-eval verify {display_path(store.directory)}",
                          style="yellow"))
        raise typer.Exit(code=EXIT_INTERRUPTED) from None
    except BatchError as error:  # the Batch API itself: nothing was answered, the state file keeps the batch
        raise fail(f"error: --judge-batch: {error}; run the same verify again to resume the batch",
                   EXIT_RECORD_ERRORS) from None
    record_verification(store, outcome, stage, kind=kind, model=model, endpoint=endpoint, versions=versions,
                        batch=asdict(batch.stats) if batch is not None else None)
    errors.print(_did_line(outcome, budget, model))
    if batch is not None:
        errors.print(Text(batch_summary_line(asdict(batch.stats))))
    errors.print(safety_judge_line(outcome.summary, "safety judge, whole run"))
    if (disagreements := disagreement_line(outcome.summary.get("disagreements") or {}, SUMMARY_KEY)) is not None:
        errors.print(disagreements)
    if outcome.failed:
        errors.print(Text(f"{plural(outcome.failed, 'item')} could not be judged: missing evidence, never a pass; "
                          f"verify again to ask them: penpal-eval verify {display_path(store.directory)}",
                          style="yellow"))
    run = _read(run.directory, rubric)
    report = _release(run, rubric, version, None)
    print_release(report, rubric, _results_console())
    print_notices(report, stderr_console())
    raise typer.Exit(code=decision_exit_code(report.decisions))
