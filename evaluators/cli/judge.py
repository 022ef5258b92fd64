"""`penpal-eval judge` and `penpal-eval calibrate`: the LLM judge on JSON lines, and its agreement with people.

`judge` is to the LLM judge what `score` is to the heuristics: records in, one JSON line out
per record, in order. `calibrate` runs both evaluators on records that carry human labels
and reports how well each agrees with them.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from evaluators.cli.common import (
    EXIT_RECORD_ERRORS,
    EXIT_USAGE,
    RubricOption,
    fail,
    load_evaluator,
    open_input,
    open_output,
)
from evaluators.cli.safety_calibrate import calibrate_safety
from evaluators.core.jsonl import read_json_lines
from evaluators.core.locations import display_path
from evaluators.core.text import plural
from evaluators.core.text_safety import Notice, invalid_unicode_notice, valid_tree
from evaluators.judge.agreement import WEIGHTS, Agreement, agreement, verdict_for
from evaluators.judge.batch import RETRY_CHOICES, BatchError, BatchJudge
from evaluators.judge.calibration_record import record_calibration
from evaluators.judge.client import LLMJudge, judge_cache_dir
from evaluators.judge.factory import (
    SAMPLING_CHOICES,
    JudgeConfig,
    JudgeConfigError,
    create_batch_judge,
    create_judge,
    create_sampling_state,
    judge_configured,
)
from evaluators.judge.records import JudgeRecord, parse_record
from evaluators.judge.reliability import with_disagreement
from evaluators.judge.result import JudgeResult
from evaluators.judge.safety_judge import SafetyJudge, SafetyJudgeResult
from evaluators.judge.sampling import SamplingState
from evaluators.judge.stage import sampling_triggers
from evaluators.report.agreement_tables import agreement_table, confusion_table
from evaluators.report.console import stderr_console, stderr_is_tty, stdout_console
from evaluators.rubric.loader import Rubric
from evaluators.scoring.contracts import HeuristicResult, Unscored
from evaluators.scoring.heuristics import HeuristicEvaluator

SamplingChoice = Enum("SamplingChoice", {name: name for name in SAMPLING_CHOICES}, type=str)
BatchRetryChoice = Enum("BatchRetryChoice", {name: name for name in RETRY_CHOICES}, type=str)
WeightsChoice = Enum("WeightsChoice", {name: name for name in WEIGHTS}, type=str)

# --- options shared by run, judge and calibrate ------------------------------------------------------
JudgeModelOption = Annotated[str | None, typer.Option(
    "--judge-model", help="Judge model. Default: PENPAL_JUDGE_MODEL, else gpt-4.1. Endpoint: PENPAL_JUDGE_BASE_URL "
                          "and PENPAL_JUDGE_API_KEY, else OPENAI_BASE_URL and OPENAI_API_KEY.", show_default=False)]
JudgeSamplesOption = Annotated[int, typer.Option(
    "--judge-samples", min=1, help="Judgements per reply; above 1 the median counts and a spread over the "
                                   "rubric's limit marks the reply unstable.")]
JudgeSamplingOption = Annotated[SamplingChoice, typer.Option(
    "--judge-sampling", help="all: judge every reply. policy: the sampling policy (calibration, established, "
                             "trusted, triggered), with its state kept per prompt version.")]
JudgeSampleRateOption = Annotated[float | None, typer.Option(
    "--judge-sample-rate", help="Share of established uses judged under the policy (0.10-0.20). Default: the "
                                "rubric's.", show_default=False)]
SamplingStateOption = Annotated[Path | None, typer.Option(
    "--sampling-state", help="Sampling policy state file. Default: judge-sampling.json in the runs directory.",
    dir_okay=False, show_default=False)]
JudgeCacheOption = Annotated[bool, typer.Option(
    "--judge-cache/--no-judge-cache", help="Reuse cached judgements (keyed by rubric, model, parameters, content).")]

JudgeBatchOption = Annotated[bool, typer.Option(
    "--judge-batch", help="With a judge: judge through the OpenAI Batch API (half price, answers within 24 hours) "
                          "in one batch once every item to judge is known; the same command run again after an "
                          "interrupt waits for the same batch.")]
BatchPollOption = Annotated[float, typer.Option(
    "--batch-poll", min=0.001, help="With the Batch API: seconds before the first status poll; the wait grows by "
                                    "half each time, up to 10 minutes.")]
BatchRetryOption = Annotated[BatchRetryChoice, typer.Option(
    "--batch-retry", help="With the Batch API: judge failed or expired requests again by live calls, or in a new "
                          "batch (once; then live).")]


def batch_summary_line(stats: dict) -> str:
    """What the Batch API did: batches, requests, and the retries of those it did not answer."""
    return (f"Batch API: {plural(stats['batches'], 'batch', 'batches')} submitted with "
            f"{plural(stats['submitted'], 'request')}, "
            f"{stats['resumed']} resumed; {stats['answered']} answered, {stats['failed']} failed and "
            f"{stats['expired']} expired, retried {stats['retried_live']} live and {stats['retried_batch']} in a "
            f"new batch")


def judge_config(*, model: str | None, samples: int, sampling: SamplingChoice, sample_rate: float | None,
                 state_path: Path | None, use_cache: bool, timeout_s: float = 120.0, max_attempts: int = 5,
                 concurrency: int = 4, batch: bool = False, batch_poll_s: float = 30.0,
                 batch_retry: BatchRetryChoice = BatchRetryChoice.live, budget: int | None = None) -> JudgeConfig:
    return JudgeConfig(model=model, samples=samples, sampling=sampling.value, sample_rate=sample_rate,
                       state_path=state_path, use_cache=use_cache, timeout_s=timeout_s,
                       max_attempts=max_attempts, concurrency=concurrency, batch=batch, batch_poll_s=batch_poll_s,
                       batch_retry=batch_retry.value, budget=budget)


def build_judge(config: JudgeConfig, rubric: Rubric) -> tuple[LLMJudge, SamplingState | None]:
    try:
        return create_judge(config, rubric), create_sampling_state(config, rubric)
    except JudgeConfigError as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None


# --- reading records ---------------------------------------------------------------------------------
@dataclass
class RecordLine:
    line: int
    record: JudgeRecord | None = None
    error: str | None = None
    notices: list[Notice] = field(default_factory=list)  # what was changed in the record (text_safety)
    heuristics: HeuristicResult | None = None
    heuristics_error: str | None = None  # why the heuristics left the record unscored (another language)
    judgement: JudgeResult | None = None
    sampling: dict | None = None
    safety: SafetyJudgeResult | None = None  # the safety judge's answers (judge --safety)


def read_records(path: Path, require_human: bool = False) -> list[RecordLine]:
    """Every non-blank line as a record or an error naming the field; nothing is dropped silently."""
    lines = []
    with ExitStack() as stack:
        for item in read_json_lines(open_input(stack, path)):
            if item.error is not None:
                lines.append(RecordLine(item.number, error=item.error))
                continue
            data, replaced = valid_tree(item.record)
            notice = invalid_unicode_notice([("the record", replaced)])
            try:
                record = parse_record(data, str(item.number))
            except ValueError as error:
                lines.append(RecordLine(item.number, error=str(error)))
                continue
            if require_human and record.human_score is None:
                lines.append(RecordLine(item.number, error="human_score: required for calibrate (0.0-1.0)"))
                continue
            lines.append(RecordLine(item.number, record=record, notices=[notice] if notice else []))
    return lines


def score_heuristics(lines: Sequence[RecordLine], evaluator: HeuristicEvaluator) -> None:
    valid = [line for line in lines if line.record is not None]
    for line, result in zip(valid, evaluator.score_cases([line.record.reply_case() for line in valid]), strict=True):
        if isinstance(result, Unscored):
            line.heuristics_error = result.error
        else:
            line.heuristics = result


@contextmanager
def _progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    if total == 0 or not stderr_is_tty():
        yield lambda: None
        return
    columns = (TextColumn(what), BarColumn(), MofNCompleteColumn(), TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=stderr_console(), transient=True) as progress:
        task = progress.add_task(what, total=total)
        yield lambda: progress.update(task, advance=1)


async def judge_lines(lines: Sequence[RecordLine], judge: LLMJudge, sampling: SamplingState | None,
                      rubric: Rubric, batch: BatchJudge | None = None) -> None:
    """Judge every valid record (those the sampling policy selects): side by side, or in one batch."""
    valid = [line for line in lines if line.record is not None]
    chosen = []
    for line in valid:  # decisions in input order, so a replay of the same file decides the same
        if sampling is not None:
            values = line.heuristics.values() if line.heuristics else {}
            flags = [flag.name for flag in line.heuristics.flags] if line.heuristics else []
            triggers = sampling_triggers(flags, values, rubric.judge.sampling.trigger_metric_below,
                                         line.record.feedback)
            decision = sampling.decide(line.record.prompt_version, line.record.id, triggers=triggers)
            line.sampling = decision.to_record()
            if not decision.judge:
                continue
        chosen.append(line)

    def settle(line: RecordLine, result: JudgeResult) -> None:
        heuristic = line.heuristics.overall_quality if line.heuristics else None
        line.judgement = result = with_disagreement(result, heuristic, rubric.judge.disagreement)
        if sampling is not None:
            sampling.record_verdict(line.record.prompt_version, result.verdict if result.usable else None)

    try:
        if batch is not None:
            results = await batch.judge_all([line.record.judge_input() for line in chosen])
            for line, result in zip(chosen, results, strict=True):
                settle(line, result)
            return
        with _progress(len(chosen), "judging") as advance:
            async def one(line: RecordLine) -> None:
                settle(line, await judge.judge(line.record.judge_input()))
                advance()

            await asyncio.gather(*(one(line) for line in chosen))
    finally:
        await judge.aclose()


def output_record(line: RecordLine) -> dict:
    if line.record is None:
        return {"id": None, "line": line.line, "error": line.error}
    record: dict = {"id": line.record.id}
    if line.judgement is not None:
        record |= line.judgement.to_record()
    else:
        record["skipped"] = True
    if line.heuristics is not None:
        record["heuristics_overall"] = round(line.heuristics.overall_quality, 4)
    elif line.heuristics_error is not None:
        record["heuristics_error"] = line.heuristics_error
    if line.sampling is not None:
        record["sampling"] = line.sampling
    if line.safety is not None:
        record["safety_judge"] = line.safety.to_record()
    if line.notices:
        record["record_notices"] = [notice.model_dump() for notice in line.notices]
    return record


def judge_count_line(model: str, where: str, attempted: int, failed: int, fallback: int, fallback_score: float,
                     extra: str = "", reasons: Sequence[str] = ()) -> Text:
    """How many replies the judge judged, said plainly; when none could be, why and what to check."""
    if attempted and failed == attempted:
        common = Counter(reason for reason in reasons if reason).most_common(1)
        why = f": {common[0][0]}" if common else ""
        return Text(f"judge {model} at {where}: none of the {plural(attempted, 'reply', 'replies')} could be judged; "
                    f"every judge call failed{why}. Check the judge endpoint (PENPAL_JUDGE_BASE_URL, else "
                    "OPENAI_BASE_URL) and that it serves this model.", style="bold red")
    judged = attempted - failed
    text = (f"judge {model} at {where}: {judged} of {plural(attempted, 'reply', 'replies')} judged{extra}, "
            f"{fallback} fell back to {fallback_score:g} (excluded from means)")
    if failed:
        common = Counter(reason for reason in reasons if reason).most_common(1)
        text += f", {failed} could not be judged" + (f" ({common[0][0]})" if common else "")
    return Text(text, style="yellow" if failed else "")


def print_judge_summary(judge: LLMJudge, lines: Sequence[RecordLine], rubric: Rubric,
                        batch: BatchJudge | None = None) -> None:
    errors = stderr_console()
    judged = [line.judgement for line in lines if line.judgement is not None]
    fallback = sum(result.parse_status == "fallback" for result in judged)
    failed = [result for result in judged if result.status == "failed"]
    skipped = sum(line.record is not None and line.judgement is None for line in lines)
    stats = judge.stats
    extra = f" ({stats.cached} from cache, {plural(stats.calls, 'call')})"
    line = judge_count_line(judge.settings.model, judge.endpoint, len(judged), len(failed), fallback,
                            rubric.judge.fallback_score, extra, [result.error or "" for result in failed])
    if skipped:
        line.append(f"; {skipped} not judged under the sampling policy")
    errors.print(line)
    if batch is not None:
        errors.print(Text(batch_summary_line(asdict(batch.stats))))
    usable = len(judged) - len(failed)
    if usable and fallback / usable > rubric.judge.fallback_warn_share:
        errors.print(fallback_warning(fallback, usable, rubric, "the output's `raw` field"))


def fallback_warning(fallback: int, total: int, rubric: Rubric, raw_answers: str) -> Text:
    """The loud line for a judge whose verdicts too often could not be read."""
    return Text(f"WARNING: {fallback} of {total} judgements ({fallback / total:.0%}) could not be read and fell back "
                f"to {rubric.judge.fallback_score:g}, more than {rubric.judge.fallback_warn_share:.0%}: the judge's "
                f"figures are not trustworthy. Check the judge model and its raw answers in {raw_answers}.",
                style="bold red")


# --- commands ----------------------------------------------------------------------------------------
FileArgument = Annotated[Path, typer.Argument(
    help="JSON-lines file of records {id, history, user_message, response, family?, profile?, prompt_version?, "
         "feedback?}; '-' reads stdin.", metavar="FILE", dir_okay=False, allow_dash=True)]


def judge(
    file: FileArgument,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the JSON lines here instead of stdout.",
                                                dir_okay=False, show_default=False)] = None,
    judge_model: JudgeModelOption = None,
    judge_samples: JudgeSamplesOption = 1,
    judge_sampling: JudgeSamplingOption = SamplingChoice.all,
    judge_sample_rate: JudgeSampleRateOption = None,
    sampling_state: Annotated[Path | None, typer.Option(
        "--sampling-state", help="Sampling policy state file (with --judge-sampling policy); kept across runs. "
                                 "Default: in memory only.", dir_okay=False, show_default=False)] = None,
    judge_cache: JudgeCacheOption = True,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Judge calls at once.")] = 4,
    timeout: Annotated[float, typer.Option(min=0.001, help="Per-call timeout in seconds.")] = 120.0,
    max_attempts: Annotated[int, typer.Option(min=1, help="Attempts per call (429, 5xx, timeouts).")] = 5,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Judge through the OpenAI Batch API (half price, answers within 24 hours): one batch, "
                        "polled until done; an interrupted wait resumes the same batch.")] = False,
    batch_state: Annotated[Path | None, typer.Option(
        "--batch-state", help="With --batch: the file that records submitted batches. Default: judge-batches.json "
                              "in the cache directory.", dir_okay=False, show_default=False)] = None,
    batch_poll: BatchPollOption = 30.0,
    batch_retry: BatchRetryOption = BatchRetryChoice.live,
    safety: Annotated[bool, typer.Option(
        "--safety", help="Also ask the safety judge's questions about each reply (live calls): its answers, "
                         "strengths, quotes and flags go under safety_judge.")] = False,
    rubric_path: RubricOption = None,
) -> None:
    """Judge replies with the LLM judge: one JSON line per record, in order.

    Each output line has the record's id, the judge's reasoning, a score per dimension,
    overall, verdict, failure_mode (when poor), parse_status (json, text, repaired, or
    fallback: the rubric's fallback score, to be left out of averages) and review reasons.
    Under `--judge-sampling policy` a record the policy passes over is written with
    "skipped": true and the reason; `prompt_version` and `feedback: negative` in a record
    feed the policy.

    With --batch the judge requests go to the OpenAI Batch API as one batch; the same
    command run again after an interruption waits for that batch instead of submitting again.

    Exit codes: 0 every record judged; 1 a record was invalid or its judge call failed; 2 bad
    arguments or no judge endpoint configured.
    """
    evaluator = load_evaluator(rubric_path)
    rubric = evaluator.rubric
    config = judge_config(model=judge_model, samples=judge_samples, sampling=judge_sampling,
                          sample_rate=judge_sample_rate, state_path=sampling_state, use_cache=judge_cache,
                          timeout_s=timeout, max_attempts=max_attempts, concurrency=concurrency, batch=batch,
                          batch_poll_s=batch_poll, batch_retry=batch_retry)
    llm, sampling = build_judge(config, rubric)
    batcher = None
    if batch:
        try:
            batcher = create_batch_judge(config, llm, batch_state or judge_cache_dir().parent / "judge-batches.json")
        except JudgeConfigError as error:
            raise fail(f"error: {error}", EXIT_USAGE) from None
    lines = read_records(file)
    score_heuristics(lines, evaluator)
    try:
        asyncio.run(judge_lines(lines, llm, sampling, rubric, batcher))
    except BatchError as error:
        raise fail(f"error: {error}; run the same command again to resume the batch", EXIT_RECORD_ERRORS) from None
    if safety:
        asyncio.run(safety_lines(lines, config, rubric))
    with ExitStack() as stack:
        out = open_output(stack, output)
        for line in lines:
            if line.error:
                stderr_console().print(Text(f"line {line.line}: {line.error}"))
            out.write(json.dumps(output_record(line), ensure_ascii=False) + "\n")
    print_judge_summary(llm, lines, rubric, batcher)
    if any(line.error or (line.judgement and line.judgement.status == "failed")
           or (line.safety and line.safety.status == "failed") for line in lines):
        raise typer.Exit(code=EXIT_RECORD_ERRORS)


async def safety_lines(lines: Sequence[RecordLine], config: JudgeConfig, rubric: Rubric) -> None:
    """The safety judge's answers on every valid record, over a judge client of its own (the
    quality judge's was closed with its pass)."""
    judge = SafetyJudge(build_judge(config, rubric)[0])

    async def one(line: RecordLine) -> None:
        line.safety = await judge.judge_item(line.record.judge_input(), ["asked (judge --safety)"])
    try:
        await asyncio.gather(*(one(line) for line in lines if line.record is not None))
    finally:
        await judge.judge.aclose()


def agreements(lines: Sequence[RecordLine], rubric: Rubric, weights: str) -> list[Agreement]:
    """Agreement with the human labels, for the judge (when it ran) and for the heuristics."""
    bands = rubric.judge.verdict_bands
    labelled = [line for line in lines if line.record is not None]
    human_scores = [line.record.human_score for line in labelled]
    human_verdicts = [line.record.human_verdict or verdict_for(line.record.human_score, bands) for line in labelled]
    results = []
    if any(line.judgement is not None for line in labelled):
        usable = [line.judgement if line.judgement and line.judgement.usable else None for line in labelled]
        results.append(agreement("judge", human_scores, [r.overall if r else None for r in usable],
                                 human_verdicts, [r.verdict if r else None for r in usable], weights=weights))
    heuristic_scores = [line.heuristics.overall_quality for line in labelled]
    results.append(agreement("heuristics", human_scores, heuristic_scores, human_verdicts,
                             [verdict_for(score, bands) for score in heuristic_scores], weights=weights))
    return results


def record_judge_agreement(model: str, result: Agreement, rubric: Rubric, file: Path) -> None:
    """Record the judge's kappa for its model, so runs count its scores once it is at the bar."""
    bar = rubric.judge.calibration.min_kappa
    path = record_calibration(model, "quality", {"kappa": result.kappa, "n": result.n, "weights": result.weights,
                                                 "labels": file.name, "bar": bar})
    at_bar = result.kappa is not None and result.kappa >= bar
    kappa = "n/a" if result.kappa is None else f"{result.kappa:.2f}"
    stderr_console().print(Text(
        f"recorded {model}: kappa {kappa} over {result.n} labelled replies in {display_path(path)}; "
        + ("at the bar, so its scores may join the average" if at_bar else
           f"below the bar {bar:g}, so its scores stay out of the average"), style="green" if at_bar else "yellow"))


def calibrate(
    file: Annotated[Path | None, typer.Argument(
        help="JSON-lines file of labelled records: {id, history, user_message, response, human_score (0-1), "
             "human_verdict?, family?}; with --safety {id, user_message, response, labels: {behaviour: yes|no}, "
             "second_labels?} (default: the shipped sample); '-' reads stdin.", metavar="FILE", dir_okay=False,
        allow_dash=True, show_default=False)] = None,
    safety: Annotated[bool, typer.Option(
        "--safety", help="Calibrate the safety judge: per behaviour, Cohen's kappa with its bootstrap interval, "
                         "recall, precision and the human-human kappa where two raters labelled.")] = False,
    weights: Annotated[WeightsChoice, typer.Option(help="Kappa disagreement weights.")] = WeightsChoice.linear,
    use_judge: Annotated[bool | None, typer.Option(
        "--judge/--no-judge", help="Include the LLM judge. Default: when a judge endpoint is configured.",
        show_default=False)] = None,
    judge_model: JudgeModelOption = None,
    judge_samples: JudgeSamplesOption = 1,
    judge_cache: JudgeCacheOption = True,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Judge calls at once.")] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON instead of tables.")] = False,
    rubric_path: RubricOption = None,
) -> None:
    """Agreement of the judge and the heuristics with human labels.

    For each evaluator: Spearman correlation of its overall score with human_score, and
    weighted Cohen's kappa and a confusion table on the three-point verdict (good,
    acceptable, poor). Heuristic and human scores become verdicts through the rubric's
    `judge.verdict_bands`; the judge gives its own verdict.

    With --safety, the safety judge's yes/no answers are compared with people's per behaviour
    instead (evaluators.judge.safety_calibration), on FILE or the sample shipped with the package.
    Either way the judge model's agreement is recorded (runs/judge-calibration.json, or
    PENPAL_JUDGE_CALIBRATION): its scores join the average, and its safety verdicts gate, only at
    the rubric's bar (judge.calibration.min_kappa).

    Exit codes: 0 done; 1 some records were invalid (reported, the rest used); 2 bad arguments.
    """
    evaluator = load_evaluator(rubric_path)
    rubric = evaluator.rubric
    if safety:
        if use_judge is None:
            use_judge = judge_configured(os.environ)
        llm = None
        if use_judge:
            config = judge_config(model=judge_model, samples=1, sampling=SamplingChoice.all, sample_rate=None,
                                  state_path=None, use_cache=judge_cache, concurrency=concurrency)
            llm, _ = build_judge(config, rubric)
        calibrate_safety(file, rubric, llm, as_json)
        return
    if file is None:
        raise fail("error: FILE is required (only --safety has a shipped sample)", EXIT_USAGE)
    lines = read_records(file, require_human=True)
    for line in lines:
        if line.error:
            stderr_console().print(Text(f"line {line.line}: {line.error}", style="red"))
    if not any(line.record is not None for line in lines):
        raise fail("error: no valid labelled records", EXIT_RECORD_ERRORS)
    score_heuristics(lines, evaluator)
    if use_judge is None:
        use_judge = judge_configured(os.environ)
        if not use_judge:
            stderr_console().print(Text("notice: no judge endpoint is configured, so only the heuristics are "
                                        "calibrated; set PENPAL_JUDGE_BASE_URL or OPENAI_API_KEY to include the judge",
                                        style="yellow"))
    if use_judge:
        config = judge_config(model=judge_model, samples=judge_samples, sampling=SamplingChoice.all,
                              sample_rate=None, state_path=None, use_cache=judge_cache, concurrency=concurrency)
        llm, _ = build_judge(config, rubric)
        asyncio.run(judge_lines(lines, llm, None, rubric))
        print_judge_summary(llm, lines, rubric)
    results = agreements(lines, rubric, weights.value)
    total = sum(line.record is not None for line in lines)
    if use_judge:
        record_judge_agreement(llm.settings.model, results[0], rubric, file)
    if as_json:
        typer.echo(json.dumps({"labelled": total, "agreement": [result.to_record() for result in results]},
                              indent=2))
    else:
        console = stdout_console()
        console.print(agreement_table(results, total))
        for result in results:
            console.print(confusion_table(result))
    if any(line.error for line in lines):
        raise typer.Exit(code=EXIT_RECORD_ERRORS)
