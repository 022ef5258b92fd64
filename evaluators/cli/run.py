"""`penpal-eval run` (and scripts/evaluate_prompts.py): the evaluation run on the terminal.

Everything here is presentation: options, the progress bar, notices and the per-version
table. The run itself is evaluators.pipeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from evaluators.cli.common import EXIT_OK, EXIT_USAGE, RubricOption, fail, load_evaluator, terminate_as_interrupt
from evaluators.cli.data import Family
from evaluators.cli.judge import (
    BatchPollOption,
    BatchRetryChoice,
    BatchRetryOption,
    JudgeBatchOption,
    JudgeCacheOption,
    JudgeModelOption,
    JudgeSampleRateOption,
    JudgeSamplesOption,
    JudgeSamplingOption,
    SamplingChoice,
    SamplingStateOption,
    batch_summary_line,
    fallback_warning,
    judge_config,
    judge_count_line,
)
from evaluators.cli.langfuse import start_run_publishing
from evaluators.cli.pairwise import judge_and_store, pairwise_judge, print_head_to_head
from evaluators.cli.release import JunitOption, print_run_decisions
from evaluators.core.locations import PROJECT_ROOT, display_path
from evaluators.core.text import plural
from evaluators.core.text_safety import printable
from evaluators.inputs.personas import PersonaError
from evaluators.inputs.pricing import parse_price_override
from evaluators.inputs.prompts import DEFAULT_PROMPTS_DIR, PromptError
from evaluators.inputs.scenarios import DEFAULT_SCENARIOS_DIR, ScenarioError
from evaluators.judge.factory import JudgeConfig
from evaluators.judge.pairwise import PairwiseJudge
from evaluators.pipeline import PreparedRun, RunReport, execute, prepare_run
from evaluators.release.contracts import HeadToHead, ReleaseReport
from evaluators.release.pairwise_run import baseline_pairs
from evaluators.report.console import (
    stderr_console,
    stderr_is_tty,
    stdout_console,
)
from evaluators.report.junit import write_junit
from evaluators.report.run_tables import money, versions_table
from evaluators.report.terminal import head_to_head_table
from evaluators.rubric.loader import Rubric
from evaluators.run.config import PROMPT_SOURCES, RESPONDER_CHOICES, RunConfig, RunConfigError
from evaluators.run.runner import RunPlan
from evaluators.run.sample_judge import SAMPLE_JUDGE_LINE
from evaluators.store.records import CaseResult

EXIT_CASES_FAILED = 1
SAMPLING_STATE_FILE = "judge-sampling.json"  # in the runs directory: the policy's state outlives each run
EXIT_INTERRUPTED = 130

ResponderChoice = Enum("ResponderChoice", {name: name for name in RESPONDER_CHOICES}, type=str)
PromptSource = Enum("PromptSource", {name: name for name in PROMPT_SOURCES}, type=str)

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
            failed_count += not case.finished
            if done in marks:
                errors.print(Text(f"progress: {done}/{plural(total, 'case')}, {failed_count} failed"))

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
            failed += not case.finished
            progress.update(task, advance=1, failed=failed)

        yield advance


def print_judge_report(report: RunReport, rubric: Rubric) -> None:
    """Per version: verdicts, fallbacks, cases for review; then how far to trust the judge."""
    run_judge = report.judge
    if not run_judge:
        return
    errors = stderr_console()
    for version, summary in report.summaries.items():
        judge = summary.get("judge")
        if not judge:
            continue
        verdicts = ", ".join(f"{count} {name}" for name, count in judge["verdicts"].items())
        line = f"judge {version}: {verdicts}"
        if judge["failure_modes"]:
            line += " (" + ", ".join(f"{mode} {count}" for mode, count in sorted(judge["failure_modes"].items())) + ")"
        line += f"; {plural(judge['review_cases'], 'case')} for human review"
        if judge["cases_skipped"]:
            line += f"; {judge['cases_skipped']} not judged under the sampling policy"
        errors.print(Text(line))
    total = run_judge.get("turns_judged") or 0
    fallback = run_judge.get("fallback_turns") or 0
    bias = run_judge.get("verbosity_bias")
    reasons = [turn.judge.get("error") or "" for case in report.outcome.cases for turn in case.turns
               if turn.judge and turn.judge.get("status") == "failed"]
    line = judge_count_line(run_judge["model"], run_judge.get("response_mode") or "no answer yet", total,
                            run_judge.get("failed_turns") or 0, fallback, rubric.judge.fallback_score,
                            f" ({run_judge['from_cache']} from cache)", reasons)
    if total > (run_judge.get("failed_turns") or 0):
        line.append(f"; verbosity bias (Spearman of judge score with reply length): "
                    f"{'n/a' if bias is None else f'{bias:+.2f}'}")
    errors.print(line)
    if run_judge.get("batch"):
        errors.print(Text(batch_summary_line(run_judge["batch"])))
    if run_judge.get("safety"):
        errors.print(safety_judge_line(run_judge["safety"]))
        if (disagreements := disagreement_line(run_judge["safety"].get("disagreements") or {})) is not None:
            errors.print(disagreements)
    if run_judge.get("fallback_warning"):
        errors.print(fallback_warning(fallback, total, rubric, "cases.jsonl"))


def _print_assertions(report: RunReport, limit: int = 10) -> None:
    """The scenarios' declared assertions: how many held, and each that failed or was not verified."""
    outcomes = [(case, turn, outcome) for case in report.outcome.cases for turn in case.turns
                for outcome in turn.assertions]
    if not outcomes:
        return
    failed = [item for item in outcomes if item[2].passed is False]
    unverified = [item for item in outcomes if item[2].passed is None]
    console = stdout_console()
    console.print(Text(f"scenario assertions: {len(outcomes) - len(failed) - len(unverified)} of {len(outcomes)} held, "
                       f"{len(failed)} failed, {len(unverified)} not verified",
                       style="red" if failed else "yellow" if unverified else "green"))
    for case, turn, outcome in (failed + unverified)[:limit]:
        state = "FAILED" if outcome.passed is False else "not verified"
        console.print(Text(printable(f"  {case.case_id} turn {turn.index + 1}: {outcome.assertion}: {state} "
                                     f"({outcome.detail})")))
    if len(failed) + len(unverified) > limit:
        console.print(Text(f"  ... and {len(failed) + len(unverified) - limit} more (see cases.jsonl)"))


def safety_judge_line(safety: dict, name: str = "safety judge") -> Text:
    """What the safety judge did in the run: how much it read, flagged and failed, what the budget left out."""
    share = safety.get("share_judged")
    line = (f"{name}: {safety['judged']} of {safety['replies']} replies and conversations asked"
            + (f" ({share:.0%})" if share is not None else "") + f", {safety['flagged']} flagged, "
            f"{safety['failed']} failed, {safety['fallback']} unreadable")
    if safety.get("budget") is not None:
        line += (f"; budget {safety['budget']} calls, {safety['calls_spent']} spent, {safety['left_out']} left out "
                 "(listed in summary.json: judge.safety.left_out_ids)")
    why = {kind: count for kind, count in (safety.get("judged_by_reason") or {}).items() if count}
    if why:
        line += "\n  chosen because: " + ", ".join(f"{kind} {count}" for kind, count in why.items())
    return Text(line, style="yellow" if safety["failed"] or safety["left_out"] else "")


def disagreement_line(counts: dict, where: str = "judge.safety") -> Text | None:
    """Where the safety judge and the rules disagree, by flag and direction (None: nowhere);
    `where` is the summary.json key that holds the figures."""
    if not counts.get("total"):
        return None
    parts = [f"{flag} " + ", ".join(f"{number} {direction}" for direction, number in directions.items() if number)
             for flag, directions in counts["by_flag"].items()]
    line = (f"safety judge vs rules: {counts['total']} disagreements ({'; '.join(parts)}); "
            f"{counts['applied']} decided by the admitted judge")
    if counts.get("uncalibrated"):
        line += f", {counts['uncalibrated']} from an uncalibrated judge (changed nothing)"
    if counts.get("conversation"):
        line += f", {counts['conversation']} at conversation level"
    return Text(line + f" (summary.json: {where}.disagreements; cases.jsonl: safety_judge)", style="yellow")


def _print_failures(report: RunReport, limit: int = 10) -> None:
    judge_failed = [case for case in report.outcome.cases if case.status == "ok" and case.judge_failed]
    if judge_failed:
        # A resume judges the stored replies again with the run's judge (the companion is not called);
        # where only the safety judge failed, verify asks it again on them with the model named
        # (evaluators.release.safety_evidence.verify_command says why).
        quality = any((case.judge or {}).get("failed") for case in judge_failed)
        model = next((str(item["model"]) for case in judge_failed for item in (case.safety_judge or {}).get("items", [])
                      if item.get("status") == "failed" and item.get("model")), "MODEL")
        again = ("resuming the run judges their stored replies again, without calling the companion" if quality else
                 f"the safety judge is asked again on the stored replies by penpal-eval verify "
                 f"{display_path(report.store.directory)} --judge-model {model}")
        stderr_console().print(Text(f"{plural(len(judge_failed), 'case')} could not be judged (the judge call failed); "
                                    f"{again}:", style="yellow"))
        for case in judge_failed[:limit]:
            error = (case.judge or {}).get("error") or next(
                (item.get("error") for item in (case.safety_judge or {}).get("items", []) if item.get("error")), None)
            stderr_console().print(Text(printable(f"  {case.case_id}: {error}"), style="yellow"))
    failed = [case for case in report.outcome.cases if case.status != "ok"]
    if not failed:
        return
    errors = stderr_console()
    errors.print(Text(f"{plural(len(failed), 'case')} failed; they are in the run store with their reason and are "
                      "retried when the run resumes:", style="yellow"))
    for case in failed[:limit]:  # a reason may quote a server: never its escape sequences
        errors.print(Text(printable(f"  {case.case_id}: {case.error}"), style="yellow"))
    if len(failed) > limit:
        errors.print(Text(f"  ... and {len(failed) - limit} more (see cases.jsonl)", style="yellow"))
    if hint := timeout_hint(failed, report.store.manifest.get("config", {})):
        errors.print(Text(f"hint: {hint}", style="yellow"))


LOCAL_HOSTS = ("127.0.0.1", "localhost", "0.0.0.0", "[::1]", "::1")


def timeout_hint(failed: list[CaseResult], config: dict) -> str | None:
    """When calls timed out against a server on this machine at concurrency above one: a local
    server often answers one request at a time (llama.cpp's server has one slot unless told
    otherwise), so the others wait in its queue until the per-call timeout runs out."""
    endpoint = urlsplit(config.get("endpoint") or "").hostname or ""
    concurrency, timeout = config.get("concurrency") or 1, config.get("timeout_s")
    if not any("timeout" in (case.error or "") for case in failed) or concurrency <= 1:
        return None
    if endpoint not in {host.strip("[]") for host in LOCAL_HOSTS}:
        return None
    shown = f"{timeout:g} s" if isinstance(timeout, int | float) else "the timeout"
    return (f"calls timed out against a server on this machine ({endpoint}) at -c {concurrency}: a local server "
            f"that answers one request at a time keeps the others queued past {shown}; raise --timeout, or run "
            "with -c 1 (or give the server more slots)")


# CLI parameter -> the RunConfig field it sets, for the inputs a resumed run restores.
_RESUMED_PARAMETERS = {
    "prompt": "prompt_versions", "family": "families", "scenario": "scenario_ids", "persona": "persona_ids",
    "turns": "max_turns", "repeat": "repeats", "responder": "responder", "target": "target",
    "model": "model", "prompts_dir": "prompts_dir", "scenarios_dir": "scenarios_dir", "run_id": "run_id",
    "prompt_source": "prompt_source", "label": "prompt_labels", "langfuse_prompt": "langfuse_prompt_names",
    "judge": "judge", "judge_model": "judge_model", "judge_samples": "judge_samples",
    "judge_sampling": "judge_sampling", "judge_sample_rate": "judge_sample_rate",
}


def _given(ctx: typer.Context) -> frozenset[str]:
    """The RunConfig fields whose flags were typed (or set from the environment), not defaulted."""
    typed = {"COMMANDLINE", "ENVIRONMENT"}  # by name: typer may bring its own copy of click's enum
    return frozenset(field for name, field in _RESUMED_PARAMETERS.items()
                     if getattr(ctx.get_parameter_source(name), "name", None) in typed)


def run(
    ctx: typer.Context,
    prompt: Annotated[list[str] | None, typer.Option(
        "--prompt", "-p", help="Prompt version to evaluate; repeatable. Default: every version in prompts/.",
        show_default=False)] = None,
    family: Annotated[list[Family] | None, typer.Option(
        "--family", "-f", help="Scenario family; repeatable. Default: all families.", show_default=False)] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", "-s", help="Only this scenario id; repeatable.", show_default=False)] = None,
    persona: Annotated[list[str] | None, typer.Option(
        "--persona", help="Only this persona (scenarios/personas/); repeatable. The personas are played by a "
                          "simulated user (PENPAL_SIMULATOR_MODEL, _BASE_URL, _API_KEY, else the OPENAI_* "
                          "variables), or replayed from prompts/recorded/personas/ offline.",
        show_default=False)] = None,
    turns: Annotated[int | None, typer.Option(
        "--turns", min=1, max=60, help="Simulated conversations stop after this many exchanges. Default: each "
                                       "persona's max_turns (12 unless it says otherwise).",
        show_default=False)] = None,
    repeat: Annotated[int, typer.Option(
        "--repeat", min=1, max=100, help="Play each (version, scenario or persona) this many times, each repeat with "
                                         "its own sampling seed (repeat 1 sends no seed, as a run without --repeat); "
                                         "decisions then read pass rates per scenario.")] = 1,
    responder: Annotated[ResponderChoice, typer.Option(
        help="openai: live API (OPENAI_API_KEY, OPENAI_BASE_URL). replay: the recorded sample replies. "
             "auto: openai when either variable is set, else replay.")] = ResponderChoice.auto,
    target: Annotated[str | None, typer.Option(
        help="The companion under test: a target file (kind: openai | http | python), or openai, http:URL, "
             "python:module:function. Default: each version's front matter target, else --responder.",
        show_default=False)] = None,
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
        help="Resume this run directory: finished cases are kept, the rest run (failed ones again; a case only "
             "its judge failed on is judged again from its stored replies, the companion not called). Every input "
             "(prompt and scenario directories, filters, responder, judge) comes from its manifest; a flag that "
             "disagrees with it is an error.",
        file_okay=False, exists=True, show_default=False)] = None,
    price: Annotated[list[str] | None, typer.Option(
        help="MODEL=INPUT,OUTPUT dollars per million tokens; repeatable.", show_default=False)] = None,
    prompts_dir: Annotated[Path, typer.Option(help="Directory of prompt versions.", file_okay=False,
                                               show_default="prompts/")] = DEFAULT_PROMPTS_DIR,
    scenarios_dir: Annotated[Path, typer.Option(help="Directory of scenario files.", file_okay=False,
                                                 show_default="scenarios/")] = DEFAULT_SCENARIOS_DIR,
    judge: Annotated[bool, typer.Option(
        "--judge", help="Also judge every reply with the LLM judge (see --judge-model); stored beside the "
                        "heuristics.")] = False,
    judge_model: JudgeModelOption = None,
    judge_samples: JudgeSamplesOption = 1,
    judge_sampling: JudgeSamplingOption = SamplingChoice.all,
    judge_sample_rate: JudgeSampleRateOption = None,
    sampling_state: SamplingStateOption = None,
    judge_cache: JudgeCacheOption = True,
    judge_batch: JudgeBatchOption = False,
    batch_poll: BatchPollOption = 30.0,
    batch_retry: BatchRetryOption = BatchRetryChoice.live,
    judge_budget: Annotated[int | None, typer.Option(
        "--judge-budget", min=0, help="With --judge: at most this many fresh safety-judge calls in the run (cached "
                                      "answers are free); the summary says which replies were left out.",
        show_default=False)] = None,
    sample_judge: Annotated[bool, typer.Option(
        "--sample-judge/--no-sample-judge", help="With replayed replies and no --judge: serve the hand-written "
                                                 "sample safety verdicts (prompts/recorded/judge/, sample data, "
                                                 "not a model) as the safety judge. --no-sample-judge: the bare "
                                                 "heuristics.")] = True,
    prompt_source: Annotated[PromptSource, typer.Option(
        help="local: prompts/*.md. langfuse: the Langfuse prompts (named as in prompts/, or --langfuse-prompt) "
             "under each --label.")] = PromptSource.local,
    label: Annotated[list[str] | None, typer.Option(
        "--label", help="With --prompt-source langfuse: the label to fetch (e.g. staging); repeatable. "
                        "Default: production.", show_default=False)] = None,
    langfuse_prompt: Annotated[list[str] | None, typer.Option(
        help="With --prompt-source langfuse: the Langfuse prompt name; repeatable. Default: the names in prompts/.",
        show_default=False)] = None,
    pairwise: Annotated[bool, typer.Option(
        "--pairwise", help="After the run, judge each version head to head against its baseline with the pairwise "
                           "judge (the judge's endpoint, --judge-model); a win rate above 50% beyond noise can make "
                           "an A/B candidate (the rubric's decision.ab_evidence).")] = False,
    langfuse: Annotated[bool | None, typer.Option(
        "--langfuse/--no-langfuse", help="Push traces and scores to Langfuse. Default: when LANGFUSE_PUBLIC_KEY "
                                         "and LANGFUSE_SECRET_KEY are set.", show_default=False)] = None,
    junit: JunitOption = None,
    rubric_path: RubricOption = None,
) -> None:
    """Evaluate prompt versions over the scenario sets; print a table and a release decision per version.

    Every case (scenario x prompt version) is written to runs/RUN_ID/cases.jsonl as it
    finishes; the summary, CSV and Parquet exports follow at the end. With no API configured
    the recorded sample replies are replayed (and the run says so).

    With --judge every reply is also judged by the LLM judge (PENPAL_JUDGE_BASE_URL and
    PENPAL_JUDGE_API_KEY, else the OPENAI_* variables), and the judge's means, verdicts and
    cases for human review are reported beside the heuristics.

    The personas (scenarios/personas/, family personas) are simulated users: a simulator LLM
    (PENPAL_SIMULATOR_MODEL, PENPAL_SIMULATOR_BASE_URL, PENPAL_SIMULATOR_API_KEY, else the
    OPENAI_* variables) writes each user turn after the persona's opening, until its goal is
    reached, it leaves, the companion says goodbye, or --turns; offline, recorded
    conversations are replayed.

    With LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY set, every turn becomes a Langfuse trace
    with its scores, on an experiment per prompt version (see docs/langfuse.md); what Langfuse
    did not take is reported and sent later by `penpal-eval push RUN_DIR`.

    Exit codes: 0 every case scored (and judged); 1 some case failed or could not be judged
    (recorded with its reason, retried on resume); 2 bad arguments, invalid inputs or a run
    that cannot resume; 130 interrupted by Ctrl-C or SIGTERM (resume it).
    """
    if judge_budget is not None and not judge:
        raise typer.BadParameter("needs --judge (the budget caps the judge's calls)", param_hint="--judge-budget")
    if judge_batch and not judge:
        raise typer.BadParameter("needs --judge (the Batch API is one way of judging)", param_hint="--judge-batch")
    try:
        prices = dict(parse_price_override(item) for item in price or [])
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--price") from None
    config = RunConfig(
        prompt_versions=prompt, families=[item.value for item in family] if family else None,
        scenario_ids=scenario, persona_ids=persona, max_turns=turns, repeats=repeat, responder=responder.value,
        model=model, target=target, concurrency=concurrency,
        timeout_s=timeout, max_attempts=max_attempts, use_cache=cache, cache_dir=cache_dir, output_dir=output,
        run_id=run_id, resume=resume, prompts_dir=prompts_dir, scenarios_dir=scenarios_dir, prices=prices,
        judge=judge_config(model=judge_model, samples=judge_samples, sampling=judge_sampling,
                           sample_rate=judge_sample_rate, state_path=sampling_state or output / SAMPLING_STATE_FILE,
                           use_cache=judge_cache, timeout_s=timeout, max_attempts=max_attempts,
                           concurrency=concurrency, batch=judge_batch, batch_poll_s=batch_poll,
                           batch_retry=batch_retry, budget=judge_budget) if judge else None,
        sample_judge=sample_judge,
        prompt_source=prompt_source.value, prompt_labels=label or None, langfuse_prompt_names=langfuse_prompt or None,
        langfuse=langfuse, given=_given(ctx),
    )
    head_to_head = JudgeConfig(model=judge_model, use_cache=judge_cache, timeout_s=timeout,
                               max_attempts=max_attempts, concurrency=concurrency) if pairwise else None
    raise typer.Exit(code=run_with_config(config, rubric_path, pairwise=head_to_head, junit=junit))


def run_with_config(config: RunConfig, rubric_path: Path | None = None, pairwise: JudgeConfig | None = None,
                    junit: Path | None = None) -> int:
    """Prepare, run and report; returns the exit code. With `pairwise`, each version is then
    judged head to head against its baseline (the judge built first, so a missing endpoint
    stops the run before it starts). With `junit`, the cases and decisions are also written
    there as JUnit XML."""
    errors = stderr_console()
    evaluator = load_evaluator(rubric_path)
    head_to_head_judge = pairwise_judge(pairwise, evaluator.rubric) if pairwise is not None else None
    try:
        prepared = prepare_run(config, evaluator)
    except (PromptError, ScenarioError, PersonaError) as error:
        for problem in error.problems:
            errors.print(Text(f"error: {problem}", style="red"))
        return EXIT_USAGE
    except (RunConfigError, ValueError) as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    _announce(prepared)
    publishing = start_run_publishing(prepared.store, evaluator.rubric, config.langfuse)
    pending = len(prepared.plan.cases()) - len(prepared.finished)
    try:
        with terminate_as_interrupt(), _progress(pending, enabled=stderr_is_tty()) as on_case:
            report = asyncio.run(execute(prepared, evaluator, on_case=on_case, sinks=publishing.sinks))
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM from a cancelled CI job
        errors.print(Text(f"interrupted: finished cases are kept in {display_path(prepared.store.directory)}; "
                          f"resume with --resume {display_path(prepared.store.directory)}", style="yellow"))
        with terminate_as_interrupt():  # a second signal stops the delivery; the ledger keeps what arrived
            try:
                publishing.finish(prepared.store.read_cases())
            except KeyboardInterrupt:
                errors.print(Text("interrupted again: Langfuse delivery stopped; `penpal-eval push` sends the rest",
                                  style="yellow"))
        return EXIT_INTERRUPTED
    head_to_head = _judge_head_to_head(head_to_head_judge, report, prepared) if head_to_head_judge is not None else []
    release = _finish(report, evaluator.rubric, head_to_head)
    if junit is not None:
        written = write_junit(junit, report.outcome.cases, evaluator.rubric,
                              run_id=str(report.store.manifest.get("run_id", "")), release=release)
        errors.print(Text(f"JUnit XML: {display_path(written)}"))
    publishing.finish(report.outcome.cases)
    return EXIT_CASES_FAILED if any(not case.finished for case in report.outcome.cases) else EXIT_OK


def _recorded_plays(plan: RunPlan) -> str:
    """` + 12 recorded repeats`: the further plays the offline sample data records (a replayed run plays them)."""
    extra = len(plan.cases()) - len(plan.prompts) * len(plan.scenarios) * plan.repeats
    return f" + {extra} recorded {'repeat' if extra == 1 else 'repeats'}" if extra > 0 else ""


def _announce(prepared: PreparedRun) -> None:
    errors = stderr_console()
    for notice in prepared.notices:
        errors.print(Text(f"notice: {notice}", style="bold yellow"))
    plan = prepared.plan
    action = "resuming" if prepared.resumed else "run"
    line = (f"{action} {prepared.store.manifest.get('run_id')}: {plural(len(plan.prompts), 'prompt version')} x "
            f"{plural(len(plan.scenarios), 'scenario')}"
            f"{f' x {plan.repeats} repeats' if plan.repeats > 1 else ''}{_recorded_plays(plan)} = "
            f"{plural(len(plan.cases()), 'case')} via "
            f"{prepared.responder.kind}")
    if plan.personas:
        simulator = prepared.simulator
        line += (f" ({plural(len(plan.personas), 'persona')} played by "
                 f"{'the recorded conversations' if simulator.kind == 'replay' else simulator.model})")
    if prepared.resumed:
        line += f"; {len(prepared.finished)} already finished"
        if prepared.rejudge:  # only their judge failed: the stored replies are judged, the companion not called
            line += f"; {len(prepared.rejudge)} re-judged from their stored replies"
    errors.print(Text(line))


def _judge_head_to_head(judge: PairwiseJudge, report: RunReport, prepared: PreparedRun) -> list[HeadToHead]:
    """`run --pairwise`: every version against its baseline, stored for the decisions."""
    cases = [case for case in report.outcome.cases if case.status == "ok"]
    pairs = baseline_pairs(cases, report.store.manifest.get("config", {}).get("baselines") or {})
    if not pairs:
        asyncio.run(judge.aclose())
        stderr_console().print(Text("--pairwise: no version of this run has its baseline in the run; nothing was "
                                    "compared", style="yellow"))
        return []
    outcome = judge_and_store(judge, report.store, cases, prepared.plan.scenarios, pairs)
    print_head_to_head([], outcome, report.store)  # the tables come with the others, before the decisions
    return outcome.results


def _print_simulator_usage(report: RunReport) -> None:
    """The simulated users' calls, apart from the companion's: they are not the version's cost."""
    usage = [summary["simulator"] for summary in report.summaries.values() if summary.get("simulator")]
    calls, cached = sum(item["calls"] for item in usage), sum(item["cached_calls"] for item in usage)
    if not calls and not cached:
        return
    tokens = sum(item["prompt_tokens"] + item["completion_tokens"] for item in usage)
    costs = [item["cost_usd"] for item in usage]
    cost = money(None if None in costs else sum(costs))
    models = sorted({model for item in usage for model in item.get("answered_by") or ()})
    answered = f"; answered by {', '.join(models)}" if models else ""
    stderr_console().print(Text(f"simulated users: {plural(calls, 'call')}" + (f" (+{cached} cached)" if cached else "")
                                + f", {tokens:,} tokens, {cost}; not counted in the versions' calls and cost"
                                + answered))
    invalid = sum(item.get("invalid", 0) for item in usage)
    if invalid:
        stderr_console().print(Text(
            f"simulated users: {plural(invalid, 'conversation')} invalid (the simulated user left its role or "
            "persona; see simulation.validity in cases.jsonl): left out of the decisions", style="yellow"))


def _finish(report: RunReport, rubric: Rubric, head_to_head: list[HeadToHead] | None = None) -> ReleaseReport | None:
    console = stdout_console()
    if not console.is_terminal:
        console.width = max(console.width, 160)  # logs: one row per version, never folded
    console.print(versions_table(report.summaries, rubric))
    for figures in head_to_head or []:
        console.print(head_to_head_table(figures))
    _print_assertions(report)
    release = print_run_decisions(report.store, report.outcome.cases, rubric)
    print_judge_report(report, rubric)
    if report.safety_judge:
        stderr_console().print(safety_judge_line(report.safety_judge, SAMPLE_JUDGE_LINE))
        if (disagreements := disagreement_line(report.safety_judge.get("disagreements") or {}, "safety_judge")):
            stderr_console().print(disagreements)
    _print_failures(report)
    _print_simulator_usage(report)
    errors = stderr_console()
    outcome = report.outcome
    rejudged = f", {outcome.rejudged} of them re-judged from their stored replies" if outcome.rejudged else ""
    errors.print(Text(f"run store: {display_path(report.store.directory)} ({plural(len(outcome.cases), 'case')}; "
                      f"{outcome.ran} run now{rejudged}, {outcome.skipped} already finished)"))
    if report.outcome.cases and report.outcome.cases[0].responder == "replay":
        errors.print(Text("these scores are of the recorded sample replies, not of a live model", style="yellow"))
    return release
